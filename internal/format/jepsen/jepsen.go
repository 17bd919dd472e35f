package jepsen

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"

	"github.com/isoscope/isoscope/internal/format"
	"github.com/isoscope/isoscope/internal/format/edn"
	"github.com/isoscope/isoscope/internal/history"
)

// sniffOp matches the start of a first operation map: an EDN or JSON map
// (perhaps the first of a vector) whose :type is one of the four.
var sniffOp = regexp.MustCompile(`^\[?[\s,]*\{[^\n]*?(:type[\s,]+:(invoke|ok|fail|info)[\s,}]|"type"\s*:\s*"(invoke|ok|fail|info)")`)

// Sniff reports whether the input starts like a Jepsen history: after
// blank lines and EDN comments, an operation map with a :type of :invoke,
// :ok, :fail or :info on its first line.
func Sniff(p []byte) bool {
	return sniffOp.Match(skipComments(p))
}

// skipComments returns p without its leading whitespace, commas and EDN
// comment lines.
func skipComments(p []byte) []byte {
	for {
		p = bytes.TrimLeft(p, " \t\r\n,")
		if len(p) == 0 || p[0] != ';' {
			return p
		}
		_, rest, ok := bytes.Cut(p, []byte("\n"))
		if !ok {
			return nil
		}
		p = rest
	}
}

// event is one client operation map of the history.
type event struct {
	line, pos int // the line it starts on; its 1-based position among the operations
	typ       string
	process   int64
	anonymous bool // no :process
	f         string
	value     edn.Value
	hasValue  bool
	time      int64
	hasTime   bool
	index     int64
	hasIndex  bool
	infoReads bool // an :info completion marked with InfoReadsField
	// part is the independent key of a jepsen.independent history's
	// operation ([key txn]), when hasPart; value is then the txn.
	part    edn.Value
	hasPart bool
}

// txn is a transaction read, before ids and instants are settled.
type txn struct {
	history.Txn
	inv, done *event // done is nil for an invocation never completed
	part      history.Value
}

// reader reads one history.
type reader struct {
	name     string
	h        *history.History
	sessions map[int64]int32
	open     map[int64]*event
	order    []int64 // processes with an open invocation, in order of invocation
	txns     []txn
	pos      int
	lists    bool // an append or a list read was seen
	// shared holds the lists read so far, which later reads share.
	shared history.Lists
	// timed and untimed are the first lines of an operation with and
	// without :time; anonymous and named those without and with :process.
	timed, untimed, anonymous, named int
	maxTime                          int64
	// vals turns keys, values and elements into history values.
	vals Values
	// independent is 1 when the operations' values are [key txn]
	// (jepsen.independent), -1 when they are transactions, 0 until an
	// operation with a value says which; tupleLine is the line that did.
	independent int8
	tupleLine   int
	// clientOps counts the clients' operations read; faults are the
	// non-client operations with their positions as instants,
	// timedFaults with their times; skippedTxn counts the transactions
	// left out as of no effect.
	clientOps           int
	faults, timedFaults Faults
	skippedTxn          int
	// unseenReads counts the reads of aborted and unknown transactions,
	// left out.
	unseenReads int
}

func (rd *reader) errf(line int, field, msg string, a ...any) error {
	return &format.Error{File: rd.name, Line: line, Field: field, Msg: fmt.Sprintf(msg, a...)}
}

// Read reads a Jepsen history, EDN or JSON, from r; name names it in
// messages.
func Read(r io.Reader, name string) (*history.History, error) {
	rd := &reader{name: name, h: history.New(), sessions: map[int64]int32{}, open: map[int64]*event{}}
	rd.h.Name = name
	d := edn.NewDecoder(r, name)
	if err := d.Each(rd.op); err != nil {
		return nil, err
	}
	for _, proc := range rd.order {
		if inv, ok := rd.open[proc]; ok {
			delete(rd.open, proc)
			if err := rd.add(inv, nil); err != nil {
				return nil, err
			}
		}
	}
	if len(rd.txns) == 0 && rd.h.Header.Initial.Values == nil {
		return nil, &format.Error{File: name, Line: d.Line(), Msg: fmt.Sprintf(
			"no transactions: of the %d client operations read, none is a transaction that took effect (%d operations of no effect: read-only and of unknown outcome)",
			rd.clientOps, rd.skippedTxn)}
	}
	return rd.finish(), nil
}

// op reads one operation map.
func (rd *reader) op(v edn.Value) error {
	if v.Kind != edn.Map {
		return rd.errf(v.Line, "", "an operation is %s, not a map", v.Kind)
	}
	e := &event{line: v.Line}
	t, ok := v.Get("type")
	if !ok {
		return rd.errf(v.Line, "type", "missing")
	}
	switch n, _ := t.Name(); n {
	case "invoke", "ok", "fail", "info":
		e.typ = n
	default:
		return rd.errf(v.Line, "type", "%s is none of invoke, ok, fail and info", t)
	}
	for _, n := range [2]struct {
		name string
		at   *int64
		has  *bool
	}{{"time", &e.time, &e.hasTime}, {"index", &e.index, &e.hasIndex}} {
		x, ok := v.Get(n.name)
		if !ok || x.Kind == edn.Nil {
			continue
		}
		if x.Kind != edn.Int {
			return rd.errf(v.Line, n.name, "%s is not an integer", x)
		}
		*n.at, *n.has = x.N, true
	}
	switch p, ok := v.Get("process"); {
	case !ok || p.Kind == edn.Nil:
		e.anonymous = true
	case p.Kind == edn.Int:
		e.process = p.N
	case p.Kind == edn.Keyword || p.Kind == edn.String:
		// The nemesis, or another process that is not a client: a fault.
		// Its instant is its position, or its :time (the latest time
		// before it without one) when the clients' operations have it.
		rd.pos++
		rd.faults.Add(v, p, int64(rd.pos), v.Line)
		if e.hasTime {
			rd.maxTime = max(rd.maxTime, e.time)
		}
		rd.timedFaults.Add(v, p, rd.maxTime, v.Line)
		return nil
	default:
		return rd.errf(v.Line, "process", "%s is not an integer (a client) or a name (the nemesis)", p)
	}
	rd.clientOps++
	if f, ok := v.Get("f"); ok && f.Kind != edn.Nil {
		// Elle ignores :f: :txn, :read, :write … are all transactions.
		n, isName := f.Name()
		if !isName {
			return rd.errf(v.Line, "f", "%s is not a keyword", f)
		}
		e.f = n
	}
	e.value, e.hasValue = v.Get("value")
	if m, ok := v.Get(InitialField); ok && m.Kind != edn.Nil {
		return rd.initial(e, m)
	}
	if m, ok := v.Get(InfoReadsField); ok && m.Kind != edn.Nil {
		if e.typ != "info" || m.Kind != edn.Bool || m.Text != "true" {
			return rd.errf(v.Line, InfoReadsField, "%s on :%s; it marks an :info completion, and is true", m, e.typ)
		}
		e.infoReads = true
	}
	if err := rd.tuple(e); err != nil {
		return err
	}
	rd.pos++
	e.pos = rd.pos
	if err := rd.consistent(e); err != nil {
		return err
	}
	if e.typ == "invoke" {
		if _, busy := rd.open[e.process]; busy {
			return rd.errf(e.line, "", "process %s invokes again before its last operation completed", rd.processName(e))
		}
		rd.open[e.process] = e
		rd.order = append(rd.order, e.process)
		return nil
	}
	inv, ok := rd.open[e.process]
	if ok {
		delete(rd.open, e.process)
		if inv.f != e.f {
			return rd.errf(e.line, "f", "process %s invoked %q but completes %q", rd.processName(e), inv.f, e.f)
		}
		if inv.hasTime && e.hasTime && e.time < inv.time {
			return rd.errf(e.line, "time", "process %s completes at time %d, before it invoked at %d (line %d)", rd.processName(e), e.time, inv.time, inv.line)
		}
		return rd.add(inv, e)
	}
	return rd.add(nil, e)
}

// tuple reads a jepsen.independent operation's :value [key txn] into
// e.part and e.value, and holds every operation with a value to the shape
// of the first: all such tuples, or none.
func (rd *reader) tuple(e *event) error {
	if !e.hasValue || e.value.Kind == edn.Nil {
		return nil
	}
	// The key of a tuple is no micro-operation: [[:r 1 nil] [:w 2 3]] is
	// a transaction.
	is := IsTuple(e.value, isMicroOps) && !isMicroOps(edn.Value{Kind: edn.Vector, Items: e.value.Items[:1]})
	switch {
	case rd.independent == 0:
		rd.independent, rd.tupleLine = -1, e.line
		if is {
			rd.independent = 1
		}
	case is && rd.independent < 0:
		return rd.errf(e.line, "value", "%s is [key transaction] (jepsen.independent), but the :value on line %d is a transaction", e.value, rd.tupleLine)
	case !is && rd.independent > 0:
		return rd.errf(e.line, "value", "%s is not [key transaction], as the :value on line %d is (jepsen.independent)", e.value, rd.tupleLine)
	}
	if is {
		e.part, e.hasPart, e.value = e.value.Items[0], true, e.value.Items[1]
	}
	if e.value.Kind == edn.Nil {
		return nil
	}
	return rd.isTxn(e)
}

// isTxn refuses e's value, not nil, unless it is a vector of vectors.
func (rd *reader) isTxn(e *event) error {
	if e.value.Kind == edn.Vector && (len(e.value.Items) == 0 || e.value.Items[0].Kind == edn.Vector) {
		return nil
	}
	hint := ""
	switch e.f {
	case "read", "write", "cas":
		hint = " (a register operation: --format knossos reads histories of registers)"
	}
	return rd.errf(e.line, "value", "%s%s is not a transaction, a vector of micro-operations%s", e.value, fOf(e), hint)
}

// fOf names e's :f for messages ("" without one).
func fOf(e *event) string {
	if e.f == "" {
		return ""
	}
	return " (:f :" + e.f + ")"
}

// IsTuple reports whether v is a jepsen.independent tuple [key value]:
// a key that is not nil and a value the caller's test accepts (nil is
// accepted too: an invocation's value).
func IsTuple(v edn.Value, value func(edn.Value) bool) bool {
	return v.Kind == edn.Vector && len(v.Items) == 2 && v.Items[0].Kind != edn.Nil &&
		(v.Items[1].Kind == edn.Nil || value(v.Items[1]))
}

// isMicroOps reports whether v is a transaction: a vector of
// micro-operations [f k v] with f :r, :w or :append.
func isMicroOps(v edn.Value) bool {
	if v.Kind != edn.Vector {
		return false
	}
	for _, m := range v.Items {
		if m.Kind != edn.Vector || len(m.Items) != 3 {
			return false
		}
		switch f, _ := m.Items[0].Name(); f {
		case "r", "w", "append":
		default:
			return false
		}
	}
	return true
}

// initial reads the initial state Write records: the first operation, a
// completion (:ok) whose writes are each key's initial value, marked with
// InitialField. It is no transaction.
func (rd *reader) initial(e *event, mark edn.Value) error {
	switch {
	case mark.Kind != edn.Bool || mark.Text != "true":
		return rd.errf(e.line, InitialField, "%s, want true", mark)
	case rd.pos > 0 || rd.h.Header.Initial.Values != nil:
		return rd.errf(e.line, InitialField, "the initial state must be the first operation")
	case e.typ != "ok":
		return rd.errf(e.line, InitialField, "the initial state is a completion (:ok), not :%s", e.typ)
	}
	var t history.Txn
	if err := rd.ops(&t, e, nil, true); err != nil {
		return err
	}
	rd.h.Header.Initial.Values = make(map[history.KeyID]history.Value, len(t.Ops))
	for i, op := range t.Ops {
		if _, dup := rd.h.Header.Initial.Values[op.Key]; op.Kind != history.Write || dup {
			return rd.errf(e.line, "value["+strconv.Itoa(i)+"]", "the initial state writes (:w) each key once")
		}
		rd.h.Header.Initial.Values[op.Key] = op.Value
	}
	return nil
}

// consistent checks that every operation has :time, or none has, and
// likewise :process.
func (rd *reader) consistent(e *event) error {
	first := func(at *int, other int, msg string) error {
		if *at == 0 {
			*at = e.line
		}
		if other != 0 {
			return rd.errf(e.line, "", msg, other)
		}
		return nil
	}
	var err error
	if e.hasTime {
		rd.maxTime = max(rd.maxTime, e.time)
		err = first(&rd.timed, rd.untimed, "this operation has :time, but the one on line %d has none")
	} else {
		err = first(&rd.untimed, rd.timed, "this operation has no :time, but the one on line %d has")
	}
	if err != nil {
		return err
	}
	if e.anonymous {
		return first(&rd.anonymous, rd.named, "this operation has no :process, but the one on line %d has")
	}
	return first(&rd.named, rd.anonymous, "this operation has a :process, but the one on line %d has none")
}

func (rd *reader) processName(e *event) string {
	if e.anonymous {
		return "(none)"
	}
	return strconv.FormatInt(e.process, 10)
}

// add builds the transaction of an invocation and its completion; either
// may be nil (an invocation never completed, a completion alone).
func (rd *reader) add(inv, done *event) error {
	t := txn{inv: inv, done: done}
	t.Status = history.Unknown
	src := inv
	if done != nil {
		switch done.typ {
		case "ok":
			t.Status = history.Committed
		case "fail":
			t.Status = history.Aborted
		}
		if t.Status == history.Committed || done.hasValue && done.value.Kind == edn.Vector || inv == nil {
			src = done
		}
	}
	var part *event
	for _, e := range [2]*event{inv, done} {
		switch {
		case e == nil || !e.hasPart:
		case part == nil:
			part = e
		case part.part.Canonical() != e.part.Canonical():
			return rd.errf(e.line, "value", "the key %s of this completion is not %s, its invocation's (line %d)", e.part, part.part, part.line)
		}
	}
	if rd.independent > 0 && part == nil {
		return rd.errf(src.line, "value", "missing: in a jepsen.independent history an operation's :value is [key transaction]")
	}
	if part != nil {
		v, err := rd.vals.Convert(part.part, true, part.line)
		if err != nil {
			return rd.errf(part.line, "value", "%v", err)
		}
		t.part = v
	}
	if src.hasValue && src.value.Kind != edn.Nil || t.Status == history.Committed {
		if err := rd.ops(&t.Txn, src, part, t.Status == history.Committed || src.infoReads); err != nil {
			return err
		}
	}
	if len(t.Ops) == 0 && t.Status != history.Aborted {
		rd.skippedTxn++
		return nil // nothing took effect that anyone saw
	}
	first := done
	if inv != nil {
		first = inv
	}
	t.Line = first.line
	proc := first.process
	s, ok := rd.sessions[proc]
	if !ok {
		s = int32(len(rd.h.Sessions))
		rd.sessions[proc] = s
		rd.h.Sessions = append(rd.h.Sessions, history.IntValue(proc))
	}
	t.Session = s
	rd.txns = append(rd.txns, t)
	return nil
}

// ops reads the micro-operations of e's :value into t; reads are kept only
// when the transaction committed. In a jepsen.independent history, part
// is the operation that names the transaction's independent key, and the
// history's key of a key k of the transaction is [key k].
func (rd *reader) ops(t *history.Txn, e, part *event, reads bool) error {
	if !e.hasValue {
		return rd.errf(e.line, "value", "missing%s: a transaction is a vector of micro-operations", fOf(e))
	}
	if err := rd.isTxn(e); err != nil {
		return err
	}
	for i, m := range e.value.Items {
		field := "value[" + strconv.Itoa(i) + "]"
		if m.Kind != edn.Vector || len(m.Items) != 3 {
			return rd.errf(m.Line, field, "%s is not a micro-operation [f k v]", m)
		}
		f, _ := m.Items[0].Name()
		if m.Items[1].Kind == edn.Nil {
			return rd.errf(m.Line, field, "the key is nil")
		}
		k, err := rd.vals.Convert(m.Items[1], true, m.Line)
		if err != nil {
			return rd.errf(m.Line, field, "%v", err)
		}
		if part != nil {
			k = history.StringValue("[" + part.part.Canonical() + " " + m.Items[1].Canonical() + "]")
		}
		op := history.Op{Key: rd.h.Key(k)}
		x := m.Items[2]
		switch f {
		case "append", "w":
			if x.Kind == edn.Nil {
				return rd.errf(m.Line, field, "%s writes nil", m)
			}
			v, err := rd.vals.Convert(x, false, m.Line)
			if err != nil {
				return rd.errf(m.Line, field, "%v", err)
			}
			op.Kind, op.Value = history.Write, v
			if f == "append" {
				op.Kind = history.Append
				rd.lists = true
			}
		case "r":
			if !reads {
				rd.unseenReads++
				continue
			}
			switch x.Kind {
			case edn.Nil:
				op.Kind = history.Read
			case edn.Vector:
				op.Kind = history.ReadList
				rd.lists = true
				for j, y := range x.Items {
					if y.Kind == edn.Nil {
						return rd.errf(y.Line, field, "element %d of the list read is nil", j)
					}
					v, err := rd.vals.Convert(y, false, y.Line)
					if err != nil {
						return rd.errf(y.Line, field, "element %d of the list read: %v", j, err)
					}
					op.List = append(op.List, v)
				}
				// Shared with the key's other reads where a prefix of
				// them (history.Lists).
				own := 0
				if t.Status != history.Committed {
					own = history.OwnTail(t.Ops, op.Key, op.List)
				}
				op.List = rd.shared.Share(k, op.List, own)
			default:
				v, err := rd.vals.Convert(x, false, m.Line)
				if err != nil {
					return rd.errf(m.Line, field, "%v", err)
				}
				op.Kind, op.Value = history.Read, v
			}
		default:
			return rd.errf(m.Line, field, "unknown micro-operation %s (want :append, :r or :w)", m.Items[0])
		}
		t.Ops = append(t.Ops, op)
	}
	return nil
}

// finish settles ids, instants and list reads, and returns the history.
func (rd *reader) finish() *history.History {
	h := rd.h
	workload := "rw-register"
	if rd.lists {
		workload = "list-append"
	}
	h.Header = history.Header{Present: true, Version: 1, Initial: h.Header.Initial, Source: "converted from a Jepsen " + workload + " history " + rd.name}
	byIndex := true
	seen := map[int64]bool{}
	for i := range rd.txns {
		e := rd.txns[i].inv
		if e == nil {
			e = rd.txns[i].done
		}
		if !e.hasIndex || seen[e.index] {
			byIndex = false
			break
		}
		seen[e.index] = true
	}
	h.Txns = make([]history.Txn, len(rd.txns))
	for i := range rd.txns {
		r := &rd.txns[i]
		t := r.Txn
		first := r.inv
		if first == nil {
			first = r.done
		}
		t.ID = history.IntValue(int64(i + 1))
		if byIndex {
			t.ID = history.IntValue(first.index)
		}
		if r.inv != nil {
			t.HasTime = true
			switch {
			case r.done != nil && rd.timed != 0:
				t.Begin, t.End = r.inv.time, r.done.time
			case r.done != nil:
				t.Begin, t.End = int64(r.inv.pos), int64(r.done.pos)
			case rd.timed != 0: // never completed: it ends with the history
				t.Begin, t.End = r.inv.time, max(rd.maxTime, r.inv.time)
			default:
				t.Begin, t.End = int64(r.inv.pos), int64(rd.pos+1)
			}
		}
		if rd.lists {
			for j := range t.Ops {
				if op := &t.Ops[j]; op.Kind == history.Read && op.Value.IsNull() {
					op.Kind = history.ReadList
				}
			}
		}
		h.Txns[i] = t
	}
	if rd.timed != 0 {
		h.Faults = rd.timedFaults.Finish(rd.maxTime)
	} else {
		h.Faults = rd.faults.Finish(int64(rd.pos + 1))
	}
	if rd.independent > 0 {
		h.Parts = Parts(len(rd.txns), func(i int) history.Value { return rd.txns[i].part })
	}
	h.Skip(SkippedNoEffect, rd.skippedTxn)
	h.Skip(SkippedUnseenRead, rd.unseenReads)
	return h
}

// SkippedUnseenRead is the kind of micro-operation (history.History.Skipped)
// a reader leaves out as never seen: a read of a transaction that aborted
// or whose outcome is unknown (its writes are kept).
const SkippedUnseenRead = "read micro-operations of aborted or unknown transactions (never seen by the client)"

// SkippedNoEffect is the kind of operation (history.History.Skipped) a
// reader leaves out as of no effect: one that read only, or did nothing,
// and whose outcome is unknown (:info, or never completed).
const SkippedNoEffect = "of unknown outcome and no effect (reads only)"

// Parts groups n transactions into the parts of a jepsen.independent
// history by their keys (key(i) is transaction i's), in the order of the
// keys (history.Compare: integers in order, then strings), as Jepsen
// prints its results by key.
func Parts(n int, key func(int) history.Value) []history.Part {
	var parts []history.Part
	at := map[history.Value]int{}
	for i := range n {
		k := key(i)
		p, ok := at[k]
		if !ok {
			p = len(parts)
			at[k] = p
			parts = append(parts, history.Part{Key: k})
		}
		parts[p].Txns = append(parts[p].Txns, history.TxnID(i))
	}
	slices.SortFunc(parts, func(a, b history.Part) int { return history.Compare(a.Key, b.Key) })
	return parts
}
