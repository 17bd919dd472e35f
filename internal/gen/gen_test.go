package gen

import (
	"reflect"
	"slices"
	"testing"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/workload"
)

func generate(t testing.TB, c Config) (*history.History, []Planted) {
	t.Helper()
	h, p, err := Generate(c)
	if err != nil {
		t.Fatalf("Generate(%+v): %v", c, err)
	}
	return h, p
}

// configs covers both modes and every distribution, with and without
// plants and aborts.
func configs() []Config {
	var out []Config
	for _, m := range []Mode{Serial, SnapshotIsolation} {
		for _, d := range workload.Distributions() {
			out = append(out,
				Config{Txns: 3000, Sessions: 8, Keys: 50, Dist: d, Mode: m, ReadOnlyRatio: 0.2, Seed: 7},
				Config{Txns: 3000, Sessions: 5, Keys: 3, Dist: d, Mode: m, ReadOnlyRatio: 0.5, AbortRatio: 0.1, Seed: 8,
					Plant: PlantableKinds()},
			)
		}
	}
	return out
}

func TestDeterministic(t *testing.T) {
	for _, m := range []Mode{Serial, SnapshotIsolation} {
		c := Config{Txns: 5000, Sessions: 6, Keys: 100, Dist: workload.Zipfian, Mode: m, ReadOnlyRatio: 0.2,
			AbortRatio: 0.05, Seed: 42, Plant: []anomaly.Kind{anomaly.LostUpdate, anomaly.WriteSkew, anomaly.LostUpdate}}
		h1, p1 := generate(t, c)
		h2, p2 := generate(t, c)
		if !reflect.DeepEqual(h1, h2) || !reflect.DeepEqual(p1, p2) {
			t.Errorf("%s: two runs with seed %d differ", m, c.Seed)
		}
		c.Seed++
		h3, _ := generate(t, c)
		if reflect.DeepEqual(h1.Txns, h3.Txns) {
			t.Errorf("%s: seeds %d and %d give the same history", m, c.Seed-1, c.Seed)
		}
	}
}

func TestHeaderAndIDs(t *testing.T) {
	for _, c := range configs() {
		h, _ := generate(t, c)
		if !h.Header.Present || !h.Header.UniqueValues || len(h.Header.Initial.Values) != 0 {
			t.Errorf("header %+v: want present, unique values, absent initial state", h.Header)
		}
		if want := c.Txns + plantedTxns(c.Plant); len(h.Txns) != want {
			t.Errorf("%d transactions, want %d", len(h.Txns), want)
		}
		for i := range h.Txns {
			tx := &h.Txns[i]
			if tx.ID != history.IntValue(int64(i+1)) {
				t.Fatalf("transaction %d has id %v", i, tx.ID)
			}
			if !tx.HasTime || tx.Begin < StartInstant || tx.Begin >= tx.End {
				t.Fatalf("transaction %v: instants %d-%d", tx.ID, tx.Begin, tx.End)
			}
			if i > 0 && tx.End < h.Txns[i-1].End {
				t.Fatalf("transaction %v ends before its predecessor in file order", tx.ID)
			}
		}
		for k, v := range h.Keys {
			if v.Kind != history.Int {
				t.Fatalf("key %d is %v, want an integer", k, v)
			}
		}
	}
}

func plantedTxns(kinds []anomaly.Kind) int {
	n := 0
	for _, k := range kinds {
		n += len(patternOf(k).txns)
	}
	return n
}

// isMT reports whether ops form a mini-transaction: one or two reads, at
// most two writes, each write preceded by a read of its key, one or two
// distinct keys.
func isMT(ops []history.Op) bool {
	reads, writes := 0, 0
	var keys []history.KeyID
	for i, op := range ops {
		switch op.Kind {
		case history.Read:
			reads++
		case history.Write:
			writes++
			if !slices.ContainsFunc(ops[:i], func(p history.Op) bool { return p.Kind == history.Read && p.Key == op.Key }) {
				return false
			}
		default:
			return false
		}
		if !slices.Contains(keys, op.Key) {
			keys = append(keys, op.Key)
		}
	}
	return reads >= 1 && reads <= 2 && writes <= 2 && len(keys) <= 2
}

func TestMiniTransactions(t *testing.T) {
	for _, c := range configs() {
		h, _ := generate(t, c)
		for i := range h.Txns {
			if !isMT(h.Txns[i].Ops) {
				t.Fatalf("%s/%s: transaction %s is not a mini-transaction", c.Mode, c.Dist,
					history.Notation(&history.History{Txns: h.Txns[i : i+1], Keys: h.Keys, Sessions: h.Sessions}))
			}
		}
	}
}

func TestUniqueValues(t *testing.T) {
	for _, c := range configs() {
		h, _ := generate(t, c)
		if ix := history.NewIndex(h); !ix.Unique() {
			k, v, refs := ix.Duplicate()
			t.Errorf("%s/%s: %s=%v written twice (%v)", c.Mode, c.Dist, h.KeyName(k), v, refs)
		}
	}
}

func TestSessionOrder(t *testing.T) {
	for _, c := range configs() {
		h, _ := generate(t, c)
		lastEnd := make([]int64, len(h.Sessions))
		for i := range h.Txns {
			tx := &h.Txns[i]
			label := h.Sessions[tx.Session].N
			if prev := lastEnd[tx.Session]; prev != 0 {
				// A workload session runs one transaction at a time; a
				// planted one only needs its ends in order.
				if label < int64(c.Sessions) && tx.Begin <= prev || tx.End <= prev {
					t.Fatalf("%s/%s: transaction %v of session %d runs before its predecessor ended", c.Mode, c.Dist, tx.ID, label)
				}
			}
			lastEnd[tx.Session] = tx.End
		}
	}
}

func TestSerialInstants(t *testing.T) {
	for _, d := range workload.Distributions() {
		h, _ := generate(t, Config{Txns: 5000, Sessions: 10, Keys: 100, Dist: d, Mode: Serial, ReadOnlyRatio: 0.3, AbortRatio: 0.1, Seed: 3})
		for i := 1; i < len(h.Txns); i++ {
			if h.Txns[i].Begin <= h.Txns[i-1].End {
				t.Fatalf("%s: transaction %v begins before %v ended", d, h.Txns[i].ID, h.Txns[i-1].ID)
			}
		}
	}
}

// TestSnapshotReads checks both databases' reads against a replay of the
// history: every read returns the value of the last committed write of its
// key that ended before the reader began; and no two committed
// transactions that write the same key overlap in time (first committer
// wins).
func TestSnapshotReads(t *testing.T) {
	for _, c := range configs() {
		if len(c.Plant) > 0 {
			continue
		}
		c.AbortRatio = 0.1
		h, _ := generate(t, c)
		// writes[k]: the committed writes of k in end order.
		type write struct {
			begin, end int64
			v          history.Value
		}
		writes := make([][]write, len(h.Keys))
		for i := range h.Txns {
			tx := &h.Txns[i]
			if tx.Status != history.Committed {
				continue
			}
			for _, op := range tx.Ops {
				if op.Kind == history.Write {
					writes[op.Key] = append(writes[op.Key], write{tx.Begin, tx.End, op.Value})
				}
			}
		}
		for k, ws := range writes {
			for i := 1; i < len(ws); i++ {
				if ws[i].begin < ws[i-1].end {
					t.Fatalf("%s/%s: concurrent committed writers of key %s", c.Mode, c.Dist, h.KeyName(history.KeyID(k)))
				}
			}
		}
		for i := range h.Txns {
			tx := &h.Txns[i]
			for _, op := range tx.Ops {
				if op.Kind != history.Read {
					continue
				}
				ws := writes[op.Key]
				j, _ := slices.BinarySearchFunc(ws, tx.Begin, func(w write, b int64) int {
					if w.end < b {
						return -1
					}
					return 1
				})
				want := history.NullValue
				if j > 0 {
					want = ws[j-1].v
				}
				if op.Value != want {
					t.Fatalf("%s/%s: transaction %v read %s=%v, want %v", c.Mode, c.Dist, tx.ID, h.KeyName(op.Key), op.Value, want)
				}
			}
		}
	}
}

func TestSINoAbortedReads(t *testing.T) {
	h, _ := generate(t, Config{Txns: 20000, Sessions: 24, Keys: 200, Dist: workload.Zipfian, Mode: SnapshotIsolation,
		ReadOnlyRatio: 0.2, AbortRatio: 0.1, Seed: 11})
	ix := history.NewIndex(h)
	aborted, conflicts := 0, 0
	for i := range h.Txns {
		tx := &h.Txns[i]
		if tx.Status == history.Aborted {
			aborted++
		}
		ix.ExternalReads(history.TxnID(i), func(_ int, op history.Op) {
			if op.Value.IsNull() {
				return
			}
			w, ok := ix.SoleWriter(op.Key, op.Value)
			if !ok {
				t.Fatalf("transaction %v read %s=%v, which no transaction wrote", tx.ID, h.KeyName(op.Key), op.Value)
			}
			if h.Txns[w.Txn].Status != history.Committed {
				t.Fatalf("transaction %v read %s=%v from aborted transaction %v", tx.ID, h.KeyName(op.Key), op.Value, h.Txns[w.Txn].ID)
			}
		})
	}
	// About 10% client aborts, plus the first-committer-wins losers.
	conflicts = aborted - len(h.Txns)/10
	t.Logf("%d of %d transactions aborted", aborted, len(h.Txns))
	if conflicts <= 0 {
		t.Errorf("no first-committer-wins aborts: %d aborted of %d", aborted, len(h.Txns))
	}
}

// TestSIWriteSkew checks that the snapshot-isolation database lets write
// skews happen: two concurrent committed transactions, each reading a key
// the other writes, with disjoint writes.
func TestSIWriteSkew(t *testing.T) {
	h, _ := generate(t, Config{Txns: 5000, Sessions: 8, Keys: 4, Dist: workload.Uniform, Mode: SnapshotIsolation, Seed: 5})
	ix := history.NewIndex(h)
	found := 0
	for i := range h.Txns {
		a := &h.Txns[i]
		if a.Status != history.Committed {
			continue
		}
		for j := i + 1; j < len(h.Txns) && h.Txns[j].Begin < a.End+1_000_000; j++ {
			b := &h.Txns[j]
			if b.Status != history.Committed || b.Begin > a.End || a.Begin > b.End {
				continue
			}
			if readsOverwritten(ix, a, b) && readsOverwritten(ix, b, a) {
				found++
			}
		}
	}
	t.Logf("%d write skews", found)
	if found == 0 {
		t.Error("no write skew in a contended snapshot-isolation history")
	}
}

// readsOverwritten reports whether a reads a key that b writes.
func readsOverwritten(_ *history.Index, a, b *history.Txn) bool {
	for _, r := range a.Ops {
		if r.Kind != history.Read {
			continue
		}
		for _, w := range b.Ops {
			if w.Kind == history.Write && w.Key == r.Key {
				return true
			}
		}
	}
	return false
}

func TestPlanted(t *testing.T) {
	for _, m := range []Mode{Serial, SnapshotIsolation} {
		for _, k := range PlantableKinds() {
			c := Config{Txns: 500, Sessions: 4, Keys: 20, Dist: workload.Hotspot, Mode: m, ReadOnlyRatio: 0.2, Seed: 9,
				Plant: []anomaly.Kind{k, k}}
			h, planted := generate(t, c)
			if len(planted) != 2 {
				t.Fatalf("%s: %d planted groups, want 2", k, len(planted))
			}
			checkPlanted(t, c, h, planted)
		}
		// All at once.
		c := Config{Txns: 2000, Sessions: 8, Keys: 100, Dist: workload.Zipfian, Mode: m, Seed: 10, Plant: PlantableKinds()}
		h, planted := generate(t, c)
		checkPlanted(t, c, h, planted)
	}
}

// checkPlanted checks every group: its transactions match the pattern, on
// fresh keys and sessions nobody else uses.
func checkPlanted(t *testing.T, c Config, h *history.History, planted []Planted) {
	t.Helper()
	if len(planted) != len(c.Plant) {
		t.Fatalf("%d planted groups for %d kinds", len(planted), len(c.Plant))
	}
	owner := map[history.TxnID]int{}
	keyOwner := map[history.KeyID]int{}
	sessOwner := map[int32]int{}
	for g, p := range planted {
		pat := patternOf(c.Plant[g])
		if p.Kind != c.Plant[g] || len(p.Txns) != len(pat.txns) {
			t.Fatalf("group %d: %s with %d transactions, want %s with %d", g, p.Kind, len(p.Txns), c.Plant[g], len(pat.txns))
		}
		keys := map[history.KeyID]history.KeyID{}
		sessions := map[int32]int32{}
		for j, id := range p.Txns {
			if j > 0 && id <= p.Txns[j-1] {
				t.Errorf("%s: transactions %v out of file order", p.Kind, p.Txns)
			}
			owner[id] = g
			got, want := &h.Txns[id], &pat.txns[j]
			if got.Status != want.Status || len(got.Ops) != len(want.Ops) {
				t.Fatalf("%s: transaction %v differs from the pattern", p.Kind, got.ID)
			}
			if s, ok := sessions[want.Session]; ok && s != got.Session || !ok && slices.Contains(slices.Collect(mapValues(sessions)), got.Session) {
				t.Fatalf("%s: sessions do not follow the pattern", p.Kind)
			}
			sessions[want.Session] = got.Session
			if h.Sessions[got.Session].N < int64(c.Sessions) {
				t.Errorf("%s: planted in workload session %v", p.Kind, h.Sessions[got.Session])
			}
			sessOwner[got.Session] = g
			for i, op := range got.Ops {
				w := want.Ops[i]
				if op.Kind != w.Kind || op.Value != w.Value {
					t.Fatalf("%s: operation %d of %v differs from the pattern", p.Kind, i, got.ID)
				}
				if k, ok := keys[w.Key]; ok && k != op.Key {
					t.Fatalf("%s: keys do not follow the pattern", p.Kind)
				}
				keys[w.Key] = op.Key
				if h.Keys[op.Key].N < int64(c.Keys) {
					t.Errorf("%s: planted on workload key %v", p.Kind, h.Keys[op.Key])
				}
				keyOwner[op.Key] = g
			}
		}
		// Real time: no group transaction precedes another, except in the
		// real-time violation, where the first precedes the second.
		for a := range p.Txns {
			for b := range p.Txns {
				ta, tb := &h.Txns[p.Txns[a]], &h.Txns[p.Txns[b]]
				precedes := ta.End < tb.Begin
				want := p.Kind == anomaly.RealTimeViolation && a == 0 && b == 1
				if precedes != want {
					t.Errorf("%s: transaction %v precedes %v in real time: %v", p.Kind, ta.ID, tb.ID, precedes)
				}
			}
		}
	}
	// Fresh keys and sessions: used by their group only.
	for i := range h.Txns {
		g, mine := owner[history.TxnID(i)]
		if og, ok := sessOwner[h.Txns[i].Session]; ok && (!mine || og != g) {
			t.Fatalf("transaction %v shares a planted session", h.Txns[i].ID)
		}
		for _, op := range h.Txns[i].Ops {
			if og, ok := keyOwner[op.Key]; ok && (!mine || og != g) {
				t.Fatalf("transaction %v touches planted key %s", h.Txns[i].ID, h.KeyName(op.Key))
			}
		}
	}
}

func mapValues[K comparable, V any](m map[K]V) func(func(V) bool) {
	return func(yield func(V) bool) {
		for _, v := range m {
			if !yield(v) {
				return
			}
		}
	}
}

func TestPlantable(t *testing.T) {
	for _, k := range anomaly.Kinds() {
		// Cycle has no pattern; the list anomalies need list-append
		// histories; the timestamp anomalies come from timestamp faults
		// (InjectTimestampFaults), not from planted groups.
		want := k != anomaly.Cycle && k != anomaly.IncompatibleOrder && k != anomaly.DuplicateElements &&
			k != anomaly.StaleRead && k != anomaly.ReadBeyondSnapshot && k != anomaly.ConcurrentWrite && k != anomaly.CommitBeforeStart
		if CanPlant(k) != want {
			t.Errorf("CanPlant(%s) = %v", k, !want)
		}
		if want {
			if _, err := history.Parse(patterns[k]); err != nil {
				t.Errorf("%s: %v", k, err)
			}
		}
	}
	if _, _, err := Generate(Config{Txns: 10, Sessions: 1, Keys: 1, Plant: []anomaly.Kind{anomaly.Cycle}}); err == nil {
		t.Error("planting a cycle succeeded")
	}
	// Only planted groups.
	h, p := generate(t, Config{Sessions: 1, Keys: 1, Plant: PlantableKinds()})
	if len(h.Txns) != plantedTxns(PlantableKinds()) || len(p) != len(PlantableKinds()) {
		t.Errorf("%d transactions, %d groups", len(h.Txns), len(p))
	}
}

func TestConfigErrors(t *testing.T) {
	good := Config{Txns: 10, Sessions: 2, Keys: 5}
	for _, bad := range []func(*Config){
		func(c *Config) { c.Txns = -1 },
		func(c *Config) { c.Sessions = 0 },
		func(c *Config) { c.Keys = 0 },
		func(c *Config) { c.Mode = 7 },
		func(c *Config) { c.Dist = 9 },
		func(c *Config) { c.ReadOnlyRatio = 1.5 },
		func(c *Config) { c.AbortRatio = -0.1 },
	} {
		c := good
		bad(&c)
		if _, _, err := Generate(c); err == nil {
			t.Errorf("Generate(%+v) succeeded", c)
		}
	}
	if _, _, err := Generate(good); err != nil {
		t.Errorf("Generate(%+v): %v", good, err)
	}
}

func BenchmarkGenerate(b *testing.B) {
	for _, m := range []Mode{Serial, SnapshotIsolation} {
		b.Run(m.String(), func(b *testing.B) {
			c := Config{Txns: 1_000_000, Sessions: 24, Keys: 10_000, Dist: workload.Zipfian, Mode: m, ReadOnlyRatio: 0.2, Seed: 1}
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := Generate(c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestGenerateGeneral(t *testing.T) {
	h, err := GenerateGeneral(GeneralConfig{Txns: 500, Sessions: 4, Keys: 50, Dist: workload.Zipfian, Ops: 8, ReadRatio: 0.5, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Txns) != 500 || !history.NewIndex(h).Unique() {
		t.Fatalf("%d txns, unique %v", len(h.Txns), history.NewIndex(h).Unique())
	}
	blind := 0
	for i := range h.Txns {
		if len(h.Txns[i].Ops) != 8 {
			t.Fatal("ops per transaction")
		}
		for j, op := range h.Txns[i].Ops {
			if op.Kind == history.Write && !slices.ContainsFunc(h.Txns[i].Ops[:j], func(p history.Op) bool { return p.Kind == history.Read && p.Key == op.Key }) {
				blind++
			}
		}
	}
	if blind == 0 {
		t.Error("a general workload has blind writes")
	}
	d, err := GenerateGeneral(GeneralConfig{Txns: 500, Sessions: 4, Keys: 50, Dist: workload.Uniform, Ops: 8, ReadRatio: 0.5, DuplicateKeys: 0.5, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if history.NewIndex(d).Unique() {
		t.Error("duplicate keys should repeat values")
	}
	if _, err := GenerateGeneral(GeneralConfig{Txns: 1, Sessions: 0, Keys: 1, Ops: 1}); err == nil {
		t.Error("bad config accepted")
	}
}

// TestCausalEmitSameHistory: the causal store's transactions handed to
// Emit one at a time are the transactions of the history it otherwise
// returns, for AWDIT's shapes (by events, geometric sizes, Pareto keys)
// and the fixed-size general one.
func TestCausalEmitSameHistory(t *testing.T) {
	for _, c := range []CausalConfig{
		{Events: 5000, Sessions: 71, Keys: 8, Ops: 5, ReadRatio: 0.8, Sync: 0.3, Seed: 4, Geometric: true, Pareto: workload.AWDITAlpha},
		{Events: 3001, Sessions: 5, Keys: 400, Ops: 28, ReadRatio: 0.8, Sync: 0.3, Stale: 0.05, Seed: 5, Geometric: true, Pareto: workload.AWDITAlpha},
		{Txns: 300, Sessions: 6, Keys: 50, Dist: workload.Zipfian, Ops: 4, ReadRatio: 0.5, Sync: 0.3, Seed: 6},
	} {
		whole, err := GenerateCausal(c)
		if err != nil {
			t.Fatal(err)
		}
		var got []history.Txn
		c.Emit = func(_ *history.History, tx *history.Txn) error {
			cp := *tx
			cp.Ops = slices.Clone(tx.Ops)
			got = append(got, cp)
			return nil
		}
		streamed, err := GenerateCausal(c)
		if err != nil {
			t.Fatal(err)
		}
		if len(streamed.Txns) != 0 {
			t.Fatalf("%+v: the streamed history holds %d transactions", c, len(streamed.Txns))
		}
		if len(got) != len(whole.Txns) {
			t.Fatalf("%+v: %d transactions emitted, %d generated", c, len(got), len(whole.Txns))
		}
		ops := 0
		for i := range got {
			a, b := got[i], whole.Txns[i]
			ops += len(b.Ops)
			if a.ID != b.ID || a.Session != b.Session || a.Begin != b.Begin || a.End != b.End || !reflect.DeepEqual(a.Ops, b.Ops) {
				t.Fatalf("%+v: transaction %d differs:\n%+v\n%+v", c, i, a, b)
			}
		}
		if c.Events > 0 && ops != c.Events {
			t.Fatalf("%+v: %d operations", c, ops)
		}
	}
}
