// Package nemesis breaks a cluster while a workload runs, on a seeded
// schedule, and says what it did and when: it partitions a node from the
// others, kills a node with SIGKILL and starts it again, stops and
// continues it (SIGSTOP, SIGCONT), restarts it gracefully, and cuts the
// clients' connections to it, and skews its clock. Each fault is healed before the next, and
// every fault is recorded, once healed, as a history.Fault with its
// instants on the run's clock.
package nemesis

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/isoscope/isoscope/internal/history"
)

// Kind is a kind of fault.
type Kind string

// The faults.
const (
	// Partition cuts a node off from every other node (the clients still
	// reach it) for an interval.
	Partition Kind = "partition"
	// Kill sends SIGKILL to a node's server and starts it again after an
	// interval.
	Kill Kind = "kill"
	// Pause stops a node's server with SIGSTOP and continues it with
	// SIGCONT after an interval.
	Pause Kind = "pause"
	// Restart stops a node's server gracefully (SIGTERM) and starts it
	// again at once.
	Restart Kind = "restart"
	// Cut drops every client connection to a node, at once.
	Cut Kind = "cut"
	// Clock shifts a node's clock by a seeded offset, from seconds to
	// minutes ahead or behind, for an interval (a ClockTarget's).
	Clock Kind = "clock"
)

// The faults of a cluster's primary, which move (a PrimaryTarget's):
// each is its plain fault on the node that is the primary when the fault
// begins, so that every one of them forces a failover.
const (
	// PartitionPrimary is Partition of the primary.
	PartitionPrimary Kind = "partition-primary"
	// KillPrimary is Kill of the primary.
	KillPrimary Kind = "kill-primary"
	// PausePrimary is Pause of the primary.
	PausePrimary Kind = "pause-primary"
)

// Kinds lists every fault, in the order the help names them.
var Kinds = []Kind{Partition, Kill, Pause, Restart, Cut, Clock}

// PrimaryKinds lists the faults of the primary, which only a cluster
// whose primary moves takes; "all" does not name them.
var PrimaryKinds = []Kind{PartitionPrimary, KillPrimary, PausePrimary}

// onPrimary maps each fault of the primary to its plain fault.
var onPrimary = map[Kind]Kind{PartitionPrimary: Partition, KillPrimary: Kill, PausePrimary: Pause}

// PrimaryTarget is a Target whose primary moves (pg-auto-failover's).
type PrimaryTarget interface {
	// Primary returns the index of the node that is the primary now.
	Primary(ctx context.Context) (int, error)
}

// ParseKinds reads a comma-separated list of faults ("all": every one).
func ParseKinds(s string) ([]Kind, error) {
	var out []Kind
	for f := range strings.SplitSeq(s, ",") {
		f = strings.ToLower(strings.TrimSpace(f))
		if f == "" {
			continue
		}
		if f == "all" {
			return slices.Clone(Kinds), nil
		}
		k := Kind(f)
		if !slices.Contains(Kinds, k) && !slices.Contains(PrimaryKinds, k) {
			var names []string
			for _, k := range append(slices.Clone(Kinds), PrimaryKinds...) {
				names = append(names, string(k))
			}
			return nil, fmt.Errorf("unknown fault %q (%s, or all)", f, strings.Join(names, ", "))
		}
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no faults named in %q", s)
	}
	return out, nil
}

// Target is what a nemesis breaks: a cluster's nodes, by index.
type Target interface {
	// NodeNames names the nodes.
	NodeNames() []string
	// Isolate cuts node i off from the other nodes; Heal mends every cut.
	Isolate(i int) error
	Heal()
	// Kill sends SIGKILL to node i; StopNode stops it gracefully; Start
	// starts it again and waits until it serves clients.
	Kill(i int) error
	StopNode(i int) error
	Start(ctx context.Context, i int) error
	// Pause stops node i with SIGSTOP; Resume continues it.
	Pause(i int) error
	Resume(i int) error
	// CutClients drops the clients' connections to node i and says how
	// many.
	CutClients(i int) (int, error)
}

// Config says which faults to apply, how often, and from which seed.
type Config struct {
	Faults []Kind
	// Interval is the calm before each fault and how long a fault lasts.
	Interval time.Duration
	Seed     uint64
	// Log, when set, is told each fault as it begins and ends.
	Log func(string)
	// StartFor bounds how long a node that was killed or restarted is
	// waited for (default a minute).
	StartFor time.Duration
}

// Run applies faults until ctx ends: Interval of calm, then a fault drawn
// from the seeded generator — its kind among Faults, its node among the
// target's — for Interval (a cut lasts no time), healed, recorded with
// its instants from now; and again. When ctx ends during a fault, the
// fault is healed (a killed node started again) before Run returns.
func Run(ctx context.Context, t Target, cfg Config, now func() int64, record func(history.Fault)) {
	if len(cfg.Faults) == 0 || cfg.Interval <= 0 {
		return
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6e656d65736973))
	names := t.NodeNames()
	say := cfg.Log
	if say == nil {
		say = func(string) {}
	}
	startFor := cfg.StartFor
	if startFor <= 0 {
		startFor = time.Minute
	}
	// healCtx outlives ctx: what was broken is mended after the run.
	healCtx := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.WithoutCancel(ctx), startFor)
	}
	for {
		if !sleep(ctx, cfg.Interval) {
			return
		}
		kind := cfg.Faults[rng.IntN(len(cfg.Faults))]
		i := rng.IntN(len(names))
		f := history.Fault{Kind: string(kind), Begin: now()}
		var err error
		if plain, ok := onPrimary[kind]; ok {
			kind = plain
			if i, err = primary(ctx, t); err != nil {
				kind = ""
			}
		}
		node := ""
		if i >= 0 && i < len(names) {
			node = names[i]
		}
		f.Node = node
		switch kind {
		case Partition:
			if err = t.Isolate(i); err == nil {
				say(fmt.Sprintf("nemesis: partition: %s cut off from the other nodes", node))
				sleep(ctx, cfg.Interval)
				t.Heal()
				f.Info = node + " cut off from the other nodes"
			}
		case Pause:
			if err = t.Pause(i); err == nil {
				say(fmt.Sprintf("nemesis: pause: SIGSTOP %s", node))
				sleep(ctx, cfg.Interval)
				err = t.Resume(i)
				f.Info = "SIGSTOP " + node + ", then SIGCONT"
			}
		case Kill:
			if err = t.Kill(i); err == nil {
				say(fmt.Sprintf("nemesis: kill: SIGKILL %s", node))
				sleep(ctx, cfg.Interval)
				hc, cancel := healCtx()
				restarted := time.Now()
				err = t.Start(hc, i)
				cancel()
				f.Info = fmt.Sprintf("SIGKILL %s, started again after %s, serving after %s more", node, cfg.Interval, time.Since(restarted).Round(100*time.Millisecond))
			}
		case Restart:
			if err = t.StopNode(i); err == nil {
				say(fmt.Sprintf("nemesis: restart: SIGTERM %s", node))
				hc, cancel := healCtx()
				err = t.Start(hc, i)
				cancel()
				f.Info = "SIGTERM " + node + ", started again at once"
			}
		case Cut:
			var n int
			if n, err = t.CutClients(i); err == nil {
				f.Info = fmt.Sprintf("dropped %d client connections to %s", n, node)
			}
		case Clock:
			offset := clockOffset(rng)
			f.Offset = int64(offset)
			err = skewClock(ctx, t, cfg, i, node, offset, &f, say)
		}
		f.End = now()
		kind = Kind(f.Kind)
		if err != nil {
			f.Info = strings.TrimSpace(f.Info + " (failed: " + err.Error() + ")")
		}
		say(fmt.Sprintf("nemesis: %s %s healed: %s", kind, node, f.Info))
		record(f)
	}
}

// primary asks t for the node that is its primary now.
func primary(ctx context.Context, t Target) (int, error) {
	pt, ok := t.(PrimaryTarget)
	if !ok {
		return -1, fmt.Errorf("the cluster has no primary that moves")
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	i, err := pt.Primary(ctx)
	if err != nil {
		return -1, fmt.Errorf("finding the primary: %v", err)
	}
	return i, nil
}

// sleep waits d or until ctx ends, and reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// ClockTarget is a Target whose nodes' clocks can be skewed.
type ClockTarget interface {
	// SkewClock sets node i's wall clock to offset from the real time
	// (0: the real time again), waits until the node shows it, and
	// returns the offset the node showed.
	SkewClock(ctx context.Context, i int, offset time.Duration) (time.Duration, error)
}

// Clock offsets are drawn between these, ahead or behind.
const (
	minSkew = 2 * time.Second
	maxSkew = 10 * time.Minute
)

// clockOffset draws a clock offset: its size log-uniform between minSkew
// and maxSkew in whole seconds (as many offsets of seconds as of
// minutes), its sign even.
func clockOffset(rng *rand.Rand) time.Duration {
	lo, hi := math.Log(minSkew.Seconds()), math.Log(maxSkew.Seconds())
	d := time.Duration(math.Round(math.Exp(lo+rng.Float64()*(hi-lo)))) * time.Second
	if rng.IntN(2) == 0 {
		d = -d
	}
	return d
}

// skewClock skews node i's clock by offset for the interval and sets it
// back, saying in f's Info what the node showed each time.
func skewClock(ctx context.Context, t Target, cfg Config, i int, node string, offset time.Duration, f *history.Fault, say func(string)) error {
	ct, ok := t.(ClockTarget)
	if !ok {
		return fmt.Errorf("%s's clock cannot be skewed", node)
	}
	// Setting the clock and waiting for the node to show it outlives
	// ctx: a skewed clock is set back after the run.
	hc, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	seen, err := ct.SkewClock(hc, i, offset)
	if err != nil {
		// The clock may have moved all the same: set it back.
		_, _ = ct.SkewClock(hc, i, 0)
		return err
	}
	say(fmt.Sprintf("nemesis: clock: %s's clock %s (it shows %s)", node, aheadBehind(offset), signed(seen)))
	sleep(ctx, cfg.Interval)
	back, err := ct.SkewClock(hc, i, 0)
	f.Info = fmt.Sprintf("%s's clock %s (the node showed %s), then set right (showed %s)", node, aheadBehind(offset), signed(seen), signed(back))
	return err
}

// aheadBehind says an offset in words: "83s ahead", "2m5s behind".
func aheadBehind(d time.Duration) string {
	if d < 0 {
		return (-d).String() + " behind"
	}
	return d.String() + " ahead"
}

// signed is an offset to the millisecond with its sign.
func signed(d time.Duration) string {
	d = d.Round(time.Millisecond)
	if d >= 0 {
		return "+" + d.String()
	}
	return d.String()
}
