package plume

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/isoscope/isoscope/internal/format"
	"github.com/isoscope/isoscope/internal/history"
)

// maxLine is the longest line Read accepts.
const maxLine = 1 << 16

// AbortedTxn is the txn of a write by an aborted transaction (Plume).
const AbortedTxn = -1

// line is one parsed operation.
type line struct {
	write                bool
	key, value, sess, tx int64
}

// parseLine parses "r(k,v,s,t)" or "w(k,v,s,t)"; msg says what is wrong
// when ok is false.
func parseLine(b []byte) (l line, msg string) {
	if len(b) < 2 || (b[0] != 'r' && b[0] != 'w') || b[1] != '(' {
		return l, "want r(key,value,session,txn) or w(key,value,session,txn)"
	}
	l.write = b[0] == 'w'
	b = b[2:]
	names := [4]string{"key", "value", "session", "txn"}
	var nums [4]int64
	for i, name := range names {
		end := byte(',')
		if i == 3 {
			end = ')'
		}
		j := bytes.IndexByte(b, end)
		if j < 0 {
			if i == 3 {
				return l, "want ')' after the txn"
			}
			return l, fmt.Sprintf("want ',' after the %s (four numbers: key, value, session, txn)", name)
		}
		s := string(b[:j])
		n, err := strconv.ParseInt(s, 10, 64)
		switch {
		case err != nil && errors.Is(err, strconv.ErrRange):
			return l, fmt.Sprintf("the %s %s is out of the 64-bit range", name, s)
		case err != nil || s[0] == '+':
			return l, fmt.Sprintf("the %s %q is not an integer", name, s)
		case i < 3 && n < 0:
			return l, fmt.Sprintf("the %s %d is negative", name, n)
		case i == 3 && n < AbortedTxn:
			return l, fmt.Sprintf("the txn %d is negative (only -1, an aborted write, is allowed)", n)
		}
		nums[i] = n
		b = b[j+1:]
	}
	if len(b) > 0 {
		return l, fmt.Sprintf("unexpected %q after ')'", b)
	}
	l.key, l.value, l.sess, l.tx = nums[0], nums[1], nums[2], nums[3]
	return l, ""
}

// Read reads a PolySI/Plume text history from r; name names it in
// messages.
func Read(r io.Reader, name string) (*history.History, error) {
	h := history.New()
	h.Name = name
	h.Header.Present = true
	h.Header.Version = 1
	h.Header.Source = "converted from PolySI/Plume text " + name

	sessions := map[int64]int32{}   // label -> index
	txns := map[int64]int{}         // id -> index in h.Txns
	aborted := map[int32]int{}      // session index -> its aborted transaction
	txnSession := map[int64]int64{} // id -> session label, for messages
	keys := map[int64]history.KeyID{}
	session := func(label int64) int32 {
		if s, ok := sessions[label]; ok {
			return s
		}
		s := int32(len(h.Sessions))
		h.Sessions = append(h.Sessions, history.IntValue(label))
		sessions[label] = s
		return s
	}
	key := func(k int64) history.KeyID {
		if id, ok := keys[k]; ok {
			return id
		}
		id := h.Key(history.IntValue(k))
		keys[k] = id
		return id
	}

	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	n := 0
	for sc.Scan() {
		n++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		l, msg := parseLine(b)
		if msg != "" {
			return nil, &format.Error{File: name, Line: n, Msg: msg}
		}
		if l.tx == AbortedTxn && !l.write {
			continue // Plume ignores reads of aborted transactions
		}
		op := history.Op{Kind: history.Read, Key: key(l.key), Value: history.IntValue(l.value)}
		if l.write {
			op.Kind = history.Write
		}
		if l.tx == AbortedTxn {
			s := session(l.sess)
			t, ok := aborted[s]
			if !ok {
				t = len(h.Txns)
				aborted[s] = t
				h.Txns = append(h.Txns, history.Txn{
					ID:      history.StringValue("-1@" + strconv.FormatInt(l.sess, 10)),
					Session: s, Status: history.Aborted, Line: n,
				})
			}
			h.Txns[t].Ops = append(h.Txns[t].Ops, op)
			continue
		}
		t, ok := txns[l.tx]
		if !ok {
			t = len(h.Txns)
			txns[l.tx] = t
			txnSession[l.tx] = l.sess
			h.Txns = append(h.Txns, history.Txn{ID: history.IntValue(l.tx), Session: session(l.sess), Line: n})
		} else if s := txnSession[l.tx]; s != l.sess {
			return nil, &format.Error{File: name, Line: n, Msg: fmt.Sprintf("transaction %d is in session %d (line %d), not %d", l.tx, s, h.Txns[t].Line, l.sess)}
		}
		h.Txns[t].Ops = append(h.Txns[t].Ops, op)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, format.LimitErr(name, n+1, "line", maxLine)
		}
		return nil, err
	}
	if !hoistInitial(h) {
		if len(h.Keys) > 0 {
			h.Header.Initial.Values = make(map[history.KeyID]history.Value, len(h.Keys))
			for k := range h.Keys {
				h.Header.Initial.Values[history.KeyID(k)] = history.IntValue(0)
			}
		}
	}
	return h, nil
}

// hoistInitial turns an explicit initial transaction (transaction 0 of
// session 0, only writes, one per key, every key of the history, alone in
// its session) into the initial state, and reports whether there was one.
func hoistInitial(h *history.History) bool {
	init := -1
	for i := range h.Txns {
		if h.Txns[i].ID == history.IntValue(0) {
			init = i
			break
		}
	}
	if init < 0 {
		return false
	}
	t := &h.Txns[init]
	s := t.Session
	if h.Sessions[s] != history.IntValue(0) || len(t.Ops) != len(h.Keys) {
		return false
	}
	for i := range h.Txns {
		if i != init && h.Txns[i].Session == s {
			return false
		}
	}
	vals := make(map[history.KeyID]history.Value, len(t.Ops))
	for _, op := range t.Ops {
		if op.Kind != history.Write {
			return false
		}
		if _, dup := vals[op.Key]; dup {
			return false
		}
		vals[op.Key] = op.Value
	}
	// One write per key and as many writes as keys: every key.
	h.Header.Initial.Values = vals
	h.Txns = append(h.Txns[:init], h.Txns[init+1:]...)
	h.Sessions = append(h.Sessions[:s], h.Sessions[s+1:]...)
	for i := range h.Txns {
		if h.Txns[i].Session > s {
			h.Txns[i].Session--
		}
	}
	return true
}

// Sniff reports whether prefix, the first bytes of an input, looks like a
// PolySI/Plume text history: its first non-blank line is a well-formed
// r(…) or w(…) operation. The lines after it are the reader's to judge: a
// bad one later is bad input of this format, which Read reports with its
// line, not a reason to doubt the format.
func Sniff(prefix []byte) bool {
	for len(prefix) > 0 {
		ln, rest, _ := bytes.Cut(prefix, []byte("\n"))
		prefix = rest
		if ln = bytes.TrimSpace(ln); len(ln) > 0 {
			_, msg := parseLine(ln)
			return msg == ""
		}
	}
	return false
}
