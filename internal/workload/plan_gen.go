package workload

import (
	"fmt"
	"math/rand/v2"
)

// planner draws the transactions of one plan.
type planner struct {
	c    PlanConfig
	r    *rand.Rand
	keys KeyChooser
	// dup marks the general workload's keys whose values come from
	// domain.
	dup    []bool
	domain KeyChooser
	// active maps the list-append workload's key slots to their keys
	// and appends counts the appends planned to each, when keys retire
	// (PlanConfig.AppendsPerKey); fresh is the next fresh key.
	active  []int64
	appends []int
	fresh   int64
}

func (g *planner) next() Txn {
	switch g.c.Workload {
	case General:
		return g.general()
	case ListAppend:
		return g.listAppend()
	case LWT:
		return g.lwt()
	case Range:
		return g.rangeTxn()
	case RandomBench:
		return g.randomMix(randomBenchMix)
	case RandomRange:
		return g.randomMix(randomRangeMix)
	case RandomRMWRange:
		return g.rmwRange()
	case BlindW:
		return g.blindW()
	}
	return g.miniTxn()
}

func (g *planner) key() int64 { return int64(g.keys.Next(g.r)) }

// miniTxn draws a mini-transaction of the catalogue's shapes (DrawMT).
func (g *planner) miniTxn() Txn {
	shape, k := DrawMT(g.r, g.keys, g.c.Keys, g.c.ReadRatio)
	steps := MTShapes[shape]
	ops := make([]Op, len(steps))
	for i, st := range steps {
		ops[i] = Op{Kind: ReadOp, Key: int64(k[st.Slot])}
		if st.Write {
			ops[i].Kind = WriteOp
		}
	}
	return Txn{Ops: ops}
}

// duplicates decides which keys of the general workload take their values
// from the small domain.
func (g *planner) duplicates() error {
	g.dup = make([]bool, g.c.Keys)
	if g.c.Duplicates == 0 {
		return nil
	}
	for k := range g.dup {
		g.dup[k] = g.r.Float64() < g.c.Duplicates
	}
	var err error
	if g.domain, err = NewZipfian(g.c.DuplicateDomain, ZipfianTheta); err != nil {
		return fmt.Errorf("workload: %w", err)
	}
	return nil
}

// write plans a write of k: a value of the small domain on a duplicate
// key, else a fresh one.
func (g *planner) write(k int64) Op {
	if g.dup != nil && g.dup[k] {
		return Op{Kind: WriteOp, Key: k, Value: int64(g.domain.Next(g.r)) + 1, Fixed: true}
	}
	return Op{Kind: WriteOp, Key: k}
}

// general draws one of Cobra's transactions: read-only with probability
// ReadRatio, otherwise write-only or read-modify-write with equal
// probability, Ops operations each (a read-modify-write transaction reads
// and then writes each of its keys).
func (g *planner) general() Txn {
	n := g.c.Ops
	ops := make([]Op, 0, n)
	switch u := g.r.Float64(); {
	case u < g.c.ReadRatio:
		for range n {
			ops = append(ops, Op{Kind: ReadOp, Key: g.key()})
		}
	case u < g.c.ReadRatio+(1-g.c.ReadRatio)/2:
		for range n {
			ops = append(ops, g.write(g.key()))
		}
	default:
		for len(ops)+2 <= n {
			k := g.key()
			ops = append(ops, Op{Kind: ReadOp, Key: k}, g.write(k))
		}
		if len(ops) < n {
			ops = append(ops, Op{Kind: ReadOp, Key: g.key()})
		}
	}
	return Txn{Ops: ops}
}

// listAppend draws one to Ops operations, each a read of a whole list
// (probability ReadRatio) or an append of a fresh element.
func (g *planner) listAppend() Txn {
	n := 1 + g.r.IntN(g.c.Ops)
	ops := make([]Op, n)
	for i := range ops {
		if g.c.AppendsPerKey == 0 {
			ops[i] = Op{Kind: AppendOp, Key: g.key()}
			if g.r.Float64() < g.c.ReadRatio {
				ops[i].Kind = ReadListOp
			}
			continue
		}
		if g.active == nil {
			g.active, g.appends = make([]int64, g.c.Keys), make([]int, g.c.Keys)
			for k := range g.active {
				g.active[k] = int64(k)
			}
			g.fresh = int64(g.c.Keys) + 1 // the fence key is Keys
		}
		slot := g.keys.Next(g.r)
		ops[i] = Op{Kind: AppendOp, Key: g.active[slot]}
		if g.r.Float64() < g.c.ReadRatio {
			ops[i].Kind = ReadListOp
			continue
		}
		if g.appends[slot]++; g.appends[slot] >= g.c.AppendsPerKey {
			g.active[slot], g.appends[slot] = g.fresh, 0
			g.fresh++
		}
	}
	return Txn{Ops: ops}
}

// lwt draws a single-key transaction: a read (probability ReadRatio) or a
// compare-and-set.
func (g *planner) lwt() Txn {
	op := Op{Kind: CASOp, Key: g.key()}
	if g.r.Float64() < g.c.ReadRatio {
		op.Kind = ReadOp
	}
	return Txn{Ops: []Op{op}}
}

// rangeTxn draws one to Ops operations: with probability ReadRatio a point
// read, a scan or an iterator (a third each), otherwise a write (three in
// four) or a delete. Ranges span 1 to max(1, Keys/4) keys; an iterator
// takes 1 to 4 pairs.
func (g *planner) rangeTxn() Txn {
	n := 1 + g.r.IntN(g.c.Ops)
	ops := make([]Op, n)
	width := max(1, g.c.Keys/4)
	for i := range ops {
		k := g.key()
		if g.r.Float64() < g.c.ReadRatio {
			switch g.r.IntN(3) {
			case 0:
				ops[i] = Op{Kind: ReadOp, Key: k}
			case 1:
				ops[i] = Op{Kind: ScanOp, Key: k, Hi: k + 1 + int64(g.r.IntN(width))}
			default:
				ops[i] = Op{Kind: IterOp, Key: k, Hi: k + 1 + int64(g.r.IntN(width)), Limit: 1 + g.r.IntN(4)}
			}
			continue
		}
		ops[i] = Op{Kind: WriteOp, Key: k}
		if g.r.IntN(4) == 0 {
			ops[i].Kind = DeleteOp
		}
	}
	return Txn{Ops: ops}
}
