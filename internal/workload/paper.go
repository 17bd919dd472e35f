package workload

// Boomslang's workloads (Zhang, Mu and Tan, "Making Transaction Isolation
// Checking Practical", §8 and Appendix A.5): RandomBench, RandomRange,
// RandomRMWRange and BlindW. Keys come from the plan's distribution;
// ranges start at a key drawn the same way and span 1 to Span keys.

// The defaults of the paper workloads.
const (
	// DefaultSpan is the widest range of a scan or iterator: the paper's
	// k2 = k1 + RandomInt(1, 100).
	DefaultSpan = 100
	// DefaultValues is the size of the value domain of randombench and
	// randomrange.
	DefaultValues = 8
	// MaxIterLimit is the most pairs an iterator takes: the paper's top-k
	// with k drawn from 1..10 (and not told to the checker: the history
	// records only the pairs returned).
	MaxIterLimit = 10
	// RMWRangeScanShare is the share of RandomRMWRange's operations that
	// are range scans (each preceded by a scan of every key); the others
	// are read-modify-writes.
	RMWRangeScanShare = 0.1
)

// MixOp is a logical operation of a paper workload's mix. A
// read-modify-write (MixRMW) is one logical operation made of two (a read
// and then a write of the same key).
type MixOp uint8

// The logical operations of the mixes.
const (
	MixRead MixOp = iota
	MixWrite
	MixDelete
	MixScan
	MixIter
	MixRMW
)

// Share is one entry of an operation mix: a logical operation and its
// percentage of the logical operations, each drawn independently.
type Share struct {
	Op  MixOp
	Pct int
}

var (
	// randomBenchMix is RandomBench's: 25% reads, 25% writes, 5% deletes,
	// 10% range scans, 10% iterators, 25% read-modify-writes.
	randomBenchMix = []Share{{MixRead, 25}, {MixWrite, 25}, {MixDelete, 5}, {MixScan, 10}, {MixIter, 10}, {MixRMW, 25}}
	// randomRangeMix is RandomRange's: 25% reads, 25% writes, 5%
	// deletes, 20% range scans, 25% read-modify-writes.
	randomRangeMix = []Share{{MixRead, 25}, {MixWrite, 25}, {MixDelete, 5}, {MixScan, 20}, {MixRMW, 25}}
)

// Mix returns the operation mix of RandomBench or RandomRange, whose
// shares sum to 100, in the order they are drawn: the one catalogue run's
// plans and the simulator (internal/gen) draw from. The other workloads
// have none (nil). The slice is shared: do not change it.
func Mix(w Workload) []Share {
	switch w {
	case RandomBench:
		return randomBenchMix
	case RandomRange:
		return randomRangeMix
	}
	return nil
}

// value draws a written value of the small domain 1..Values.
func (g *planner) value() int64 { return 1 + int64(g.r.IntN(g.c.Values)) }

// span draws a range [lo, lo+n), n in 1..Span.
func (g *planner) span() (lo, hi int64) {
	lo = g.key()
	return lo, lo + 1 + int64(g.r.IntN(g.c.Span))
}

// randomMix draws Ops operations of mix m: a uniform draw in [0, 1)
// picks the first share whose running total (as a fraction) it is below,
// the last share when none. A read-modify-write is a read and then a write
// of the same key: one operation of the mix, two of the transaction.
// Written values come from the small domain.
func (g *planner) randomMix(m []Share) Txn {
	ops := make([]Op, 0, g.c.Ops+g.c.Ops/2)
	for range g.c.Ops {
		u := g.r.Float64()
		op, below := m[len(m)-1].Op, 0.0
		for _, sh := range m[:len(m)-1] {
			if below += float64(sh.Pct) / 100; u < below {
				op = sh.Op
				break
			}
		}
		switch op {
		case MixRead:
			ops = append(ops, Op{Kind: ReadOp, Key: g.key()})
		case MixWrite:
			ops = append(ops, Op{Kind: WriteOp, Key: g.key(), Value: g.value(), Fixed: true})
		case MixDelete:
			ops = append(ops, Op{Kind: DeleteOp, Key: g.key()})
		case MixScan:
			lo, hi := g.span()
			ops = append(ops, Op{Kind: ScanOp, Key: lo, Hi: hi})
		case MixIter:
			lo, hi := g.span()
			ops = append(ops, Op{Kind: IterOp, Key: lo, Hi: hi, Limit: 1 + g.r.IntN(MaxIterLimit)})
		default:
			k := g.key()
			ops = append(ops, Op{Kind: ReadOp, Key: k}, Op{Kind: WriteOp, Key: k, Value: g.value(), Fixed: true})
		}
	}
	return Txn{Ops: ops}
}

// rmwRange draws one of RandomRMWRange's transactions: Ops operations,
// each a read-modify-write of one key with a fresh value, or (with
// probability RMWRangeScanShare) a scan of every key, [0, Keys), followed
// by a range scan.
func (g *planner) rmwRange() Txn {
	ops := make([]Op, 0, 2*g.c.Ops)
	for range g.c.Ops {
		if g.r.Float64() < RMWRangeScanShare {
			lo, hi := g.span()
			ops = append(ops, Op{Kind: ScanOp, Key: 0, Hi: int64(g.c.Keys)}, Op{Kind: ScanOp, Key: lo, Hi: hi})
			continue
		}
		k := g.key()
		ops = append(ops, Op{Kind: ReadOp, Key: k}, Op{Kind: WriteOp, Key: k})
	}
	return Txn{Ops: ops}
}

// blindW draws one of BlindW's transactions: Ops reads (with probability
// ReadRatio) or Ops blind writes, of fresh values or of values of the
// small domain when Values is set.
func (g *planner) blindW() Txn {
	ops := make([]Op, g.c.Ops)
	read := g.r.Float64() < g.c.ReadRatio
	for i := range ops {
		switch {
		case read:
			ops[i] = Op{Kind: ReadOp, Key: g.key()}
		case g.c.Values > 0:
			ops[i] = Op{Kind: WriteOp, Key: g.key(), Value: g.value(), Fixed: true}
		default:
			ops[i] = Op{Kind: WriteOp, Key: g.key()}
		}
	}
	return Txn{Ops: ops}
}
