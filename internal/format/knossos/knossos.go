// Package knossos reads the Jepsen/knossos register logs of porcupine's
// test data (etcd): lines
//
//	INFO  jepsen.util - <process>\t:invoke|:ok|:fail|:info\t:read|:write|:cas\t<value | [old new] | nil>
//
// (tabs or runs of spaces between the fields), and knossos's own histories
// of the cas-register model in EDN (data/cas-register/*.edn): the same
// events as maps, in a vector or one after another,
//
//	{:process 3, :type :invoke, :f :cas, :value [1 2]}
//
// where an operation's position among the clients' ones is its instant
// and the nemesis's operations are left out.
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
	"github.com/isoscope/isoscope/internal/history"
)

const prefix = "INFO  jepsen.util - "

// Sniff reports whether the input starts like a knossos register log, or
// a knossos history in EDN (isEDN).
func Sniff(p []byte) bool {
	if isEDN(p) {
		return true
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
	value    string
	at, line int
}

// maxLine is the longest line Read accepts.
const maxLine = 1 << 20

// Read reads a knossos register log: the text log, or a history in EDN
// (readEDN), told apart by the first bytes.
func Read(r io.Reader, name string) (*history.History, error) {
	br := bufio.NewReader(r)
	if first, _ := br.Peek(1 << 10); isEDN(first) {
		return readEDN(br, name)
	}
	b := newBuilder(name, "a knossos register log")
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
			return nil, b.bad(n, "not a knossos log line")
		}
		f := fields(rest)
		if len(f) != 4 {
			return nil, b.bad(n, "want process, type, function and value after %q, got %d fields", prefix, len(f))
		}
		proc, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return nil, b.bad(n, "process %q is not an integer", f[0])
		}
		if err := b.event(n, n, proc, f[1], f[2], f[3]); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, format.LimitErr(name, n+1, "line", maxLine)
		}
		return nil, &format.Error{File: name, Line: n, Msg: err.Error()}
	}
	return b.finish(n+1, n)
}

// builder makes the history of a register log, one event at a time.
type builder struct {
	name     string
	h        *history.History
	x        history.KeyID
	sessions map[int64]int32
	open     map[int64]pending
	order    []int64 // processes with an open invocation, in order
}

func newBuilder(name, what string) *builder {
	h := history.New()
	h.Header = history.Header{Present: true, Version: 1, Source: "converted from " + what + " " + name,
		Implies: "strict-serializable", ImpliedBy: "knossos"}
	return &builder{name: name, h: h, x: h.Key(history.StringValue("x")), sessions: map[int64]int32{}, open: map[int64]pending{}}
}

func (b *builder) bad(line int, msg string, a ...any) error {
	return &format.Error{File: b.name, Line: line, Msg: fmt.Sprintf(msg, a...)}
}

// event takes one event, at instant at and on line n of the input:
// process proc's typ (":invoke", ":ok", ":fail", ":info") of function f
// (":read", ":write", ":cas") with value (as the text log writes it:
// "nil", "3", "[1 2]").
func (b *builder) event(at, n int, proc int64, typ, f, value string) error {
	switch typ {
	case ":invoke":
		if _, busy := b.open[proc]; busy {
			return b.bad(n, "process %d invokes again before its last operation completed", proc)
		}
		b.open[proc] = pending{f: f, value: value, at: at, line: n}
		b.order = append(b.order, proc)
	case ":ok", ":fail", ":info":
		p, ok := b.open[proc]
		if !ok {
			return b.bad(n, "process %d completes an operation it did not invoke", proc)
		}
		if p.f != f {
			return b.bad(n, "process %d invoked %s but completes %s", proc, p.f, f)
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
			return nil // a failed compare-and-set changed nothing
		}
		return b.emit(proc, p, status, at, n, value)
	default:
		return b.bad(n, "unknown type %q", typ)
	}
	return nil
}

// emit makes the transaction of p, invoked by proc and completed with
// status at instant end, on line n (what a read returned: value).
func (b *builder) emit(proc int64, p pending, status history.Status, end, n int, value string) error {
	h := b.h
	s, ok := b.sessions[proc]
	if !ok {
		s = int32(len(h.Sessions))
		b.sessions[proc] = s
		h.Sessions = append(h.Sessions, history.IntValue(proc))
	}
	t := history.Txn{ID: history.IntValue(int64(len(h.Txns) + 1)), Session: s, Status: status,
		Begin: int64(p.at), End: int64(end), HasTime: true, Line: p.line}
	switch p.f {
	case ":read":
		if status != history.Committed {
			return nil // a read that did not complete had no effect
		}
		v, err := scalar(value)
		if err != nil {
			return b.bad(n, "read value: %v", err)
		}
		t.Ops = []history.Op{{Kind: history.Read, Key: b.x, Value: v}}
	case ":write":
		v, err := scalar(p.value)
		if err != nil {
			return b.bad(n, "write value: %v", err)
		}
		t.Ops = []history.Op{{Kind: history.Write, Key: b.x, Value: v}}
	case ":cas":
		f := strings.Fields(strings.Trim(p.value, "[]"))
		if len(f) != 2 {
			return b.bad(n, "cas value %q is not [old new]", p.value)
		}
		old, err1 := scalar(f[0])
		nw, err2 := scalar(f[1])
		if err1 != nil || err2 != nil {
			return b.bad(n, "cas value %q is not [old new] integers", p.value)
		}
		t.Ops = []history.Op{{Kind: history.Read, Key: b.x, Value: old}, {Kind: history.Write, Key: b.x, Value: nw}}
	default:
		return b.bad(n, "unknown function %q", p.f)
	}
	h.Txns = append(h.Txns, t)
	return nil
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
	return b.h, nil
}

func scalar(s string) (history.Value, error) {
	if s == "nil" {
		return history.NullValue, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return history.Value{}, fmt.Errorf("%q is not an integer or nil", s)
	}
	return history.IntValue(v), nil
}
