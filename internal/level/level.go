// Package level defines isolation levels as data: their names and aliases,
// the phenomena each proscribes, whether session order and real time
// constrain it, and which level implies which. It follows
// docs/levels.md of shared/ (Adya's thesis for the phenomena, MTC's
// Definitions 4–6 for the strong levels).
package level

import (
	"fmt"
	"strings"

	"github.com/isoscope/isoscope/internal/anomaly"
)

// ID identifies a level.
type ID uint8

// The levels, weakest first.
const (
	ReadUncommitted ID = iota
	ReadCommitted
	CursorStability
	PL2Plus
	PLFCV
	RepeatableRead
	SnapshotIsolation
	Serializable
	StrictSerializable
	numLevels
)

// Level is one isolation level.
type Level struct {
	ID ID
	// Name is the canonical name ("serializable"), Short the short form
	// ("ser"), Adya the PL name where there is one.
	Name, Short, Adya string
	// Proscribes is the set of phenomena the level forbids.
	Proscribes anomaly.PhenomenonSet
	// NoNonRepeatableReads says a transaction's repeated reads of a key
	// must agree (no write between).
	NoNonRepeatableReads bool
	// Phantoms says a predicate read (a scan, an iterator) may see what a
	// repeated read of it would not: a cycle whose anti-dependencies are
	// all predicate ones is allowed (PL-2.99).
	Phantoms bool
	// SessionOrder and RealTime say whether so and rt edges constrain it.
	SessionOrder, RealTime bool
	// Weaker lists the levels this one implies directly.
	Weaker []ID
}

var g1 = []anomaly.Phenomenon{anomaly.G0, anomaly.G1a, anomaly.G1b, anomaly.G1c}

func with(extra ...anomaly.Phenomenon) anomaly.PhenomenonSet {
	return anomaly.Phenomena(append(append([]anomaly.Phenomenon{}, g1...), extra...)...)
}

var levels = [numLevels]Level{
	{ID: ReadUncommitted, Name: "read-uncommitted", Short: "ru", Adya: "PL-1",
		Proscribes: anomaly.Phenomena(anomaly.G0)},
	{ID: ReadCommitted, Name: "read-committed", Short: "rc", Adya: "PL-2",
		Proscribes: with(), Weaker: []ID{ReadUncommitted}},
	{ID: CursorStability, Name: "cursor-stability", Short: "cs", Adya: "PL-CS",
		Proscribes: with(anomaly.GCursor), Weaker: []ID{ReadCommitted}},
	// PL-2+ implies cursor stability (a G-cursor is a G-single) but not
	// repeatable read, nor does repeatable read imply it: PL-2.99 allows a
	// G-single through a predicate anti-dependency (a phantom).
	{ID: PL2Plus, Name: "pl-2+", Short: "pl-2+", Adya: "PL-2+",
		Proscribes: with(anomaly.GCursor, anomaly.GSingle), Weaker: []ID{CursorStability}},
	{ID: PLFCV, Name: "pl-fcv", Short: "pl-fcv", Adya: "PL-FCV",
		Proscribes: with(anomaly.GCursor, anomaly.GSingle, anomaly.GSIb), Weaker: []ID{PL2Plus}},
	{ID: RepeatableRead, Name: "repeatable-read", Short: "rr", Adya: "PL-2.99",
		Proscribes: with(anomaly.GCursor, anomaly.GSingle, anomaly.G2Item), NoNonRepeatableReads: true, Phantoms: true,
		Weaker: []ID{CursorStability}},
	{ID: SnapshotIsolation, Name: "snapshot-isolation", Short: "si", Adya: "PL-SI",
		Proscribes: with(anomaly.GCursor, anomaly.GSingle, anomaly.GSI, anomaly.GSIa, anomaly.GSIb), NoNonRepeatableReads: true,
		SessionOrder: true, Weaker: []ID{PLFCV}},
	{ID: Serializable, Name: "serializable", Short: "ser", Adya: "PL-3",
		Proscribes:           with(anomaly.GCursor, anomaly.GSingle, anomaly.G2Item, anomaly.G2, anomaly.GSI, anomaly.GSIa, anomaly.GSIb),
		NoNonRepeatableReads: true, SessionOrder: true, Weaker: []ID{SnapshotIsolation, RepeatableRead}},
	{ID: StrictSerializable, Name: "strict-serializable", Short: "sser", Adya: "PL-SS",
		Proscribes:           with(anomaly.GCursor, anomaly.GSingle, anomaly.G2Item, anomaly.G2, anomaly.GSI, anomaly.GSIa, anomaly.GSIb),
		NoNonRepeatableReads: true, SessionOrder: true, RealTime: true, Weaker: []ID{Serializable}},
}

// All returns every level, weakest first.
func All() []Level { return levels[:] }

// Get returns the level with id.
func Get(id ID) Level { return levels[id] }

// String is the level's canonical name.
func (id ID) String() string {
	if id < numLevels {
		return levels[id].Name
	}
	return fmt.Sprintf("level(%d)", id)
}

// Lookup returns the level named s: a canonical name, a short form or an
// Adya name, case-insensitively.
func Lookup(s string) (Level, error) {
	k := strings.ToLower(strings.TrimSpace(s))
	aliases := map[string]ID{
		"serializability": Serializable, "strict-serializability": StrictSerializable,
		"linearizable": StrictSerializable, "si": SnapshotIsolation, "pl-3": Serializable,
		"pl-2.99": RepeatableRead, "pl-2": ReadCommitted, "pl-1": ReadUncommitted,
		"pl-ss": StrictSerializable, "pl-si": SnapshotIsolation, "pl-cs": CursorStability,
	}
	if id, ok := aliases[k]; ok {
		return levels[id], nil
	}
	for _, l := range levels {
		if k == l.Name || k == l.Short || k == strings.ToLower(l.Adya) {
			return l, nil
		}
	}
	names := make([]string, 0, len(levels))
	for _, l := range levels {
		names = append(names, l.Name)
	}
	return Level{}, fmt.Errorf("unknown isolation level %q (known: %s)", s, strings.Join(names, ", "))
}

// Implies reports whether a history satisfying l also satisfies weaker.
func (l Level) Implies(weaker ID) bool {
	if l.ID == weaker {
		return true
	}
	for _, w := range l.Weaker {
		if levels[w].Implies(weaker) {
			return true
		}
	}
	return false
}

// WeakerLevels returns every level l implies, strongest first, without l.
func (l Level) WeakerLevels() []Level {
	var out []Level
	for i := int(numLevels) - 1; i >= 0; i-- {
		if ID(i) != l.ID && l.Implies(ID(i)) {
			out = append(out, levels[i])
		}
	}
	return out
}

// String is the level's canonical name.
func (l Level) String() string { return l.Name }
