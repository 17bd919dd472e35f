// Package level defines isolation levels as data: their names and aliases,
// the phenomena each proscribes, the commit-order axiom of the axiomatic
// levels, whether session order and real time constrain it, and which
// level implies which. It follows docs/levels.md of shared/ (Adya's thesis
// for the phenomena, MTC's Definitions 4–6 for the strong levels) and the
// repository's docs/levels.md for the axiomatic levels (Biswas and Enea;
// Cerone, Bernardi and Gotsman) and the levels without session order.
package level

import (
	"fmt"
	"slices"
	"strings"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/suggest"
)

// ID identifies a level.
type ID uint8

// The levels, weakest first: a linear extension of the implications (a
// level comes after every level it implies).
const (
	ReadUncommitted ID = iota
	ReadCommitted
	CursorStability
	// RCSession is read committed as Biswas and Enea define it (and
	// Plume, AWDIT and dbcop check it): a commit order that extends
	// session order and write-read, under the Read Committed axiom. It
	// implies Adya's ReadCommitted but not the reverse.
	RCSession
	// ReadAtomic is Cerone et al.'s read atomic (atomic visibility).
	ReadAtomic
	// Causal is transactional causal consistency.
	Causal
	PL2Plus
	PLFCV
	RepeatableRead
	// Prefix is prefix consistency.
	Prefix
	// GSI is snapshot isolation without session order (generalized
	// snapshot isolation): a transaction's snapshot may miss its own
	// session's earlier transactions.
	GSI
	SnapshotIsolation
	// PlainSerializable is serializability without session order
	// (Adya's PL-3, Elle's serializable).
	PlainSerializable
	Serializable
	StrictSerializable
	numLevels
)

// Axiom is the commit-order axiom of an axiomatic level (Biswas and Enea,
// "On the Complexity of Checking Transactional Consistency", OOPSLA 2019,
// §2; Cerone, Bernardi and Gotsman, CONCUR 2015). A history satisfies the
// level when some strict total order co of its committed transactions
// extends session order (so) and write-read (wr) and, whenever a read of x
// in t3 reads from t1 and another transaction t2 writes x, the axiom's
// premise on t2 and t3 implies t2 co t1. The premises:
type Axiom uint8

// The axioms, weakest first.
const (
	// NoAxiom: the level is defined by Adya's phenomena (or by MTC's
	// definitions), not by a commit-order axiom.
	NoAxiom Axiom = iota
	// AxiomRC (Read Committed): t3 read something of t2 earlier in
	// program order than the read of x (t2 wr;po the read).
	AxiomRC
	// AxiomRA (Read Atomic): t2 so t3 or t2 wr t3.
	AxiomRA
	// AxiomCC (Causal): t2 (so ∪ wr)+ t3.
	AxiomCC
	// AxiomPrefix (Prefix): t2 co* ; (so ∪ wr) t3 — t2 precedes in co, or
	// is, some transaction t3 depends on directly.
	AxiomPrefix
)

// String is the axiom's name ("read-atomic", …).
func (a Axiom) String() string {
	switch a {
	case AxiomRC:
		return "read-committed"
	case AxiomRA:
		return "read-atomic"
	case AxiomCC:
		return "causal"
	case AxiomPrefix:
		return "prefix"
	}
	return "none"
}

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
	// Axiom is the commit-order axiom of an axiomatic level, NoAxiom for
	// the others.
	Axiom Axiom
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
	// The commit order contains wr and, as the version order, ww: G1c is
	// proscribed as at PL-2, with session order besides.
	{ID: RCSession, Name: "rc-session", Short: "rc-session",
		Proscribes: with(), SessionOrder: true, Axiom: AxiomRC, Weaker: []ID{ReadCommitted}},
	// Reading a key twice from two writers puts each before the other: a
	// non-repeatable read violates the axiom.
	{ID: ReadAtomic, Name: "read-atomic", Short: "ra",
		Proscribes: with(), NoNonRepeatableReads: true, SessionOrder: true, Axiom: AxiomRA, Weaker: []ID{RCSession}},
	{ID: Causal, Name: "causal", Short: "cc",
		Proscribes: with(), NoNonRepeatableReads: true, SessionOrder: true, Axiom: AxiomCC, Weaker: []ID{ReadAtomic}},
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
	{ID: Prefix, Name: "prefix", Short: "pc",
		Proscribes: with(), NoNonRepeatableReads: true, SessionOrder: true, Axiom: AxiomPrefix, Weaker: []ID{Causal}},
	{ID: GSI, Name: "generalized-snapshot-isolation", Short: "gsi",
		Proscribes: with(anomaly.GCursor, anomaly.GSingle, anomaly.GSI, anomaly.GSIa, anomaly.GSIb), NoNonRepeatableReads: true,
		Weaker: []ID{PLFCV}},
	{ID: SnapshotIsolation, Name: "snapshot-isolation", Short: "si", Adya: "PL-SI",
		Proscribes: with(anomaly.GCursor, anomaly.GSingle, anomaly.GSI, anomaly.GSIa, anomaly.GSIb), NoNonRepeatableReads: true,
		SessionOrder: true, Weaker: []ID{GSI, Prefix}},
	{ID: PlainSerializable, Name: "plain-serializable", Short: "plain-ser",
		Proscribes:           with(anomaly.GCursor, anomaly.GSingle, anomaly.G2Item, anomaly.G2, anomaly.GSI, anomaly.GSIa, anomaly.GSIb),
		NoNonRepeatableReads: true, Weaker: []ID{GSI, RepeatableRead}},
	{ID: Serializable, Name: "serializable", Short: "ser", Adya: "PL-3",
		Proscribes:           with(anomaly.GCursor, anomaly.GSingle, anomaly.G2Item, anomaly.G2, anomaly.GSI, anomaly.GSIa, anomaly.GSIb),
		NoNonRepeatableReads: true, SessionOrder: true, Weaker: []ID{SnapshotIsolation, PlainSerializable}},
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

// aliases are the other names of the levels: the literature's, and
// Elle's where its consistency-model graph means the same level
// (docs/levels.md says which of Elle's names mean none of them).
var aliases = map[string]ID{
	"serializability": Serializable, "strict-serializability": StrictSerializable,
	"linearizable": StrictSerializable, "si": SnapshotIsolation, "pl-3": Serializable,
	"pl-2.99": RepeatableRead, "pl-2": ReadCommitted, "pl-1": ReadUncommitted,
	"pl-ss": StrictSerializable, "pl-si": SnapshotIsolation, "pl-cs": CursorStability,
	// The axiomatic levels.
	"read-committed-session": RCSession, "rcs": RCSession,
	"causal-consistency": Causal, "tcc": Causal, "transactional-causal-consistency": Causal,
	"prefix-consistency": Prefix,
	// Without session order.
	"plain-snapshot-isolation": GSI, "si-plain": GSI,
	"ser-plain": PlainSerializable,
	// Elle's names (elle.consistency-model) for the same levels.
	"strong-session-serializable":       Serializable,
	"strong-session-snapshot-isolation": SnapshotIsolation,
	"strong-serializable":               StrictSerializable,
	"consistent-view":                   PL2Plus,
	"forward-consistent-view":           PLFCV,
	"conflict-serializable":             PlainSerializable,
	"causal-cerone":                     Causal,
}

// unchecked are names of levels isoscope does not check (Elle's, mostly),
// with what to use instead.
var unchecked = map[string]string{
	"update-serializable":           "Adya's PL-3U (G-update), which isoscope does not check; plain-serializable implies it",
	"strong-snapshot-isolation":     "snapshot isolation with real time (Daudjee and Salem's strong SI): check --level si --module real-time",
	"parallel-snapshot-isolation":   "parallel snapshot isolation, which isoscope does not check; snapshot-isolation implies it, and it implies causal",
	"strong-session-read-committed": "Adya's PL-2 with session order (Elle's strong-session-PL-2), not Biswas and Enea's read committed: check --level rc --module session-order",
	"monotonic-atomic-view":         "Bailis et al.'s monotonic atomic view, which isoscope does not check; read-atomic implies it",
	"pl-3u":                         "Adya's PL-3U (G-update), which isoscope does not check; plain-serializable implies it",
}

// Lookup returns the level named s: a canonical name, a short form, an
// Adya name or an alias (among them Elle's names that mean one of the
// levels), case-insensitively.
func Lookup(s string) (Level, error) {
	k := strings.ToLower(strings.TrimSpace(s))
	if id, ok := aliases[k]; ok {
		return levels[id], nil
	}
	for _, l := range levels {
		if k == l.Name || k == l.Short || l.Adya != "" && k == strings.ToLower(l.Adya) {
			return l, nil
		}
	}
	if why, ok := unchecked[k]; ok {
		return Level{}, fmt.Errorf("isolation level %q is %s", s, why)
	}
	names := make([]string, 0, len(levels))
	var other []string
	for _, l := range levels {
		names = append(names, l.Name)
		other = append(other, l.Short, strings.ToLower(l.Adya))
	}
	for a := range aliases {
		other = append(other, a)
	}
	slices.Sort(other) // the suggestions of a misspelling the same every time
	return Level{}, suggest.Unknown("isolation level", s, names, other...)
}

// Aliases returns the other names Lookup takes for level id (besides its
// name, short form and Adya name), sorted.
func Aliases(id ID) []string {
	var out []string
	for name, a := range aliases {
		if a == id {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
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
