package reference

import (
	"testing"

	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// axiomLevels are the levels of axiomCases' verdict strings: Adya's read
// committed, then rc-session, read atomic, causal, prefix, snapshot
// isolation, generalized SI, plain serializability and serializability.
var axiomLevels = []level.ID{level.ReadCommitted, level.RCSession, level.ReadAtomic, level.Causal, level.Prefix,
	level.SnapshotIsolation, level.GSI, level.PlainSerializable, level.Serializable}

// axiomCases are hand-built histories, among them AWDIT's hand-written
// test cases (lassemoldrup/AWDIT, histories/tests: its folder is the
// strongest level each satisfies) in the one-line notation: keys absent
// at first, so an AWDIT read of a key nobody wrote reads null.
var axiomCases = []struct {
	name, h, want string
}{
	// AWDIT none/hb-cycle.txt: so ∪ wr is cyclic. Adya's PL-2 has no
	// session order and holds, and so do GSI and plain serializability;
	// no level with session order does.
	{"awdit hb-cycle", `s1: r 1 1 | s1: w 0 0 | s2: r 0 0 | s2: w 1 1`, "+-----++-"},
	// AWDIT read-atomic/biswas-enea.txt: T4 reads 0 from T1, though T2
	// (after T1 in its session) is in T4's causal past through T3.
	{"awdit read-atomic biswas-enea", `s1: w 0 1 | s1: w 0 2 | s2: r 0 2 w 1 1 | s3: r 0 1 r 1 1`, "+++---++-"},
	// AWDIT read-committed/biswas-enea.txt: a fractured read.
	{"awdit read-committed biswas-enea", `s1: w 0 1 w 1 1 | s2: w 0 2 w 1 2 | s3: w 2 2 | s4: r 0 1 r 1 2 r 2 2`, "++-------"},
	{"awdit non-repeatable-read", `s1: w 0 0 | s2: w 0 1 | s3: r 0 0 r 0 1`, "++-------"},
	// AWDIT causal/long-fork.txt: causal, not prefix.
	{"awdit long-fork", `s1: w 0 0 w 1 0 | s2: w 0 1 | s2: r 0 1 r 1 0 | s3: w 1 1 | s3: r 1 1 r 0 0`, "++++-----"},
	// AWDIT causal/lost-update.txt: prefix holds, SI does not.
	{"awdit lost-update", `s1: w 0 0 | s2: r 0 0 w 0 1 | s3: r 0 0 w 0 2`, "+++++----"},
	{"awdit fully-ser", `s1: w 0 0 w 1 1 | s2: w 0 2 | s3: r 0 2 | s3: r 1 1`, "+++++++++"},
	// AWDIT read-atomic/test-ra.txt: the last session reads key 2 from T
	// (r 2 1) and then the older version: it misses what it saw.
	{"awdit test-ra", `s1: w 0 0 w 1 0 w 2 0 w 3 0 w 4 0 | s2: r 0 0 | s3: r 2 2 r 4 0 | s4: r 3 0 w 2 1 | s4: r 1 0 | s4: w 2 2 | s5: r 2 1 | s5: r 2 0 r 2 0`, "+++---++-"},
	// AWDIT read-committed/test-rc.txt: r 2 1 r 2 2 and r 2 0 r 2 1 are
	// non-repeatable reads (allowed at RC).
	{"awdit test-rc", `s1: w 0 0 w 1 0 w 2 0 w 3 0 w 4 0 | s2: r 0 0 | s3: r 2 1 r 2 2 | s4: w 2 1 | s4: r 1 0 | s4: w 2 2 | s5: r 2 1 | s5: r 2 0 r 2 1`, "++-------"},
	// Read your writes: the session's second transaction misses the
	// first's write. Read committed's axiom does not ask for it (co
	// extends so, but so is no premise); read atomic's does. Without
	// session order (GSI, plain SER) it holds.
	{"missed own write", `s1: w x 1 | s1: r x _`, "++----++-"},
	// A transaction reads y from T2 and then an x older than T2's: a
	// non-monotonic read (RC-session forbids it, Adya's PL-2 does not).
	{"non-monotonic read in a transaction", `init: x=0 y=0 | s1: w x 1 w y 1 | s2: r y 1 r x 0`, "+--------"},
	// The same reads in the other order: a fractured read, allowed at RC.
	{"fractured read", `init: x=0 y=0 | s1: w x 1 w y 1 | s2: r x 0 r y 1`, "++-------"},
	// Write skew: every level but serializability.
	{"write skew", `init: x=0 y=0 | s1: r x 0 r y 0 w x 1 | s2: r x 0 r y 0 w y 1`, "+++++++--"},
	// An aborted write read: G1a everywhere.
	{"aborted read", `s1: aborted: w x 1 | s2: r x 1`, "---------"},
	// An unknown writer that is read: it committed, and T2 read y older
	// than T1's after reading x from T1 (a non-monotonic read).
	{"unknown writer read", `s1: unknown: w x 1 w y 1 | s2: r x 1 r y _`, "+--------"},
	// An unknown writer in the reader's session nobody read: it may not
	// have committed, and then every level holds.
	{"unknown writer in the session", `s1: unknown: w x 1 | s1: r x _`, "+++++++++"},
	// Causal: T3 sees T2, which saw T1, yet misses T1's write.
	{"causality violation", `init: x=0 | s1: w x 1 | s2: r x 1 w y 1 | s3: r y 1 r x 0`, "+++------"},
	// Deletes and scans: a scan that sees T1's delete of one key but the
	// other key T1 wrote as it was (a fractured read).
	{"fractured scan", `init: 1=a 2=b | s1: d 1 w 2 c | s2: scan 0 10 [2=b]`, "++-------"},
	// Repeated values: T3 reads x=1 (T1 or T2) then y=1 (T2 only):
	// reading x from T2 explains it at every level.
	{"repeated values", `s1: w x 1 | s2: w x 1 w y 1 | s3: r x 1 r y 1`, "+++++++++"},
}

// TestAxiomaticLevels holds the oracle to the table.
func TestAxiomaticLevels(t *testing.T) {
	for _, c := range axiomCases {
		h := history.MustParse(c.h)
		for i, id := range axiomLevels {
			got, err := Check(h, id)
			if err != nil {
				t.Fatalf("%s at %s: %v", c.name, id, err)
			}
			if want := c.want[i] == '+'; got != want {
				t.Errorf("%s at %s: oracle says %v, the table %v", c.name, id, got, want)
			}
		}
	}
}
