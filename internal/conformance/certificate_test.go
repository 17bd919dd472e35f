package conformance

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/format/registry"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// overrides are the labels of LABELS.tsv that isoscope disagrees with, each
// with the test that proves it (README.md of the corpora: "a checker that
// disagrees with a label is wrong until shown otherwise").
var overrides = map[string]map[level.ID]string{
	// The RA label of dgraph_si.txt has no source of its own (IsoVista
	// documents an SI bug, a cycle of wr, so and one rw); the history
	// satisfies read atomic: TestDgraphReadAtomicCertificate checks a
	// commit order against the axiom naively, and the solver checker
	// agrees. It violates causal consistency, as labelled.
	"isovista-bugs/history/bugs/dgraph_si.txt": {level.ReadAtomic: "VALID (TestDgraphReadAtomicCertificate)"},
}

// raCertificate returns a commit order of h's committed transactions (a
// history of reads and writes with unique values, every transaction
// committed) that satisfies the read atomic axiom, checked naively: it
// extends session order and write-read, and whenever t3 read x from t1
// while t2 ≠ t1 wrote x and precedes t3 in its session or was read by t3,
// t2 comes before t1 (t1 never the initial state). The order is a
// topological sort of so, wr and the edges the axiom asks for, found by
// enumerating every triple; an error says why there is none, or which
// triple the order breaks.
func raCertificate(h *history.History) ([]history.TxnID, error) {
	n := len(h.Txns)
	type read struct {
		k history.KeyID
		w history.TxnID // Init for the initial state
	}
	writer := map[[2]int64]history.TxnID{} // (key, value) → writer
	writes := make([]map[history.KeyID]bool, n)
	for i := range h.Txns {
		if h.Txns[i].Status != history.Committed {
			return nil, fmt.Errorf("transaction %s is not committed", h.TxnName(history.TxnID(i)))
		}
		writes[i] = map[history.KeyID]bool{}
		for _, op := range h.Txns[i].Ops {
			if op.Kind == history.Write {
				writer[[2]int64{int64(op.Key), op.Value.N}] = history.TxnID(i)
				writes[i][op.Key] = true
			}
		}
	}
	reads := make([][]read, n)
	for i := range h.Txns {
		own := map[history.KeyID]bool{}
		for _, op := range h.Txns[i].Ops {
			switch {
			case op.Kind == history.Write:
				own[op.Key] = true
			case own[op.Key]:
			case op.Value == h.InitialValue(op.Key):
				reads[i] = append(reads[i], read{op.Key, history.Init})
			default:
				w, ok := writer[[2]int64{int64(op.Key), op.Value.N}]
				if !ok || w == history.TxnID(i) {
					return nil, fmt.Errorf("%s reads %s=%s, which no other transaction wrote", h.TxnName(history.TxnID(i)), h.KeyName(op.Key), op.Value)
				}
				reads[i] = append(reads[i], read{op.Key, w})
			}
		}
	}
	before := make([][]history.TxnID, n) // before[t]: what must precede t
	prem := func(t2, t3 history.TxnID) bool {
		if h.Txns[t2].Session == h.Txns[t3].Session && t2 < t3 {
			return true
		}
		return slices.ContainsFunc(reads[t3], func(r read) bool { return r.w == t2 })
	}
	for t3 := range n {
		for _, r := range reads[t3] {
			if r.w != history.Init {
				before[t3] = append(before[t3], r.w)
			}
			for t2 := range n {
				if history.TxnID(t2) == r.w || !writes[t2][r.k] || !prem(history.TxnID(t2), history.TxnID(t3)) {
					continue
				}
				if r.w == history.Init {
					return nil, fmt.Errorf("%s read %s initially, though %s wrote it before", h.TxnName(history.TxnID(t3)), h.KeyName(r.k), h.TxnName(history.TxnID(t2)))
				}
				before[r.w] = append(before[r.w], history.TxnID(t2))
			}
		}
		for t2 := 0; t2 < t3; t2++ {
			if h.Txns[t2].Session == h.Txns[t3].Session {
				before[t3] = append(before[t3], history.TxnID(t2))
			}
		}
	}
	// Depth-first topological sort.
	state := make([]uint8, n)
	var order []history.TxnID
	var visit func(t history.TxnID) error
	visit = func(t history.TxnID) error {
		switch state[t] {
		case 1:
			return fmt.Errorf("the axiom's edges are cyclic through %s", h.TxnName(t))
		case 2:
			return nil
		}
		state[t] = 1
		for _, u := range before[t] {
			if err := visit(u); err != nil {
				return err
			}
		}
		state[t] = 2
		order = append(order, t)
		return nil
	}
	for t := range n {
		if err := visit(history.TxnID(t)); err != nil {
			return nil, err
		}
	}
	// Check the order against the axiom itself.
	pos := make([]int, n)
	for i, t := range order {
		pos[t] = i
	}
	for t3 := range n {
		for _, r := range reads[t3] {
			if r.w != history.Init && pos[r.w] > pos[t3] {
				return nil, fmt.Errorf("the order does not extend wr")
			}
			for t2 := range n {
				if history.TxnID(t2) != r.w && writes[t2][r.k] && prem(history.TxnID(t2), history.TxnID(t3)) && pos[t2] > pos[r.w] {
					return nil, fmt.Errorf("the order breaks the axiom at %s, %s, %s", h.TxnName(history.TxnID(t2)), h.TxnName(r.w), h.TxnName(history.TxnID(t3)))
				}
			}
		}
	}
	return order, nil
}

// TestDgraphReadAtomicCertificate: IsoVista's Dgraph history satisfies read
// atomic — a commit order that satisfies the axiom exists, checked by
// raCertificate — and violates causal consistency; the checkers agree.
func TestDgraphReadAtomicCertificate(t *testing.T) {
	h, err := registry.Open(filepath.Join(corpora, "isovista-bugs/history/bugs/dgraph_si.txt"), "auto", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	order, err := raCertificate(h)
	if err != nil {
		t.Fatalf("no read atomic commit order: %v", err)
	}
	t.Logf("a read atomic commit order of the %d transactions, first %v", len(order), order[:5])
	for id, want := range map[level.ID]check.Outcome{level.ReadAtomic: check.Satisfied, level.Causal: check.Violated} {
		for _, name := range []string{"auto", "sat"} {
			res, err := check.Run(context.Background(), h, level.Get(id), check.Options{Checker: name})
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != want {
				t.Errorf("%s (%s): %s, want %s", id, res.Checker, res.Outcome, want)
			}
		}
	}
}
