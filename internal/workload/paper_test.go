package workload

import (
	"math"
	"testing"
)

// logicalMix counts a plan's operations as the paper counts them: a read
// followed by a write of the same key is one read-modify-write, a scan of
// every key followed by a scan is one range query of RandomRMWRange.
func logicalMix(t *testing.T, p *Plan) (counts map[string]int, total int) {
	t.Helper()
	counts = map[string]int{}
	for _, s := range p.Sessions {
		for _, tx := range s {
			n := 0
			for i := 0; i < len(tx.Ops); i++ {
				op := tx.Ops[i]
				next := Op{Kind: CASOp}
				if i+1 < len(tx.Ops) {
					next = tx.Ops[i+1]
				}
				switch {
				case op.Kind == ReadOp && next.Kind == WriteOp && next.Key == op.Key:
					counts["rmw"]++
					i++
				case op.Kind == ScanOp && op.Key == 0 && op.Hi == int64(p.Config.Keys) && next.Kind == ScanOp:
					counts["global+scan"]++
					i++
				default:
					counts[op.Kind.String()]++
				}
				n++
			}
			if n != p.Config.Ops {
				t.Fatalf("%s: %d operations, want %d: %+v", p.Config.Workload, n, p.Config.Ops, tx)
			}
			total += n
		}
	}
	return counts, total
}

func near(got, total int, want float64) bool {
	share := float64(got) / float64(total)
	return math.Abs(share-want) <= 0.02
}

// TestPaperMixes checks the operation mixes of Boomslang's workloads
// (Appendix A.5), their ranges and values, and that only RandomRMWRange
// promises unique values.
func TestPaperMixes(t *testing.T) {
	for _, c := range []struct {
		w    Workload
		want map[string]float64
	}{
		{RandomBench, map[string]float64{"read": 0.25, "write": 0.25, "delete": 0.05, "scan": 0.10, "iter": 0.10, "rmw": 0.25}},
		{RandomRange, map[string]float64{"read": 0.25, "write": 0.25, "delete": 0.05, "scan": 0.20, "rmw": 0.25}},
		{RandomRMWRange, map[string]float64{"rmw": 0.9, "global+scan": 0.1}},
	} {
		t.Run(c.w.String(), func(t *testing.T) {
			// Many keys: a plain read and a plain write of the same key in a
			// row, which logicalMix would count as one read-modify-write,
			// are then unlikely.
			const keys = 1 << 20
			p := plan(t, PlanConfig{Workload: c.w, Sessions: 3, Txns: 3000, Keys: keys, Dist: Uniform, ReadRatio: -1}, 11)
			counts, total := logicalMix(t, p)
			if total != 3000*8 {
				t.Fatalf("%d operations, want %d", total, 3000*8)
			}
			for kind, n := range counts {
				if !near(n, total, c.want[kind]) {
					t.Errorf("%s: %d of %d operations (%.3f), want %.2f", kind, n, total, float64(n)/float64(total), c.want[kind])
				}
			}
			for kind := range c.want {
				if counts[kind] == 0 {
					t.Errorf("no %s planned", kind)
				}
			}
			if p.UniqueValues != (c.w == RandomRMWRange) {
				t.Errorf("unique values %v", p.UniqueValues)
			}
			widest := int64(0)
			for _, s := range p.Sessions {
				for _, tx := range s {
					for _, op := range tx.Ops {
						switch op.Kind {
						case ScanOp, IterOp:
							if op.Hi <= op.Key || op.Hi-op.Key > DefaultSpan && !(op.Key == 0 && op.Hi == keys) {
								t.Fatalf("range [%d, %d)", op.Key, op.Hi)
							}
							if op.Kind == IterOp && (op.Limit < 1 || op.Limit > MaxIterLimit) {
								t.Fatalf("iterator limit %d", op.Limit)
							}
							if op.Key != 0 || op.Hi != keys {
								widest = max(widest, op.Hi-op.Key)
							}
						case WriteOp:
							if op.Fixed != (c.w != RandomRMWRange) || op.Fixed && (op.Value < 1 || op.Value > DefaultValues) {
								t.Fatalf("write %+v", op)
							}
						}
					}
				}
			}
			if widest != DefaultSpan {
				t.Errorf("widest range %d keys, want %d", widest, DefaultSpan)
			}
		})
	}
}

// TestBlindW checks that BlindW's transactions are read-only or blind
// write-only, half each by default, with fresh values, or values of the
// small domain when asked.
func TestBlindW(t *testing.T) {
	fresh := plan(t, PlanConfig{Workload: BlindW, Sessions: 2, Txns: 200, Keys: 5000, Dist: Uniform, ReadRatio: -1}, 12)
	if !fresh.UniqueValues || fresh.Config.String() != "workload=blindw sessions=2 txns=200 keys=5000 dist=uniform read-ratio=0.5 ops=8" {
		t.Errorf("unique values %v, %s", fresh.UniqueValues, fresh.Config)
	}
	for _, s := range fresh.Sessions {
		for _, tx := range s {
			for _, op := range tx.Ops {
				if op.Fixed {
					t.Fatalf("a fixed value without Values: %+v", op)
				}
			}
		}
	}
	p := plan(t, PlanConfig{Workload: BlindW, Sessions: 2, Txns: 4000, Keys: 5000, Dist: Uniform, ReadRatio: -1, Values: 4}, 12)
	readOnly := 0
	for _, s := range p.Sessions {
		for _, tx := range s {
			if len(tx.Ops) != 8 {
				t.Fatalf("%d operations", len(tx.Ops))
			}
			for _, op := range tx.Ops {
				if op.Kind != tx.Ops[0].Kind || op.Kind != ReadOp && op.Kind != WriteOp {
					t.Fatalf("mixed transaction %+v", tx)
				}
				if op.Kind == WriteOp && (!op.Fixed || op.Value < 1 || op.Value > 4) {
					t.Fatalf("write %+v", op)
				}
			}
			if !tx.Writes() {
				readOnly++
			}
		}
	}
	if !near(readOnly, 4000, 0.5) {
		t.Errorf("%d of 4000 read-only, want about 2000", readOnly)
	}
	if p.UniqueValues {
		t.Error("blindw with repeated values promises unique values")
	}
	if s := p.Config.String(); s != "workload=blindw sessions=2 txns=4000 keys=5000 dist=uniform read-ratio=0.5 ops=8 values=4" {
		t.Errorf("String = %q", s)
	}
}

func TestPaperNames(t *testing.T) {
	for name, want := range map[string]Workload{
		"randombench": RandomBench, "Random-Bench": RandomBench, "random-range": RandomRange,
		"random-rmw-range": RandomRMWRange, "RandomRMWRange": RandomRMWRange, "blind-w": BlindW, "blindw": BlindW,
	} {
		if w, err := ParseWorkload(name); err != nil || w != want {
			t.Errorf("ParseWorkload(%q) = %v, %v; want %v", name, w, err, want)
		}
	}
	for _, w := range Workloads() {
		if w.Paper() != (w >= RandomBench) {
			t.Errorf("%s.Paper() = %v", w, w.Paper())
		}
	}
	if _, err := NewPlan(PlanConfig{Workload: RandomBench, Sessions: 1, Keys: 1, Span: 1 << 31}, nil); err == nil {
		t.Error("a span of 2^31 keys accepted")
	}
}

// TestMix checks the catalogue's mixes: RandomBench's and RandomRange's
// shares sum to 100, and the other workloads have none.
func TestMix(t *testing.T) {
	for _, w := range Workloads() {
		m := Mix(w)
		if (w == RandomBench || w == RandomRange) != (m != nil) {
			t.Errorf("%s: mix %v", w, m)
			continue
		}
		sum := 0
		for _, sh := range m {
			sum += sh.Pct
		}
		if m != nil && sum != 100 {
			t.Errorf("%s: shares sum to %d", w, sum)
		}
	}
}
