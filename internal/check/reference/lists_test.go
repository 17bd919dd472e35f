package reference

import (
	"testing"

	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// listCases are list-append histories with their verdicts at RC, SI, SER
// and SSER ('+' holds, '-' violated, 'e' an error: SSER without instants).
var listCases = []struct {
	name, h, want string
}{
	{"serial appends", `s1: a x 1 | s1: a x 2 r x [1,2] | s2: r x [1,2]`, "+++e"},
	{"empty read before an append", `s1: r x [] | s2: a x 1 | s3: r x [1]`, "+++e"},
	{"Elle's lost update", `s0: a x 0 | s1: r x [0] a x 1 | s2: r x [0] a x 2`, "+--e"},
	{"lost update from the empty list", `s1: r x [] a x 1 | s2: r x [] a x 2`, "+--e"},
	{"lost update, one append observed", `s1: r x [] a x 1 | s2: r x [] a x 2 | s3: r x [1,2]`, "+--e"},
	{"stale read, one appender", `s1: r x [] a x 1 | s2: r x []`, "+++e"},
	{"write skew", `s1: r x [] r y [] a x 1 | s2: r x [] r y [] a y 1`, "++-e"},
	{"G1c", `s1: a x 1 r y [1] | s2: a y 1 r x [1]`, "---e"},
	{"incompatible orders", `s1: a x 1 | s2: a x 2 | s3: r x [1,2] | s4: r x [2,1]`, "---e"},
	{"duplicate elements", `s1: a x 1 | s2: r x [1,1]`, "---e"},
	{"thin air", `s1: r x [7]`, "---e"},
	{"aborted read", `s1: aborted: a x 1 | s2: r x [1]`, "---e"},
	{"intermediate read", `s1: a x 1 a x 2 | s2: r x [1]`, "---e"},
	{"own appends at the end", `s1: a x 1 | s2: r x [1] a x 2 r x [1,2] a x 3 r x [1,2,3]`, "+++e"},
	{"own append missing", `s1: a x 1 r x []`, "---e"},
	{"own appends out of order", `s1: a x 1 a x 2 r x [2,1]`, "---e"},
	{"snapshot changes across own append", `s1: a x 1 | s2: a x 2 | s3: r x [1] a x 3 r x [1,2,3]`, "+--e"},
	{"unknown observed in the middle", `s1: unknown: a x 1 | s2: a x 2 | s3: r x [1,2]`, "+++e"},
	{"unknown unobserved, stale", `s1: unknown: r x [] a x 1 | s2: r x [] a x 2 | s3: r x [2]`, "+++e"},
	{"session order", `s1: a x 1 | s1: r x []`, "+--e"},
	{"fractured read", `s1: a x 1 a y 1 | s2: r y [] r x [1]`, "+--e"},
	{"long fork", `s1: a x 1 | s2: a y 1 | s3: r x [1] r y [] | s4: r y [1] r x []`, "+--e"},
	{"non-repeatable read", `s1: a x 1 | s2: r x [] r x [1]`, "+--e"},
	{"real time", `s1: @0-1: a x 1 | s2: @2-3: r x []`, "+++-"},
	{"real time, overlapping", `s1: @0-3: a x 1 | s2: @2-4: r x []`, "++++"},
}

func TestLists(t *testing.T) {
	levels := []level.ID{level.ReadCommitted, level.SnapshotIsolation, level.Serializable, level.StrictSerializable}
	checkTable(t, listCases, levels)
}

// checkTable checks every case's history at every level against its
// verdicts, a character per level.
func checkTable(t *testing.T, cases []struct{ name, h, want string }, levels []level.ID) {
	t.Helper()
	for _, tc := range cases {
		h := history.MustParse(tc.h)
		for i, id := range levels {
			ok, err := Check(h, id)
			got := byte('-')
			switch {
			case err != nil:
				got = 'e'
			case ok:
				got = '+'
			}
			if got != tc.want[i] {
				t.Errorf("%s at %v: got %c, want %c (err %v)", tc.name, id, got, tc.want[i], err)
			}
		}
	}
}

func TestListsDecline(t *testing.T) {
	for _, s := range []string{`s1: a x 1 | s2: r y 1`, `s1: a x 1 w x 2`} {
		if _, err := Check(history.MustParse(s), level.Serializable); err == nil {
			t.Errorf("%q: mixing lists and registers should be an error", s)
		}
	}
}

// listRUCases are list-append histories with their verdicts at read
// uncommitted, worked out by hand from Adya's PL-1: no write cycle among
// the committed transactions, every read a prefix of its key's one
// sequence of appends, internally consistent, of elements others
// appended; aborted and intermediate appends may be read.
var listRUCases = []struct {
	name, h, want string
}{
	{"serial appends", `s1: a x 1 | s1: a x 2 r x [1,2] | s2: r x [1,2]`, "+"},
	{"Elle's lost update", `s0: a x 0 | s1: r x [0] a x 1 | s2: r x [0] a x 2`, "+"},
	{"G1c", `s1: a x 1 r y [1] | s2: a y 1 r x [1]`, "+"},
	{"aborted read", `s1: aborted: a x 1 | s2: r x [1]`, "+"},
	{"intermediate read", `s1: a x 1 a x 2 | s2: r x [1]`, "+"},
	{"write cycle", `a x 1 a y 1 | a x 2 a y 2 | r x [1,2] r y [2,1]`, "-"},
	{"no write cycle", `a x 1 a y 1 | a x 2 a y 2 | r x [1,2] r y [1,2]`, "+"},
	{"write cycle across an aborted append", `a x 1 a y 2 | aborted: a x 9 | a x 2 a y 1 | r x [1,9,2] r y [1,2]`, "-"},
	{"no cycle across an aborted append", `a x 1 a y 1 | aborted: a x 9 | a x 2 a y 2 | r x [1,9,2] r y [1,2]`, "+"},
	{"write cycle through an unobserved append", `a x 1 a y 1 | a x 2 a y 2 | a x 3 a y 3 | r x [1,2] | r y [2]`, "-"},
	{"interleaved appends", `a x 1 a x 3 | a x 2 | r x [1,2,3]`, "-"},
	{"interleaved with an unknown one", `a x 1 a x 3 | unknown: a x 2 | r x [1,2,3]`, "+"},
	{"incompatible orders", `s1: a x 1 | s2: a x 2 | s3: r x [1,2] | s4: r x [2,1]`, "-"},
	{"duplicate elements", `s1: a x 1 | s2: r x [1,1]`, "-"},
	{"thin air", `s1: r x [7]`, "-"},
	{"future read", `s1: r x [1] a x 1`, "-"},
	{"own append missing", `s1: a x 1 r x []`, "-"},
	{"own append not last", `s1: a x 1 | s2: a x 2 r x [2,1]`, "-"},
}

func TestListsRU(t *testing.T) {
	checkTable(t, listRUCases, []level.ID{level.ReadUncommitted})
}

// axiomaticListCases are list-append histories with their verdicts at
// rc-session, read atomic, causal and prefix ('+' holds, '-' violated),
// worked out by hand from Biswas and Enea's axioms with the lists'
// versions applied in commit order.
var axiomaticListCases = []struct {
	name, h, want string
}{
	{"serial appends", `s1: a x 1 | s1: a x 2 r x [1,2] | s2: r x [1,2]`, "++++"},
	{"Elle's lost update", `s0: a x 0 | s1: r x [0] a x 1 | s2: r x [0] a x 2`, "++++"},
	{"lost update, one append observed", `s1: r x [] a x 1 | s2: r x [] a x 2 | s3: r x [1,2]`, "++++"},
	{"write skew", `s1: r x [] r y [] a x 1 | s2: r x [] r y [] a y 1`, "++++"},
	{"fractured read", `s1: a x 1 a y 1 | s2: r y [] r x [1]`, "+---"},
	{"fractured read, the other way", `s1: a x 1 a y 1 | s2: r x [1] r y []`, "----"},
	{"non-repeatable read", `s1: a x 1 | s2: r x [] r x [1]`, "+---"},
	{"causality violation", `s1: a x 1 | s2: r x [1] a y 1 | s3: r y [1] r x []`, "++--"},
	{"long fork", `s1: a x 1 | s2: a y 1 | s3: r x [1] r y [] | s4: r y [1] r x []`, "+++-"},
	{"session order", `s1: a x 1 | s1: r x []`, "+---"},
	{"G1c", `s1: a x 1 r y [1] | s2: a y 1 r x [1]`, "----"},
	{"incompatible orders", `s1: a x 1 | s2: a x 2 | s3: r x [1,2] | s4: r x [2,1]`, "----"},
	{"intermediate read", `s1: a x 1 a x 2 | s2: r x [1]`, "----"},
	{"aborted read", `s1: aborted: a x 1 | s2: r x [1]`, "----"},
	{"unknown unobserved, stale", `s1: unknown: r x [] a x 1 | s2: r x [] a x 2 | s3: r x [2]`, "++++"},
	{"unknown observed", `s1: unknown: a x 1 | s2: r x [1] a y 1 | s3: r y [1] r x [1]`, "++++"},
}

func TestAxiomaticLists(t *testing.T) {
	levels := []level.ID{level.RCSession, level.ReadAtomic, level.Causal, level.Prefix}
	checkTable(t, axiomaticListCases, levels)
}

// adyaListCases are list-append histories with their verdicts at cursor
// stability, PL-2+, PL-FCV and repeatable read, worked out by hand from
// Adya's definitions with the lists' versions as the version order.
var adyaListCases = []struct {
	name, h, want string
}{
	{"serial appends", `s1: a x 1 | s1: a x 2 r x [1,2] | s2: r x [1,2]`, "++++"},
	{"Elle's lost update", `s0: a x 0 | s1: r x [0] a x 1 | s2: r x [0] a x 2`, "----"},
	{"write skew", `s1: r x [] r y [] a x 1 | s2: r x [] r y [] a y 1`, "+++-"},
	{"fractured read", `s1: a x 1 a y 1 | s2: r y [] r x [1]`, "+---"},
	{"long fork", `s1: a x 1 | s2: a y 1 | s3: r x [1] r y [] | s4: r y [1] r x []`, "+++-"},
	{"G1c", `s1: a x 1 r y [1] | s2: a y 1 r x [1]`, "----"},
	{"intermediate read", `s1: a x 1 a x 2 | s2: r x [1]`, "----"},
	{"stale read, one appender", `s1: r x [] a x 1 | s2: r x []`, "++++"},
}

func TestAdyaLists(t *testing.T) {
	checkTable(t, adyaListCases, []level.ID{level.CursorStability, level.PL2Plus, level.PLFCV, level.RepeatableRead})
}
