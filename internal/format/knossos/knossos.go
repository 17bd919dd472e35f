// Package knossos reads the Jepsen/knossos register logs of porcupine's
// test data (etcd): lines
//
//	INFO  jepsen.util - <process>\t:invoke|:ok|:fail|:info\t:read|:write|:cas\t<value | [old new] | nil>
//
// (tabs or runs of spaces between the fields).
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

// Sniff reports whether the input starts like a knossos register log.
func Sniff(p []byte) bool {
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

type pending struct {
	f     string
	value string
	line  int
}

// maxLine is the longest line Read accepts.
const maxLine = 1 << 20

// Read reads a knossos register log.
func Read(r io.Reader, name string) (*history.History, error) {
	h := history.New()
	h.Header = history.Header{Present: true, Version: 1, Source: "converted from a knossos register log " + name,
		Implies: "strict-serializable", ImpliedBy: "knossos"}
	x := h.Key(history.StringValue("x"))
	sessions := map[int64]int32{}
	open := map[int64]pending{}
	var order []int64 // processes with an open invocation, in order
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4<<10), maxLine)
	n := 0
	bad := func(msg string, a ...any) error {
		return &format.Error{File: name, Line: n, Msg: fmt.Sprintf(msg, a...)}
	}
	emit := func(proc int64, p pending, status history.Status, end int, value string) error {
		s, ok := sessions[proc]
		if !ok {
			s = int32(len(h.Sessions))
			sessions[proc] = s
			h.Sessions = append(h.Sessions, history.IntValue(proc))
		}
		t := history.Txn{ID: history.IntValue(int64(len(h.Txns) + 1)), Session: s, Status: status,
			Begin: int64(p.line), End: int64(end), HasTime: true, Line: p.line}
		switch p.f {
		case ":read":
			if status != history.Committed {
				return nil // a read that did not complete had no effect
			}
			v, err := scalar(value)
			if err != nil {
				return bad("read value: %v", err)
			}
			t.Ops = []history.Op{{Kind: history.Read, Key: x, Value: v}}
		case ":write":
			v, err := scalar(p.value)
			if err != nil {
				return bad("write value: %v", err)
			}
			t.Ops = []history.Op{{Kind: history.Write, Key: x, Value: v}}
		case ":cas":
			f := strings.Fields(strings.Trim(p.value, "[]"))
			if len(f) != 2 {
				return bad("cas value %q is not [old new]", p.value)
			}
			old, err1 := scalar(f[0])
			nw, err2 := scalar(f[1])
			if err1 != nil || err2 != nil {
				return bad("cas value %q is not [old new] integers", p.value)
			}
			t.Ops = []history.Op{{Kind: history.Read, Key: x, Value: old}, {Kind: history.Write, Key: x, Value: nw}}
		default:
			return bad("unknown function %q", p.f)
		}
		h.Txns = append(h.Txns, t)
		return nil
	}
	for sc.Scan() {
		n++
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		rest, ok := strings.CutPrefix(line, prefix)
		if !ok {
			return nil, bad("not a knossos log line")
		}
		f := fields(rest)
		if len(f) != 4 {
			return nil, bad("want process, type, function and value after %q, got %d fields", prefix, len(f))
		}
		proc, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return nil, bad("process %q is not an integer", f[0])
		}
		switch f[1] {
		case ":invoke":
			if _, busy := open[proc]; busy {
				return nil, bad("process %d invokes again before its last operation completed", proc)
			}
			open[proc] = pending{f: f[2], value: f[3], line: n}
			order = append(order, proc)
		case ":ok", ":fail", ":info":
			p, ok := open[proc]
			if !ok {
				return nil, bad("process %d completes an operation it did not invoke", proc)
			}
			if p.f != f[2] {
				return nil, bad("process %d invoked %s but completes %s", proc, p.f, f[2])
			}
			delete(open, proc)
			status := history.Committed
			switch f[1] {
			case ":fail":
				status = history.Aborted
			case ":info":
				status = history.Unknown
			}
			if p.f == ":cas" && status == history.Aborted {
				continue // a failed compare-and-set changed nothing
			}
			if err := emit(proc, p, status, n, f[3]); err != nil {
				return nil, err
			}
		default:
			return nil, bad("unknown type %q", f[1])
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, format.LimitErr(name, n+1, "line", maxLine)
		}
		return nil, &format.Error{File: name, Line: n, Msg: err.Error()}
	}
	for _, proc := range order {
		if p, ok := open[proc]; ok {
			delete(open, proc)
			if err := emit(proc, p, history.Unknown, n+1, p.value); err != nil {
				return nil, err
			}
		}
	}
	return h, nil
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
