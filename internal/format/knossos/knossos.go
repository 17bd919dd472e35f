// Package knossos reads the Jepsen/knossos register logs of porcupine's
// test data (etcd): lines
//
//	INFO  jepsen.util - <process>\t:invoke|:ok|:fail|:info\t:read|:write|:cas\t<value | [old new] | nil>
//
// (tabs or runs of spaces between the fields; the nemesis's lines, whose
// process is :nemesis, are faults), and knossos's own histories
// of the cas-register model in EDN (data/cas-register/*.edn): the same
// events as maps, in a vector or one after another,
//
//	{:process 3, :type :invoke, :f :cas, :value [1 2]}
//
// (or their JSON form, elle-cli's), where an operation's position is its
// instant and the nemesis's operations (a :process that is a name,
// anywhere in the history) are the history's faults, as package jepsen
// makes them (jepsen.Faults). An operation without :process belongs to
// one anonymous process, 0.
//
// Values are any EDN values but maps and sets (a bank's or a set's reads
// are refused on their line), compared as Knossos compares them, with
// EDN's equality (jepsen.Values): a read of "6" after a write of 6 reads
// a value nobody wrote. A value that is a transaction (a vector of
// micro-operations: Elle's long-fork reads) is refused: that is --format
// jepsen.
//
// A jepsen.independent history (many registers tested at once) has values
// [key value], and [key [old new]] for a compare-and-set: every
// operation's with a value, or none's. Each key is a register of its own
// (the history's key is the independent key), and the history's parts
// (history.History.Parts), one per key, are checked each as a history of
// its own, a verdict per key: linearizability is local, so that the
// history is linearizable exactly when every key is.
//
// Each operation becomes a transaction of its own on one key, "x", so that
// linearizability is strict serializability of the history:
//
//   - a read that completed :ok is [["r","x",v]] (nil: null, the register
//     starts absent); a read that failed or timed out had no effect and is
//     dropped;
//   - a write is [["w","x",v]]: committed on :ok, aborted on :fail, of
//     unknown outcome on :info (it may have taken effect, at any time
//     after it began);
//   - a compare-and-set [old new] is [["r","x",old],["w","x",new]]: committed
//     on :ok, unknown on :info; a :fail is aborted (it changed nothing; the
//     value it saw is not in the log);
//   - an invocation without a completion is of unknown outcome.
//
// The reads that did not complete and the compare-and-sets that failed
// changed nothing: the history counts them (history.History.Skipped, kind
// SkippedNoEffect). A log with operations but no transaction left is bad
// input. The register starts absent (a read of nil); a Knossos model that
// starts at a value, (cas-register 0), is `isoscope check --initial-value
// 0`.
//
// The log has no clock: the line number is the instant, so an operation
// completed before another was invoked exactly when its completion line
// comes first — the log's real-time order. The process number is the
// session.
//
// Such a log asks for linearizability, so the history's header says that
// it implies strict-serializable (history.Header.Implies): a check
// without an explicit level uses it.
package knossos

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/isoscope/isoscope/internal/format"
	"github.com/isoscope/isoscope/internal/format/edn"
	"github.com/isoscope/isoscope/internal/format/jepsen"
	"github.com/isoscope/isoscope/internal/history"
)

const prefix = "INFO  jepsen.util - "

// Sniff reports whether the input starts like a knossos register log, or
// a knossos history in EDN (isEDN).
func Sniff(p []byte) bool {
	if isEDN(p) {
		return true
	}
	if looksEDN(p) {
		return false
	}
	p = bytes.TrimLeft(p, " \t\r\n")
	if !bytes.HasPrefix(p, []byte(prefix)) {
		return false
	}
	line, _, _ := bytes.Cut(p, []byte("\n"))
	return len(fields(string(line[len(prefix):]))) == 4
}

// fields splits the rest of a line into process, type, function and value;
// the log separates them with tabs or runs of spaces, and a value such as
// "[1 2]" may itself hold a space.
func fields(s string) []string {
	f := strings.Fields(s)
	if len(f) <= 4 {
		return f
	}
	return append(f[:3:3], strings.Join(f[3:], " "))
}

// pending is an invocation not completed yet: its function and value, its
// instant and its line.
type pending struct {
	f        string
	value    edn.Value
	at, line int
}

// maxLine is the longest line Read accepts.
const maxLine = 1 << 20

// Read reads a knossos register log: the text log, or a history in EDN
// (readEDN), told apart by the first bytes.
func Read(r io.Reader, name string) (*history.History, error) {
	br := bufio.NewReader(r)
	if first, _ := br.Peek(1 << 10); looksEDN(first) {
		return readEDN(br, name)
	}
	b := newBuilder(name, "a knossos register log")
	var faults jepsen.Faults
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 4<<10), maxLine)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		rest, ok := strings.CutPrefix(line, prefix)
		if !ok {
			return nil, b.bad(n, "", "not a knossos log line")
		}
		f := fields(rest)
		if len(f) != 4 {
			return nil, b.bad(n, "", "want process, type, function and value after %q, got %d fields", prefix, len(f))
		}
		value, err := textValue(f[3], n)
		if err != nil {
			return nil, b.bad(n, "value", "%q is not an EDN value", f[3])
		}
		proc, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			if !strings.HasPrefix(f[0], ":") || len(f[0]) < 2 || !strings.HasPrefix(f[2], ":") {
				return nil, b.bad(n, "process", "%q is not an integer (a client) or a name (the nemesis, :nemesis)", f[0])
			}
			op := edn.Value{Kind: edn.Map, Line: n, Items: []edn.Value{
				{Kind: edn.Keyword, Text: "f"}, {Kind: edn.Keyword, Text: f[2][1:]},
				{Kind: edn.Keyword, Text: "value"}, value}}
			faults.Add(op, edn.Value{Kind: edn.Keyword, Text: f[0][1:]}, int64(n), n)
			continue
		}
		if err := b.event(n, n, proc, f[1], f[2], value); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, format.LimitErr(name, n+1, "line", maxLine)
		}
		return nil, &format.Error{File: name, Line: n, Msg: err.Error()}
	}
	h, err := b.finish(n+1, n)
	if err != nil {
		return nil, err
	}
	h.Faults = faults.Finish(int64(n + 1))
	return h, nil
}

// textValue reads the value field of a log line, on line n: EDN, with
// the values a register log mostly holds (nil, an integer, [old new] of
// integers) read without a decoder.
func textValue(s string, n int) (edn.Value, error) {
	if s == "nil" {
		return edn.Value{Kind: edn.Nil, Line: n}, nil
	}
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		return edn.Value{Kind: edn.Int, N: v, Text: s, Line: n}, nil
	}
	if inner, ok := strings.CutPrefix(s, "["); ok {
		if inner, ok = strings.CutSuffix(inner, "]"); ok {
			a, b, ok := strings.Cut(inner, " ")
			x, err1 := strconv.ParseInt(a, 10, 64)
			y, err2 := strconv.ParseInt(b, 10, 64)
			if ok && err1 == nil && err2 == nil {
				return edn.Value{Kind: edn.Vector, Line: n, Items: []edn.Value{{Kind: edn.Int, N: x, Text: a, Line: n}, {Kind: edn.Int, N: y, Text: b, Line: n}}}, nil
			}
		}
	}
	if name, ok := strings.CutPrefix(s, ":"); ok && plainKeyword(name) {
		return edn.Value{Kind: edn.Keyword, Text: name, Line: n}, nil
	}
	v, err := edn.NewDecoder(strings.NewReader(s), "").Decode()
	v.Line = n
	return v, err
}

// plainKeyword reports whether name is a keyword's name made of ASCII
// letters, digits and - _ . * + ! ? (as :timed-out, :fail): what the EDN
// decoder would read as that keyword whole, without starting one.
func plainKeyword(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-_.*+!?", c) >= 0) {
			return false
		}
	}
	return true
}

// builder makes the history of a register log, one event at a time.
type builder struct {
	name     string
	h        *history.History
	sessions map[int64]int32
	open     map[int64]pending
	order    []int64 // processes with an open invocation, in order
	vals     jepsen.Values
	// independent is 1 when the operations' values are [key value]
	// (jepsen.independent: one register per key), -1 when they are a
	// register's, 0 until an operation with a value says which;
	// modeLine is the line that did. parts holds each transaction's key.
	independent int8
	modeLine    int
	parts       []history.Value
	ops         int // the clients' operations read
	// noEffect counts the reads that did not complete :ok and the
	// compare-and-sets that failed: they changed nothing.
	noEffect int
}

func newBuilder(name, what string) *builder {
	h := history.New()
	h.Name = name
	h.Header = history.Header{Present: true, Version: 1, Source: "converted from " + what + " " + name,
		Implies: "strict-serializable", ImpliedBy: "knossos"}
	return &builder{name: name, h: h, sessions: map[int64]int32{}, open: map[int64]pending{}}
}

func (b *builder) bad(line int, field, msg string, a ...any) error {
	return &format.Error{File: b.name, Line: line, Field: field, Msg: fmt.Sprintf(msg, a...)}
}

// event takes one event, at instant at and on line n of the input:
// process proc's typ (":invoke", ":ok", ":fail", ":info") of function f
// (":read", ":write", ":cas") with value.
func (b *builder) event(at, n int, proc int64, typ, f string, value edn.Value) error {
	b.ops++
	switch f {
	case ":read", ":write", ":cas":
	default:
		return b.bad(n, "f", "unknown function %s: a register's are :read, :write and :cas", f)
	}
	if err := b.mode(n, f, value); err != nil {
		return err
	}
	switch typ {
	case ":invoke":
		if _, busy := b.open[proc]; busy {
			return b.bad(n, "", "process %d invokes again before its last operation completed", proc)
		}
		b.open[proc] = pending{f: f, value: value, at: at, line: n}
		b.order = append(b.order, proc)
	case ":ok", ":fail", ":info":
		p, ok := b.open[proc]
		if !ok {
			return b.bad(n, "", "process %d completes an operation it did not invoke", proc)
		}
		if p.f != f {
			return b.bad(n, "f", "process %d invoked %s but completes %s", proc, p.f, f)
		}
		delete(b.open, proc)
		status := history.Committed
		switch typ {
		case ":fail":
			status = history.Aborted
		case ":info":
			status = history.Unknown
		}
		if p.f == ":cas" && status == history.Aborted {
			b.noEffect++
			return nil // a failed compare-and-set changed nothing
		}
		return b.emit(proc, p, status, at, n, value)
	default:
		return b.bad(n, "type", "unknown type %q", typ)
	}
	return nil
}

// mode holds every operation with a value to the shape of the first:
// [key value] tuples of a jepsen.independent history, or a register's
// values.
func (b *builder) mode(n int, f string, v edn.Value) error {
	if v.Kind == edn.Nil || v.Kind == edn.Keyword && b.independent != 0 {
		return nil // an invocation's read, or a completion's :timed-out
	}
	is := isTuple(f, v)
	switch {
	case b.independent == 0:
		b.independent, b.modeLine = -1, n
		if is {
			b.independent = 1
		}
	case !is && b.independent > 0:
		return b.bad(n, "value", "%s is not [key value], as the :value on line %d is (jepsen.independent)", v, b.modeLine)
	}
	return nil
}

// isTuple reports whether v, a value of an operation of function f, is a
// jepsen.independent tuple: [key v] for a read or a write, [key [old new]]
// for a compare-and-set.
func isTuple(f string, v edn.Value) bool {
	if f == ":cas" {
		return jepsen.IsTuple(v, func(x edn.Value) bool { return x.Kind == edn.Vector && len(x.Items) == 2 })
	}
	return jepsen.IsTuple(v, func(x edn.Value) bool { return x.Kind != edn.Vector })
}

// emit makes the transaction of p, invoked by proc and completed with
// status at instant end, on line n (what a read returned: value).
func (b *builder) emit(proc int64, p pending, status history.Status, end, n int, value edn.Value) error {
	h := b.h
	if p.f == ":read" && status != history.Committed {
		b.noEffect++
		return nil // a read that did not complete had no effect
	}
	key, err := b.key(p, n, value)
	if err != nil {
		return err
	}
	s, ok := b.sessions[proc]
	if !ok {
		s = int32(len(h.Sessions))
		b.sessions[proc] = s
		h.Sessions = append(h.Sessions, history.IntValue(proc))
	}
	t := history.Txn{ID: history.IntValue(int64(len(h.Txns) + 1)), Session: s, Status: status,
		Begin: int64(p.at), End: int64(end), HasTime: true, Line: p.line}
	x := h.Key(key)
	switch p.f {
	case ":read":
		v, err := b.value(n, b.inner(value), true)
		if err != nil {
			return err
		}
		t.Ops = []history.Op{{Kind: history.Read, Key: x, Value: v}}
	case ":write":
		v, err := b.value(p.line, b.inner(p.value), false)
		if err != nil {
			return err
		}
		t.Ops = []history.Op{{Kind: history.Write, Key: x, Value: v}}
	case ":cas":
		pair := b.inner(p.value)
		if pair.Kind != edn.Vector || len(pair.Items) != 2 {
			return b.bad(p.line, "value", "the compare-and-set's value %s is not [old new]", pair)
		}
		old, err := b.value(p.line, pair.Items[0], true)
		if err != nil {
			return err
		}
		nw, err := b.value(p.line, pair.Items[1], false)
		if err != nil {
			return err
		}
		t.Ops = []history.Op{{Kind: history.Read, Key: x, Value: old}, {Kind: history.Write, Key: x, Value: nw}}
	}
	h.Txns = append(h.Txns, t)
	if b.independent > 0 {
		b.parts = append(b.parts, key)
	}
	return nil
}

// key returns the register an operation is on: "x", or in a
// jepsen.independent history the key of its tuples (an invocation's and
// its completion's, which must agree).
func (b *builder) key(p pending, n int, done edn.Value) (history.Value, error) {
	if b.independent <= 0 {
		return history.StringValue("x"), nil
	}
	if p.value.Kind != edn.Vector && (p.f != ":read" || done.Kind != edn.Vector) {
		return history.Value{}, b.bad(p.line, "value", "missing: in a jepsen.independent history an operation's :value is [key value]")
	}
	k := p.value
	if p.value.Kind != edn.Vector {
		k = done
	}
	if done.Kind == edn.Vector && p.value.Kind == edn.Vector && done.Items[0].Canonical() != p.value.Items[0].Canonical() {
		return history.Value{}, b.bad(n, "value", "the key %s of this completion is not %s, its invocation's (line %d)", done.Items[0], p.value.Items[0], p.line)
	}
	if k.Items[0].Kind == edn.Nil {
		return history.Value{}, b.bad(p.line, "value", "the key is nil")
	}
	v, err := b.vals.Convert(k.Items[0], true, p.line)
	if err != nil {
		return history.Value{}, b.bad(p.line, "value", "%v", err)
	}
	return v, nil
}

// inner is an operation's value without its independent key.
func (b *builder) inner(v edn.Value) edn.Value {
	if b.independent > 0 && v.Kind == edn.Vector && len(v.Items) == 2 {
		return v.Items[1]
	}
	return v
}

// value converts a register's value, read (nil: the register is empty)
// or written (nil is refused), on line n.
func (b *builder) value(n int, v edn.Value, read bool) (history.Value, error) {
	if v.Kind == edn.Nil && !read {
		return history.Value{}, b.bad(n, "value", "a write of nil")
	}
	if isMicroOps(v) {
		return history.Value{}, b.bad(n, "value", "%s is a transaction, not a register's value (--format jepsen reads transactions)", v)
	}
	out, err := b.vals.Convert(v, false, n)
	if err != nil {
		return history.Value{}, b.bad(n, "value", "%v", err)
	}
	return out, nil
}

// isMicroOps reports whether v looks like a transaction: a non-empty
// vector of vectors [f k v].
func isMicroOps(v edn.Value) bool {
	if v.Kind != edn.Vector || len(v.Items) == 0 {
		return false
	}
	for _, m := range v.Items {
		if m.Kind != edn.Vector || len(m.Items) != 3 {
			return false
		}
	}
	return true
}

// finish makes the operations never completed, of unknown outcome, end at
// instant end (the input's last line is n), and returns the history.
func (b *builder) finish(end, n int) (*history.History, error) {
	for _, proc := range b.order {
		if p, ok := b.open[proc]; ok {
			delete(b.open, proc)
			if err := b.emit(proc, p, history.Unknown, end, n, p.value); err != nil {
				return nil, err
			}
		}
	}
	h := b.h
	if len(h.Txns) == 0 {
		return nil, b.bad(n, "", "no transactions: of the %d client operations read, none took effect (%d reads not completed or compare-and-sets failed)", b.ops, b.noEffect)
	}
	if b.independent > 0 {
		h.Parts = jepsen.Parts(len(h.Txns), func(i int) history.Value { return b.parts[i] })
	}
	h.Skip(SkippedNoEffect, b.noEffect)
	return h, nil
}

// SkippedNoEffect is the kind of operation (history.History.Skipped) the
// reader leaves out as of no effect: a read that did not complete :ok, a
// compare-and-set that failed.
const SkippedNoEffect = "of no effect (a read not completed, a compare-and-set failed)"
