package linear

import (
	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/history"
)

// counterexample describes a failed search as porcupine does: the longest
// linearizable prefix found and the operation that cannot follow it. It is
// a real-time-violation at strict serializability (no order respects real
// time), a cycle at serializability (none respects session order), and not
// a cycle of edges: Txns are the operation that cannot be placed, then the
// prefix in its order; Key and Value the register and the value the prefix
// leaves; Ops the blocked operation's read (its write when it reads
// nothing), then the write that left the value, if any.
func (s *search) counterexample() anomaly.Anomaly {
	in := make([]bool, len(s.ops))
	for _, c := range s.best {
		in[c] = true
	}
	b := int32(-1)
	if s.rt {
		// The first of those left to end: every operation that began
		// after it must follow it.
		for _, c := range s.byEnd {
			if !in[c] {
				b = c
				break
			}
		}
	} else {
		// The first, in file order, of those next in their sessions.
		for _, ops := range s.k.sessions {
			for _, c := range ops {
				if in[c] {
					continue
				}
				if !s.ops[c].optional && (b < 0 || s.ops[c].txn < s.ops[b].txn) {
					b = c
				}
				break
			}
		}
	}
	a := anomaly.Anomaly{Kind: anomaly.RealTimeViolation, Key: s.k.key, Value: s.k.values[s.bestState]}
	if !s.rt {
		a.Kind = anomaly.Cycle
	}
	if b < 0 {
		return a // cannot happen: the search failed, so a required operation is left
	}
	bo := &s.ops[b]
	a.Txns = append(a.Txns, bo.txn)
	for _, c := range s.best {
		a.Txns = append(a.Txns, s.ops[c].txn)
	}
	if bo.readOp >= 0 {
		a.Ops = append(a.Ops, history.OpRef{Txn: bo.txn, Op: bo.readOp})
	} else {
		a.Ops = append(a.Ops, history.OpRef{Txn: bo.txn, Op: bo.writeOp})
	}
	for i := len(s.best) - 1; i >= 0; i-- {
		if o := &s.ops[s.best[i]]; o.post != none {
			a.Ops = append(a.Ops, history.OpRef{Txn: o.txn, Op: o.writeOp})
			break
		}
	}
	return a
}
