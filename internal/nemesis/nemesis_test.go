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

// SkewClock notes the skew ("skew 1 -83s") or the clock set right
// ("unskew 1"), and says the node showed what it was asked.
func (j *journal) SkewClock(_ context.Context, i int, offset time.Duration) (time.Duration, error) {
	if offset == 0 {
		return 0, j.note(fmt.Sprintf("unskew %d", i))
	}
	return offset, j.note(fmt.Sprintf("skew %d %s", i, offset))
}

// schedule runs the nemesis for a while and returns what it did and
// recorded.
func schedule(t *testing.T, seed uint64, want int) (*journal, []history.Fault) {
	t.Helper()
	j := &journal{}
	faults := runNemesis(t, j, Config{Faults: Kinds, Interval: 5 * time.Millisecond, Seed: seed}, want)
	return j, faults
}

// runNemesis runs the nemesis on target until it has recorded want faults (within a
// minute, however loaded the machine), and returns them.
func runNemesis(t *testing.T, target Target, c Config, want int) []history.Fault {
	t.Helper()
	var faults []history.Fault
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var clock int64
	Run(ctx, target, c, func() int64 { clock++; return clock },
		func(f history.Fault) {
			if faults = append(faults, f); len(faults) >= want {
				cancel()
			}
		})
	if len(faults) < want {
		t.Fatalf("only %d faults in a minute at a %s interval", len(faults), c.Interval)
	}
	return faults
}

// TestRunHealsAndRecords: every fault is healed in order (an isolation by
// a heal, a pause by a resume, a kill and a stop by a start) before the
// next one and before Run returns, and recorded once, with its node and
// instants in order.
func TestRunHealsAndRecords(t *testing.T) {
	j, faults := schedule(t, 1, 8)
	open := ""
	for _, c := range j.calls {
		verb, node, _ := strings.Cut(c, " ")
		switch verb {
		case "isolate", "pause", "kill", "stop", "skew":
			if open != "" {
				t.Fatalf("%s while %s is not healed: %v", c, open, j.calls)
			}
			open = c
		case "heal", "resume", "start", "unskew":
			want := map[string]string{"heal": "isolate", "resume": "pause", "start": "", "unskew": "skew " + node + " "}[verb]
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
		_, faults := schedule(t, seed, 6)
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

// TestClockOffsets: a clock fault carries its offset, between two
// seconds and ten minutes ahead or behind, both ways over a run, with
// some of seconds and some of minutes; the node and the offset the
// target was asked for are the record's; a target whose clocks cannot
// be skewed gets the fault recorded as failed.
func TestClockOffsets(t *testing.T) {
	j := &journal{}
	faults := runNemesis(t, j, Config{Faults: []Kind{Clock}, Interval: 2 * time.Millisecond, Seed: 3}, 20)
	var ahead, behind, seconds, minutes int
	for _, f := range faults {
		d := time.Duration(f.Offset)
		if f.Kind != "clock" || d.Abs() < minSkew || d.Abs() > maxSkew || d%time.Second != 0 || !strings.Contains(f.Info, f.Node+"'s clock") {
			t.Errorf("fault %+v", f)
		}
		if !slices.Contains(j.calls, fmt.Sprintf("skew %d %s", int(f.Node[1]-'1'), d)) {
			t.Errorf("fault %+v: the target was not asked for that skew: %v", f, j.calls)
		}
		if d > 0 {
			ahead++
		} else {
			behind++
		}
		if d.Abs() < time.Minute {
			seconds++
		} else {
			minutes++
		}
	}
	if ahead == 0 || behind == 0 || seconds == 0 || minutes == 0 {
		t.Errorf("offsets %d ahead, %d behind, %d under a minute, %d over", ahead, behind, seconds, minutes)
	}

	failed := runNemesis(t, noClock{j}, Config{Faults: []Kind{Clock}, Interval: 2 * time.Millisecond, Seed: 3}, 1)
	if !strings.Contains(failed[0].Info, "failed") {
		t.Errorf("a target without clocks: %+v", failed)
	}
}

// noClock is a Target whose clocks cannot be skewed.
type noClock struct{ Target }

// primaryJournal is a journal whose primary is node 2 (n3), or whose
// monitor does not answer.
type primaryJournal struct {
	journal
	down bool
}

// Primary says n3, or fails when the monitor is down.
func (p *primaryJournal) Primary(context.Context) (int, error) {
	if p.down {
		return 0, fmt.Errorf("the monitor does not answer")
	}
	return 2, nil
}

// TestRunPrimaryFaults: the faults of the primary act on the node the
// target names as its primary, whatever node the seed draws, and are
// recorded under their own kind; a target that cannot name its primary
// (or has none) gets each recorded as failed, with nothing done.
func TestRunPrimaryFaults(t *testing.T) {
	p := &primaryJournal{}
	faults := runNemesis(t, p, Config{Faults: PrimaryKinds, Interval: 5 * time.Millisecond, Seed: 4}, 9)
	for _, f := range faults {
		if !slices.Contains(PrimaryKinds, Kind(f.Kind)) || f.Node != "n3" || strings.Contains(f.Info, "failed") {
			t.Errorf("fault %+v: want a fault of the primary on n3", f)
		}
	}
	for _, c := range p.calls {
		if !strings.HasSuffix(c, " 2") && c != "heal" {
			t.Errorf("%s: want every fault on node 2, the primary", c)
		}
	}
	p = &primaryJournal{down: true}
	for _, f := range runNemesis(t, p, Config{Faults: []Kind{PartitionPrimary}, Interval: 5 * time.Millisecond, Seed: 4}, 2) {
		if f.Node != "" || !strings.Contains(f.Info, "failed: finding the primary: the monitor does not answer") {
			t.Errorf("fault %+v: want a failure naming why", f)
		}
	}
	if len(p.calls) != 0 {
		t.Errorf("with no primary found the nemesis did %v", p.calls)
	}
	for _, target := range []Target{&journal{}} {
		for _, f := range runNemesis(t, target, Config{Faults: []Kind{KillPrimary}, Interval: 5 * time.Millisecond, Seed: 1}, 1) {
			if !strings.Contains(f.Info, "no primary that moves") {
				t.Errorf("kill-primary on a target without a primary: %+v", f)
			}
		}
	}
	if k, err := ParseKinds("partition-primary,kill"); err != nil || !slices.Equal(k, []Kind{PartitionPrimary, Kill}) {
		t.Errorf("ParseKinds: %v, %v", k, err)
	}
	if k, _ := ParseKinds("all"); slices.ContainsFunc(k, func(k Kind) bool { return slices.Contains(PrimaryKinds, k) }) {
		t.Errorf("all names the faults of the primary: %v", k)
	}
}
