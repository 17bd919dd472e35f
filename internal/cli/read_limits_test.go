package cli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// TestCheckTornLastLine: a history whose last line is torn (the recorder
// died while writing it) is checked up to it, with a warning naming the
// line on standard error; a bad line in the middle is still bad input.
func TestCheckTornLastLine(t *testing.T) {
	torn := lostUpdate + `{"id":4,"session":0,"ops":[["r","x`
	code, out, stderr := run(t, torn, "check", "-")
	if code != ExitViolation || !strings.Contains(stderr, "isoscope: warning: -: line 5 is torn: the file ends inside it") {
		t.Errorf("torn: exit %d, stderr %q, stdout %q; want 1 and the warning", code, stderr, out)
	}
	middle := strings.Replace(lostUpdate, `"ops":[["r","x",1],["w","x",2]]}`, `"ops":[["r","x",1],["w","x",2]]`, 1)
	if code, _, stderr := run(t, middle, "check", "-"); code != ExitBadInput || !strings.Contains(stderr, "-:3:") {
		t.Errorf("a bad middle line: exit %d, stderr %q; want 2 naming line 3", code, stderr)
	}
}

// blankLines is a long input of good transactions and then blank lines.
type blankLines struct{ head, left int64 }

func (b *blankLines) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, io.EOF
	}
	if b.head == 0 {
		b.head = 1
		return copy(p, untimedSerial), nil
	}
	n := min(int64(len(p)), b.left)
	copy(p[:n], bytes.Repeat([]byte{'\n'}, int(n)))
	b.left -= n
	return int(n), nil
}

// TestCheckTimeoutWhileReading: --timeout covers reading: a long input
// ends soon after the deadline with outcome unknown, exit 3.
func TestCheckTimeoutWhileReading(t *testing.T) {
	var out, errb bytes.Buffer
	start := time.Now()
	code := Main(context.Background(), []string{"check", "--timeout", "300ms", "-"}, &blankLines{left: 8 << 30}, &out, &errb)
	if elapsed := time.Since(start); code != ExitUnknown || elapsed > 3*time.Second {
		t.Errorf("exit %d after %v (stdout %q, stderr %q); want 3 soon after 300ms", code, elapsed, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "timed out while reading") {
		t.Errorf("stdout %q does not say the read timed out", out.String())
	}
}

// endless is a first line that never ends: {"id":1,"session":0,"ops":[["r","xxxx…
// Past 512 MiB it fails, so that a reader without a limit fails the test
// rather than taking the machine's memory.
type endless struct {
	started bool
	served  int
}

func (e *endless) Read(p []byte) (int, error) {
	if !e.started {
		e.started = true
		return copy(p, `{"id":1,"session":0,"ops":[["r","`), nil
	}
	if e.served > 512<<20 {
		return 0, errors.New("test input: read on past 512 MiB")
	}
	for i := range p {
		p[i] = 'x'
	}
	e.served += len(p)
	return len(p), nil
}

// TestCheckLongLine: a line that never ends is bad input (exit 2) naming
// the line, soon, not an exhausted memory.
func TestCheckLongLine(t *testing.T) {
	var out, errb bytes.Buffer
	start := time.Now()
	code := Main(context.Background(), []string{"check", "-"}, &endless{}, &out, &errb)
	if elapsed := time.Since(start); code != ExitBadInput || elapsed > 10*time.Second*raceSlowdown ||
		!strings.Contains(errb.String(), "-:1: the line is longer than 64 MiB") {
		t.Errorf("exit %d after %v, stderr %q; want 2 naming line 1", code, elapsed, errb.String())
	}
}

// TestCheckLineLimitFlag: --max-line-mb sets the line limit (a 2 MiB line
// is refused under 1 MiB and read under the default), and -1 lifts it.
func TestCheckLineLimitFlag(t *testing.T) {
	long := `{"id":1,"session":0,"ops":[["w","x",1]]}` + "\n" +
		`{"id":2,"session":0,"ops":[["w","` + strings.Repeat("a", 2<<20) + `",1]]}` + "\n"
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"check", "--max-line-mb", "1", "-"}, ExitBadInput},
		{[]string{"check", "-"}, ExitHolds},
		{[]string{"check", "--max-line-mb", "-1", "-"}, ExitHolds},
	} {
		var out, errb bytes.Buffer
		code := Main(context.Background(), c.args, strings.NewReader(long), &out, &errb)
		if code != c.code || (code == ExitBadInput && !strings.Contains(errb.String(), "-:2: the line is longer than 1 MiB")) {
			t.Errorf("%v: exit %d, want %d; stderr %q", c.args, code, c.code, errb.String())
		}
	}
}
