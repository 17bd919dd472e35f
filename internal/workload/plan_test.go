package workload

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

func plan(t *testing.T, c PlanConfig, seed uint64) *Plan {
	t.Helper()
	p, err := NewPlan(c, rand.New(rand.NewPCG(seed, 7)))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParseWorkload(t *testing.T) {
	for _, w := range Workloads() {
		got, err := ParseWorkload(w.String())
		if err != nil || got != w {
			t.Errorf("ParseWorkload(%q) = %v, %v", w, got, err)
		}
	}
	if w, err := ParseWorkload(" Append"); err != nil || w != ListAppend {
		t.Errorf("append alias: %v, %v", w, err)
	}
	if _, err := ParseWorkload("tpcc"); err == nil {
		t.Error("tpcc accepted")
	}
}

func TestPlanDeterministicAndDealt(t *testing.T) {
	for _, w := range Workloads() {
		c := PlanConfig{Workload: w, Sessions: 3, Txns: 100, Keys: 10, Dist: Zipfian, ReadRatio: -1}
		a, b := plan(t, c, 1), plan(t, c, 1)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: the same seed gave different plans", w)
		}
		if a.Len() != 100 || len(a.Sessions) != 3 || len(a.Sessions[0]) != 34 || len(a.Sessions[2]) != 33 {
			t.Errorf("%s: %d transactions dealt as %d/%d/%d", w, a.Len(), len(a.Sessions[0]), len(a.Sessions[1]), len(a.Sessions[2]))
		}
		if reflect.DeepEqual(a, plan(t, c, 2)) {
			t.Errorf("%s: seeds 1 and 2 gave the same plan", w)
		}
		for _, s := range a.Sessions {
			for _, tx := range s {
				for _, op := range tx.Ops {
					if op.Key < 0 || op.Key >= 10 {
						t.Fatalf("%s: key %d out of range", w, op.Key)
					}
				}
			}
		}
	}
}

// TestMiniTransactions checks MTC's Definition 8 on every planned
// transaction and the share of read-only ones.
func TestMiniTransactions(t *testing.T) {
	p := plan(t, PlanConfig{Workload: MiniTxn, Sessions: 4, Txns: 4000, Keys: 50, Dist: Uniform, ReadRatio: -1}, 3)
	readOnly := 0
	for _, s := range p.Sessions {
		for _, tx := range s {
			reads, writes := 0, 0
			read := map[int64]bool{}
			for _, op := range tx.Ops {
				switch op.Kind {
				case ReadOp:
					reads++
					read[op.Key] = true
				case WriteOp:
					writes++
					if !read[op.Key] || op.Fixed {
						t.Fatalf("not read-modify-write with a fresh value: %+v", tx)
					}
				default:
					t.Fatalf("op %s in a mini-transaction", op.Kind)
				}
			}
			if reads < 1 || reads > 2 || writes > 2 || len(read) > 2 {
				t.Fatalf("not a mini-transaction: %+v", tx)
			}
			if !tx.Writes() {
				readOnly++
			}
		}
	}
	if readOnly < 700 || readOnly > 900 {
		t.Errorf("%d of 4000 read-only, want about 800", readOnly)
	}
	if !p.UniqueValues {
		t.Error("mt plan does not promise unique values")
	}
}

// TestGeneralMix checks Cobra's 20/40/40 mix and the duplicates knob.
func TestGeneralMix(t *testing.T) {
	p := plan(t, PlanConfig{Workload: General, Sessions: 2, Txns: 5000, Keys: 100, Dist: Uniform, ReadRatio: -1}, 4)
	var ro, wo, rmw int
	for _, s := range p.Sessions {
		for _, tx := range s {
			if len(tx.Ops) != 8 {
				t.Fatalf("%d ops, want 8", len(tx.Ops))
			}
			switch {
			case !tx.Writes():
				ro++
			case tx.Ops[0].Kind == WriteOp:
				wo++
			default:
				rmw++
				if tx.Ops[1].Kind != WriteOp || tx.Ops[1].Key != tx.Ops[0].Key {
					t.Fatalf("read-modify-write transaction %+v", tx)
				}
			}
		}
	}
	if ro < 850 || ro > 1150 || wo < 1800 || wo > 2200 || rmw < 1800 || rmw > 2200 {
		t.Errorf("read-only/write-only/rmw = %d/%d/%d of 5000, want about 1000/2000/2000", ro, wo, rmw)
	}
	if !p.UniqueValues {
		t.Error("general without duplicates does not promise unique values")
	}
	d := plan(t, PlanConfig{Workload: General, Sessions: 2, Txns: 500, Keys: 20, Dist: Uniform, ReadRatio: -1, Duplicates: 0.5}, 5)
	if d.UniqueValues {
		t.Error("general with duplicates promises unique values")
	}
	fixed := 0
	for _, s := range d.Sessions {
		for _, tx := range s {
			for _, op := range tx.Ops {
				if op.Fixed {
					fixed++
					if op.Value < 1 || op.Value > 8 {
						t.Fatalf("duplicate value %d outside [1, 8]", op.Value)
					}
				}
			}
		}
	}
	if fixed == 0 {
		t.Error("no write drew from the duplicate domain")
	}
}

func TestListAppendLWTRange(t *testing.T) {
	seen := map[OpKind]int{}
	for _, w := range []Workload{ListAppend, LWT, Range} {
		p := plan(t, PlanConfig{Workload: w, Sessions: 2, Txns: 1000, Keys: 40, Dist: Uniform, ReadRatio: -1}, 6)
		for _, s := range p.Sessions {
			for _, tx := range s {
				if len(tx.Ops) < 1 || len(tx.Ops) > 4 || (w == LWT && len(tx.Ops) != 1) {
					t.Fatalf("%s: %d ops", w, len(tx.Ops))
				}
				for _, op := range tx.Ops {
					seen[op.Kind]++
					switch op.Kind {
					case ScanOp, IterOp:
						if op.Hi <= op.Key || op.Hi > op.Key+10 || (op.Kind == IterOp && (op.Limit < 1 || op.Limit > 4)) {
							t.Fatalf("range op %+v", op)
						}
					case AppendOp, ReadListOp:
						if w != ListAppend {
							t.Fatalf("%s: %s", w, op.Kind)
						}
					case CASOp:
						if w != LWT {
							t.Fatalf("%s: %s", w, op.Kind)
						}
					}
				}
			}
		}
	}
	for k := ReadOp; k <= CASOp; k++ {
		if seen[k] == 0 {
			t.Errorf("no %s planned", k)
		}
	}
}

func TestPlanRejects(t *testing.T) {
	for name, c := range map[string]PlanConfig{
		"no sessions":    {Workload: MiniTxn, Keys: 1},
		"no keys":        {Workload: MiniTxn, Sessions: 1},
		"read ratio":     {Workload: MiniTxn, Sessions: 1, Keys: 1, ReadRatio: 2},
		"duplicates":     {Workload: MiniTxn, Sessions: 1, Keys: 1, Duplicates: 0.5},
		"workload":       {Workload: 99, Sessions: 1, Keys: 1},
		"negative txns":  {Workload: MiniTxn, Sessions: 1, Keys: 1, Txns: -1},
		"too many ops":   {Workload: General, Sessions: 1, Keys: 1, Ops: 1 << 20},
		"bad dist":       {Workload: MiniTxn, Sessions: 1, Keys: 1, Dist: 42},
		"dup ratio >1":   {Workload: General, Sessions: 1, Keys: 1, Duplicates: 1.5},
		"read ratio NaN": {Workload: MiniTxn, Sessions: 1, Keys: 1, ReadRatio: nan()},
	} {
		if _, err := NewPlan(c, rand.New(rand.NewPCG(1, 1))); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// One key: mini-transactions use it alone.
	p := plan(t, PlanConfig{Workload: MiniTxn, Sessions: 1, Txns: 50, Keys: 1, ReadRatio: -1}, 1)
	for _, tx := range p.Sessions[0] {
		for _, op := range tx.Ops {
			if op.Key != 0 {
				t.Fatalf("key %d with one key", op.Key)
			}
		}
	}
}

func nan() float64 {
	z := 0.0
	return z / z
}

// TestEndlessPlan: an endless plan starts with Txns transactions and
// draws more as sessions ask, concurrently, each session's i-th being
// the one a plan of enough transactions from the same seed holds (with
// locking reads too); a plan with an end has nil past it.
func TestEndlessPlan(t *testing.T) {
	for _, w := range Workloads() {
		c := PlanConfig{Workload: w, Sessions: 3, Txns: 10, Keys: 10, Dist: Zipfian, ReadRatio: -1, LockRMW: w == MiniTxn}
		fixed := c
		fixed.Txns = 3000
		want := plan(t, fixed, 5)
		e, err := NewEndless(c, rand.New(rand.NewPCG(5, 7)))
		if err != nil {
			t.Fatal(err)
		}
		p := e.Plan
		if p.Len() != 10 {
			t.Fatalf("%s: an endless plan starts with %d transactions, want 10", w, p.Len())
		}
		got := make([][]*Txn, 3)
		done := make(chan int)
		for s := range 3 {
			go func() {
				for i := range 1000 {
					got[s] = append(got[s], e.Txn(s, i))
				}
				done <- s
			}()
		}
		for range 3 {
			<-done
		}
		for s := range 3 {
			for i, tx := range got[s] {
				if !reflect.DeepEqual(*tx, want.Sessions[s][i]) {
					t.Fatalf("%s: session %d's transaction %d differs from the fixed plan's", w, s, i)
				}
			}
		}
		if p.Len() < 3000 || !strings.Contains(e.String(), " txns=unbounded ") {
			t.Errorf("%s: %d drawn; source %q", w, p.Len(), e.String())
		}
		if tx := want.Txn(2, 1000); tx != nil {
			t.Errorf("%s: a plan with an end gave a transaction past it", w)
		}
	}
}
