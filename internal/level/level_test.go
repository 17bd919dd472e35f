package level

import (
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
