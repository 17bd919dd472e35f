// Package chronos checks snapshot isolation and serializability against the
// timestamps the database assigned (Li, Wei et al., "Online
// Timestamp-based Transactional Isolation Checking of Database Systems",
// §III-B, Algorithm 2: Chronos).
//
// Every transaction that took effect carries the database's start_ts and
// commit_ts. Chronos sorts those timestamps and replays the history in
// their order, as the database claims to have run it, keeping two maps: the
// frontier (each key's last committed version) and the ongoing writers of
// each key. Under snapshot isolation it checks, at each start, the Session
// axiom (the session's previous transaction has committed) and the Ext
// axiom (every external read returns the frontier's version), and at each
// commit the NoConflict axiom (no other writer of a key it writes is still
// running). Under serializability (Aion-SER) every transaction must appear
// to run alone at its commit timestamp: its external reads return the
// frontier then, and its session's previous transaction committed before
// it. Int (internal reads) is the shared checks' job for reads of values
// (not-my-own-write, not-my-last-write, non-repeatable read); Chronos
// checks it for list reads, which those do not cover. Every violation is
// reported, not only the first, in time O(N log N + M) for N transactions
// and M operations (plus the conflicting pairs it reports).
//
// The verdict is about the database's own timestamps: a violation means
// the timestamps do not explain what the clients saw, even where some other
// order would (a history Chronos accepts is accepted by the black-box
// checkers; the converse need not hold).
//
// Timestamp ties follow the common MVCC rule: a commit at timestamp c is
// visible to a snapshot taken at c (commits are replayed before starts at
// the same timestamp, a transaction's own start before its own commit, and
// otherwise in file order). Under SI a commit_ts below its start_ts is
// reported (commit-before-start) and the transaction replayed as starting
// at its commit; under SER, which uses only commit timestamps, two writers
// of a key with one commit_ts are reported, since nothing orders them.
// Both levels ask for both timestamps, so that `auto` picks Chronos
// exactly when a history carries them.
//
// Garbage collection as in the paper, done eagerly: a transaction's
// ongoing entries are recycled at its commit, its intermediate values
// (int_val) live only while it is checked, and the frontier keeps one
// version per key (lists keep their elements: they are the live state).
package chronos

import (
	"context"
	"fmt"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check/checker"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// Checker is the timestamp-based checker, named "chronos".
type Checker struct{}

// Name returns "chronos".
func (Checker) Name() string { return "chronos" }

// Capabilities: none beyond the histories it decides.
func (Checker) Capabilities() checker.Capabilities { return checker.Capabilities{} }

// Plan accepts snapshot isolation and serializability on histories whose
// transactions that took effect all carry start_ts and commit_ts, made of
// reads, writes, deletes, appends and list reads (the paper's key-value
// and list model), with no key both written and appended. It declines
// range scans and iterators (the paper's model has no predicate reads),
// other levels, and histories without timestamps. The check replays the
// history in timestamp order and returns every violation of the Session,
// Ext and NoConflict axioms (SI), or of the commit order (SER), with the
// Int violations of list reads.
func (Checker) Plan(ix *history.Index, l level.Level, _ checker.Options) (checker.Check, error) {
	switch l.ID {
	case level.SnapshotIsolation, level.Serializable:
	default:
		return nil, fmt.Errorf("it decides snapshot-isolation and serializable by the database's timestamps, not %s", l.Name)
	}
	kinds, eff, err := shape(ix)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) ([]anomaly.Anomaly, error) {
		return newSim(ix, kinds, eff, l.ID == level.Serializable).run(ctx)
	}, nil
}

// Key kinds: a key holds values (reads, writes, deletes) or a list
// (appends and list reads).
const (
	kvKey   uint8 = 1
	listKey uint8 = 2
)

// shape checks what Plan requires and returns each key's kind and which
// transactions took effect: those the index says did, and with lists,
// unknown transactions whose appended element such a transaction read
// (the index resolves only reads of values).
func shape(ix *history.Index) ([]uint8, []bool, error) {
	h := ix.History()
	eff := make([]bool, len(h.Txns))
	for i := range eff {
		eff[i] = ix.Effective(history.TxnID(i))
	}
	kinds, lists, unknown, err := mark(h, eff)
	if err == nil && lists && unknown {
		// Appends read by transactions that took effect took effect.
		eff = effective(h, eff)
		kinds, _, _, err = mark(h, eff)
	}
	if err != nil {
		return nil, nil, err
	}
	return kinds, eff, nil
}

// mark checks the transactions that took effect (eff) — timestamps and
// operation kinds — and returns each key's kind, whether there are lists,
// and whether some unknown transaction has not taken effect.
func mark(h *history.History, eff []bool) (kinds []uint8, lists, unknown bool, err error) {
	kinds = make([]uint8, len(h.Keys))
	for i := range h.Txns {
		tx := &h.Txns[i]
		if !eff[i] {
			unknown = unknown || tx.Status == history.Unknown
			continue
		}
		t := history.TxnID(i)
		switch {
		case !tx.HasStartTS:
			return nil, false, false, fmt.Errorf("transaction %s (line %d) has no start_ts: it needs the database's start and commit timestamps on every transaction that took effect", h.TxnName(t), tx.Line)
		case !tx.HasCommitTS:
			return nil, false, false, fmt.Errorf("transaction %s (line %d) has no commit_ts: it needs the database's start and commit timestamps on every transaction that took effect", h.TxnName(t), tx.Line)
		}
		for _, op := range tx.Ops {
			var kind uint8
			switch op.Kind {
			case history.Read:
				if !op.Value.IsNull() { // a null read fits either kind
					kind = kvKey
				}
			case history.Write, history.Delete:
				kind = kvKey
			case history.Append, history.ReadList:
				kind, lists = listKey, true
			default:
				return nil, false, false, fmt.Errorf("transaction %s has %s operation; it checks reads, writes, deletes, appends and list reads (the paper's key-value and list model), not range queries", h.TxnName(t), op.Kind.Noun())
			}
			if uint(op.Key) >= uint(len(kinds)) {
				return nil, false, false, fmt.Errorf("transaction %s uses a key outside the history's key table", h.TxnName(t))
			}
			kinds[op.Key] |= kind
		}
	}
	for k, kind := range kinds {
		if kind == kvKey|listKey {
			return nil, false, false, fmt.Errorf("key %s is both written as a value and appended to as a list", h.KeyName(history.KeyID(k)))
		}
	}
	return kinds, lists, unknown, nil
}

// effective extends eff, which transactions took effect, with unknown
// transactions whose element a transaction that took effect read, to a
// fixpoint.
func effective(h *history.History, eff []bool) []bool {
	apps := appenders(h)
	var work []history.TxnID
	for i := range h.Txns {
		if eff[i] {
			work = append(work, history.TxnID(i))
		}
	}
	for len(work) > 0 {
		t := work[len(work)-1]
		work = work[:len(work)-1]
		for _, op := range h.Txns[t].Ops {
			if op.Kind != history.ReadList {
				continue
			}
			for _, e := range op.List {
				if a, ok := apps[elemKey{op.Key, e}]; ok && !eff[a.Txn] && h.Txns[a.Txn].Status == history.Unknown {
					eff[a.Txn] = true
					work = append(work, a.Txn)
				}
			}
		}
	}
	return eff
}

// elemKey is an element of the list at a key.
type elemKey struct {
	k history.KeyID
	e history.Value
}

// appenders maps every appended element to its first append.
func appenders(h *history.History) map[elemKey]history.OpRef {
	m := map[elemKey]history.OpRef{}
	for i := range h.Txns {
		for j, op := range h.Txns[i].Ops {
			if op.Kind != history.Append {
				continue
			}
			if _, dup := m[elemKey{op.Key, op.Value}]; !dup {
				m[elemKey{op.Key, op.Value}] = history.OpRef{Txn: history.TxnID(i), Op: int32(j)}
			}
		}
	}
	return m
}
