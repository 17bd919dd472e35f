package main

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// statusLine is a line --progress always writes while checking.
var statusLine = regexp.MustCompile(`(?m)^isoscope: checking \S+: .+ \(\d+\.\ds\)$`)

// TestProgressAlways: check --progress always, its standard error a pipe,
// on a history the solver works on for seconds, writes a plain status
// line (phase, sizes, conflicts; no carriage return) every interval —
// here 300 ms through ISOSCOPE_PROGRESS_INTERVAL; --progress auto and
// never write none to the pipe. Before, nothing came until the verdict.
func TestProgressAlways(t *testing.T) {
	name := blindWrites(t, 5000)
	for _, mode := range []string{"always", "auto", "never"} {
		res := runBinary(t, 60*time.Second, 0, []string{"ISOSCOPE_PROGRESS_INTERVAL=300ms"},
			"check", "--checker", "sat", "--timeout", "3s", "--progress", mode, name)
		lines := statusLine.FindAllString(res.stderr, -1)
		t.Logf("--progress %s: exit %d, %d status lines:\n%s", mode, res.code, len(lines), tail(res.stderr, 600))
		if res.code != 3 {
			t.Fatalf("--progress %s: exit %d\n%s%s", mode, res.code, res.stdout, res.stderr)
		}
		if strings.Contains(res.stderr, "\r") {
			t.Errorf("--progress %s: a carriage return on a pipe", mode)
		}
		if mode != "always" {
			if res.stderr != "" {
				t.Errorf("--progress %s wrote to a pipe:\n%s", mode, res.stderr)
			}
			continue
		}
		if len(lines) < 4 {
			t.Fatalf("%d status lines in 3 s at a 300 ms interval", len(lines))
		}
		if !strings.Contains(lines[len(lines)-1], "serializable, checker sat") {
			t.Errorf("the last line does not say the phase: %s", lines[len(lines)-1])
		}
	}
}

// TestProgressAlwaysReading: while standard input comes slowly, check
// --progress always writes how much it has read.
func TestProgressAlwaysReading(t *testing.T) {
	cmd := exec.Command(binary(t), "check", "--progress", "always", "-")
	cmd.Env = append(os.Environ(), "ISOSCOPE_PROGRESS_INTERVAL=200ms")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_, _ = in.Write([]byte(`{"id":1,"session":1,"ops":[["w","x",1]]}` + "\n"))
	time.Sleep(1500 * time.Millisecond)
	_, _ = in.Write([]byte(`{"id":2,"session":2,"ops":[["r","x",1]]}` + "\n"))
	in.Close()
	_ = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errb.String())
	}
	reading := regexp.MustCompile(`(?m)^isoscope: reading -: 0\.0 MiB \(\d+\.\ds\)$`).FindAllString(errb.String(), -1)
	if len(reading) < 3 {
		t.Errorf("%d reading lines in 1.5 s at 200 ms:\n%s", len(reading), errb.String())
	}
}

// TestRunProgressAlwaysChecking: run --progress always writes status
// lines while it checks the history it recorded, as check does, and one
// when the check ends (on a loaded machine a second's run records so few
// transactions that the check is over within one interval).
func TestRunProgressAlwaysChecking(t *testing.T) {
	file := t.TempDir() + "/run.jsonl"
	res := runBinary(t, 60*time.Second, 0, []string{"ISOSCOPE_PROGRESS_INTERVAL=20ms"},
		"run", "--duration", "1s", "--sessions", "4", "--keys", "20", "--seed", "3", "--checker", "sat", "--progress", "always", "-o", file)
	if res.code != 0 {
		t.Fatalf("exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	checking := regexp.MustCompile(`(?m)^isoscope: checking the history: .+ \(\d+\.\ds\)$`).FindAllString(res.stderr, -1)
	t.Logf("%d checking lines: %q", len(checking), checking)
	if len(checking) == 0 {
		t.Errorf("no status line while checking:\n%s", tail(res.stderr, 1000))
	}
}
