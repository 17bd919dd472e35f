// Package mt implements MTC's checkers for mini-transaction histories
// (Wei et al., "Boosting End-to-End Database Isolation Checking via
// Mini-Transactions", §IV, Algorithm 1 in its optimised form of §IV-C):
// CheckSER, CheckSI (the Divergence pattern, then acyclicity of
// (SO ∪ WR ∪ WW) ; RW?) and CheckSSER with real time encoded in O(n log n).
//
// The algorithms need every write to be preceded by a read of its key in the
// same transaction (read-modify-write) and unique values: then the write
// order of each key follows from what the writers read, and the dependency
// graph is (nearly) unique. The proofs of Appendix A use nothing more; MTC's
// bound of two reads and two writes (Definition 8) only keeps the workload
// fast. So this checker accepts any read-modify-write history with unique
// values, in time linear in its operations, and says which histories are
// mini-transaction histories in the strict sense.
package mt

import (
	"context"
	"fmt"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check/checker"
	"github.com/isoscope/isoscope/internal/check/dsg"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// Checker is the mini-transaction checker, named "mt".
type Checker struct{}

// Name returns "mt".
func (Checker) Name() string { return "mt" }

// Capabilities: none beyond the histories it decides.
func (Checker) Capabilities() checker.Capabilities { return checker.Capabilities{} }

// Plan returns the check of ix at l when decides accepts it.
func (Checker) Plan(ix *history.Index, l level.Level, _ checker.Options) (checker.Check, error) {
	return checker.Simple(ix, l, decides, check)
}

// decides returns nil for what Plan accepts: serializability and snapshot
// isolation (with session order or without: plain serializability,
// generalized SI) and strict
// serializability on read-modify-write histories with unique values (and,
// for strict serializability, real-time instants on every transaction that
// took effect).
func decides(ix *history.Index, l level.Level) error {
	switch l.ID {
	case level.Serializable, level.SnapshotIsolation, level.StrictSerializable, level.GSI, level.PlainSerializable:
	default:
		return fmt.Errorf("it decides serializability and snapshot isolation (with session order or without) and strict-serializable, not %s", l.Name)
	}
	if err := Shape(ix); err != nil {
		return err
	}
	if l.RealTime {
		return needTime(ix)
	}
	return nil
}

// Shape returns nil when ix's history is one the algorithms decide: unique
// values, only reads and writes, every write preceded by a read of its key.
func Shape(ix *history.Index) error {
	h := ix.History()
	if !ix.Unique() {
		k, v, w := ix.Duplicate()
		return fmt.Errorf("values are not unique: %s=%s is written by %s and %s", h.KeyName(k), v, h.TxnName(w[0].Txn), h.TxnName(w[1].Txn))
	}
	for i := range h.Txns {
		t := history.TxnID(i)
		if !ix.Effective(t) {
			continue
		}
		ops := h.Txns[i].Ops
		for j, op := range ops {
			switch op.Kind {
			case history.Read:
			case history.Write:
				if !readBefore(ops[:j], op.Key) {
					return fmt.Errorf("transaction %s writes %s without reading it first (not read-modify-write)", h.TxnName(t), h.KeyName(op.Key))
				}
			default:
				return fmt.Errorf("transaction %s has %s operation; only reads and writes are mini-transactions", h.TxnName(t), op.Kind.Noun())
			}
		}
	}
	return nil
}

// IsMiniTransaction reports whether t is a mini-transaction in the strict
// sense of MTC Definition 8: one or two reads, at most two writes, each
// write preceded by a read of its key.
func IsMiniTransaction(t *history.Txn) bool {
	reads, writes := 0, 0
	for j, op := range t.Ops {
		switch op.Kind {
		case history.Read:
			reads++
		case history.Write:
			writes++
			if !readBefore(t.Ops[:j], op.Key) {
				return false
			}
		default:
			return false
		}
	}
	return reads >= 1 && reads <= 2 && writes <= 2
}

func readBefore(ops []history.Op, k history.KeyID) bool {
	for _, p := range ops {
		if p.Kind == history.Read && p.Key == k {
			return true
		}
	}
	return false
}

func needTime(ix *history.Index) error {
	h := ix.History()
	for i := range h.Txns {
		if ix.Effective(history.TxnID(i)) && !h.Txns[i].HasTime {
			return fmt.Errorf("strict serializability needs begin and end instants; transaction %s (line %d) has none", h.TxnName(history.TxnID(i)), h.Txns[i].Line)
		}
	}
	return nil
}

// check is the check Plan returns: it runs CheckSER, CheckSI or CheckSSER and returns the cycles found,
// one per strongly connected component, and for snapshot isolation every
// instance of the Divergence pattern as a lost update.
func check(ctx context.Context, ix *history.Index, l level.Level) ([]anomaly.Anomaly, error) {
	si := l.ID == level.SnapshotIsolation || l.ID == level.GSI
	g := dsg.Build(ix, dsg.Options{
		SessionOrder: l.SessionOrder, RealTime: l.RealTime, AntiDependencies: true, Split: si,
	})
	var out []anomaly.Anomaly
	if si {
		out = append(out, Divergences(ix.History(), g.Divergences)...)
	}
	found, err := dsg.FindCycles(ctx, ix.History(), g.G, g.Mask, g.Nodes)
	return append(out, found...), err
}

// Divergences reports each Divergence instance as a lost update: the first
// two overwriting readers, each anti-dependent on the other.
func Divergences(h *history.History, ds []dsg.Divergence) []anomaly.Anomaly {
	out := make([]anomaly.Anomaly, 0, len(ds))
	for _, d := range ds {
		a, b := d.Readers[0], d.Readers[1]
		cyc := []anomaly.Step{
			{From: a, To: b, Dep: anomaly.RW, Key: d.Key},
			{From: b, To: a, Dep: anomaly.RW, Key: d.Key},
		}
		k, p := anomaly.Classify(h, cyc)
		out = append(out, anomaly.Anomaly{
			Kind: k, Phenomenon: p, Txns: []history.TxnID{d.Writer, a, b}, Cycle: cyc, Key: d.Key,
		})
	}
	return out
}
