package check_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/check/checktest"
	"github.com/isoscope/isoscope/internal/check/reference"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// weakLevels are the levels of weakCases' verdict strings.
var weakLevels = []level.ID{level.ReadCommitted, level.CursorStability, level.PL2Plus, level.PLFCV,
	level.RepeatableRead, level.SnapshotIsolation, level.Serializable}

// weakCases are hand-built histories that tell the levels between read
// committed and serializability apart. want has one character per level
// of weakLevels (RC CS PL-2+ PL-FCV RR SI SER): '+' holds, '-' violated;
// found is the phenomenon the solver reports at cursor stability, PL-2+
// or repeatable read when that level is violated.
var weakCases = []struct {
	name  string
	h     string
	want  string
	found map[level.ID]string
}{
	{"lost update: both read the same version and overwrite it",
		`init: 1=a | s0: @0-2: r 1 a w 1 b | s1: @1-3: r 1 a w 1 c`, "+------",
		map[level.ID]string{level.CursorStability: "lost-update/G-cursor", level.PL2Plus: "lost-update/G-single"}},
	{"write skew on items (G2-item, two anti-dependencies)",
		`init: 1=a 2=b | s0: @0-2: r 1 a r 2 b w 1 x | s1: @1-3: r 1 a r 2 b w 2 y`, "++++-+-",
		map[level.ID]string{level.RepeatableRead: "write-skew/G2-item"}},
	{"write skew through a range predicate (G2 only)",
		`s0: @0-2: scan 0 10 [] w 1 x | s1: @1-3: scan 0 10 [] w 2 y`, "++++++-", nil},
	{"a predicate and an item anti-dependency (G2-item)",
		`s0: @0-2: scan 0 10 [] w 30 y | s1: @1-3: r 30 _ w 1 x`, "++++-+-",
		map[level.ID]string{level.RepeatableRead: "cycle/G2-item"}},
	{"two predicate anti-dependencies (allowed at repeatable read)",
		`s0: @0-2: scan 0 10 [] w 30 y | s1: @1-3: scan 20 40 [] w 1 x`, "++++++-", nil},
	{"read skew (G-single across two keys)",
		`init: 1=a 2=b | s0: @0-3: r 1 a r 2 c | s1: @1-2: w 1 z w 2 c`, "++-----",
		map[level.ID]string{level.PL2Plus: "fractured-read/G-single"}},
	{"non-repeatable read (allowed at cursor stability)",
		`init: 1=a | s0: @0-3: r 1 a r 1 b | s1: @1-2: w 1 b`, "++-----", nil},
	{"phantom: a scan misses a key written before it (allowed at repeatable read)",
		`s0: @0-1: w 1 a w 2 b | s1: @2-3: scan 0 10 [1=a]`, "++--+--", nil},
	{"long fork (two anti-dependencies)",
		`s0: @0-1: w 1 a | s1: @0-1: w 2 b | s2: @2-3: r 1 a r 2 _ | s3: @2-3: r 1 _ r 2 b`, "++++---", nil},
	{"circular information flow (G1c)",
		`s0: @0-2: r 1 b w 2 a | s1: @1-3: r 2 a w 1 b`, "-------", nil},
	{"lost update that the overwriter's readers prove (G-cursor)",
		`init: 1=a | s1: @0-1: w 1 b | s2: @1-2: r 1 b w 2 x | s0: @2-3: r 1 a r 2 x w 1 c`, "+------",
		map[level.ID]string{level.CursorStability: "lost-update/G-cursor"}},
	{"serial read-modify-writes", `init: 1=a | s0: @0-1: r 1 a w 1 b | s1: @2-3: r 1 b w 1 c`, "+++++++", nil},
}

// TestWeakLevelCases holds the oracle and the solver checker to the table.
func TestWeakLevelCases(t *testing.T) {
	for _, c := range weakCases {
		t.Run(c.name, func(t *testing.T) {
			h := history.MustParse(c.h)
			for i, id := range weakLevels {
				want := c.want[i] == '+'
				oracle, err := reference.Check(h, id)
				if err != nil {
					t.Fatalf("%s: oracle: %v", id, err)
				}
				if oracle != want {
					t.Errorf("%s: oracle says %v, the table %v", id, oracle, want)
				}
				res, err := check.Run(context.Background(), h, level.Get(id), check.Options{Checker: "sat"})
				if err != nil {
					t.Fatalf("%s: %v", id, err)
				}
				if got := res.Outcome == check.Satisfied; got != want {
					t.Errorf("%s: solver says %v (%s), the table %v", id, got, kinds(res), want)
				}
				cyclesConnect(t, res)
				if f, ok := c.found[id]; ok && !want && kinds(res) != f {
					t.Errorf("%s: solver found %s, want %s", id, kinds(res), f)
				}
			}
		})
	}
}

// TestDifferentialWeakLevels: on thousands of small histories with deletes,
// scans and iterators, the solver checker agrees with the oracle's Adya
// enumeration at cursor stability, PL-2+, PL-FCV and repeatable read, and
// the verdicts respect the levels' implications.
func TestDifferentialWeakLevels(t *testing.T) {
	levels := []level.ID{level.CursorStability, level.PL2Plus, level.PLFCV, level.RepeatableRead}
	held, total := 0, 0
	violated := map[string]int{}
	for seed := range uint64(differentialRuns / 2) {
		r := rand.New(rand.NewPCG(seed, 53))
		h := checktest.Range(r, 2+r.IntN(5), 2+r.IntN(3), seed%3 == 0)
		got := map[level.ID]bool{}
		for _, id := range levels {
			got[id] = satAgrees(t, h, seed, id)
			total++
			if got[id] {
				held++
			} else {
				violated[level.Get(id).Short]++
			}
		}
		for _, id := range levels {
			for _, w := range level.Get(id).WeakerLevels() {
				if _, ok := got[w.ID]; ok && got[id] && !got[w.ID] {
					t.Fatalf("seed %d: %s holds, but not %s\n%s", seed, id, w.Name, history.Notation(h))
				}
			}
		}
		if got[level.PL2Plus] != got[level.PLFCV] {
			t.Fatalf("seed %d: PL-2+ and PL-FCV differ on a history without timestamps\n%s", seed, history.Notation(h))
		}
	}
	t.Logf("%d of %d verdicts hold; violations per level: %v", held, total, violated)
	if held < total/10 || held > total*9/10 {
		t.Fatalf("the generator is lopsided: %d of %d verdicts hold", held, total)
	}
}
