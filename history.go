package isoscope

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/isoscope/isoscope/internal/format"
	"github.com/isoscope/isoscope/internal/format/native"
	"github.com/isoscope/isoscope/internal/format/registry"
	"github.com/isoscope/isoscope/internal/history"
)

// Value is an integer, a string or null (the zero Value): what a history
// names its transactions, sessions and keys with, and what its operations
// read and write. A read of null saw the key absent; a write of null is a
// delete.
type Value struct{ v history.Value }

// Null is the null Value.
var Null = Value{}

// Int returns the integer n as a Value.
func Int(n int64) Value { return Value{history.IntValue(n)} }

// Str returns the string s as a Value.
func Str(s string) Value { return Value{history.StringValue(s)} }

// IsNull reports whether v is null.
func (v Value) IsNull() bool { return v.v.IsNull() }

// Int returns v's integer, if v is one.
func (v Value) Int() (int64, bool) { return v.v.N, v.v.Kind == history.Int }

// Str returns v's string, if v is one.
func (v Value) Str() (string, bool) { return v.v.S, v.v.Kind == history.String }

// String renders v as isoscope's explanations do: an integer in decimal,
// a string as it is (quoted when it could be mistaken for something
// else), null as "null".
func (v Value) String() string { return v.v.String() }

// Status is how a transaction ended, as its client saw it.
type Status uint8

// The statuses. The zero Status is Committed.
const (
	// Committed: the client saw the commit succeed.
	Committed Status = iota
	// Aborted: the client saw the transaction abort (it took no effect).
	Aborted
	// Unknown: the client never learnt the outcome (a lost COMMIT
	// answer): the transaction may or may not have taken effect.
	Unknown
)

// String returns "committed", "aborted" or "unknown".
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

// OpKind is what an operation does.
type OpKind uint8

// The operation kinds a history built in Go may hold. (Range scans and
// iterators are read from files: see ReadHistory.)
const (
	// Read reads Key and saw Value (null: the key was absent).
	Read OpKind = iota + 1
	// Write writes Value to Key.
	Write
	// Delete deletes Key.
	Delete
	// Append appends the element Value to the list at Key.
	Append
	// ReadList reads the list at Key and saw List (nil: no list yet).
	ReadList
)

// String returns the operation's name in the history format ("r", "w",
// "d", "append", "r" for a list read).
func (k OpKind) String() string {
	switch k {
	case Read, ReadList:
		return "r"
	case Write:
		return "w"
	case Delete:
		return "d"
	case Append:
		return "append"
	}
	return "OpKind(" + strconv.Itoa(int(k)) + ")"
}

// Op is one operation of a transaction, in the order the client issued
// it. R, W, D, A and RL make them.
type Op struct {
	Kind  OpKind
	Key   Value
	Value Value
	// List is what a ReadList saw, in list order.
	List []Value
	// Lock marks a locking read (SELECT … FOR UPDATE), for the innodb-rr
	// model.
	Lock bool
}

// R is a read of key that saw value (Null: absent).
func R(key, value Value) Op { return Op{Kind: Read, Key: key, Value: value} }

// W is a write of value to key.
func W(key, value Value) Op { return Op{Kind: Write, Key: key, Value: value} }

// D is a delete of key.
func D(key Value) Op { return Op{Kind: Delete, Key: key} }

// A is an append of the element value to the list at key.
func A(key, value Value) Op { return Op{Kind: Append, Key: key, Value: value} }

// RL is a read of the list at key that saw the elements list (none: the
// list was empty or absent).
func RL(key Value, list ...Value) Op { return Op{Kind: ReadList, Key: key, List: list} }

// Txn is one transaction as its client saw it.
type Txn struct {
	// ID names the transaction; every transaction of a history has its
	// own. A null ID is the transaction's position in the history, from 1.
	ID Value
	// Session names the client session (connection) that ran it: the
	// transactions of a session ran one after another, in history order.
	// Every transaction has one (not null).
	Session Value
	Status  Status
	// Begin and End are the client's wall-clock instants (nanoseconds)
	// when it began the transaction and saw it end; Timed says they are
	// set. Strict serializability needs them.
	Begin, End int64
	Timed      bool
	// StartTS and CommitTS are the database's own timestamps of the
	// transaction's snapshot and commit; Stamped says they are set. The
	// chronos checker decides by them.
	StartTS, CommitTS uint64
	Stamped           bool
	Ops               []Op
}

// KV is a key and its value.
type KV struct{ Key, Value Value }

// History is a history of transactions: built in Go (NewHistory) or read
// from a file of any supported format (ReadHistory, OpenHistory).
type History struct {
	h *history.History
}

// NewHistory returns the history of txns, in order, from an initial state
// where the keys of initial hold their values and every other key is
// absent. It is validated as a history file is: an error names the
// transaction (txns[i]) and what is wrong with it.
func NewHistory(txns []Txn, initial ...KV) (*History, error) {
	h := history.New()
	h.Header.Present = true
	h.Header.Version = 1
	if len(initial) > 0 {
		h.Header.Initial.Values = make(map[history.KeyID]history.Value, len(initial))
		for _, kv := range initial {
			h.Header.Initial.Values[h.Key(kv.Key.v)] = kv.Value.v
		}
	}
	sessions := map[history.Value]int32{}
	for i, t := range txns {
		x := history.Txn{ID: t.ID.v, Status: history.Status(t.Status), Begin: t.Begin, End: t.End, HasTime: t.Timed,
			StartTS: t.StartTS, CommitTS: t.CommitTS, HasStartTS: t.Stamped, HasCommitTS: t.Stamped}
		if x.ID.IsNull() {
			x.ID = history.IntValue(int64(i + 1))
		}
		if t.Status > Unknown {
			return nil, fmt.Errorf("txns[%d]: unknown status %d", i, t.Status)
		}
		if t.Session.IsNull() {
			return nil, fmt.Errorf("txns[%d]: no session: every transaction runs in one", i)
		}
		s, ok := sessions[t.Session.v]
		if !ok {
			s = int32(len(h.Sessions))
			sessions[t.Session.v] = s
			h.Sessions = append(h.Sessions, t.Session.v)
		}
		x.Session = s
		for j, op := range t.Ops {
			o := history.Op{Key: h.Key(op.Key.v), Value: op.Value.v, Lock: op.Lock}
			switch op.Kind {
			case Read:
				o.Kind = history.Read
			case Write:
				o.Kind = history.Write
			case Delete:
				o.Kind = history.Delete
			case Append:
				o.Kind = history.Append
			case ReadList:
				o.Kind = history.ReadList
				o.List = make([]history.Value, len(op.List))
				for k, e := range op.List {
					o.List[k] = e.v
				}
			default:
				return nil, fmt.Errorf("txns[%d]: ops[%d]: unknown operation kind %d", i, j, op.Kind)
			}
			x.Ops = append(x.Ops, o)
		}
		h.Txns = append(h.Txns, x)
	}
	return validated(h, func(i int) string { return "txns[" + strconv.Itoa(i) + "]" })
}

// validated returns h as the history file's reader reads it back: the
// reader is the one place that validates a history. An error names the
// transaction at fault by txn (given its index in h.Txns).
func validated(h *history.History, txn func(i int) string) (*History, error) {
	var buf bytes.Buffer
	if err := native.Write(&buf, h); err != nil {
		return nil, err
	}
	got, err := native.Read(&buf, "history")
	if err != nil {
		var fe *format.Error
		if errors.As(err, &fe) && fe.Line >= 2 {
			msg := fe.Msg
			if fe.Field != "" {
				msg = fe.Field + ": " + msg
			}
			return nil, fmt.Errorf("%s: %s", txn(fe.Line-2), msg)
		}
		return nil, err
	}
	return &History{h: got}, nil
}

// ReadHistory reads a history from r in any of the stream formats isoscope
// reads — its own JSON Lines, Jepsen's EDN and JSON, Cobra, dbcop,
// PolySI/Plume, AWDIT, Knossos and Porcupine logs, TimeKiller, a Viper
// log file — detected
// as `isoscope check` detects them, gzip-compressed or not; name is used
// in error messages. Bad input gives an error naming the line and the
// field.
func ReadHistory(r io.Reader, name string) (*History, error) {
	o, err := registry.Read(r, name, "auto", registry.Options{})
	if err != nil {
		return nil, err
	}
	return &History{h: o.History}, nil
}

// OpenHistory reads the history at path, a file of any format isoscope
// reads or a directory of Cobra or Viper logs, detected as `isoscope check`
// detects it. A context that ends stops the read.
func OpenHistory(ctx context.Context, path string) (*History, error) {
	o, err := registry.OpenWith(path, "auto", registry.Options{Context: ctx})
	if err != nil {
		return nil, err
	}
	return &History{h: o.History}, nil
}

// Stats counts a history's transactions (by how they ended), sessions,
// operations and keys.
type Stats struct {
	Transactions, Committed, Aborted, Unknown int
	Sessions, Operations, Keys                int
}

// Stats counts what the history holds.
func (h *History) Stats() Stats { return Stats(h.h.Stats()) }

// Initial returns the keys the initial state holds, with their values,
// in key order (every other key is absent).
func (h *History) Initial() []KV {
	var out []KV
	for k, v := range h.h.Header.Initial.Values {
		out = append(out, KV{Value{h.h.Keys[k]}, Value{v}})
	}
	slices.SortFunc(out, func(a, b KV) int { return history.Compare(a.Key.v, b.Key.v) })
	return out
}

// Len returns the number of transactions.
func (h *History) Len() int { return len(h.h.Txns) }

// Txn returns the i-th transaction (from 0, in history order) as Go
// values. Its range scans and iterators, which Op cannot hold, are left
// out.
func (h *History) Txn(i int) Txn {
	x := &h.h.Txns[i]
	t := Txn{ID: Value{x.ID}, Session: Value{h.h.Sessions[x.Session]}, Status: Status(x.Status),
		Begin: x.Begin, End: x.End, Timed: x.HasTime,
		StartTS: x.StartTS, CommitTS: x.CommitTS, Stamped: x.HasStartTS && x.HasCommitTS}
	for _, o := range x.Ops {
		if o.Kind.IsRange() {
			continue // no key: Op cannot hold it
		}
		op := Op{Key: Value{h.h.Keys[o.Key]}, Value: Value{o.Value}, Lock: o.Lock}
		switch o.Kind {
		case history.Read:
			op.Kind = Read
		case history.Write:
			op.Kind = Write
		case history.Delete:
			op.Kind = Delete
		case history.Append:
			op.Kind = Append
		case history.ReadList:
			op.Kind = ReadList
			for _, e := range o.List {
				op.List = append(op.List, Value{e})
			}
		default:
			continue
		}
		t.Ops = append(t.Ops, op)
	}
	return t
}
