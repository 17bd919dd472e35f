package main

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// readmeCheck is one `isoscope check` the README shows, with the output it
// shows after it.
type readmeCheck struct {
	args []string
	want []string
}

// readmeChecks returns the `$ isoscope check …` and `$ bin/isoscope check
// …` command lines of the README's code blocks whose files are in the
// repository, each with the lines shown after it up to the next command or
// the end of the block ("…" marks lines left out).
func readmeChecks(t *testing.T, readme string) []readmeCheck {
	t.Helper()
	var out []readmeCheck
	var cur *readmeCheck
	inBlock := false
	sc := bufio.NewScanner(strings.NewReader(readme))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "```") {
			inBlock = !inBlock
			cur = nil
			continue
		}
		if !inBlock {
			continue
		}
		if cmd, ok := strings.CutPrefix(line, "$ "); ok {
			cur = nil
			f := strings.Fields(cmd)
			if len(f) < 3 || (f[0] != "isoscope" && f[0] != "bin/isoscope") || f[1] != "check" {
				continue
			}
			file := f[len(f)-1]
			if _, err := os.Stat("../../" + file); err != nil {
				continue
			}
			out = append(out, readmeCheck{args: f[1:]})
			cur = &out[len(out)-1]
			continue
		}
		if cur != nil {
			cur.want = append(cur.want, line)
		}
	}
	return out
}

// elapsed is the time a result line reports, which differs run to run.
var elapsed = regexp.MustCompile(`; [0-9.]+ (ms|s)\)`)

// TestReadmeChecksRun runs every `isoscope check` of the README on the
// repository's files it names and holds the README to what the command
// prints: each line shown (times aside) appears in the output, in order,
// and the exit status is the one the verdict means (1 for VIOLATED, 0 for
// holds).
func TestReadmeChecksRun(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	checks := readmeChecks(t, string(readme))
	if len(checks) < 3 {
		t.Fatalf("found %d check examples in the README, want at least 3", len(checks))
	}
	bin := binary(t)
	for _, c := range checks {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			cmd := exec.Command(bin, c.args...)
			cmd.Dir = "../.."
			outb, err := cmd.Output()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			out := strings.Split(elapsed.ReplaceAllString(string(outb), "; T)"), "\n")
			i := 0
			for _, w := range c.want {
				if strings.TrimSpace(w) == "…" || strings.TrimSpace(w) == "" {
					continue
				}
				w = elapsed.ReplaceAllString(w, "; T)")
				for i < len(out) && out[i] != w {
					i++
				}
				if i == len(out) {
					t.Fatalf("the README shows %q, which the output lacks (in order):\n%s", w, outb)
				}
				i++
			}
			want := 0
			if len(c.want) > 0 && strings.Contains(c.want[0], " VIOLATED") {
				want = 1
			}
			if code != want {
				t.Errorf("exit %d, want %d for the verdict the README shows", code, want)
			}
		})
	}
}
