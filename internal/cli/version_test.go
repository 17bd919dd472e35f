package cli

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"testing"
)

// TestVersion: `isoscope version` and `isoscope --version` say the same:
// the module version, the commit and the Go version.
func TestVersion(t *testing.T) {
	var outs []string
	for _, args := range [][]string{{"version"}, {"--version"}} {
		var stdout, stderr bytes.Buffer
		if code := Main(context.Background(), args, nil, &stdout, &stderr); code != ExitHolds {
			t.Fatalf("%v: exit %d: %s", args, code, stderr.String())
		}
		outs = append(outs, stdout.String())
	}
	if outs[0] != outs[1] {
		t.Errorf("version says\n%s--version says\n%s", outs[0], outs[1])
	}
	for _, want := range []string{"isoscope ", "commit ", runtime.Version()} {
		if !strings.Contains(outs[0], want) {
			t.Errorf("version lacks %q:\n%s", want, outs[0])
		}
	}
}

// TestFlagValuesComplete: the shell completes the values of the flags
// that take one of a fixed set, per command.
func TestFlagValuesComplete(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		want, not string
	}{
		{[]string{"check", "--level", ""}, "snapshot-isolation", ""},
		{[]string{"check", "--level", ""}, "read-atomic", ""},
		{[]string{"serve", "--level", ""}, "serializable", "read-committed"},
		{[]string{"check", "--checker", ""}, "linear", ""},
		{[]string{"check", "--format", ""}, "cobra", ""},
		{[]string{"convert", "--to", ""}, "jepsen", "cobra"},
		{[]string{"convert", "--from", ""}, "viper", ""},
		{[]string{"convert", "--to", ""}, "isoscope", "viper"},
		{[]string{"run", "--workload", ""}, "list-append", ""},
		{[]string{"gen", "--workload", ""}, "randomrange", "list-append"},
		{[]string{"gen", "--plant", ""}, "write-skew", ""},
		{[]string{"check", "--module", ""}, "innodb-rr", ""},
		{[]string{"run", "--isolation", ""}, "repeatable-read", ""},
		{[]string{"run", "--cluster", ""}, "dqlite", ""},
		{[]string{"run", "--cluster", ""}, "etcd", ""},
		{[]string{"cluster", "up", ""}, "dqlite", ""},
		{[]string{"run", "--faults", ""}, "clock", ""},
		{[]string{"run", "--cluster", ""}, "postgres-standby", ""},
		{[]string{"run", "--dur"}, "--duration", ""},
	} {
		var stdout, stderr bytes.Buffer
		Main(context.Background(), append([]string{"__complete"}, tc.args...), nil, &stdout, &stderr)
		got := strings.Fields(stdout.String())
		has := func(s string) bool {
			for _, g := range got {
				if g == s {
					return true
				}
			}
			return false
		}
		if !has(tc.want) || tc.not != "" && has(tc.not) {
			t.Errorf("%v completes %v: want %q and not %q", tc.args, got, tc.want, tc.not)
		}
	}
}

// TestHelpIsTidy: every command's help has examples, and no flag's value
// name is a garbled word from its description (pflag takes the first
// back-quoted word of a usage as the value's name).
func TestHelpIsTidy(t *testing.T) {
	for _, cmd := range []string{"", "check", "gen", "convert", "report", "run", "cluster", "serve", "publish", "findings", "version"} {
		var stdout, stderr bytes.Buffer
		args := []string{"--help"}
		if cmd != "" {
			args = []string{cmd, "--help"}
		}
		Main(context.Background(), args, nil, &stdout, &stderr)
		help := stdout.String()
		if !strings.Contains(help, "Examples:") {
			t.Errorf("%q: no examples in its help", cmd)
		}
		if strings.Contains(help, "--cpuprofile go") {
			t.Errorf("%q: --cpuprofile's value is named after its description:\n%s", cmd, help)
		}
	}
}
