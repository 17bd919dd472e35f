package history

import (
	"fmt"
	"strconv"
	"time"
)

// OpKind names an operation of the history format.
type OpKind uint8

// The operations of history format version 1.
const (
	// Read is ["r", k, v]: read key k and got v (null: absent).
	Read OpKind = iota
	// Write is ["w", k, v]: put v at k.
	Write
	// Delete is ["d", k]: physically delete k.
	Delete
	// Append is ["append", k, e]: append element e to the list at k.
	Append
	// ReadList is ["r", k, [e1, …]]: read the whole list at k.
	ReadList
	// Scan is ["scan", lo, hi, [[k, v], …]]: every present key of lo <= key < hi.
	Scan
	// Iter is ["iter", lo, hi, [[k, v], …]]: the first len(result) present keys of the range.
	Iter
)

// String is the operation's name in the format ("r", "w", …); ReadList is "r[]".
func (k OpKind) String() string {
	switch k {
	case Read:
		return "r"
	case Write:
		return "w"
	case Delete:
		return "d"
	case Append:
		return "append"
	case ReadList:
		return "r[]"
	case Scan:
		return "scan"
	case Iter:
		return "iter"
	}
	return "OpKind(" + strconv.Itoa(int(k)) + ")"
}

// Noun is the kind of operation as a noun with its article, for
// messages: "a read", "an append", "a list read", "an iterator".
func (k OpKind) Noun() string {
	switch k {
	case Read:
		return "a read"
	case Write:
		return "a write"
	case Delete:
		return "a delete"
	case Append:
		return "an append"
	case ReadList:
		return "a list read"
	case Scan:
		return "a scan"
	case Iter:
		return "an iterator"
	}
	return "an " + k.String()
}

// IsWrite reports whether the operation installs a version of a key (write,
// delete or append).
func (k OpKind) IsWrite() bool { return k == Write || k == Delete || k == Append }

// IsRange reports whether the operation is a scan or an iterator.
func (k OpKind) IsRange() bool { return k == Scan || k == Iter }

// KeyID identifies a key of a history: an index into History.Keys.
type KeyID int32

// NoKey marks an operation or edge without a single key.
const NoKey KeyID = -1

// KV is one pair of a range result.
type KV struct {
	Key   KeyID
	Value Value
}

// Range is the bounds and result of a scan or iterator. Hi is unbounded
// when HiOpen is true.
type Range struct {
	Lo, Hi Value
	HiOpen bool
	Pairs  []KV
}

// Op is one operation of a transaction, in program order.
type Op struct {
	Kind OpKind
	// Lock is the operation's "lock" attribute (a locking read).
	Lock bool
	// Key is the key of a read, write, delete, append or list read; NoKey
	// for a range operation.
	Key KeyID
	// Value is the value read or written, or the element appended.
	Value Value
	// List is the result of a list read; nil for null or [].
	List []Value
	// Range holds the bounds and result of a scan or iterator.
	Range *Range
}

// Status is a transaction's outcome as the client saw it.
type Status uint8

// The statuses of the format.
const (
	Committed Status = iota
	Aborted
	Unknown
)

// String is the status's name in the format.
func (s Status) String() string {
	switch s {
	case Committed:
		return "committed"
	case Aborted:
		return "aborted"
	case Unknown:
		return "unknown"
	}
	return "Status(" + strconv.Itoa(int(s)) + ")"
}

// TxnID indexes History.Txns. The virtual initial transaction is Init.
type TxnID int32

// Init is the virtual initial transaction that installs the initial state.
const Init TxnID = -1

// Txn is one transaction as its client saw it.
type Txn struct {
	// ID is the transaction's id as it appears in the input.
	ID Value
	// Session indexes History.Sessions.
	Session int32
	Status  Status
	// HasTime says Begin and End are set; HasStartTS and HasCommitTS say
	// StartTS and CommitTS are (beside Session and Status: the flags take
	// no room of their own).
	HasTime, HasStartTS, HasCommitTS bool
	// Begin and End are client wall-clock instants in nanoseconds, valid
	// when HasTime is set.
	Begin, End int64
	// StartTS and CommitTS are database timestamps, valid when the Has
	// flags are set.
	StartTS, CommitTS uint64
	Ops               []Op
	// Line is the input line the transaction came from (1-based; 0 when
	// it was built in memory).
	Line int
}

// Initial is the state before the first transaction.
type Initial struct {
	// Values holds the initial value of each key named by the header;
	// every other key is absent.
	Values map[KeyID]Value
}

// DeleteMode says how deletes appear to later scans.
type DeleteMode uint8

// The delete modes of the header.
const (
	// PhysicalDeletes: later reads and scans see the key absent.
	PhysicalDeletes DeleteMode = iota
	// TombstoneDeletes: scans return a deleted key as [k, null].
	TombstoneDeletes
)

// Header holds the facts of a history's header line.
type Header struct {
	// Present says the input had a header line.
	Present bool
	Version int
	Initial Initial
	// UniqueValues is the header's promise that no two writes to a key
	// write the same value.
	UniqueValues bool
	Deletes      DeleteMode
	// VersionOrder is the white-box order of the writers of each key,
	// resolved to transactions.
	VersionOrder map[KeyID][]TxnID
	Source       string
	// FenceKey is the header's fence_key: the key of the fence
	// transactions (a read of the key, then a write of a unique value or
	// an append of a unique element, nothing else), of the history's kind
	// of key. Null means the history has no fences. Checkers treat fences
	// as ordinary transactions; the online checker uses them to forget
	// what no future cycle can reach.
	FenceKey Value
	// Implies names the isolation level the input format asks for, and
	// ImpliedBy that format, when it asks for one: the register logs of
	// knossos and porcupine are checked for linearizability, which is
	// strict serializability of their one-operation transactions, so
	// their readers set "strict-serializable". A check without an
	// explicitly chosen level uses it. Not part of the history format:
	// writers do not write it.
	Implies, ImpliedBy string
}

// History is what the clients saw: transactions in file order, grouped into
// sessions, over interned keys.
type History struct {
	Header Header
	Txns   []Txn
	// Keys maps a KeyID to the key.
	Keys []Value
	// Sessions maps a session index to its label.
	Sessions []Value
	// Name is where the history came from (a file name), for messages.
	Name string
	// Faults are the faults a nemesis applied to the system while the
	// history was recorded, in the order they were recorded. Checkers
	// ignore them; reports show them beside the transactions.
	Faults []Fault
	// Parts, when set, are the independent histories the history is made
	// of (Jepsen's jepsen.independent: many registers or many sets of
	// keys, tested at once): each is checked as a history of its own, and
	// the history's verdict is theirs together. Every transaction is in
	// exactly one part; parts share no key.
	Parts []Part
	// Skipped counts, by kind, the operations of the input that its
	// reader left out by design (read, and of no effect on any verdict).
	Skipped map[string]int

	keyIndex map[Value]KeyID
}

// Part is one of the independent histories a history holds: the
// transactions on one independent key.
type Part struct {
	// Key is the independent key.
	Key Value
	// Txns are the part's transactions, in increasing order.
	Txns []TxnID
}

// Skip records that a reader left out n operations of the given kind.
func (h *History) Skip(kind string, n int) {
	if n <= 0 {
		return
	}
	if h.Skipped == nil {
		h.Skipped = map[string]int{}
	}
	h.Skipped[kind] += n
}

// New returns an empty history.
func New() *History {
	return &History{keyIndex: make(map[Value]KeyID)}
}

// Key interns k and returns its id.
func (h *History) Key(k Value) KeyID {
	h.indexKeys()
	if id, ok := h.keyIndex[k]; ok {
		return id
	}
	id := KeyID(len(h.Keys))
	h.Keys = append(h.Keys, k)
	h.keyIndex[k] = id
	return id
}

// AddKey appends k, which the history must not have, to its keys and
// returns its id: for a reader that interns keys with tables of its own.
// The index Key and LookupKey use is rebuilt when next needed.
func (h *History) AddKey(k Value) KeyID {
	h.keyIndex = nil
	h.Keys = append(h.Keys, k)
	return KeyID(len(h.Keys) - 1)
}

// LookupKey returns the id of k, if the history has it.
func (h *History) LookupKey(k Value) (KeyID, bool) {
	h.indexKeys()
	id, ok := h.keyIndex[k]
	return id, ok
}

func (h *History) indexKeys() {
	if h.keyIndex != nil {
		return
	}
	h.keyIndex = make(map[Value]KeyID, len(h.Keys))
	for i, v := range h.Keys {
		h.keyIndex[v] = KeyID(i)
	}
}

// KeyName renders key k for people.
func (h *History) KeyName(k KeyID) string {
	if k < 0 || int(k) >= len(h.Keys) {
		return "?"
	}
	return h.Keys[k].String()
}

// ReadsFirst reports whether t's first operation on key k, scans and
// iterators aside, is a read: a write of k by t then overwrote a version
// t had read (false for the initial state, and for a transaction that
// does not touch k).
func (h *History) ReadsFirst(t TxnID, k KeyID) bool {
	if t < 0 || int(t) >= len(h.Txns) {
		return false
	}
	for _, op := range h.Txns[t].Ops {
		if op.Key == k && !op.Kind.IsRange() {
			return op.Kind == Read || op.Kind == ReadList
		}
	}
	return false
}

// TxnName renders transaction t for people: its input id, or "init" for
// the initial transaction.
func (h *History) TxnName(t TxnID) string {
	if t == Init {
		return "init"
	}
	if t < 0 || int(t) >= len(h.Txns) {
		return fmt.Sprintf("?%d", t)
	}
	return h.Txns[t].ID.String()
}

// InitialValue returns the value of k before the first transaction.
func (h *History) InitialValue(k KeyID) Value {
	if v, ok := h.Header.Initial.Values[k]; ok {
		return v
	}
	return NullValue
}

// SessionOrder returns, for each session, its transactions in session order
// (file order).
func (h *History) SessionOrder() [][]TxnID {
	out := make([][]TxnID, len(h.Sessions))
	for i := range h.Txns {
		s := h.Txns[i].Session
		out[s] = append(out[s], TxnID(i))
	}
	return out
}

// Stats counts what a history holds.
type Stats struct {
	Transactions int `json:"transactions"`
	Committed    int `json:"committed"`
	Aborted      int `json:"aborted"`
	Unknown      int `json:"unknown"`
	Sessions     int `json:"sessions"`
	Operations   int `json:"operations"`
	Keys         int `json:"keys"`
}

// Stats counts the history's transactions, sessions, operations and keys.
func (h *History) Stats() Stats {
	s := Stats{Transactions: len(h.Txns), Sessions: len(h.Sessions), Keys: len(h.Keys)}
	for i := range h.Txns {
		t := &h.Txns[i]
		s.Operations += len(t.Ops)
		switch t.Status {
		case Committed:
			s.Committed++
		case Aborted:
			s.Aborted++
		default:
			s.Unknown++
		}
	}
	return s
}

// Fault is a fault injected into the system under test while a history
// was recorded (a nemesis's operation, in Jepsen's terms): a partition, a
// process killed, paused or restarted, client connections cut, a clock
// skewed. Begin and End are instants on the clock of the transactions'
// begin and end (nanoseconds); a fault with no duration (a cut) has End
// equal to Begin.
type Fault struct {
	// Kind names the fault ("partition", "kill", "pause", "restart",
	// "cut", "clock", or any other name a producer uses).
	Kind string
	// Node names the node it struck ("" for none in particular).
	Node string
	// Begin and End are when it began and when it was healed.
	Begin, End int64
	// Info says more, in a producer's words ("n2 cut off from n1 n3").
	Info string
	// Offset is a clock fault's skew of the node's clock, in nanoseconds:
	// positive ahead of the real time, negative behind (0: none given).
	Offset int64
	// Line is the history file's line that held it (0: none).
	Line int
}

// Label names a fault in a few words: its kind, its node, and a clock
// fault's offset ("partition n2", "clock n1 -1m23s").
func (f *Fault) Label() string {
	s := f.Kind
	if f.Node != "" {
		s += " " + f.Node
	}
	if f.Offset > 0 {
		s += " +" + time.Duration(f.Offset).String()
	} else if f.Offset < 0 {
		s += " " + time.Duration(f.Offset).String()
	}
	return s
}
