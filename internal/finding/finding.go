// Package finding is an anomaly as data, in the shape of the CLI's JSON
// result: its kind, transactions, cycle, key and value as the input named
// them. The explanation, prose, is the caller's to give (report.Explain
// writes it), so that a service can report findings without rendering.
package finding

import (
	"encoding/json"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/evidence"
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
	// Note says in plain words what a best-found cycle or a core is
	// (report.BestFoundNote, report.CoreNote); empty otherwise.
	Note string `json:"note,omitempty"`
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
	// Evidence is what makes the edge. The CLI's JSON result sets it on
	// every edge of every cycle; New leaves it out, and so do the edges
	// of an Evidence's Path.
	Evidence *Evidence `json:"evidence,omitempty"`
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
		f.Cycle = append(f.Cycle, edgeJSON(h, s))
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

// edgeJSON is step s of h as an Edge, without evidence.
func edgeJSON(h *history.History, s anomaly.Step) Edge {
	e := Edge{From: txnJSON(h, s.From), To: txnJSON(h, s.To), Dep: s.Dep.String()}
	if s.Key != history.NoKey {
		e.Key = keyJSON(h, s.Key)
	}
	return e
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

// Evidence is what makes one edge of a cycle (package evidence): why it
// holds, in a word (Basis) and a sentence (Text), and the operations it
// rests on, each with its key and value.
type Evidence struct {
	// Basis says why the edge holds: "read", "read-modify-write",
	// "list-order", "version-order", "commit-order", "initial-state",
	// "version-chain", "inferred", "chosen", "session", "real-time",
	// "timestamps" (docs/json.md says what each means).
	Basis string `json:"basis"`
	// Text says it in a sentence.
	Text string `json:"text"`
	// Ops are the operations that make the edge, the source's first: wr
	// and pwr the write and the read (or scan); ww the two writes; rw and
	// prw the read (or scan) and the overwriting write. so and rt have
	// none.
	Ops []Operation `json:"ops,omitempty"`
	// ReadFrom is, for rw and prw, the version the read saw: its write,
	// or the initial state.
	ReadFrom *Operation `json:"read_from,omitempty"`
	// Order are the known orders of the key's writers, link by link, from
	// the version overwritten to the overwriting write (ww, rw, prw).
	Order []Link `json:"order,omitempty"`
	// Writers are, when several transactions installed what the read
	// returned, all of them ("init" for the initial state).
	Writers []any `json:"writers,omitempty"`
	// Path is, for an inferred order, known dependencies that the other
	// order would close into a cycle.
	Path []Edge `json:"path,omitempty"`
	// Session is the session of an so edge.
	Session any `json:"session,omitempty"`
	// Instants are the instants (rt by real time) or timestamps (rt by
	// the start-order module) that order an rt edge.
	Instants *Instants `json:"instants,omitempty"`
}

// Operation is one operation of the history with what it did at the key
// an edge is about.
type Operation struct {
	// Transaction is the transaction's id as in the input ("init" for the
	// initial state); Index the operation's position in it, from 0
	// (absent for the initial state).
	Transaction any  `json:"transaction"`
	Index       *int `json:"index,omitempty"`
	// Op is the operation: "r" (a read, or a list read), "w", "d",
	// "append", "scan", "iter", or "init" for the initial state.
	Op string `json:"op"`
	// Key is the key; Value what the operation wrote, appended or read
	// there (a list read: the list; a scan or iterator: what it returned
	// for Key), null for a delete or for a key found absent (then Absent
	// is true).
	Key    any             `json:"key"`
	Value  json.RawMessage `json:"value"`
	Absent bool            `json:"absent,omitempty"`
	// Range is a scan's or iterator's range, lo ≤ key < hi (hi null:
	// unbounded).
	Range *Range `json:"range,omitempty"`
}

// Range is the bounds of a scan or iterator.
type Range struct {
	Lo any `json:"lo"`
	Hi any `json:"hi"`
}

// Link is one known order of two writers of a key.
type Link struct {
	From  any    `json:"from"`
	To    any    `json:"to"`
	Basis string `json:"basis"`
	// ShownBy is the read that shows the order: To's read of From's
	// version (read-modify-write), or the list read (list-order).
	ShownBy *Operation `json:"shown_by,omitempty"`
	// Unobserved (list-order) says To's element is in no read, so it
	// follows every element of the longest read, From's last.
	Unobserved bool `json:"unobserved,omitempty"`
	// CommitTS are From's and To's commit timestamps (commit-order).
	CommitTS []uint64 `json:"commit_ts,omitempty"`
}

// Instants order an rt edge: the source's end before the target's begin
// (real time), or the source's commit_ts before the target's start_ts
// (the start-order module).
type Instants struct {
	End      *int64  `json:"end,omitempty"`
	Begin    *int64  `json:"begin,omitempty"`
	CommitTS *uint64 `json:"commit_ts,omitempty"`
	StartTS  *uint64 `json:"start_ts,omitempty"`
}

// NewEvidence returns edge evidence e of history h as the JSON result
// has it, with text as its sentence.
func NewEvidence(h *history.History, e *evidence.Edge, text string) *Evidence {
	out := &Evidence{Basis: e.Basis.String(), Text: text}
	for _, o := range e.Ops {
		out.Ops = append(out.Ops, operation(h, o))
	}
	if e.HasReadFrom {
		rf := operation(h, e.ReadFrom)
		out.ReadFrom = &rf
	}
	for _, l := range e.Order {
		jl := Link{From: txnJSON(h, l.From), To: txnJSON(h, l.To), Basis: l.Basis.String(), Unobserved: l.Unobserved}
		if l.HasShown {
			op := operation(h, evidence.Op{Ref: l.Shown, Key: e.Key})
			jl.ShownBy = &op
		}
		if l.Basis == evidence.CommitOrder {
			jl.CommitTS = []uint64{h.Txns[l.From].CommitTS, h.Txns[l.To].CommitTS}
		}
		out.Order = append(out.Order, jl)
	}
	for _, w := range e.Writers {
		out.Writers = append(out.Writers, txnJSON(h, w))
	}
	for _, s := range e.Path {
		out.Path = append(out.Path, edgeJSON(h, s))
	}
	switch e.Basis {
	case evidence.Session:
		if s := h.Txns[e.From].Session; s >= 0 && int(s) < len(h.Sessions) {
			out.Session = scalar(h.Sessions[s])
		}
	case evidence.RealTime:
		end, begin := h.Txns[e.From].End, h.Txns[e.To].Begin
		out.Instants = &Instants{End: &end, Begin: &begin}
	case evidence.Timestamps:
		c, s := h.Txns[e.From].CommitTS, h.Txns[e.To].StartTS
		out.Instants = &Instants{CommitTS: &c, StartTS: &s}
	}
	return out
}

// opNames are the operations' names in Operation.Op, by history.OpKind.
var opNames = map[history.OpKind]string{history.Read: "r", history.Write: "w", history.Delete: "d",
	history.Append: "append", history.ReadList: "r", history.Scan: "scan", history.Iter: "iter"}

// operation describes o of h: its transaction, position, kind, key and
// what it did there.
func operation(h *history.History, o evidence.Op) Operation {
	out := Operation{Transaction: txnJSON(h, o.Ref.Txn), Key: keyJSON(h, o.Key)}
	if o.IsInitial() {
		out.Op = "init"
		v := h.InitialValue(o.Key)
		out.Value, out.Absent = v.AppendJSON(nil), v.IsNull()
		return out
	}
	if o.Ref.Txn < 0 || int(o.Ref.Txn) >= len(h.Txns) || o.Ref.Op < 0 || int(o.Ref.Op) >= len(h.Txns[o.Ref.Txn].Ops) {
		out.Op, out.Value = "?", json.RawMessage("null")
		return out
	}
	i := int(o.Ref.Op)
	out.Index = &i
	op := h.Txns[o.Ref.Txn].Ops[i]
	out.Op = opNames[op.Kind]
	switch op.Kind {
	case history.Delete:
		out.Value = json.RawMessage("null")
	case history.Read:
		out.Value, out.Absent = op.Value.AppendJSON(nil), op.Value.IsNull()
	case history.ReadList:
		b := []byte{'['}
		for j, v := range op.List {
			if j > 0 {
				b = append(b, ',')
			}
			b = v.AppendJSON(b)
		}
		out.Value = append(b, ']')
	case history.Scan, history.Iter:
		out.Value, out.Absent = json.RawMessage("null"), true
		if r := op.Range; r != nil {
			out.Range = &Range{Lo: scalar(r.Lo)}
			if !r.HiOpen {
				out.Range.Hi = scalar(r.Hi)
			}
			for _, p := range r.Pairs {
				if p.Key == o.Key {
					out.Value, out.Absent = p.Value.AppendJSON(nil), false
				}
			}
		}
	default:
		out.Value = op.Value.AppendJSON(nil)
	}
	return out
}
