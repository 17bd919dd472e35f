package nemesis

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/history"
)

func TestParseKinds(t *testing.T) {
	got, err := ParseKinds(" kill, partition,kill ")
	if err != nil || !slices.Equal(got, []Kind{Kill, Partition}) {
		t.Fatalf("got %v, %v", got, err)
	}
	if all, err := ParseKinds("all"); err != nil || !slices.Equal(all, Kinds) {
		t.Fatalf("all: got %v, %v", all, err)
	}
	for _, bad := range []string{"", ",", "meteor", "kill,meteor"} {
		if _, err := ParseKinds(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// journal is a Target that writes down what it is asked to do, so that
// the schedule can be read back; it breaks nothing.
type journal struct {
	mu    sync.Mutex
	calls []string
}

func (j *journal) note(s string) error {
	j.mu.Lock()
	j.calls = append(j.calls, s)
	j.mu.Unlock()
	return nil
}
func (j *journal) NodeNames() []string { return []string{"n1", "n2", "n3"} }
func (j *journal) Isolate(i int) error { return j.note(fmt.Sprintf("isolate %d", i)) }
func (j *journal) Heal()               { _ = j.note("heal") }
func (j *journal) Kill(i int) error    { return j.note(fmt.Sprintf("kill %d", i)) }
func (j *journal) StopNode(i int) error {
	return j.note(fmt.Sprintf("stop %d", i))
}
func (j *journal) Start(_ context.Context, i int) error { return j.note(fmt.Sprintf("start %d", i)) }
func (j *journal) Pause(i int) error                    { return j.note(fmt.Sprintf("pause %d", i)) }
func (j *journal) Resume(i int) error                   { return j.note(fmt.Sprintf("resume %d", i)) }
func (j *journal) CutClients(i int) (int, error)        { return 2, j.note(fmt.Sprintf("cut %d", i)) }

// schedule runs the nemesis for a while and returns what it did and
// recorded.
func schedule(t *testing.T, seed uint64, d time.Duration) (*journal, []history.Fault) {
	t.Helper()
	j := &journal{}
	var faults []history.Fault
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var clock int64
	Run(ctx, j, Config{Faults: Kinds, Interval: 5 * time.Millisecond, Seed: seed}, func() int64 { clock++; return clock },
		func(f history.Fault) { faults = append(faults, f) })
	return j, faults
}

// TestRunHealsAndRecords: every fault is healed in order (an isolation by
// a heal, a pause by a resume, a kill and a stop by a start) before the
// next one and before Run returns, and recorded once, with its node and
// instants in order.
func TestRunHealsAndRecords(t *testing.T) {
	j, faults := schedule(t, 1, 400*time.Millisecond)
	if len(faults) < 5 {
		t.Fatalf("only %d faults in 400 ms at a 5 ms interval", len(faults))
	}
	open := ""
	for _, c := range j.calls {
		verb, node, _ := strings.Cut(c, " ")
		switch verb {
		case "isolate", "pause", "kill", "stop":
			if open != "" {
				t.Fatalf("%s while %s is not healed: %v", c, open, j.calls)
			}
			open = c
		case "heal", "resume", "start":
			want := map[string]string{"heal": "isolate", "resume": "pause", "start": ""}[verb]
			if open == "" || (want != "" && !strings.HasPrefix(open, want)) || (verb == "start" && !strings.HasSuffix(open, " "+node)) {
				t.Fatalf("%s heals %q: %v", c, open, j.calls)
			}
			open = ""
		}
	}
	if open != "" {
		t.Fatalf("Run returned with %s not healed", open)
	}
	var last int64
	for _, f := range faults {
		if f.Begin <= last || f.End < f.Begin || !slices.Contains([]string{"n1", "n2", "n3"}, f.Node) || f.Info == "" {
			t.Fatalf("fault %+v (after instant %d)", f, last)
		}
		last = f.End
	}
}

// TestRunSeeded: the schedule (kinds and nodes, in order) follows the
// seed.
func TestRunSeeded(t *testing.T) {
	sched := func(seed uint64) []string {
		_, faults := schedule(t, seed, 200*time.Millisecond)
		var out []string
		for _, f := range faults[:min(len(faults), 6)] {
			out = append(out, f.Kind+" "+f.Node)
		}
		return out
	}
	a, b, c := sched(7), sched(7), sched(8)
	n := min(len(a), len(b))
	if n < 4 || !slices.Equal(a[:n], b[:n]) {
		t.Fatalf("seed 7 twice: %v and %v", a, b)
	}
	if slices.Equal(a[:min(n, len(c))], c[:min(n, len(c))]) {
		t.Fatalf("seeds 7 and 8 gave the same schedule %v", a)
	}
}
