package polygraph

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/isoscope/isoscope/internal/anomaly"
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
func (StartOrder) Extend(a *ASG) error {
	h := a.History()
	var txns []history.TxnID
	for i := range h.Txns {
		t := history.TxnID(i)
		if !a.TakesPart(t) {
			continue
		}
		x := &h.Txns[i]
		switch {
		case !x.HasStartTS || !x.HasCommitTS:
			return fmt.Errorf("start-order: transaction %s (line %d) lacks start_ts or commit_ts", h.TxnName(t), x.Line)
		case x.StartTS > x.CommitTS:
			return fmt.Errorf("start-order: transaction %s (line %d) has start_ts %d after its commit_ts %d", h.TxnName(t), x.Line, x.StartTS, x.CommitTS)
		}
		txns = append(txns, t)
	}
	// byCommit sorts the transactions by commit_ts; maxStart[i] is the
	// largest start_ts among byCommit[:i+1].
	byCommit := slices.Clone(txns)
	slices.SortStableFunc(byCommit, func(x, y history.TxnID) int { return cmp.Compare(h.Txns[x].CommitTS, h.Txns[y].CommitTS) })
	maxStart := make([]uint64, len(byCommit))
	for i, t := range byCommit {
		maxStart[i] = h.Txns[t].StartTS
		if i > 0 {
			maxStart[i] = max(maxStart[i], maxStart[i-1])
		}
	}
	for _, t := range txns {
		s := h.Txns[t].StartTS
		// Those that committed before t started: byCommit[:n].
		n, _ := slices.BinarySearchFunc(byCommit, s, func(u history.TxnID, s uint64) int { return cmp.Compare(h.Txns[u].CommitTS, s) })
		if n == 0 {
			continue
		}
		// A predecessor that committed before the latest start among the
		// others is implied through that one.
		m := maxStart[n-1]
		for i := n - 1; i >= 0 && h.Txns[byCommit[i]].CommitTS >= m; i-- {
			if err := a.Before(byCommit[i], t, anomaly.RT, history.NoKey); err != nil {
				return err
			}
		}
	}
	return nil
}
