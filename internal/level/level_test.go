package level

import (
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/anomaly"
)

func TestLookup(t *testing.T) {
	for in, want := range map[string]ID{
		"ser": Serializable, "SERIALIZABLE": Serializable, "pl-3": Serializable,
		"sser": StrictSerializable, "si": SnapshotIsolation, "rr": RepeatableRead, "PL-2.99": RepeatableRead,
		"rc": ReadCommitted, "ru": ReadUncommitted, "cs": CursorStability, "pl-2+": PL2Plus, "pl-fcv": PLFCV,
	} {
		l, err := Lookup(in)
		if err != nil || l.ID != want {
			t.Errorf("Lookup(%q) = %v, %v; want %v", in, l.Name, err, want)
		}
	}
	if _, err := Lookup("chaos"); err == nil {
		t.Error("unknown level accepted")
	}
}

// TestLookupSuggests: a misspelt level name is refused with the level it
// most likely means and the canonical names comma-separated.
func TestLookupSuggests(t *testing.T) {
	for in, want := range map[string]string{
		"serialisable":        `did you mean "serializable"?`,
		"snapshot-isolaton":   `did you mean "snapshot-isolation"?`,
		"strict":              `did you mean "strict-serializable"`,
		"read-comitted":       `did you mean "read-committed"?`,
		"linearisable":        `did you mean "linearizable"?`,
		"strong-session-seri": `did you mean "strong-session-serializable"?`,
	} {
		_, err := Lookup(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Lookup(%q) = %v; want %s", in, err, want)
		}
		if err != nil && !strings.Contains(err.Error(), "(known: read-uncommitted, read-committed, cursor-stability, ") {
			t.Errorf("Lookup(%q) = %v; want the canonical names comma-separated", in, err)
		}
	}
	if _, err := Lookup("chaos"); err == nil || strings.Contains(err.Error(), "did you mean") {
		t.Errorf("Lookup(chaos) = %v; want no suggestion: no level is near", err)
	}
}

func TestImplications(t *testing.T) {
	sser := Get(StrictSerializable)
	for _, id := range []ID{Serializable, SnapshotIsolation, RepeatableRead, ReadCommitted, ReadUncommitted} {
		if !sser.Implies(id) {
			t.Errorf("sser should imply %s", id)
		}
	}
	if Get(SnapshotIsolation).Implies(Serializable) || Get(ReadCommitted).Implies(SnapshotIsolation) {
		t.Error("a weaker level implies a stronger one")
	}
	// What a level implies it also proscribes: stronger levels forbid a
	// superset of phenomena.
	for _, l := range All() {
		for _, w := range l.WeakerLevels() {
			if w.Proscribes&^l.Proscribes != 0 {
				t.Errorf("%s implies %s but does not proscribe all it does", l.Name, w.Name)
			}
		}
	}
	if !Get(ReadCommitted).Proscribes.Has(anomaly.G1c) || Get(ReadCommitted).NoNonRepeatableReads {
		t.Error("read committed: G1c proscribed, non-repeatable reads allowed")
	}
}

func TestAxiomaticLevels(t *testing.T) {
	for in, want := range map[string]ID{
		"rc-session": RCSession, "read-committed-session": RCSession, "ra": ReadAtomic, "read-atomic": ReadAtomic,
		"cc": Causal, "causal": Causal, "tcc": Causal, "causal-cerone": Causal, "prefix": Prefix, "pc": Prefix,
		"gsi": GSI, "generalized-snapshot-isolation": GSI, "plain-serializable": PlainSerializable,
		"conflict-serializable": PlainSerializable, "strong-session-serializable": Serializable,
		"strong-session-snapshot-isolation": SnapshotIsolation, "strong-serializable": StrictSerializable,
		"consistent-view": PL2Plus, "forward-consistent-view": PLFCV,
	} {
		l, err := Lookup(in)
		if err != nil || l.ID != want {
			t.Errorf("Lookup(%q) = %v, %v; want %v", in, l.Name, err, want)
		}
	}
	// Elle's names that mean no level here are refused with a reason.
	for _, name := range []string{"update-serializable", "strong-snapshot-isolation", "parallel-snapshot-isolation"} {
		if _, err := Lookup(name); err == nil || strings.Contains(err.Error(), "unknown") {
			t.Errorf("Lookup(%q): %v; want a refusal that says what it is", name, err)
		}
	}
	// The lattice: every chain of the axiomatic levels, and the levels
	// without session order beside the ones with it.
	for _, c := range [][2]ID{
		{Causal, ReadAtomic}, {ReadAtomic, RCSession}, {RCSession, ReadCommitted}, {Prefix, Causal},
		{SnapshotIsolation, Prefix}, {SnapshotIsolation, GSI}, {GSI, PLFCV}, {Serializable, PlainSerializable},
		{PlainSerializable, GSI}, {PlainSerializable, RepeatableRead}, {StrictSerializable, Causal},
	} {
		if !Get(c[0]).Implies(c[1]) {
			t.Errorf("%s should imply %s", c[0], c[1])
		}
	}
	for _, c := range [][2]ID{
		{ReadCommitted, RCSession}, {RCSession, ReadAtomic}, {GSI, SnapshotIsolation}, {GSI, Prefix},
		{PlainSerializable, Serializable}, {PlainSerializable, Causal}, {Causal, CursorStability}, {Prefix, GSI},
	} {
		if Get(c[0]).Implies(c[1]) {
			t.Errorf("%s should not imply %s", c[0], c[1])
		}
	}
	// IDs run weakest first: no level implies a later one.
	for _, l := range All() {
		for _, w := range l.WeakerLevels() {
			if w.ID > l.ID {
				t.Errorf("%s (id %d) implies %s (id %d), a later level", l.Name, l.ID, w.Name, w.ID)
			}
		}
		if (l.Axiom != NoAxiom) != (l.ID == RCSession || l.ID == ReadAtomic || l.ID == Causal || l.ID == Prefix) {
			t.Errorf("%s: axiom %s", l.Name, l.Axiom)
		}
		if l.Axiom != NoAxiom && !l.SessionOrder {
			t.Errorf("%s: an axiomatic level has session order", l.Name)
		}
	}
	if Get(GSI).SessionOrder || Get(PlainSerializable).SessionOrder {
		t.Error("gsi and plain-serializable have no session order")
	}
	// Every name a level answers to is its own.
	seen := map[string]ID{}
	for _, l := range All() {
		for _, n := range append([]string{l.Name, l.Short}, Aliases(l.ID)...) {
			if id, ok := seen[n]; ok && id != l.ID {
				t.Errorf("%q names both %s and %s", n, id, l.ID)
			}
			seen[n] = l.ID
		}
	}
}
