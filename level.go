package isoscope

import (
	"strconv"

	"github.com/isoscope/isoscope/internal/level"
)

// Level is an isolation level (docs/levels.md).
type Level uint8

// The levels: Adya's and MTC's weakest first, then the axiomatic levels
// (Biswas and Enea; Cerone et al.) and the levels without session order
// (docs/levels.md). The zero Level is none: Options.Level then means
// Serializable (or what the history's format implies). Implies says which
// level implies which.
const (
	ReadUncommitted Level = iota + 1
	ReadCommitted
	// CursorStability is read committed without lost updates (Adya's
	// G-cursor).
	CursorStability
	// PL2Plus forbids every cycle with at most one anti-dependency
	// (G-single).
	PL2Plus
	// PLFCV is PL-2+ on the graph ordered by the database's start and
	// commit timestamps; without them it coincides with PL2Plus.
	PLFCV
	// RepeatableRead is Adya's PL-2.99: a phantom (a cycle whose
	// anti-dependencies are all predicate ones) is allowed.
	RepeatableRead
	SnapshotIsolation
	Serializable
	StrictSerializable
	// RCSession is read committed as Biswas and Enea define it (and
	// Plume, AWDIT and dbcop check it): a commit order that extends
	// session order and write-read, in which a transaction that read
	// something of T2 never then reads a version of a key T2 overwrote.
	// It implies ReadCommitted (Adya's PL-2), which has no session order.
	RCSession
	// ReadAtomic is Cerone et al.'s read atomic: a transaction sees all of
	// another's writes or none (no fractured reads), with session order.
	ReadAtomic
	// Causal is transactional causal consistency: a transaction sees
	// everything its reads and its session causally depend on.
	Causal
	// Prefix is prefix consistency: each transaction sees a prefix of
	// one commit order that includes what it depends on directly.
	Prefix
	// GSI is snapshot isolation without session order (generalized
	// snapshot isolation; Elle's snapshot-isolation).
	GSI
	// PlainSerializable is serializability without session order
	// (Adya's PL-3; Elle's serializable).
	PlainSerializable
)

// toLevel and fromLevel map between the public and internal levels.
var toLevel = map[Level]level.ID{
	ReadUncommitted: level.ReadUncommitted, ReadCommitted: level.ReadCommitted, CursorStability: level.CursorStability,
	PL2Plus: level.PL2Plus, PLFCV: level.PLFCV, RepeatableRead: level.RepeatableRead,
	SnapshotIsolation: level.SnapshotIsolation, Serializable: level.Serializable, StrictSerializable: level.StrictSerializable,
	RCSession: level.RCSession, ReadAtomic: level.ReadAtomic, Causal: level.Causal, Prefix: level.Prefix,
	GSI: level.GSI, PlainSerializable: level.PlainSerializable,
}

func fromLevel(id level.ID) Level {
	for l, i := range toLevel {
		if i == id {
			return l
		}
	}
	return 0
}

// ParseLevel returns the level a name or short form names
// ("serializable", "ser", "si", "pl-2+", …).
func ParseLevel(name string) (Level, error) {
	l, err := level.Lookup(name)
	if err != nil {
		return 0, err
	}
	return fromLevel(l.ID), nil
}

// String is the level's name ("snapshot-isolation").
func (l Level) String() string {
	if id, ok := toLevel[l]; ok {
		return level.Get(id).Name
	}
	return "Level(" + strconv.Itoa(int(l)) + ")"
}

// Short is the level's short form ("si").
func (l Level) Short() string {
	if id, ok := toLevel[l]; ok {
		return level.Get(id).Short
	}
	return l.String()
}

// Implies reports whether every history that satisfies l satisfies w.
func (l Level) Implies(w Level) bool {
	a, ok1 := toLevel[l]
	b, ok2 := toLevel[w]
	return ok1 && ok2 && level.Get(a).Implies(b)
}

// Outcome is a check's verdict.
type Outcome uint8

// The outcomes.
const (
	// Satisfied: the history satisfies the level.
	Satisfied Outcome = iota
	// Violated: the history violates the level; Result.Anomalies say how.
	Violated
	// Undecided: no verdict — a context ended, or a bound on the work or
	// memory of the check was reached (Result.Reason says which).
	Undecided
)

// String is the outcome's name in the JSON result: "satisfied",
// "violation" or "unknown".
func (o Outcome) String() string {
	switch o {
	case Satisfied:
		return "satisfied"
	case Violated:
		return "violation"
	case Undecided:
		return "unknown"
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}

// Checker names a checking algorithm.
type Checker string

// The checkers. Auto (or "") picks the first that is sound and complete
// for the history at the level, in this order.
const (
	Auto Checker = "auto"
	// Chronos decides SI and SER by the database's start and commit
	// timestamps.
	Chronos Checker = "chronos"
	// LWT decides linearizability of compare-and-set register histories.
	LWT Checker = "lwt"
	// MT decides SER, SI, SSER, GSI and PlainSerializable of
	// read-modify-write histories with
	// unique values (mini-transactions).
	MT Checker = "mt"
	// ListAppend decides RC, SI, SER, SSER, GSI and PlainSerializable of
	// list-append histories.
	ListAppend Checker = "list-append"
	// DSG decides RC and RU of histories with unique values.
	DSG Checker = "dsg"
	// Saturate decides RCSession, ReadAtomic and Causal of read/write
	// histories with unique values in near-linear time, by saturating
	// the commit order with the edges the level's axiom infers.
	Saturate Checker = "saturate"
	// Linear decides linearizability (and serializability where each
	// session keeps to one register) of register histories whose
	// transactions are each one read, write or compare-and-set of one
	// key: Jepsen's, Knossos's and Porcupine's logs.
	Linear Checker = "linear"
	// SAT decides every level on any history, by a SAT search.
	SAT Checker = "sat"
	// SATBC is SAT with snapshot isolation encoded on Viper's
	// begin/commit-node graph, for comparison.
	SATBC Checker = "sat-bc"
)

// OwnReads is what a read of a key its transaction wrote before may
// return.
type OwnReads uint8

// The read-your-own-writes policies. The zero OwnReads is OwnWrite.
const (
	// OwnWrite: its transaction's last write of the key (every level's
	// internal consistency asks for it).
	OwnWrite OwnReads = iota
	// External: only other transactions' writes (stores that buffer
	// writes until commit).
	External
	// Either: either.
	Either
	// Infer: the policy the history shows — OwnWrite when every such read
	// saw its own write, External when none did, Either when some did —
	// which Result.OwnReads then reports. Opt in: a database that never
	// reads its own writes would otherwise be judged by External instead
	// of refuted.
	Infer
)

// String is the policy's name on the command line ("own", "external",
// "either", "infer").
func (p OwnReads) String() string {
	switch p {
	case OwnWrite:
		return "own"
	case External:
		return "external"
	case Either:
		return "either"
	case Infer:
		return "infer"
	}
	return "OwnReads(" + strconv.Itoa(int(p)) + ")"
}
