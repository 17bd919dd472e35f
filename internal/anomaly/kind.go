package anomaly

import "strconv"

// Kind names an anomaly of the catalogue (the CLI contract's list, after
// MTC's Figure 5 and Table I).
type Kind uint8

// The anomaly kinds.
const (
	// Cycle is a dependency cycle that no finer name fits.
	Cycle Kind = iota
	ThinAirRead
	AbortedRead
	FutureRead
	NotMyLastWrite
	NotMyOwnWrite
	IntermediateRead
	NonRepeatableRead
	SessionGuaranteeViolation
	NonMonotonicRead
	FracturedRead
	CausalityViolation
	LongFork
	LostUpdate
	WriteSkew
	RealTimeViolation
	// IncompatibleOrder: two reads of a list disagree on the order of its
	// elements (neither is a prefix of the other), so no version order exists.
	IncompatibleOrder
	// DuplicateElements: a list read holds the same element twice.
	DuplicateElements
	// StaleRead: by the database's timestamps, a read returned a version
	// older than the one its snapshot (SI: at its start timestamp; SER: at
	// its commit timestamp) holds: a later commit before that point is
	// missing (Chronos's Ext axiom; Adya's G-SIb under SI).
	StaleRead
	// ReadBeyondSnapshot: by the database's timestamps, a read returned a
	// version that committed only after its snapshot was taken (Chronos's
	// Ext axiom; Adya's G-SIa under SI).
	ReadBeyondSnapshot
	// ConcurrentWrite: two transactions whose timestamp intervals overlap
	// both wrote a key, neither having read it first (Chronos's NoConflict
	// axiom; G-SIa). When the later committer read the key first, the
	// finding is a LostUpdate instead.
	ConcurrentWrite
	// CommitBeforeStart: a transaction's commit timestamp is below its
	// start timestamp.
	CommitBeforeStart
	numKinds
)

var kindNames = [numKinds]string{
	"cycle", "thin-air-read", "aborted-read", "future-read", "not-my-last-write",
	"not-my-own-write", "intermediate-read", "non-repeatable-read",
	"session-guarantee-violation", "non-monotonic-read", "fractured-read",
	"causality-violation", "long-fork", "lost-update", "write-skew",
	"real-time-violation", "incompatible-order", "duplicate-elements",
	"stale-read", "read-beyond-snapshot", "concurrent-write", "commit-before-start",
}

// String is the kind's name in the JSON result ("lost-update", …).
func (k Kind) String() string {
	if k < numKinds {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Kinds lists every kind of the catalogue.
func Kinds() []Kind {
	out := make([]Kind, numKinds)
	for i := range out {
		out[i] = Kind(i)
	}
	return out
}

// ParseKind returns the kind named s.
func ParseKind(s string) (Kind, bool) {
	for i, n := range kindNames {
		if n == s {
			return Kind(i), true
		}
	}
	return 0, false
}

// Phenomenon is an Adya phenomenon (or None for anomalies that are not
// one, such as the intra-transaction ones).
type Phenomenon uint8

// The phenomena of levels.md.
const (
	None Phenomenon = iota
	G0
	G1a
	G1b
	G1c
	GSingle
	GCursor
	G2Item
	G2
	GSI
	GSIa
	GSIb
	numPhenomena
)

var phenomenonNames = [numPhenomena]string{
	"", "G0", "G1a", "G1b", "G1c", "G-single", "G-cursor", "G2-item", "G2", "G-SI", "G-SIa", "G-SIb",
}

// String is the phenomenon's name ("G2-item", …), empty for None.
func (p Phenomenon) String() string {
	if p < numPhenomena {
		return phenomenonNames[p]
	}
	return "Phenomenon(" + strconv.Itoa(int(p)) + ")"
}

// ParsePhenomenon returns the phenomenon named s.
func ParsePhenomenon(s string) (Phenomenon, bool) {
	for i, n := range phenomenonNames {
		if n == s && i > 0 {
			return Phenomenon(i), true
		}
	}
	return 0, false
}

// PhenomenonSet is a set of phenomena, a bitmask by Phenomenon.
type PhenomenonSet uint32

// Phenomena returns the set of the given phenomena.
func Phenomena(ps ...Phenomenon) PhenomenonSet {
	var s PhenomenonSet
	for _, p := range ps {
		s |= 1 << p
	}
	return s
}

// Has reports whether p is in s.
func (s PhenomenonSet) Has(p Phenomenon) bool { return s&(1<<p) != 0 }
