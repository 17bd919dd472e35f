package evidence

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/gen"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
	"github.com/isoscope/isoscope/internal/workload"
)

// staleReads makes n reads of h return some other write of their key:
// violations with repeated values, which the solver decides.
func staleReads(r *rand.Rand, h *history.History, n int) {
	written := map[history.KeyID][]history.Value{}
	for _, t := range h.Txns {
		for _, op := range t.Ops {
			if op.Kind == history.Write {
				written[op.Key] = append(written[op.Key], op.Value)
			}
		}
	}
	for range n {
		t := &h.Txns[r.IntN(len(h.Txns))]
		for j := range t.Ops {
			if op := &t.Ops[j]; op.Kind == history.Read && len(written[op.Key]) > 0 {
				vs := written[op.Key]
				op.Value = vs[r.IntN(len(vs))]
				break
			}
		}
	}
}

// checkEvidence checks h at l and holds the evidence of every edge of
// every cycle found to what the package promises: found, with its
// operations (so and rt aside), the operations naming the edge's
// transactions and key, and — where values are unique and no solver chose
// — no edge the solver chose or inferred without a path. It returns how
// many edges it saw of each basis.
func checkEvidence(t *testing.T, name string, h *history.History, l level.ID, o check.Options, counts map[Basis]int) {
	t.Helper()
	res, err := check.Run(context.Background(), h, level.Get(l), o)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	ix := history.NewIndexWith(h, res.OwnReads)
	f := New(ix, res.Level, res.Modules)
	f.Prepare(res.Anomalies)
	for i := range res.Anomalies {
		a := &res.Anomalies[i]
		es := f.Cycle(a)
		if len(es) != len(a.Cycle) {
			t.Fatalf("%s: %d edges of evidence for a cycle of %d", name, len(es), len(a.Cycle))
		}
		for _, e := range es {
			where := fmt.Sprintf("%s at %s (checker %s): %s: %s --%s(%s)--> %s", name, level.Get(l).Short, res.Checker, a.Kind,
				h.TxnName(e.From), e.Dep, h.KeyName(e.Key), h.TxnName(e.To))
			counts[e.Basis]++
			if !e.Found() {
				t.Errorf("%s: no evidence found", where)
				continue
			}
			if e.Dep == anomaly.SO || e.Dep == anomaly.RT {
				continue
			}
			if len(e.Ops) != 2 {
				t.Errorf("%s: %d operations", where, len(e.Ops))
				continue
			}
			for n, op := range e.Ops {
				want := e.From
				if n == 1 {
					want = e.To
				}
				if op.Ref.Txn != want || op.Key != e.Key {
					t.Errorf("%s: operation %d is %v at key %s", where, n, op.Ref, h.KeyName(op.Key))
				}
			}
			if e.Basis == Chosen && !a.BestFound {
				t.Errorf("%s: chosen in a cycle that is not best-found", where)
			}
			if ix.Unique() && (e.Basis == Chosen || e.Basis == Inferred && len(e.Path) == 0) {
				t.Errorf("%s: %s with unique values", where, e.Basis)
			}
		}
	}
}

// TestEvidenceOfGeneratedHistories: on mini-transaction histories with
// every plantable anomaly (at SER, SI and SSER), general histories with
// repeated values and stale reads (the solver), and range histories with
// faults (predicate edges), every edge of every cycle has its evidence.
func TestEvidenceOfGeneratedHistories(t *testing.T) {
	counts := map[Basis]int{}
	var plant []anomaly.Kind
	for _, k := range anomaly.Kinds() {
		if gen.CanPlant(k) {
			plant = append(plant, k)
		}
	}
	h, _, err := gen.Generate(gen.Config{Txns: 600, Sessions: 6, Keys: 40, Seed: 3, Plant: plant})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []level.ID{level.Serializable, level.SnapshotIsolation, level.StrictSerializable} {
		checkEvidence(t, "planted", h, l, check.Options{}, counts)
	}
	checkEvidence(t, "planted", h, level.Serializable, check.Options{Checker: "sat"}, counts)
	checkEvidence(t, "planted", h, level.RepeatableRead, check.Options{InnoDBRR: true}, counts)
	for seed := range uint64(12) {
		r := rand.New(rand.NewPCG(seed, 11))
		g, err := gen.GenerateGeneral(gen.GeneralConfig{Txns: 20 + r.IntN(40), Sessions: 2 + r.IntN(3), Keys: 3 + r.IntN(4),
			Dist: workload.Uniform, Ops: 2 + r.IntN(3), ReadRatio: 0.5, DuplicateKeys: 0.7, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		staleReads(r, g, 1+r.IntN(2))
		checkEvidence(t, fmt.Sprintf("general seed %d", seed), g, level.Serializable, check.Options{}, counts)
		checkEvidence(t, fmt.Sprintf("general seed %d", seed), g, level.SnapshotIsolation, check.Options{}, counts)
	}
	for seed := range uint64(4) {
		g, err := gen.GenerateRange(gen.RangeConfig{Workload: gen.RandomRange, Mode: gen.SnapshotIsolation, Txns: 150, Sessions: 4, Keys: 12, Seed: seed, Fault: 0.05})
		if err != nil {
			t.Fatal(err)
		}
		checkEvidence(t, fmt.Sprintf("range seed %d", seed), g, level.Serializable, check.Options{}, counts)
	}
	for _, b := range []Basis{Read, ReadModifyWrite, Initial, Session, RealTime, Chosen} {
		if counts[b] == 0 {
			t.Errorf("no edge of basis %s (the cases no longer cover it): %v", b, counts)
		}
	}
	t.Logf("edges by basis: %v", counts)
}

// TestBasisNames: every basis has its own name.
func TestBasisNames(t *testing.T) {
	seen := map[string]bool{}
	for _, b := range Bases() {
		n := b.String()
		if seen[n] || n == "" {
			t.Errorf("basis %d: name %q repeats", b, n)
		}
		seen[n] = true
	}
}

// TestEvidenceThroughUnknownAppenders: on list-append histories whose
// appending transactions are many of them of unknown outcome (taking
// effect because a committed transaction read their elements), every edge
// of every cycle has its evidence. Before, such a transaction was not
// effective to the evidence (the index resolves registers only), and a
// G-single through two of them had "no evidence found" on each edge.
func TestEvidenceThroughUnknownAppenders(t *testing.T) {
	counts := map[Basis]int{}
	cycles := 0
	for seed := range uint64(40) {
		r := rand.New(rand.NewPCG(seed, 35))
		h, _, err := gen.GenerateListAppend(gen.ListAppendConfig{Txns: 150 + r.IntN(150), Sessions: 3 + r.IntN(5),
			ActiveKeys: 2 + r.IntN(4), AppendsPerKey: 20, MaxOps: 4, ReadRatio: 0.5, UnknownRatio: 0.1,
			Dist: workload.Uniform, Mode: gen.SnapshotIsolation,
			Plant: []gen.ListPlant{gen.PlantLostUpdate, gen.PlantGSingle, gen.PlantG2Item}, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		for i := range h.Txns {
			tx := &h.Txns[i]
			appends := false
			for _, op := range tx.Ops {
				appends = appends || op.Kind == history.Append
			}
			if appends && tx.Status == history.Committed && r.IntN(3) == 0 {
				tx.Status = history.Unknown
			}
		}
		for _, l := range []level.ID{level.Serializable, level.SnapshotIsolation} {
			before := total(counts)
			checkEvidence(t, fmt.Sprintf("list-append seed %d", seed), h, l, check.Options{}, counts)
			if total(counts) > before {
				cycles++
			}
		}
	}
	if cycles == 0 {
		t.Fatal("no cycle in any history: the case no longer provokes the evidence")
	}
	t.Logf("%d checks with cycles; edges by basis: %v", cycles, counts)
}

// total is how many edges counts holds.
func total(counts map[Basis]int) int {
	n := 0
	for _, c := range counts {
		n += c
	}
	return n
}
