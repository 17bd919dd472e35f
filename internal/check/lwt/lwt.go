// Package lwt implements MTC's Algorithm 2 (§IV-E): linearizability of
// lightweight-transaction histories in linear time. Every transaction that
// took effect works on one key: a compare-and-set or insert-if-not-exists
// that succeeded ([r k v, w k v']; an insert reads null) or a read alone (a
// failed compare-and-set, or a plain read). With unique values the
// successful ones must form a chain from the initial state, each reading
// what the previous one wrote; a read of v must fall between the writer of
// v and the next link. A linearization then exists exactly when no
// operation is forced before another that finished before it began, which
// one backward pass over the chain decides. Linearizability is strict
// serializability of single-operation transactions.
//
// The paper's algorithm has only successful operations; reads alone are
// placed in the slot after the write they read, which is the same argument
// with a total preorder instead of a total order.
package lwt

import (
	"context"
	"fmt"
	"math"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check/checker"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// Checker is the lightweight-transaction checker, named "lwt".
type Checker struct{}

// Name returns "lwt".
func (Checker) Name() string { return "lwt" }

// Capabilities: none beyond the histories it decides.
func (Checker) Capabilities() checker.Capabilities { return checker.Capabilities{} }

// Plan returns the check of ix at l when decides accepts it.
func (Checker) Plan(ix *history.Index, l level.Level, _ checker.Options) (checker.Check, error) {
	return checker.Simple(ix, l, decides, check)
}

// decides returns nil for what Plan accepts: strict serializability on lightweight-transaction
// histories with unique values, real-time instants on every transaction
// that took effect, and sessions whose transactions do not overlap in time
// and in which only the last may be of unknown outcome.
func decides(ix *history.Index, l level.Level) error {
	if l.ID != level.StrictSerializable {
		return fmt.Errorf("it decides strict-serializable (linearizability), not %s", l.Name)
	}
	h := ix.History()
	if !ix.Unique() {
		return fmt.Errorf("values are not unique")
	}
	last := make([]int64, len(h.Sessions))
	seen := make([]bool, len(h.Sessions))
	unknown := make([]history.TxnID, len(h.Sessions)) // the previous transaction, when of unknown outcome (else -1)
	for i := range h.Txns {
		t := &h.Txns[i]
		if !ix.Effective(history.TxnID(i)) {
			continue
		}
		if !Fits(t) {
			return fmt.Errorf("transaction %s is not a single-key compare-and-set, insert or read", h.TxnName(history.TxnID(i)))
		}
		if !t.HasTime {
			return fmt.Errorf("transaction %s (line %d) has no begin and end instants", h.TxnName(history.TxnID(i)), t.Line)
		}
		if seen[t.Session] && unknown[t.Session] >= 0 {
			// Had it taken effect, it did so before t, which real time
			// alone (its end unknown) does not say.
			return fmt.Errorf("transaction %s, of unknown outcome, is followed by %s in its session", h.TxnName(unknown[t.Session]), h.TxnName(history.TxnID(i)))
		}
		if seen[t.Session] && last[t.Session] >= t.Begin {
			return fmt.Errorf("transaction %s begins before the previous transaction of its session ended", h.TxnName(history.TxnID(i)))
		}
		seen[t.Session], last[t.Session], unknown[t.Session] = true, t.End, -1
		if t.Status == history.Unknown {
			unknown[t.Session] = history.TxnID(i)
		}
	}
	return nil
}

// Fits reports whether t has the shape Algorithm 2 takes: a read alone (a
// plain read, or a compare-and-set that failed), or a read and then a
// write of the same key (a compare-and-set or insert that succeeded).
func Fits(t *history.Txn) bool {
	switch len(t.Ops) {
	case 1:
		return t.Ops[0].Kind == history.Read
	case 2:
		return t.Ops[0].Kind == history.Read && t.Ops[1].Kind == history.Write && t.Ops[0].Key == t.Ops[1].Key
	}
	return false
}

// op is one transaction's place on its key.
type op struct {
	t          history.TxnID
	begin, end int64
	rank       int // 2i for the i-th link of the chain, 2i+1 for reads of its value
}

// check is the check Plan returns: it builds the chain of each key and checks real time along it. It
// reports per key the first problem: two links reading the same value (a
// lost update), links that do not hang off the chain (a cycle), or an
// operation forced before one that finished before it began (a real-time
// violation, with the chain path that forces the order).
func check(ctx context.Context, ix *history.Index, l level.Level) ([]anomaly.Anomaly, error) {
	h := ix.History()
	byKey := make(map[history.KeyID][]history.TxnID)
	var keys []history.KeyID
	for i := range h.Txns {
		t := history.TxnID(i)
		if !ix.Effective(t) {
			continue
		}
		k := h.Txns[i].Ops[0].Key
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], t)
	}
	var out []anomaly.Anomaly
	for _, k := range keys {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		if a, ok := CheckKey(ix, k, byKey[k]); ok {
			out = append(out, a)
		}
	}
	return out, nil
}

// CheckKey is Algorithm 2 on one key: txns are the transactions on k that
// took effect, each of the shape Fits takes, with no two writing the same
// value to k and none writing its initial value, and every one with begin
// and end instants. It returns k's first problem, if k has one: two links
// reading the same value (a lost update), links that do not hang off the
// chain (a cycle), or an operation forced before one that finished before
// it began (a real-time violation).
func CheckKey(ix *history.Index, k history.KeyID, txns []history.TxnID) (anomaly.Anomaly, bool) {
	h := ix.History()
	// next[v]: the link that read v and wrote; readers[v]: reads alone.
	next := make(map[history.Value]history.TxnID)
	readers := make(map[history.Value][]history.TxnID)
	links := 0
	for _, t := range txns {
		ops := h.Txns[t].Ops
		v := ops[0].Value
		if len(ops) == 1 {
			readers[v] = append(readers[v], t)
			continue
		}
		links++
		if other, dup := next[v]; dup {
			cyc := []anomaly.Step{{From: other, To: t, Dep: anomaly.RW, Key: k}, {From: t, To: other, Dep: anomaly.RW, Key: k}}
			kind, p := anomaly.Classify(h, cyc)
			return anomaly.Anomaly{Kind: kind, Phenomenon: p, Txns: []history.TxnID{other, t}, Cycle: cyc, Key: k, Value: v}, true
		}
		next[v] = t
	}
	// The chain from the initial value.
	chain := []op{{t: history.Init, rank: 0}}
	v := h.InitialValue(k)
	place := func(val history.Value, rank int) {
		for _, r := range readers[val] {
			tx := &h.Txns[r]
			chain = append(chain, op{t: r, begin: tx.Begin, end: endOf(tx), rank: rank})
		}
		delete(readers, val)
	}
	place(v, 1)
	for i := 1; ; i++ {
		t, ok := next[v]
		if !ok {
			break
		}
		delete(next, v)
		tx := &h.Txns[t]
		chain = append(chain, op{t: t, begin: tx.Begin, end: endOf(tx), rank: 2 * i})
		v = tx.Ops[1].Value
		place(v, 2*i+1)
	}
	if len(next) > 0 {
		// Links unreachable from the initial state read values written by
		// each other (or by nobody: the shared checks report that).
		for val, t := range next {
			if w, ok := ix.SoleWriter(k, val); ok && w.Txn != t {
				if a, ok := loopFrom(h, next, t, k); ok {
					return a, true
				}
			}
		}
	}
	// Backward pass, one rank at a time (reads of the same value may go in
	// any order): nothing may begin after a higher-ranked operation ended.
	minEnd, any := int64(0), false
	for i := len(chain) - 1; i >= 1; {
		j := i
		for j >= 1 && chain[j].rank == chain[i].rank {
			j--
		}
		for g := j + 1; g <= i; g++ {
			if any && chain[g].begin > minEnd {
				return realTime(h, chain, g, k), true
			}
		}
		for g := j + 1; g <= i; g++ {
			if !any || chain[g].end < minEnd {
				minEnd, any = chain[g].end, true
			}
		}
		i = j
	}
	return anomaly.Anomaly{}, false
}

// endOf is when a transaction is known to have finished: never, for one of
// unknown status (if it took effect, it may have done so at any time after
// it began).
func endOf(t *history.Txn) int64 {
	if t.Status == history.Unknown {
		return math.MaxInt64
	}
	return t.End
}

// loopFrom follows links from t (each reads what the previous wrote) and
// returns the wr cycle it closes, if it closes one.
func loopFrom(h *history.History, next map[history.Value]history.TxnID, t history.TxnID, k history.KeyID) (anomaly.Anomaly, bool) {
	pos := map[history.TxnID]int{}
	var path []history.TxnID
	for {
		if i, seen := pos[t]; seen {
			loop := path[i:]
			var cyc []anomaly.Step
			for j, a := range loop {
				cyc = append(cyc, anomaly.Step{From: a, To: loop[(j+1)%len(loop)], Dep: anomaly.WR, Key: k})
			}
			kind, p := anomaly.Classify(h, cyc)
			return anomaly.Anomaly{Kind: kind, Phenomenon: p, Txns: loop, Cycle: cyc, Key: k}, true
		}
		pos[t] = len(path)
		path = append(path, t)
		n, ok := next[h.Txns[t].Ops[1].Value]
		if !ok {
			return anomaly.Anomaly{}, false
		}
		t = n
	}
}

// realTime builds the counterexample for chain[i], which begins after some
// later-ranked operation ended: the nearest such operation y, the rt edge
// y → chain[i], and the chain path from chain[i] to y.
func realTime(h *history.History, chain []op, i int, k history.KeyID) anomaly.Anomaly {
	x := chain[i]
	j := i + 1
	for ; j < len(chain); j++ {
		if chain[j].rank > x.rank && chain[j].end < x.begin {
			break
		}
	}
	y := chain[j]
	cyc := []anomaly.Step{{From: y.t, To: x.t, Dep: anomaly.RT, Key: history.NoKey}}
	// Walk from x to y: x's link (or x itself), then links up to y's rank.
	cur := x
	for p := i + 1; p <= j && cur.t != y.t; p++ {
		c := chain[p]
		switch {
		case c.rank%2 == 0 && c.rank > cur.rank: // the next link
			dep := anomaly.WW
			if cur.rank%2 == 1 {
				dep = anomaly.RW
			}
			cyc = append(cyc, anomaly.Step{From: cur.t, To: c.t, Dep: dep, Key: k})
			cur = c
		case c.t == y.t: // y reads what cur wrote
			cyc = append(cyc, anomaly.Step{From: cur.t, To: c.t, Dep: anomaly.WR, Key: k})
			cur = c
		}
	}
	kind, p := anomaly.Classify(h, cyc)
	txns := make([]history.TxnID, len(cyc))
	for n, s := range cyc {
		txns[n] = s.From
	}
	return anomaly.Anomaly{Kind: kind, Phenomenon: p, Txns: txns, Cycle: cyc, Key: k}
}
