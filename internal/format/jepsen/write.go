package jepsen

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/isoscope/isoscope/internal/history"
)

// point is one line Write writes: the invocation or the completion of a
// transaction.
type point struct {
	t      history.TxnID
	at     int64
	invoke bool
}

// Write writes h as a Jepsen EDN history, one operation map a line (see the
// package documentation). The :process of a session is its label when
// every label is a distinct non-negative integer, its index otherwise.
func Write(w io.Writer, h *history.History) error {
	timed := len(h.Txns) > 0
	for i := range h.Txns {
		t := &h.Txns[i]
		if t.Session < 0 || int(t.Session) >= len(h.Sessions) {
			return fmt.Errorf("jepsen: transaction %s: no session %d", h.TxnName(history.TxnID(i)), t.Session)
		}
		timed = timed && t.HasTime
		for j, op := range t.Ops {
			switch op.Kind {
			case history.Read, history.Write, history.Append, history.ReadList:
			default:
				return fmt.Errorf("jepsen: transaction %s, operation %d (%s): Jepsen's workloads have appends, writes and reads only",
					h.TxnName(history.TxnID(i)), j, history.OpString(h, op))
			}
			if op.Key < 0 || int(op.Key) >= len(h.Keys) {
				return fmt.Errorf("jepsen: transaction %s, operation %d: no such key", h.TxnName(history.TxnID(i)), j)
			}
		}
	}
	points := make([]point, 0, 2*len(h.Txns))
	if timed {
		for _, s := range h.SessionOrder() {
			for j := 1; j < len(s); j++ {
				if a, b := &h.Txns[s[j-1]], &h.Txns[s[j]]; b.Begin <= a.End {
					return fmt.Errorf("jepsen: transactions %s and %s of session %s overlap in time (%d-%d and %d-%d); a Jepsen process runs one operation at a time",
						h.TxnName(s[j-1]), h.TxnName(s[j]), h.Sessions[b.Session], a.Begin, a.End, b.Begin, b.End)
				}
			}
		}
		for i := range h.Txns {
			t := &h.Txns[i]
			points = append(points, point{history.TxnID(i), t.Begin, true}, point{history.TxnID(i), max(t.End, t.Begin), false})
		}
		// In time order; at one instant, invocations first, so that
		// transactions that only touch are concurrent, as they are in h.
		slices.SortStableFunc(points, func(a, b point) int {
			if a.at != b.at {
				if a.at < b.at {
					return -1
				}
				return 1
			}
			switch {
			case a.invoke && !b.invoke:
				return -1
			case !a.invoke && b.invoke:
				return 1
			}
			return 0
		})
	} else {
		for i := range h.Txns {
			points = append(points, point{history.TxnID(i), 0, true}, point{history.TxnID(i), 0, false})
		}
	}
	procs := processes(h)
	bw := bufio.NewWriterSize(w, 64<<10)
	var b []byte
	for i, p := range points {
		t := &h.Txns[p.t]
		b = append(b[:0], "{:index "...)
		b = strconv.AppendInt(b, int64(i), 10)
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
		results := !p.invoke && t.Status == history.Committed
		for j, op := range t.Ops {
			if j > 0 {
				b = append(b, ' ')
			}
			b = appendOp(b, h, op, results)
		}
		b = append(b, "]}\n"...)
		bw.Write(b)
	}
	if err := bw.Flush(); err != nil {
		return errors.Join(errors.New("jepsen: writing the history"), err)
	}
	return nil
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
