package check

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// PartResult is the verdict on one of the independent histories of a
// history made of several (history.History.Parts).
type PartResult struct {
	// Key is the part's independent key.
	Key     history.Value
	Outcome Outcome
	// Checker is the algorithm that decided the part.
	Checker string
	Stats   history.Stats
	// Anomalies counts the part's anomalies, and Kinds them by kind.
	Anomalies int
	Kinds     map[anomaly.Kind]int
	// Reason says why the outcome is Undecided.
	Reason string
}

// runParts checks each part of h (h.Parts) as a history of its own, as
// Jepsen's independent checker does: the parts are independent
// histories, and nothing orders one's operations with another's. The
// result is theirs together: violated when a part is, else unknown when
// a part is undecided, else satisfied. Its anomalies are the parts',
// their transactions and keys those of h; Parts holds each part's
// verdict, in the order of h.Parts. A part undecided because the context
// ended leaves the parts after it undecided too.
func runParts(ctx context.Context, h *history.History, l level.Level, o Options) (Result, error) {
	if h.Header.VersionOrder != nil {
		return Result{}, fmt.Errorf("a history of independent parts with a white-box version order is not supported")
	}
	res := Result{Level: l, Outcome: Satisfied, Stats: h.Stats()}
	var checkers []string
	var holds []level.Level
	violated := false
	for i, p := range h.Parts {
		sub, keys := partHistory(h, p)
		var r Result
		if err := ctx.Err(); err != nil {
			r = Result{Level: l, Outcome: Undecided, Reason: stopped(ctx, err), Stats: sub.Stats()}
		} else {
			var err error
			if r, err = Run(ctx, sub, l, o); err != nil {
				return Result{}, fmt.Errorf("key %s: %w", p.Key, err)
			}
		}
		pr := PartResult{Key: p.Key, Outcome: r.Outcome, Checker: r.Checker, Stats: r.Stats, Anomalies: len(r.Anomalies), Reason: r.Reason}
		if len(r.Anomalies) > 0 {
			pr.Kinds = r.Kinds()
		}
		res.Parts = append(res.Parts, pr)
		for _, a := range r.Anomalies {
			res.Anomalies = append(res.Anomalies, partAnomaly(a, p.Txns, keys))
		}
		if r.Checker != "" && !slices.Contains(checkers, r.Checker) {
			checkers = append(checkers, r.Checker)
		}
		if i == 0 {
			res.OwnReads, res.OwnReadsEvidence = r.OwnReads, r.OwnReadsEvidence
			res.Modules = r.Modules
		}
		if r.CheckedAt != nil && res.CheckedAt == nil {
			res.CheckedAt, res.Note = r.CheckedAt, r.Note
		}
		if r.Caveat != "" && res.Caveat == "" {
			res.Caveat = "key " + p.Key.String() + ": " + r.Caveat
		}
		switch r.Outcome {
		case Violated:
			if !violated {
				holds = r.Holds
			} else {
				holds = slices.DeleteFunc(holds, func(w level.Level) bool {
					return !slices.ContainsFunc(r.Holds, func(x level.Level) bool { return x.ID == w.ID })
				})
			}
			violated = true
			res.Outcome = Violated
		case Undecided:
			if res.Outcome == Satisfied {
				res.Outcome = Undecided
				res.Reason = "key " + p.Key.String() + ": " + r.Reason
			}
		}
	}
	res.Checker = strings.Join(checkers, ",")
	if res.Outcome == Violated {
		res.Reason = ""
		if !slices.ContainsFunc(res.Parts, func(p PartResult) bool { return p.Outcome == Undecided }) {
			res.Holds = holds // every other part satisfies the level, and so the weaker ones
		}
	}
	if ix, err := history.NewIndexContext(ctx, h, res.OwnReads); err == nil {
		res.Index = ix
	}
	return res, nil
}

// partHistory returns the history of part p of h, with keys of its own
// (keys[k] is h's key of its key k): the part's transactions, in order,
// the sessions, name and header of h, and the initial values of its keys.
func partHistory(h *history.History, p history.Part) (*history.History, []history.KeyID) {
	s := history.New()
	s.Name, s.Sessions = h.Name, h.Sessions
	s.Header = h.Header
	s.Header.Initial.Values = nil
	var keys []history.KeyID
	local := map[history.KeyID]history.KeyID{}
	key := func(k history.KeyID) history.KeyID {
		if k < 0 {
			return k
		}
		if id, ok := local[k]; ok {
			return id
		}
		id := s.Key(h.Keys[k])
		local[k] = id
		keys = append(keys, k)
		if v, ok := h.Header.Initial.Values[k]; ok {
			if s.Header.Initial.Values == nil {
				s.Header.Initial.Values = map[history.KeyID]history.Value{}
			}
			s.Header.Initial.Values[id] = v
		}
		return id
	}
	s.Txns = make([]history.Txn, len(p.Txns))
	for i, t := range p.Txns {
		tx := h.Txns[t]
		tx.Ops = slices.Clone(tx.Ops)
		for j := range tx.Ops {
			op := &tx.Ops[j]
			op.Key = key(op.Key)
			if op.Range != nil {
				r := *op.Range
				r.Pairs = slices.Clone(r.Pairs)
				for n := range r.Pairs {
					r.Pairs[n].Key = key(r.Pairs[n].Key)
				}
				op.Range = &r
			}
		}
		s.Txns[i] = tx
	}
	return s, keys
}

// partAnomaly maps an anomaly found in a part's history back to h: txns
// and keys map the part's transactions and keys to h's.
func partAnomaly(a anomaly.Anomaly, txns []history.TxnID, keys []history.KeyID) anomaly.Anomaly {
	txn := func(t history.TxnID) history.TxnID {
		if t < 0 {
			return t
		}
		return txns[t]
	}
	key := func(k history.KeyID) history.KeyID {
		if k < 0 || int(k) >= len(keys) {
			return k // no key (an anomaly of no single key)
		}
		return keys[k]
	}
	a.Txns = slices.Clone(a.Txns)
	for i, t := range a.Txns {
		a.Txns[i] = txn(t)
	}
	a.Cycle = slices.Clone(a.Cycle)
	for i := range a.Cycle {
		st := &a.Cycle[i]
		st.From, st.To, st.Key = txn(st.From), txn(st.To), key(st.Key)
	}
	a.Key = key(a.Key)
	a.Ops = slices.Clone(a.Ops)
	for i := range a.Ops {
		a.Ops[i].Txn = txn(a.Ops[i].Txn)
	}
	a.Core = slices.Clone(a.Core)
	for i, t := range a.Core {
		a.Core[i] = txn(t)
	}
	return a
}
