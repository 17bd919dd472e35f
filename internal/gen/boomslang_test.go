package gen_test

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/check/reference"
	"github.com/isoscope/isoscope/internal/format/native"
	"github.com/isoscope/isoscope/internal/gen"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
	"github.com/isoscope/isoscope/internal/workload"
)

func generateRange(t testing.TB, c gen.RangeConfig) *history.History {
	t.Helper()
	h, err := gen.GenerateRange(c)
	if err != nil {
		t.Fatalf("GenerateRange(%+v): %v", c, err)
	}
	return h
}

// variants returns one configuration per workload variant (BlindW and
// BlindW mixed, RandomRMWRange with and without global scans) and deletes
// mode, with and without a populated initial state, all with base's sizes.
func variants(base gen.RangeConfig) []gen.RangeConfig {
	var out []gen.RangeConfig
	for _, w := range gen.RangeWorkloads() {
		for _, tomb := range []bool{false, true} {
			for _, pop := range []float64{0, 0.5} {
				c := base
				c.Workload, c.Tombstones, c.Populate = w, tomb, pop
				out = append(out, c)
				switch w {
				case gen.BlindW:
					c.BlindWMixed = true
					out = append(out, c)
				case gen.RandomRMWRange:
					c.GlobalScans = true
					out = append(out, c)
				}
			}
		}
	}
	return out
}

// name names c in test messages.
func name(c gen.RangeConfig) string {
	s := fmt.Sprintf("%s/%s/seed=%d", c.Workload, c.Mode, c.Seed)
	if c.Tombstones {
		s += "/tombstones"
	}
	if c.Populate > 0 {
		s += "/populated"
	}
	if c.BlindWMixed {
		s += "/mixed"
	}
	if c.GlobalScans {
		s += "/global-scans"
	}
	if c.Fault > 0 {
		s += fmt.Sprintf("/fault=%g", c.Fault)
	}
	return s
}

// small is the base of the histories the oracle checks: a few keys and
// short ranges so that transactions meet, short transactions so that some
// of them commit side by side in SI mode.
var small = gen.RangeConfig{Txns: 7, Sessions: 3, Keys: 5, Dist: workload.Uniform, Ops: 3, MinWidth: 1, MaxWidth: 4, MaxIter: 3}

func oracle(t *testing.T, h *history.History, id level.ID) bool {
	t.Helper()
	ok, err := reference.Check(h, id)
	if err != nil {
		t.Fatalf("reference.Check(%v): %v\n%s", id, err, history.Notation(h))
	}
	return ok
}

func committed(h *history.History) int {
	n := 0
	for i := range h.Txns {
		if h.Txns[i].Status == history.Committed {
			n++
		}
	}
	return n
}

// TestRangeSerialOracle: serial histories are strictly serializable,
// serializable and snapshot isolation per the brute-force oracle.
func TestRangeSerialOracle(t *testing.T) {
	base := small
	base.Mode = gen.Serial
	for _, c := range variants(base) {
		for seed := range uint64(6) {
			c.Seed = seed
			h := generateRange(t, c)
			if n := committed(h); n != c.Txns || n > reference.MaxTxns {
				t.Fatalf("%s: %d committed transactions", name(c), n)
			}
			for _, id := range []level.ID{level.StrictSerializable, level.Serializable, level.SnapshotIsolation} {
				if !oracle(t, h, id) {
					t.Errorf("%s: %v violated:\n%s", name(c), id, history.Notation(h))
				}
			}
		}
	}
}

// TestRangeSIOracle: snapshot-isolation histories satisfy SI per the
// oracle, and across seeds some are not serializable (for every workload
// whose transactions both read and write: Cobra's BlindW has only
// read-only and write-only transactions, which SI runs serializably).
func TestRangeSIOracle(t *testing.T) {
	base := small
	base.Mode, base.Txns = gen.SnapshotIsolation, 9
	for _, c := range variants(base) {
		seeds := uint64(60)
		if c.Tombstones || c.Populate > 0 {
			seeds = 15 // the variants share the concurrency; fewer seeds suffice
		}
		notSER, aborted := 0, 0
		for seed := range seeds {
			c.Seed = seed
			h := generateRange(t, c)
			aborted += len(h.Txns) - committed(h)
			if !oracle(t, h, level.SnapshotIsolation) {
				t.Errorf("%s: snapshot isolation violated:\n%s", name(c), history.Notation(h))
				continue
			}
			if !oracle(t, h, level.Serializable) {
				notSER++
			}
		}
		canSkew := c.Workload != gen.BlindW || c.BlindWMixed
		if canSkew && seeds == 60 && notSER == 0 {
			t.Errorf("%s: none of %d SI histories is non-serializable", name(c), seeds)
		}
		if aborted == 0 {
			t.Errorf("%s: first-committer-wins never aborted a transaction in %d histories", name(c), seeds)
		}
		t.Logf("%s: %d of %d not serializable, %d aborted", name(c), notSER, seeds, aborted)
	}
}

// TestRangeFaults: with faults, serial histories violate serializability
// for a good share of seeds; and a faulty history is the clean one with
// only results changed.
func TestRangeFaults(t *testing.T) {
	for _, w := range gen.RangeWorkloads() {
		c := small
		c.Workload, c.Mode, c.Fault = w, gen.Serial, 1
		violations := 0
		const seeds = 20
		for seed := range uint64(seeds) {
			c.Seed = seed
			h := generateRange(t, c)
			if !oracle(t, h, level.StrictSerializable) {
				violations++
			}
		}
		if violations < seeds*3/4 {
			t.Errorf("%s: faults in every transaction, yet only %d of %d histories violate strict serializability", w, violations, seeds)
		}
		t.Logf("%s: %d of %d serial histories with faults violate strict serializability", w, violations, seeds)
	}
	for _, c := range variants(gen.RangeConfig{Txns: 2000, Sessions: 6, Keys: 200, Dist: workload.Uniform, Seed: 9}) {
		for _, m := range []gen.Mode{gen.Serial, gen.SnapshotIsolation} {
			c.Mode, c.Fault = m, 0
			clean := generateRange(t, c)
			c.Fault = 0.1
			faulty := generateRange(t, c)
			diff := sameBut(t, name(c), clean, faulty)
			// Every transaction with a read or a non-empty range result
			// gets a fault with probability 0.1, and a fault always
			// changes a result.
			want := 0.1 * float64(observing(clean))
			if d := float64(diff); d < 0.7*want || d > 1.3*want {
				t.Errorf("%s: %d of %d transactions differ, want about %.0f", name(c), diff, c.Txns, want)
			}
		}
	}
}

// observing counts the transactions with a read or a non-empty range
// result: those a fault can corrupt.
func observing(h *history.History) int {
	n := 0
	for i := range h.Txns {
		if slices.ContainsFunc(h.Txns[i].Ops, func(op history.Op) bool {
			return op.Kind == history.Read || op.Kind.IsRange() && len(op.Range.Pairs) > 0
		}) {
			n++
		}
	}
	return n
}

// sameBut checks that a and b have the same transactions up to the
// results of reads, scans and iterators, and returns how many differ.
func sameBut(t *testing.T, what string, a, b *history.History) int {
	t.Helper()
	if len(a.Txns) != len(b.Txns) {
		t.Fatalf("%s: %d and %d transactions", what, len(a.Txns), len(b.Txns))
	}
	diff := 0
	for i := range a.Txns {
		x, y := &a.Txns[i], &b.Txns[i]
		if x.Status != y.Status || x.Begin != y.Begin || x.End != y.End || len(x.Ops) != len(y.Ops) ||
			a.Sessions[x.Session] != b.Sessions[y.Session] {
			t.Fatalf("%s: transaction %d differs beyond its results", what, i+1)
		}
		changed := 0
		for j := range x.Ops {
			p, q := &x.Ops[j], &y.Ops[j]
			if p.Kind != q.Kind {
				t.Fatalf("%s: transaction %d, op %d: %v and %v", what, i+1, j, p.Kind, q.Kind)
			}
			switch p.Kind {
			case history.Read:
				if a.Keys[p.Key] != b.Keys[q.Key] {
					t.Fatalf("%s: transaction %d, op %d reads other keys", what, i+1, j)
				}
				if p.Value != q.Value {
					changed++
				}
			case history.Write, history.Delete:
				if a.Keys[p.Key] != b.Keys[q.Key] || p.Value != q.Value {
					t.Fatalf("%s: transaction %d, op %d writes differently", what, i+1, j)
				}
			default:
				if p.Range.Lo != q.Range.Lo || p.Range.Hi != q.Range.Hi || p.Range.HiOpen != q.Range.HiOpen {
					t.Fatalf("%s: transaction %d, op %d has other bounds", what, i+1, j)
				}
				if !slices.Equal(pairs(a, p.Range.Pairs), pairs(b, q.Range.Pairs)) {
					changed++
				}
			}
		}
		if changed > 1 {
			t.Fatalf("%s: transaction %d has %d corrupted results, want at most one", what, i+1, changed)
		}
		diff += changed
	}
	return diff
}

func pairs(h *history.History, ps []history.KV) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = h.KeyName(p.Key) + "=" + p.Value.String()
	}
	return out
}

// TestRangeRoundTrip: every history reads back from the native format as
// it was generated.
func TestRangeRoundTrip(t *testing.T) {
	for _, c := range variants(gen.RangeConfig{Txns: 300, Sessions: 5, Keys: 60, Dist: workload.Zipfian, Seed: 4}) {
		for _, m := range []gen.Mode{gen.Serial, gen.SnapshotIsolation} {
			for _, fault := range []float64{0, 0.2} {
				c.Mode, c.Fault = m, fault
				h := generateRange(t, c)
				var buf bytes.Buffer
				if err := native.Write(&buf, h); err != nil {
					t.Fatalf("%s: write: %v", name(c), err)
				}
				text := buf.String()
				back, err := native.Read(strings.NewReader(text), "h.jsonl")
				if err != nil {
					t.Fatalf("%s: read back: %v", name(c), err)
				}
				sameHistory(t, name(c), h, back)
				buf.Reset()
				if err := native.Write(&buf, back); err != nil || buf.String() != text {
					t.Errorf("%s: writing the history read back gives other text (%v)", name(c), err)
				}
			}
		}
	}
}

// sameHistory compares everything a history holds but the input lines and
// name the reader records.
func sameHistory(t *testing.T, what string, want, got *history.History) {
	t.Helper()
	if !reflect.DeepEqual(want.Header, got.Header) {
		t.Errorf("%s: header %+v, read back %+v", what, want.Header, got.Header)
	}
	if !slices.Equal(want.Keys, got.Keys) || !slices.Equal(want.Sessions, got.Sessions) {
		t.Errorf("%s: keys or sessions differ when read back", what)
	}
	if len(want.Txns) != len(got.Txns) {
		t.Fatalf("%s: %d transactions, read back %d", what, len(want.Txns), len(got.Txns))
	}
	for i := range want.Txns {
		w, g := want.Txns[i], got.Txns[i]
		g.Line = 0
		if !reflect.DeepEqual(w, g) {
			t.Fatalf("%s: transaction %d\n  generated %s\n  read back %s", what, i+1,
				history.Notation(&history.History{Txns: []history.Txn{w}, Keys: want.Keys, Sessions: want.Sessions}),
				history.Notation(&history.History{Txns: []history.Txn{g}, Keys: got.Keys, Sessions: got.Sessions}))
		}
	}
}

func TestRangeDeterministic(t *testing.T) {
	for _, c := range variants(gen.RangeConfig{Txns: 500, Sessions: 4, Keys: 40, Dist: workload.Hotspot, Fault: 0.1, Seed: 11}) {
		for _, m := range []gen.Mode{gen.Serial, gen.SnapshotIsolation} {
			c.Mode = m
			a, b := generateRange(t, c), generateRange(t, c)
			if !reflect.DeepEqual(a, b) {
				t.Errorf("%s: two runs differ", name(c))
			}
			c.Seed++
			if d := generateRange(t, c); reflect.DeepEqual(a.Txns, d.Txns) {
				t.Errorf("%s: seeds %d and %d give the same history", name(c), c.Seed-1, c.Seed)
			}
			c.Seed--
		}
	}
}

// TestRangeReplay re-executes larger histories independently of the
// generator: serial ones one transaction after another, SI ones each
// against the state committed when it began, with first-committer-wins
// at its end. Every read, scan and iterator must return what that state
// holds, and every abort must be a first-committer-wins conflict.
func TestRangeReplay(t *testing.T) {
	for _, c := range variants(gen.RangeConfig{Txns: 3000, Sessions: 8, Keys: 300, Dist: workload.Zipfian, Seed: 5}) {
		for _, m := range []gen.Mode{gen.Serial, gen.SnapshotIsolation} {
			c.Mode = m
			h := generateRange(t, c)
			if err := replay(h, c); err != nil {
				t.Errorf("%s: %v", name(c), err)
			}
		}
	}
}

// replayer holds the committed state of a replay.
type replayer struct {
	h      *history.History
	tomb   bool
	sorted []history.KeyID // keys in key order
	// state is each key's committed state; lastCommit the instant of the
	// last commit that wrote it.
	state      []kstate
	lastCommit []int64
}

// kstate is a key's state: present with a value, present as a tombstone
// (a null value), or absent.
type kstate struct {
	v       history.Value
	present bool
}

func replay(h *history.History, c gen.RangeConfig) error {
	if err := structure(h, c); err != nil {
		return err
	}
	r := &replayer{h: h, tomb: h.Header.Deletes == history.TombstoneDeletes,
		state: make([]kstate, len(h.Keys)), lastCommit: make([]int64, len(h.Keys))}
	for k := range h.Keys {
		r.sorted = append(r.sorted, history.KeyID(k))
	}
	slices.SortFunc(r.sorted, func(a, b history.KeyID) int { return history.Compare(h.Keys[a], h.Keys[b]) })
	for k, v := range h.Header.Initial.Values {
		r.state[k] = kstate{v, true}
	}
	if c.Mode == gen.Serial {
		for i := range h.Txns {
			t := &h.Txns[i]
			if t.Status != history.Committed {
				return fmt.Errorf("serial transaction %v is %v", t.ID, t.Status)
			}
			own, err := r.run(t)
			if err != nil {
				return err
			}
			r.apply(own, t.End)
		}
		return nil
	}
	// SI: begins and ends in instant order, ends first at equal instants
	// (the generator never makes a begin and an end equal).
	type event struct {
		at  int64
		end bool
		i   int
	}
	var evs []event
	for i := range h.Txns {
		evs = append(evs, event{h.Txns[i].Begin, false, i}, event{h.Txns[i].End, true, i})
	}
	slices.SortFunc(evs, func(a, b event) int {
		if a.at != b.at {
			if a.at < b.at {
				return -1
			}
			return 1
		}
		if a.end != b.end {
			if a.end {
				return -1
			}
			return 1
		}
		return a.i - b.i
	})
	owns := make([]map[history.KeyID]kstate, len(h.Txns))
	for _, e := range evs {
		t := &h.Txns[e.i]
		if !e.end {
			own, err := r.run(t)
			if err != nil {
				return err
			}
			owns[e.i] = own
			continue
		}
		conflict := false
		for k := range owns[e.i] {
			if r.lastCommit[k] > t.Begin {
				conflict = true
			}
		}
		if conflict != (t.Status == history.Aborted) {
			return fmt.Errorf("transaction %v is %v, but a first-committer-wins conflict is %v", t.ID, t.Status, conflict)
		}
		if !conflict {
			r.apply(owns[e.i], t.End)
		}
		owns[e.i] = nil
	}
	return nil
}

// run checks t's observations against the committed state and its own
// writes, and returns those writes.
func (r *replayer) run(t *history.Txn) (map[history.KeyID]kstate, error) {
	own := map[history.KeyID]kstate{}
	at := func(k history.KeyID) kstate {
		if s, ok := own[k]; ok {
			return s
		}
		return r.state[k]
	}
	for j, op := range t.Ops {
		switch op.Kind {
		case history.Write:
			own[op.Key] = kstate{op.Value, true}
		case history.Delete:
			own[op.Key] = kstate{history.NullValue, r.tomb}
		case history.Read:
			if got := at(op.Key).v; got != op.Value {
				return nil, fmt.Errorf("transaction %v, op %d: read %s=%v, state holds %v", t.ID, j, r.h.KeyName(op.Key), op.Value, got)
			}
		case history.Scan, history.Iter:
			var want []history.KV
			from, _ := slices.BinarySearchFunc(r.sorted, op.Range.Lo, func(k history.KeyID, lo history.Value) int {
				return history.Compare(r.h.Keys[k], lo)
			})
			for _, k := range r.sorted[from:] {
				if !op.Range.HiOpen && history.Compare(r.h.Keys[k], op.Range.Hi) >= 0 {
					break
				}
				if s := at(k); s.present {
					want = append(want, history.KV{Key: k, Value: s.v})
				}
			}
			got := op.Range.Pairs
			if op.Kind == history.Iter {
				if len(got) == 0 && len(want) > 0 {
					return nil, fmt.Errorf("transaction %v, op %d: an iterator over a non-empty range returned nothing", t.ID, j)
				}
				want = want[:min(len(want), len(got))]
			}
			if !slices.Equal(want, got) {
				return nil, fmt.Errorf("transaction %v, op %d: %s returned %v, state holds %v", t.ID, j, op.Kind, pairs(r.h, got), pairs(r.h, want))
			}
		default:
			return nil, fmt.Errorf("transaction %v, op %d: unexpected %v", t.ID, j, op.Kind)
		}
	}
	return own, nil
}

func (r *replayer) apply(own map[history.KeyID]kstate, at int64) {
	for k, s := range own {
		r.state[k] = s
		r.lastCommit[k] = at
	}
}

// structure checks what every generated history must look like: the
// header, ids 1..n, the sessions, instants, operation counts and shapes,
// range bounds and iterator lengths.
func structure(h *history.History, c gen.RangeConfig) error {
	hd := &h.Header
	unique := c.Values == gen.UniqueValues || c.Values == gen.DefaultValues && (c.Workload == gen.BlindW || c.Workload == gen.RandomRMWRange)
	if !hd.Present || hd.Version != 1 || hd.UniqueValues != unique || (hd.Deletes == history.TombstoneDeletes) != c.Tombstones ||
		!strings.Contains(hd.Source, c.Workload.String()) || (len(hd.Initial.Values) > 0) != (c.Populate > 0) {
		return fmt.Errorf("header %+v", *hd)
	}
	if len(h.Txns) != c.Txns || len(h.Sessions) > c.Sessions {
		return fmt.Errorf("%d transactions in %d sessions", len(h.Txns), len(h.Sessions))
	}
	ops := c.Ops
	if ops == 0 {
		ops = gen.DefaultRangeOps
	}
	maxIter := c.MaxIter
	if maxIter == 0 {
		maxIter = gen.DefaultMaxIter
	}
	minW, maxW := c.MinWidth, c.MaxWidth
	if minW == 0 {
		minW = gen.DefaultMinWidth
	}
	if maxW == 0 {
		maxW = max(gen.DefaultMaxWidth, minW)
	}
	lastEnd := make([]int64, len(h.Sessions))
	for i := range h.Txns {
		t := &h.Txns[i]
		if t.ID != history.IntValue(int64(i+1)) || !t.HasTime || t.Begin >= t.End || t.Begin < gen.StartInstant ||
			i > 0 && t.End < h.Txns[i-1].End || t.Begin <= lastEnd[t.Session] {
			return fmt.Errorf("transaction %d: id %v, instants %d-%d", i, t.ID, t.Begin, t.End)
		}
		if c.Mode == gen.Serial && i > 0 && t.Begin <= h.Txns[i-1].End {
			return fmt.Errorf("serial transaction %v overlaps its predecessor", t.ID)
		}
		lastEnd[t.Session] = t.End
		// A read-modify-write is one logical operation recorded as two,
		// and so is a global scan followed by its range scan; a plain
		// read followed by a plain write of the same key looks like a
		// read-modify-write, hence bounds rather than a count.
		n, pairs, reads, writes := 0, 0, 0, 0
		for j, op := range t.Ops {
			switch op.Kind {
			case history.Read:
				reads++
				n++
			case history.Write:
				writes++
				n++
				if j > 0 && t.Ops[j-1].Kind == history.Read && t.Ops[j-1].Key == op.Key {
					pairs++
				} else if c.Workload == gen.RandomRMWRange {
					return fmt.Errorf("transaction %v: a blind write in RandomRMWRange", t.ID)
				}
				if op.Value.Kind != history.Int || op.Value.N < 1 || !unique && op.Value.N > gen.DefaultValueDomain {
					return fmt.Errorf("transaction %v writes %v", t.ID, op.Value)
				}
			case history.Delete:
				n++
			case history.Scan, history.Iter:
				rg := op.Range
				if rg.HiOpen {
					if !c.GlobalScans || c.Workload != gen.RandomRMWRange {
						return fmt.Errorf("transaction %v: an unbounded range", t.ID)
					}
					if j+1 == len(t.Ops) || t.Ops[j+1].Kind != history.Scan || t.Ops[j+1].Range.HiOpen || rg.Lo != history.IntValue(0) {
						return fmt.Errorf("transaction %v: a global scan not followed by a range scan", t.ID)
					}
				} else {
					n++
					if w := rg.Hi.N - rg.Lo.N; rg.Lo.Kind != history.Int || rg.Hi.Kind != history.Int || w < int64(minW) || w > int64(maxW) {
						return fmt.Errorf("transaction %v: range [%v, %v)", t.ID, rg.Lo, rg.Hi)
					}
				}
				if op.Kind == history.Iter && (c.Workload != gen.RandomBench || len(rg.Pairs) > maxIter) {
					return fmt.Errorf("transaction %v: an iterator of %d pairs", t.ID, len(rg.Pairs))
				}
				if c.Workload == gen.BlindW {
					return fmt.Errorf("transaction %v: a range operation in BlindW", t.ID)
				}
				if rg.Pairs != nil && len(rg.Pairs) == 0 {
					return fmt.Errorf("transaction %v: an empty non-nil result", t.ID)
				}
			}
		}
		lo := n - pairs
		switch c.Workload {
		case gen.BlindW:
			lo = n
		case gen.RandomRMWRange:
			lo = n - writes
		}
		if ops < lo || ops > n {
			return fmt.Errorf("transaction %v has %d to %d logical operations, want %d", t.ID, lo, n, ops)
		}
		if c.Workload == gen.BlindW && !c.BlindWMixed && reads != 0 && writes != 0 {
			return fmt.Errorf("transaction %v both reads and writes in BlindW", t.ID)
		}
	}
	return nil
}

// TestRangeMix counts the operations of large histories against each
// workload's percentages.
func TestRangeMix(t *testing.T) {
	type counts struct{ read, write, rmw, del, scan, iter, global, readOnly, writeOnly float64 }
	cases := []struct {
		c    gen.RangeConfig
		want counts // shares of the logical operations (of the transactions for readOnly, writeOnly)
	}{
		{gen.RangeConfig{Workload: gen.RandomBench}, counts{read: .25, write: .25, rmw: .25, del: .05, scan: .10, iter: .10}},
		{gen.RangeConfig{Workload: gen.RandomRange}, counts{read: .25, write: .25, rmw: .25, del: .05, scan: .20}},
		{gen.RangeConfig{Workload: gen.RandomRMWRange}, counts{rmw: .90, scan: .10}},
		{gen.RangeConfig{Workload: gen.RandomRMWRange, GlobalScans: true}, counts{rmw: .90, scan: .10, global: .10}},
		{gen.RangeConfig{Workload: gen.BlindW}, counts{read: .5, write: .5, readOnly: .5, writeOnly: .5}},
		{gen.RangeConfig{Workload: gen.BlindW, BlindWMixed: true}, counts{read: .5, write: .5}},
	}
	for _, tc := range cases {
		c := tc.c
		c.Txns, c.Sessions, c.Keys, c.Dist, c.Seed = 10000, 4, 100000, workload.Uniform, 3
		if c.GlobalScans {
			// Every global scan returns every present key.
			c.Txns, c.Keys = 2000, 2000
		}
		h := generateRange(t, c)
		var got counts
		for i := range h.Txns {
			ops := h.Txns[i].Ops
			reads, writes := 0, 0
			for j, op := range ops {
				switch op.Kind {
				case history.Read:
					// A read-modify-write's read is counted with its write.
					if j+1 == len(ops) || ops[j+1].Kind != history.Write || ops[j+1].Key != op.Key || c.Workload == gen.BlindW {
						got.read++
					}
					reads++
				case history.Write:
					if j > 0 && ops[j-1].Kind == history.Read && ops[j-1].Key == op.Key && c.Workload != gen.BlindW {
						got.rmw++
					} else {
						got.write++
					}
					writes++
				case history.Delete:
					got.del++
				case history.Scan:
					if op.Range.HiOpen {
						got.global++
					} else {
						got.scan++
					}
				case history.Iter:
					got.iter++
				}
			}
			if writes == 0 {
				got.readOnly++
			}
			if reads == 0 {
				got.writeOnly++
			}
		}
		n := float64(c.Txns * gen.DefaultRangeOps)
		g := []float64{got.read / n, got.write / n, got.rmw / n, got.del / n, got.scan / n, got.iter / n, got.global / n}
		w := []float64{tc.want.read, tc.want.write, tc.want.rmw, tc.want.del, tc.want.scan, tc.want.iter, tc.want.global}
		if c.Workload == gen.BlindW && !c.BlindWMixed {
			g = append(g, got.readOnly/float64(c.Txns), got.writeOnly/float64(c.Txns))
			w = append(w, tc.want.readOnly, tc.want.writeOnly)
		}
		for i := range g {
			// A read of a key the same transaction then writes blindly
			// counts as a read-modify-write: a little slack.
			if d := g[i] - w[i]; d > 0.01 || d < -0.01 {
				t.Errorf("%s: shares %.3f, want %.3f", name(c), g, w)
				break
			}
		}
	}
}

// TestRangeValues: repeated values repeat and stay in the domain; unique
// ones are unique (native.Read verifies the header's promise).
func TestRangeValues(t *testing.T) {
	for _, tc := range []struct {
		c      gen.RangeConfig
		unique bool
	}{
		{gen.RangeConfig{Workload: gen.RandomBench}, false},
		{gen.RangeConfig{Workload: gen.RandomRange, Values: gen.UniqueValues}, true},
		{gen.RangeConfig{Workload: gen.BlindW}, true},
		{gen.RangeConfig{Workload: gen.BlindW, Values: gen.RepeatedValues, ValueDomain: 3}, false},
		{gen.RangeConfig{Workload: gen.RandomRMWRange, Populate: 1}, true},
	} {
		c := tc.c
		c.Txns, c.Sessions, c.Keys, c.Mode, c.Seed = 2000, 6, 50, gen.SnapshotIsolation, 8
		h := generateRange(t, c)
		if h.Header.UniqueValues != tc.unique {
			t.Errorf("%s: header promises unique values: %v", name(c), h.Header.UniqueValues)
		}
		seen := map[[2]int64]bool{}
		dup := false
		for _, v := range h.Header.Initial.Values {
			if v.Kind != history.Int || v.N < 1 {
				t.Errorf("%s: initial value %v", name(c), v)
			}
		}
		for i := range h.Txns {
			for _, op := range h.Txns[i].Ops {
				if op.Kind != history.Write {
					continue
				}
				if !tc.unique && op.Value.N > int64(max(c.ValueDomain, gen.DefaultValueDomain)) {
					t.Fatalf("%s: value %v outside the domain", name(c), op.Value)
				}
				kv := [2]int64{int64(op.Key), op.Value.N}
				dup = dup || seen[kv]
				seen[kv] = true
			}
		}
		if dup == tc.unique {
			t.Errorf("%s: values repeat: %v", name(c), dup)
		}
		var buf bytes.Buffer
		if err := native.Write(&buf, h); err != nil {
			t.Fatal(err)
		}
		if _, err := native.Read(&buf, "h"); err != nil {
			t.Errorf("%s: %v", name(c), err)
		}
	}
}

// TestRangeTombstones: tombstone histories show deleted keys to range
// operations as [k, null]; physical ones never return a null pair.
func TestRangeTombstones(t *testing.T) {
	for _, tomb := range []bool{false, true} {
		c := gen.RangeConfig{Workload: gen.RandomBench, Txns: 2000, Sessions: 4, Keys: 30, Tombstones: tomb, Seed: 2}
		h := generateRange(t, c)
		nulls := 0
		for i := range h.Txns {
			for _, op := range h.Txns[i].Ops {
				if op.Kind.IsRange() {
					for _, p := range op.Range.Pairs {
						if p.Value.IsNull() {
							nulls++
						}
					}
				}
			}
		}
		if (nulls > 0) != tomb {
			t.Errorf("tombstones %v: %d null pairs", tomb, nulls)
		}
	}
}

// TestRangeLarge: the benchmark sizes generate and look right; 50,000
// BlindW transactions in SI mode replay correctly.
func TestRangeLarge(t *testing.T) {
	c := gen.RangeConfig{Workload: gen.BlindW, Mode: gen.SnapshotIsolation, Txns: 50000, Sessions: 24, Keys: 10000, Dist: workload.Uniform, Seed: 1}
	h := generateRange(t, c)
	if err := replay(h, c); err != nil {
		t.Fatal(err)
	}
	st := h.Stats()
	if st.Aborted == 0 || st.Aborted > st.Transactions/10 || st.Operations != 8*c.Txns {
		t.Errorf("stats %+v", st)
	}
	c = gen.RangeConfig{Workload: gen.RandomBench, Mode: gen.SnapshotIsolation, Txns: 10000, Sessions: 24, Keys: 1000, Dist: workload.Uniform, Tombstones: true, Seed: 1}
	if err := replay(generateRange(t, c), c); err != nil {
		t.Fatal(err)
	}
}

func TestRangeConfigErrors(t *testing.T) {
	ok := gen.RangeConfig{Txns: 1, Sessions: 1, Keys: 1}
	if _, err := gen.GenerateRange(ok); err != nil {
		t.Fatalf("minimal config: %v", err)
	}
	for _, bad := range []func(*gen.RangeConfig){
		func(c *gen.RangeConfig) { c.Txns = -1 },
		func(c *gen.RangeConfig) { c.Sessions = 0 },
		func(c *gen.RangeConfig) { c.Keys = 0 },
		func(c *gen.RangeConfig) { c.Ops = -1 },
		func(c *gen.RangeConfig) { c.MinWidth, c.MaxWidth = 5, 3 },
		func(c *gen.RangeConfig) { c.MaxIter = -2 },
		func(c *gen.RangeConfig) { c.ValueDomain = -1 },
		func(c *gen.RangeConfig) { c.Populate = 1.5 },
		func(c *gen.RangeConfig) { c.Fault = -0.1 },
		func(c *gen.RangeConfig) { c.Workload = 99 },
		func(c *gen.RangeConfig) { c.Mode = 7 },
		func(c *gen.RangeConfig) { c.Values = 9 },
	} {
		c := ok
		bad(&c)
		if _, err := gen.GenerateRange(c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	for _, w := range gen.RangeWorkloads() {
		for _, s := range []string{w.String(), strings.ToUpper(w.String())} {
			if got, err := gen.ParseRangeWorkload(s); err != nil || got != w {
				t.Errorf("ParseRangeWorkload(%q) = %v, %v", s, got, err)
			}
		}
	}
	if w, err := gen.ParseRangeWorkload("Random-RMW-Range"); err != nil || w != gen.RandomRMWRange {
		t.Errorf("ParseRangeWorkload(Random-RMW-Range) = %v, %v", w, err)
	}
	if _, err := gen.ParseRangeWorkload("mt"); err == nil || err.Error() != `unknown workload "mt" (randombench, randomrange, randomrmwrange, blindw)` {
		t.Errorf("mt is not a range workload: %v", err)
	}
}

func BenchmarkGenerateRange(b *testing.B) {
	for _, c := range []gen.RangeConfig{
		{Workload: gen.BlindW, Mode: gen.SnapshotIsolation, Txns: 50000, Sessions: 24, Keys: 10000},
		{Workload: gen.RandomBench, Mode: gen.SnapshotIsolation, Txns: 10000, Sessions: 24, Keys: 1000},
		{Workload: gen.RandomRange, Mode: gen.Serial, Txns: 10000, Sessions: 24, Keys: 1000},
		{Workload: gen.RandomRMWRange, Mode: gen.SnapshotIsolation, Txns: 10000, Sessions: 24, Keys: 10000},
	} {
		b.Run(fmt.Sprintf("%s-%s-%d", c.Workload, c.Mode, c.Txns), func(b *testing.B) {
			for b.Loop() {
				if _, err := gen.GenerateRange(c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
