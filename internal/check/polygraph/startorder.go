package polygraph

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check/checker"
	"github.com/isoscope/isoscope/internal/history"
)

// StartOrder is a built-in module for databases that take each
// transaction's snapshot at its start_ts and make its writes visible at its
// commit_ts, on one clock (a white-box fact about the database, so it is
// opt in): whenever commit_ts(T1) < start_ts(T2), T1 committed before T2's
// snapshot was taken, so T1 precedes T2 in every dependency graph — Adya's
// start-dependency. The edges are added as rt edges (real time on the
// database's clock).
//
// Selecting it asserts that the database orders transactions by these
// timestamps. It is sound at snapshot isolation (with it the check is
// Adya's PL-SI over the start-ordered serialization graph, not only the
// black-box definition), at serializability and strict serializability
// for databases whose serialization order agrees with their timestamps
// (timestamp-ordered MVCC), and at read committed, repeatable read and
// read uncommitted for databases whose version order is the commit_ts
// order and whose reads see committed state. It is not sound for a
// database whose start_ts is not the snapshot its reads use (InnoDB takes
// the snapshot at the first read), nor for one whose timestamps do not
// order its transactions (two-phase locking with timestamps for show). A
// transaction taking part without both timestamps, or whose start_ts is
// after its commit_ts, is an error.
type StartOrder struct{}

// Name returns "start-order".
func (StartOrder) Name() string { return "start-order" }

// Extend adds the start-dependencies, reduced transitively: T1 → T2 only
// when no transaction T3 has commit_ts(T1) < start_ts(T3) and
// commit_ts(T3) < start_ts(T2) (then T1 → T3 → T2 already orders them).
// Without that reduction the edges would be quadratic; with it they are as
// many as the transactions times the concurrency.
func (StartOrder) Extend(a checker.ASG) error {
	h := a.History()
	txns, err := taking(a, func(t history.TxnID, x *history.Txn) error {
		switch {
		case !x.HasStartTS || !x.HasCommitTS:
			return fmt.Errorf("start-order: transaction %s (line %d) lacks start_ts or commit_ts", h.TxnName(t), x.Line)
		case x.StartTS > x.CommitTS:
			return fmt.Errorf("start-order: transaction %s (line %d) has start_ts %d after its commit_ts %d", h.TxnName(t), x.Line, x.StartTS, x.CommitTS)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return intervalOrder(a, txns, func(t history.TxnID) uint64 { return h.Txns[t].StartTS },
		func(t history.TxnID) uint64 { return h.Txns[t].CommitTS })
}

// taking returns the transactions of a taking part, in file order, each
// first vetted by check (an error stops).
func taking(a checker.ASG, check func(t history.TxnID, x *history.Txn) error) ([]history.TxnID, error) {
	h := a.History()
	var out []history.TxnID
	for i := range h.Txns {
		t := history.TxnID(i)
		if !a.TakesPart(t) {
			continue
		}
		if err := check(t, &h.Txns[i]); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// intervalOrder adds an rt edge T1 → T2 for every two transactions of txns
// whose intervals do not overlap, end(T1) < start(T2), reduced
// transitively: only when no T3 has end(T1) < start(T3) and end(T3) <
// start(T2) (then T1 → T3 → T2 already orders them). Without the reduction
// the edges would be quadratic; with it they are as many as the
// transactions times the concurrency.
func intervalOrder[T cmp.Ordered](a checker.ASG, txns []history.TxnID, start, end func(history.TxnID) T) error {
	// byEnd sorts the transactions by end; maxStart[i] is the largest
	// start among byEnd[:i+1].
	byEnd := slices.Clone(txns)
	slices.SortStableFunc(byEnd, func(x, y history.TxnID) int { return cmp.Compare(end(x), end(y)) })
	maxStart := make([]T, len(byEnd))
	for i, t := range byEnd {
		maxStart[i] = start(t)
		if i > 0 {
			maxStart[i] = max(maxStart[i], maxStart[i-1])
		}
	}
	for _, t := range txns {
		s := start(t)
		// Those that ended before t started: byEnd[:n].
		n, _ := slices.BinarySearchFunc(byEnd, s, func(u history.TxnID, s T) int { return cmp.Compare(end(u), s) })
		if n == 0 {
			continue
		}
		// A predecessor that ended before the latest start among the
		// others is implied through that one.
		m := maxStart[n-1]
		for i := n - 1; i >= 0 && end(byEnd[i]) >= m; i-- {
			if err := a.Before(byEnd[i], t, anomaly.RT, history.NoKey); err != nil {
				return err
			}
		}
	}
	return nil
}

// RealTime is the built-in module that adds real-time order to a level
// that does not ask for it (every level but strict serializability): T1 →
// T2 whenever T1's end instant precedes T2's begin instant (the client saw
// T1 finish before it started T2). Transactions whose outcome is unknown
// take no part (they may have committed any time after they began). A
// transaction taking part without instants is an error.
type RealTime struct{}

// Name returns "real-time".
func (RealTime) Name() string { return "real-time" }

// Extend adds the real-time edges, reduced transitively.
func (RealTime) Extend(a checker.ASG) error {
	h := a.History()
	txns, err := taking(a, func(t history.TxnID, x *history.Txn) error {
		if !x.HasTime {
			return fmt.Errorf("real-time: transaction %s (line %d) has no begin and end instants", h.TxnName(t), x.Line)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return intervalOrder(a, txns, func(t history.TxnID) int64 { return h.Txns[t].Begin },
		func(t history.TxnID) int64 { return h.Txns[t].End })
}

// SessionOrder is the built-in module that adds session order to a level
// that does not ask for it (the weak Adya levels and repeatable read):
// session guarantees on top of the level, as docs/levels.md allows.
type SessionOrder struct{}

// Name returns "session-order".
func (SessionOrder) Name() string { return "session-order" }

// Extend adds the so edges between consecutive transactions of each
// session (conditioned on those whose outcome is unknown), unless the
// level has them already.
// It needs the solver's own graph: on another ASG it is an error.
func (SessionOrder) Extend(a checker.ASG) error {
	g, ok := a.(*asg)
	if !ok {
		return fmt.Errorf("session-order runs only in the solver's own graph")
	}
	if !g.p.spec.session {
		g.p.spec.session = true
		g.p.sessionOrder()
	}
	return nil
}
