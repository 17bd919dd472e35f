// Package finding is an anomaly as data, in the shape of the CLI's JSON
// result: its kind, transactions, cycle, key and value as the input named
// them. The explanation, prose, is the caller's to give (report.Explain
// writes it), so that a service can report findings without rendering.
package finding

import (
	"encoding/json"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/history"
)

// Finding is one anomaly of a check result. Transaction ids and keys are
// as in the input (the initial state is "init").
type Finding struct {
	Kind         string          `json:"kind"`
	Phenomenon   string          `json:"phenomenon,omitempty"`
	Transactions []any           `json:"transactions"`
	Cycle        []Edge          `json:"cycle,omitempty"`
	Key          any             `json:"key,omitempty"`
	Value        json.RawMessage `json:"value,omitempty"`
	Explanation  string          `json:"explanation"`
	// BestFound marks a cycle found under one choice of the uncertain
	// dependencies (solver checkers): the verdict is exact, the cycle
	// illustrates it.
	BestFound bool `json:"best_found,omitempty"`
	// Core are the transactions of a sub-history that violates the level
	// on its own, found by the solver's counterexample search; Minimal
	// says none of them can be left out.
	Core    []any `json:"core,omitempty"`
	Minimal bool  `json:"minimal,omitempty"`
	// Ops are the operations at issue, the offending one first (a
	// non-cycle anomaly's read, then the writes it concerns), as the
	// explanation and the HTML report name them. New leaves them out;
	// the CLI's JSON result sets them (Ops), so that a saved result can
	// be resolved against its history without loss.
	Ops []OpRef `json:"ops,omitempty"`
}

// OpRef names one operation of the history: its transaction's id as in
// the input, and its index among the transaction's operations, from 0.
type OpRef struct {
	Transaction any `json:"transaction"`
	Index       int `json:"index"`
}

// Edge is one dependency of a Finding's cycle.
type Edge struct {
	From any    `json:"from"`
	To   any    `json:"to"`
	Dep  string `json:"dep"`
	Key  any    `json:"key,omitempty"`
}

// New returns anomaly a of history h as a Finding, with explanation as
// its Explanation.
func New(h *history.History, a *anomaly.Anomaly, explanation string) Finding {
	f := Finding{Kind: a.Kind.String(), Phenomenon: a.Phenomenon.String(), Explanation: explanation, BestFound: a.BestFound}
	f.Transactions = make([]any, 0, len(a.Txns))
	for _, t := range a.Txns {
		f.Transactions = append(f.Transactions, txnJSON(h, t))
	}
	for _, t := range a.Core {
		f.Core = append(f.Core, txnJSON(h, t))
	}
	f.Minimal = a.Minimal
	for _, s := range a.Cycle {
		e := Edge{From: txnJSON(h, s.From), To: txnJSON(h, s.To), Dep: s.Dep.String()}
		if s.Key != history.NoKey {
			e.Key = keyJSON(h, s.Key)
		}
		f.Cycle = append(f.Cycle, e)
	}
	if !a.IsCycle() && a.Key != history.NoKey {
		f.Key = keyJSON(h, a.Key)
		f.Value = a.Value.AppendJSON(nil)
	}
	return f
}

// Ops returns the operations refs of history h as a Finding names them
// (nil for none), leaving out any of a transaction h does not hold.
func Ops(h *history.History, refs []history.OpRef) []OpRef {
	var out []OpRef
	for _, r := range refs {
		if r.Txn != history.Init && (r.Txn < 0 || int(r.Txn) >= len(h.Txns)) {
			continue
		}
		out = append(out, OpRef{Transaction: txnJSON(h, r.Txn), Index: int(r.Op)})
	}
	return out
}

func txnJSON(h *history.History, t history.TxnID) any {
	if t == history.Init {
		return "init"
	}
	return scalar(h.Txns[t].ID)
}

func keyJSON(h *history.History, k history.KeyID) any {
	if k < 0 || int(k) >= len(h.Keys) {
		return nil
	}
	return scalar(h.Keys[k])
}

func scalar(v history.Value) any {
	switch v.Kind {
	case history.Int:
		return v.N
	case history.String:
		return v.S
	}
	return nil
}
