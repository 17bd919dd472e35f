package awdit

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

// lineKind says what a line of the format is.
type lineKind uint8

const (
	blankLine lineKind = iota
	opLine
	txnEnd     // a line of '-'
	sessionEnd // a line of '='
	badLine
)

// allOf reports whether b is one or more copies of c.
func allOf(b []byte, c byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, x := range b {
		if x != c {
			return false
		}
	}
	return true
}

// parseLine classifies a trimmed line and parses an operation; msg says
// what is wrong with a bad line.
func parseLine(b []byte) (kind lineKind, write bool, key, value int64, msg string) {
	switch {
	case len(b) == 0:
		return blankLine, false, 0, 0, ""
	case allOf(b, '-'):
		return txnEnd, false, 0, 0, ""
	case allOf(b, '='):
		return sessionEnd, false, 0, 0, ""
	}
	f := bytes.Fields(b)
	if len(f) == 0 || (string(f[0]) != "r" && string(f[0]) != "w") {
		return badLine, false, 0, 0, `want "r key value", "w key value", "-----" (end of transaction) or "=====" (end of session)`
	}
	if len(f) != 3 {
		return badLine, false, 0, 0, fmt.Sprintf("%q needs a key and a value, found %d fields", f[0], len(f)-1)
	}
	var nums [2]int64
	for i, name := range [2]string{"key", "value"} {
		s := string(f[1+i])
		n, err := strconv.ParseInt(s, 10, 64)
		switch {
		case err != nil && errors.Is(err, strconv.ErrRange):
			return badLine, false, 0, 0, fmt.Sprintf("the %s %s is out of the 64-bit range", name, s)
		case err != nil || s[0] == '+' || s[0] == '-':
			return badLine, false, 0, 0, fmt.Sprintf("the %s %q is not a non-negative integer", name, s)
		}
		nums[i] = n
	}
	return opLine, string(f[0]) == "w", nums[0], nums[1], ""
}

// Read reads an AWDIT test history from r; name names it in messages.
func Read(r io.Reader, name string) (*history.History, error) {
	h := history.New()
	h.Name = name
	h.Header.Present = true
	h.Header.Version = 1
	h.Header.Source = "converted from AWDIT test history " + name

	keys := map[int64]history.KeyID{}
	var ops []history.Op
	sess := int32(-1) // the current session's index, once it has a transaction
	txnInSession := 0
	firstLine := 0
	endTxn := func() {
		if len(ops) == 0 {
			return
		}
		if sess < 0 {
			sess = int32(len(h.Sessions))
			h.Sessions = append(h.Sessions, history.IntValue(int64(sess)))
			txnInSession = 0
		}
		id := strconv.Itoa(int(sess)) + ":" + strconv.Itoa(txnInSession)
		h.Txns = append(h.Txns, history.Txn{
			ID: history.StringValue(id), Session: sess, Status: history.Committed,
			Ops: append([]history.Op(nil), ops...), Line: firstLine,
		})
		txnInSession++
		ops = ops[:0]
	}

	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	n := 0
	for sc.Scan() {
		n++
		kind, write, k, v, msg := parseLine(bytes.TrimSpace(sc.Bytes()))
		switch kind {
		case badLine:
			return nil, &format.Error{File: name, Line: n, Msg: msg}
		case txnEnd:
			endTxn()
		case sessionEnd:
			endTxn()
			sess = -1
		case opLine:
			if len(ops) == 0 {
				firstLine = n
			}
			kid, ok := keys[k]
			if !ok {
				kid = h.Key(history.IntValue(k))
				keys[k] = kid
			}
			op := history.Op{Kind: history.Read, Key: kid, Value: history.IntValue(v)}
			if write {
				op.Kind = history.Write
			}
			ops = append(ops, op)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, format.LimitErr(name, n+1, "line", maxLine)
		}
		return nil, err
	}
	endTxn()
	return h, nil
}

// Sniff reports whether prefix, the first bytes of an input, looks like an
// AWDIT test history: its first non-blank line is an operation ("r 0 1" or
// "w 0 1"). The lines after it are the reader's to judge: a bad one later
// is bad input of this format, which Read reports with its line, not a
// reason to doubt the format.
func Sniff(prefix []byte) bool {
	for len(prefix) > 0 {
		ln, rest, _ := bytes.Cut(prefix, []byte("\n"))
		prefix = rest
		switch kind, _, _, _, _ := parseLine(bytes.TrimSpace(ln)); kind {
		case blankLine:
			continue
		case opLine:
			return true
		}
		return false
	}
	return false
}
