package jepsen

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/isoscope/isoscope/internal/format"
	"github.com/isoscope/isoscope/internal/history"
)

// point is one line Write writes: the invocation or the completion of a
// transaction.
type point struct {
	t      history.TxnID
	at     int64
	invoke bool
}

// InitialField is the field that marks the operation map Write writes for
// a non-empty initial state: a completion, first in the history, of a
// transaction that writes each key's initial value. Read takes it back
// for the initial state; Elle and other Jepsen tools read an ordinary
// transaction that commits before every other (in real time too, when
// the history carries :time).
const InitialField = "isoscope/initial"

// InfoReadsField marks an :info completion whose reads carry what the
// transaction read, should it have taken effect: Write writes them so
// that the reads of a transaction of unknown outcome (a compare-and-set
// whose reply was lost, say) still count when a checker finds it took
// effect. Read keeps them; Elle, like Read without the mark, ignores the
// reads of an :info operation.
const InfoReadsField = "isoscope/reads"

// Write writes h as a Jepsen EDN history, one operation map a line (see the
// package documentation). The :process of a session is its label when
// every label is a distinct non-negative integer, its index otherwise.
//
// Write never writes a history whose verdict could differ from h's: it
// refuses, with an error naming the transaction and operation, what the
// format cannot record (see the package documentation, Writing).
func Write(w io.Writer, h *history.History) error {
	if len(h.Parts) > 0 {
		return fmt.Errorf("a history of %d independent parts (jepsen.independent) cannot be written as one Jepsen history", len(h.Parts))
	}
	lists, err := writable(h)
	if err != nil {
		return err
	}
	timed, err := timing(h)
	if err != nil {
		return err
	}
	var points []point
	if timed {
		if points, err = timedPoints(h); err != nil {
			return err
		}
	} else {
		// Completions alone: Read gives them no instants, and Elle,
		// which orders an operation after those completed before its
		// invocation, sees no real-time order among them.
		points = make([]point, 0, len(h.Txns))
		for i := range h.Txns {
			points = append(points, point{t: history.TxnID(i)})
		}
	}
	procs := processes(h)
	bw := bufio.NewWriterSize(w, 64<<10)
	var b []byte
	index := int64(0)
	if init := initialOps(h); len(init) > 0 {
		if lists {
			return fmt.Errorf("jepsen: key %s has initial value %s; Jepsen's list-append histories start with every list empty",
				h.KeyName(init[0].Key), init[0].Value)
		}
		proc := int64(0)
		for _, p := range procs {
			proc = max(proc, p+1)
		}
		b = append(b[:0], "{:index 0"...)
		if timed {
			b = append(b, ", :time "...)
			b = strconv.AppendInt(b, points[0].at-1, 10)
		}
		b = append(b, ", :type :ok, :process "...)
		b = strconv.AppendInt(b, proc, 10)
		b = append(b, ", :f :txn, :value ["...)
		for j, op := range init {
			if j > 0 {
				b = append(b, ' ')
			}
			b = appendOp(b, h, op, true)
		}
		b = append(b, "], :"+InitialField+" true}\n"...)
		bw.Write(b)
		index++
	}
	for _, p := range points {
		t := &h.Txns[p.t]
		b = append(b[:0], "{:index "...)
		b = strconv.AppendInt(b, index, 10)
		index++
		if timed {
			b = append(b, ", :time "...)
			b = strconv.AppendInt(b, p.at, 10)
		}
		b = append(b, ", :type "...)
		switch {
		case p.invoke:
			b = append(b, ":invoke"...)
		case t.Status == history.Committed:
			b = append(b, ":ok"...)
		case t.Status == history.Aborted:
			b = append(b, ":fail"...)
		default:
			b = append(b, ":info"...)
		}
		b = append(b, ", :process "...)
		b = strconv.AppendInt(b, procs[t.Session], 10)
		b = append(b, ", :f :txn, :value ["...)
		infoReads := !p.invoke && t.Status == history.Unknown && slices.ContainsFunc(t.Ops, func(op history.Op) bool { return !op.Kind.IsWrite() })
		results := !p.invoke && t.Status == history.Committed || infoReads
		for j, op := range t.Ops {
			if j > 0 {
				b = append(b, ' ')
			}
			b = appendOp(b, h, op, results)
		}
		b = append(b, ']')
		if infoReads {
			b = append(b, ", :"+InfoReadsField+" true"...)
		}
		b = append(b, "}\n"...)
		bw.Write(b)
	}
	if err := bw.Flush(); err != nil {
		return errors.Join(errors.New("jepsen: writing the history"), err)
	}
	return nil
}

// writable refuses what a Jepsen history cannot record and reports
// whether h is a list-append history.
func writable(h *history.History) (lists bool, err error) {
	if err := format.RefuseVersionOrder("jepsen", h); err != nil {
		return false, err
	}
	if err := format.RefuseTimestamps("jepsen", h); err != nil {
		return false, err
	}
	var register *history.Op
	var registerTxn history.TxnID
	for i := range h.Txns {
		t := &h.Txns[i]
		id := history.TxnID(i)
		if t.Session < 0 || int(t.Session) >= len(h.Sessions) {
			return false, fmt.Errorf("jepsen: transaction %s: no session %d", h.TxnName(id), t.Session)
		}
		if t.Status == history.Committed && len(t.Ops) == 0 {
			return false, fmt.Errorf("jepsen: transaction %s%s commits no operations; Jepsen's readers drop such a transaction", h.TxnName(id), lineOf(t))
		}
		for j := range t.Ops {
			op := &t.Ops[j]
			bad := func(msg string) error {
				return fmt.Errorf("jepsen: transaction %s%s, operation %d (%s): %s", h.TxnName(id), lineOf(t), j, history.OpString(h, *op), msg)
			}
			switch op.Kind {
			case history.Append, history.ReadList:
				lists = true
			case history.Read, history.Write:
				if register == nil {
					register, registerTxn = op, id
				}
				if op.Kind == history.Write && op.Value.IsNull() {
					return false, bad("Jepsen has no writes of nil")
				}
			default:
				return false, bad("Jepsen's workloads have appends, writes and reads only")
			}
			if op.Key < 0 || int(op.Key) >= len(h.Keys) {
				return false, bad("no such key")
			}
		}
	}
	if lists && register != nil {
		t := &h.Txns[registerTxn]
		if register.Kind == history.Read && register.Value.IsNull() {
			return false, fmt.Errorf("jepsen: transaction %s%s reads %s as null in a history of appends and list reads; Jepsen's readers take [:r k nil] there for a read of the empty list (write it as [] in the input if that is what it was)",
				h.TxnName(registerTxn), lineOf(t), h.KeyName(register.Key))
		}
		return false, fmt.Errorf("jepsen: transaction %s%s has a register operation (%s) in a history of appends and list reads; a Jepsen history is list-append or rw-register, not both",
			h.TxnName(registerTxn), lineOf(t), history.OpString(h, *register))
	}
	return lists, nil
}

// timing reports whether h is written with :time: when every transaction
// has instants. When only some have, the instants are dropped if a
// committed transaction has none (strict serializability, the only level
// that uses them, cannot be checked on h either), and refused otherwise.
func timing(h *history.History) (bool, error) {
	timed, untimed := -1, -1
	for i := range h.Txns {
		if h.Txns[i].HasTime {
			timed = max(timed, i)
		} else if untimed < 0 {
			untimed = i
		}
	}
	switch {
	case timed < 0:
		return false, nil
	case untimed < 0:
		return true, nil
	}
	for i := range h.Txns {
		if !h.Txns[i].HasTime && h.Txns[i].Status == history.Committed {
			return false, nil
		}
	}
	t := &h.Txns[untimed]
	return false, &format.LossError{What: "instants", Msg: fmt.Sprintf("jepsen: transaction %s%s (%s) has no instants while every committed one has; a Jepsen history has :time on every operation or none, and without them strict serializability could not be checked",
		h.TxnName(history.TxnID(untimed)), lineOf(t), t.Status)}
}

// timedPoints returns the invocations and completions of every
// transaction in time order; at one instant, invocations first, so that
// transactions that only touch are concurrent, as they are in h.
func timedPoints(h *history.History) ([]point, error) {
	for _, s := range h.SessionOrder() {
		for j := 1; j < len(s); j++ {
			if a, b := &h.Txns[s[j-1]], &h.Txns[s[j]]; b.Begin <= a.End {
				return nil, &format.LossError{What: "instants", Msg: fmt.Sprintf("jepsen: transactions %s and %s of session %s overlap in time (%d-%d and %d-%d); a Jepsen process runs one operation at a time",
					h.TxnName(s[j-1]), h.TxnName(s[j]), h.Sessions[b.Session], a.Begin, a.End, b.Begin, b.End)}
			}
		}
	}
	points := make([]point, 0, 2*len(h.Txns))
	for i := range h.Txns {
		t := &h.Txns[i]
		points = append(points, point{history.TxnID(i), t.Begin, true}, point{history.TxnID(i), max(t.End, t.Begin), false})
	}
	slices.SortStableFunc(points, func(a, b point) int {
		if a.at != b.at {
			return cmp.Compare(a.at, b.at)
		}
		switch {
		case a.invoke && !b.invoke:
			return -1
		case !a.invoke && b.invoke:
			return 1
		}
		return 0
	})
	return points, nil
}

// initialOps returns the writes of h's initial state, in key order; keys
// initially absent are left out.
func initialOps(h *history.History) []history.Op {
	var ops []history.Op
	for k, v := range h.Header.Initial.Values {
		if !v.IsNull() {
			ops = append(ops, history.Op{Kind: history.Write, Key: k, Value: v})
		}
	}
	slices.SortFunc(ops, func(a, b history.Op) int { return cmp.Compare(a.Key, b.Key) })
	return ops
}

// lineOf is " (line n)" for a transaction read from a file, "" otherwise.
func lineOf(t *history.Txn) string {
	if t.Line > 0 {
		return " (line " + strconv.Itoa(t.Line) + ")"
	}
	return ""
}

// processes numbers the sessions: by their labels when those are distinct
// non-negative integers, by their indexes otherwise.
func processes(h *history.History) []int64 {
	out := make([]int64, len(h.Sessions))
	seen := map[int64]bool{}
	for i, s := range h.Sessions {
		if s.Kind != history.Int || s.N < 0 || seen[s.N] {
			for i := range out {
				out[i] = int64(i)
			}
			return out
		}
		seen[s.N] = true
		out[i] = s.N
	}
	return out
}

// appendOp appends a micro-operation; results says whether reads carry
// what they read (a completion) or nil (an invocation).
func appendOp(b []byte, h *history.History, op history.Op, results bool) []byte {
	b = append(b, '[')
	switch op.Kind {
	case history.Append:
		b = append(b, ":append "...)
	case history.Write:
		b = append(b, ":w "...)
	default:
		b = append(b, ":r "...)
	}
	b = appendValue(b, h.Keys[op.Key])
	b = append(b, ' ')
	switch {
	case op.Kind == history.ReadList && results:
		b = append(b, '[')
		for i, e := range op.List {
			if i > 0 {
				b = append(b, ' ')
			}
			b = appendValue(b, e)
		}
		b = append(b, ']')
	case op.Kind == history.Read && results, op.Kind.IsWrite():
		b = appendValue(b, op.Value)
	default:
		b = append(b, "nil"...)
	}
	return append(b, ']')
}

func appendValue(b []byte, v history.Value) []byte {
	switch v.Kind {
	case history.Int:
		return strconv.AppendInt(b, v.N, 10)
	case history.String:
		return history.AppendJSONString(b, v.S) // the Clojure reader takes JSON's escapes
	}
	return append(b, "nil"...)
}
