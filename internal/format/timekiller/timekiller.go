package timekiller

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/isoscope/isoscope/internal/format"
	"github.com/isoscope/isoscope/internal/history"
)

// hlc is a hybrid logical clock: a physical and a logical part, ordered
// by the physical part first.
type hlc struct{ p, l uint64 }

func (c hlc) less(d hlc) bool { return c.p < d.p || c.p == d.p && c.l < d.l }

func (c hlc) String() string { return fmt.Sprintf("(p %d, l %d)", c.p, c.l) }

// rawTxn and rawOp are a transaction and an operation as decoded, before
// their fields are checked.
type rawTxn struct {
	Tid, Sid, Sts, Cts, Ops json.RawMessage
}

type rawOp struct {
	T, K, V json.RawMessage
}

// txn is a transaction with its fields checked.
type txn struct {
	line     int
	field    string // "[i]", for messages
	id, sess history.Value
	sts, cts hlc
	ops      []op
}

// op is an operation with its fields checked; v is the raw value, read
// once the history's model (key-value or list) is known.
type op struct {
	kind history.OpKind // Read, Write or Append; Read is a list read in a list history
	key  int64
	v    json.RawMessage
}

// reader holds the input and finds lines for messages.
type reader struct {
	name string
	// data is the input read so far (seen's bytes): the decoder reads the
	// input as a stream, so that bad input ends where it is bad.
	data []byte
	seen *bytes.Buffer
	// lineOff and line: the line at byte offset lineOff, to count on from.
	lineOff, line int
}

func (r *reader) errAt(line int, field, msg string) error {
	return &format.Error{File: r.name, Line: line, Field: field, Msg: msg}
}

// lineAt returns the line of byte offset off; offsets must not decrease
// from one call to the next.
func (r *reader) lineAt(off int) int {
	r.data = r.seen.Bytes()
	off = min(max(off, r.lineOff), len(r.data))
	r.line += bytes.Count(r.data[r.lineOff:off], []byte("\n"))
	r.lineOff = off
	return r.line
}

// Read reads a TimeKiller JSON history from r; name names it in messages.
func Read(in io.Reader, name string) (*history.History, error) {
	r := &reader{name: name, seen: new(bytes.Buffer), line: 1}
	txns, err := r.parse(io.TeeReader(in, r.seen))
	if err != nil {
		return nil, err
	}
	return r.build(txns)
}

// parse decodes the array and checks every transaction's fields.
func (r *reader) parse(in io.Reader) ([]txn, error) {
	br := bufio.NewReader(in)
	skip := 0
	if b, _ := br.Peek(3); bytes.Equal(b, []byte("\xef\xbb\xbf")) { // a byte order mark
		br.Discard(3)
		skip = 3
	}
	dec := json.NewDecoder(br)
	dec.UseNumber()
	syntax := func(err error) error {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return r.errAt(r.lineAt(skip+int(se.Offset)), "", "malformed JSON: "+se.Error())
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return r.errAt(r.lineAt(r.seen.Len()), "", "the input ends inside the array of transactions")
		}
		return r.errAt(r.lineAt(skip+int(dec.InputOffset())), "", err.Error())
	}
	tok, err := dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, r.errAt(0, "", "empty input: want a JSON array of transactions")
		}
		return nil, syntax(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return nil, r.errAt(r.lineAt(skip+int(dec.InputOffset())), "", "want a JSON array of transactions, [{\"tid\": …, \"sid\": …, \"sts\": …, \"cts\": …, \"ops\": […]}, …]")
	}
	var txns []txn
	for i := 0; dec.More(); i++ {
		start := skip + int(dec.InputOffset())
		r.data = r.seen.Bytes()
		for start < len(r.data) && strings.IndexByte(" \t\r\n,", r.data[start]) >= 0 {
			start++
		}
		line := r.lineAt(start)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, syntax(err)
		}
		t, err := r.txn(raw, i, line)
		if err != nil {
			return nil, err
		}
		txns = append(txns, t)
	}
	if _, err := dec.Token(); err != nil {
		return nil, syntax(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, r.errAt(r.lineAt(skip+int(dec.InputOffset())), "", "unexpected data after the array of transactions")
	}
	return txns, nil
}

// txn checks the fields of transaction i, which starts on line.
func (r *reader) txn(raw json.RawMessage, i, line int) (txn, error) {
	t := txn{line: line, field: "[" + strconv.Itoa(i) + "]"}
	var rt rawTxn
	if !isObject(raw) || json.Unmarshal(raw, &rt) != nil {
		return t, r.errAt(line, t.field, "want a transaction object {\"tid\", \"sid\", \"sts\", \"cts\", \"ops\"}, got "+excerpt(raw))
	}
	var err error
	if t.id, err = label(rt.Tid); err != nil {
		return t, r.errAt(line, t.field+".tid", err.Error())
	}
	if t.sess, err = label(rt.Sid); err != nil {
		return t, r.errAt(line, t.field+".sid", err.Error())
	}
	if t.sts, err = r.clock(rt.Sts, line, t.field+".sts"); err != nil {
		return t, err
	}
	if t.cts, err = r.clock(rt.Cts, line, t.field+".cts"); err != nil {
		return t, err
	}
	if t.cts.less(t.sts) {
		return t, r.errAt(line, t.field, fmt.Sprintf("the commit timestamp cts %s is before the start timestamp sts %s", t.cts, t.sts))
	}
	var ops []json.RawMessage
	if len(rt.Ops) == 0 || json.Unmarshal(rt.Ops, &ops) != nil || isNull(rt.Ops) {
		return t, r.errAt(line, t.field+".ops", "want an array of operations, got "+excerpt(rt.Ops))
	}
	if len(ops) == 0 {
		return t, r.errAt(line, t.field+".ops", "empty: isoscope's format has no committed transaction without operations")
	}
	for j, o := range ops {
		field := fmt.Sprintf("%s.ops[%d]", t.field, j)
		var ro rawOp
		if !isObject(o) || json.Unmarshal(o, &ro) != nil {
			return t, r.errAt(line, field, "want an operation object {\"t\", \"k\", \"v\"}, got "+excerpt(o))
		}
		var s string
		if len(ro.T) == 0 || json.Unmarshal(ro.T, &s) != nil {
			return t, r.errAt(line, field+".t", "want the operation's type, \"r\", \"w\" or \"a\", got "+excerpt(ro.T))
		}
		var x op
		switch strings.ToLower(s) {
		case "r", "read":
			x.kind = history.Read
		case "w", "write":
			x.kind = history.Write
		case "a", "append":
			x.kind = history.Append
		default:
			return t, r.errAt(line, field+".t", fmt.Sprintf("unknown operation type %q (r, read, w, write, a, append)", s))
		}
		if x.key, err = integer(ro.K); err != nil {
			return t, r.errAt(line, field+".k", err.Error())
		}
		x.v = ro.V
		t.ops = append(t.ops, x)
	}
	return t, nil
}

// clock checks a hybrid logical clock {"p": …, "l": …}.
func (r *reader) clock(raw json.RawMessage, line int, field string) (hlc, error) {
	var c struct{ P, L json.RawMessage }
	if !isObject(raw) || json.Unmarshal(raw, &c) != nil {
		return hlc{}, r.errAt(line, field, "want a hybrid logical clock {\"p\": …, \"l\": …}, got "+excerpt(raw))
	}
	var out hlc
	for _, part := range []struct {
		name string
		raw  json.RawMessage
		to   *uint64
	}{{"p", c.P, &out.p}, {"l", c.L, &out.l}} {
		n, err := integer(part.raw)
		if err == nil && n < 0 {
			err = fmt.Errorf("%d is negative", n)
		}
		if err != nil {
			return hlc{}, r.errAt(line, field+"."+part.name, err.Error())
		}
		*part.to = uint64(n)
	}
	return out, nil
}

// build turns the checked transactions into a history.
func (r *reader) build(txns []txn) (*history.History, error) {
	// The model, the largest logical part, and where it is.
	list := false
	var maxL hlc
	maxAt := ""
	for i := range txns {
		t := &txns[i]
		for _, c := range []struct {
			c  hlc
			at string
		}{{t.sts, t.field + ".sts"}, {t.cts, t.field + ".cts"}} {
			if maxAt == "" || c.c.l > maxL.l {
				maxL, maxAt = c.c, c.at
			}
		}
		for _, o := range t.ops {
			if o.kind == history.Append || o.kind == history.Read && isArray(o.v) {
				list = true
			}
		}
	}
	shift := bits.Len64(maxL.l)
	ts := func(t *txn, c hlc, field string) (uint64, error) {
		if bits.Len64(c.p)+shift > 64 {
			return 0, r.errAt(t.line, field, fmt.Sprintf("the hybrid logical clock %s does not fit in 64 bits: its physical part needs %d bits, and %d more hold the logical parts (the largest, l %d, is at %s)",
				c, bits.Len64(c.p), shift, maxL.l, maxAt))
		}
		return c.p<<shift | c.l, nil
	}

	h := history.New()
	h.Name = r.name
	h.Header.Present = true
	h.Header.Version = 1
	model := "key-value"
	if list {
		model = "list"
	}
	h.Header.Source = fmt.Sprintf("converted from TimeKiller JSON %s (%s history; timestamps: p·2^%d + l of each hybrid logical clock)", r.name, model, shift)
	sessions := map[history.Value]int32{}
	ids := map[history.Value]int{}
	readZero, readNull := map[history.KeyID]bool{}, false
	wroteZero := map[history.KeyID]bool{}
	for i := range txns {
		t := &txns[i]
		if j, dup := ids[t.id]; dup {
			return nil, r.errAt(t.line, t.field+".tid", fmt.Sprintf("%s is also the tid of %s (line %d)", t.id, txns[j].field, txns[j].line))
		}
		ids[t.id] = i
		s, ok := sessions[t.sess]
		if !ok {
			s = int32(len(h.Sessions))
			sessions[t.sess] = s
			h.Sessions = append(h.Sessions, t.sess)
		}
		tx := history.Txn{ID: t.id, Session: s, Status: history.Committed, HasStartTS: true, HasCommitTS: true, Line: t.line, Ops: make([]history.Op, 0, len(t.ops))}
		var err error
		if tx.StartTS, err = ts(t, t.sts, t.field+".sts"); err != nil {
			return nil, err
		}
		if tx.CommitTS, err = ts(t, t.cts, t.field+".cts"); err != nil {
			return nil, err
		}
		for j, o := range t.ops {
			field := fmt.Sprintf("%s.ops[%d].v", t.field, j)
			k := h.Key(history.IntValue(o.key))
			hop := history.Op{Kind: o.kind, Key: k}
			switch {
			case o.kind == history.Read && list:
				hop.Kind = history.ReadList
				if hop.List, err = elements(o.v); err != nil {
					return nil, r.errAt(t.line, field, err.Error())
				}
			case o.kind == history.Read:
				if isNull(o.v) {
					hop.Value = history.NullValue
					readNull = true
					break
				}
				n, err := integer(o.v)
				if err != nil {
					return nil, r.errAt(t.line, field, err.Error())
				}
				hop.Value = history.IntValue(n)
				if n == 0 {
					readZero[k] = true
				}
			case o.kind == history.Write && list:
				return nil, r.errAt(t.line, field[:len(field)-2]+".t", "a write in a list history (its appends and list reads): a history is either key-value (r, w) or list (r, a)")
			default: // a write or an append
				n, err := integer(o.v)
				if err != nil {
					return nil, r.errAt(t.line, field, err.Error())
				}
				hop.Value = history.IntValue(n)
				if n == 0 && o.kind == history.Write {
					wroteZero[k] = true
				}
			}
			tx.Ops = append(tx.Ops, hop)
		}
		h.Txns = append(h.Txns, tx)
	}
	if !list && !readNull && initialZero(readZero, wroteZero) {
		h.Header.Initial.Values = make(map[history.KeyID]history.Value, len(h.Keys))
		for k := range h.Keys {
			h.Header.Initial.Values[history.KeyID(k)] = history.IntValue(0)
		}
		h.Header.Source += "; initial value 0 (the history reads 0 that no transaction wrote, and never null)"
	}
	return h, nil
}

// initialZero reports whether some key is read as 0 and never written 0.
func initialZero(readZero, wroteZero map[history.KeyID]bool) bool {
	for k := range readZero {
		if !wroteZero[k] {
			return true
		}
	}
	return false
}

// label reads a tid or sid: an integer or a string.
func label(raw json.RawMessage) (history.Value, error) {
	switch {
	case len(raw) == 0:
		return history.Value{}, errors.New("missing: want an integer or a string")
	case raw[0] == '"':
		if err := notText(raw); err != nil {
			return history.Value{}, err
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return history.Value{}, err
		}
		return history.StringValue(s), nil
	}
	n, err := integer(raw)
	if err != nil {
		return history.Value{}, errors.New("want an integer or a string, got " + excerpt(raw))
	}
	return history.IntValue(n), nil
}

// notText reports what keeps the JSON string raw from being Unicode text:
// invalid UTF-8, or an escaped UTF-16 surrogate that is not half of a
// pair. encoding/json reads both as U+FFFD, which would make the sessions
// "\ud800" and "\udbff" one session; they are bad input instead.
func notText(raw []byte) error {
	for i := 1; i < len(raw)-1; {
		c := raw[i]
		switch {
		case c == '\\' && raw[i+1] == 'u' && i+6 <= len(raw):
			r := hex4(raw[i+2 : i+6])
			if !utf16.IsSurrogate(r) {
				i += 6
				break
			}
			if i+12 <= len(raw) && raw[i+6] == '\\' && raw[i+7] == 'u' && utf16.DecodeRune(r, hex4(raw[i+8:i+12])) != utf8.RuneError {
				i += 12
				break
			}
			return fmt.Errorf("%s in %s is a lone UTF-16 surrogate, not a character (strings must be valid Unicode text)", raw[i:i+6], excerpt(raw))
		case c == '\\':
			i += 2
		case c < utf8.RuneSelf:
			i++
		default:
			r, n := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && n == 1 {
				return fmt.Errorf("%q is not valid UTF-8", raw)
			}
			i += n
		}
	}
	return nil
}

// hex4 is the value of four hex digits, or -1 if they are not.
func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}

// integer reads a 64-bit integer, written as a JSON number or, as
// TimeKiller accepts, a string of decimal digits.
func integer(raw json.RawMessage) (int64, error) {
	if len(raw) == 0 {
		return 0, errors.New("missing: want an integer")
	}
	s := string(raw)
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, errors.New("want an integer, got " + excerpt(raw))
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	switch {
	case errors.Is(err, strconv.ErrRange):
		return 0, fmt.Errorf("%s is out of the 64-bit range", excerpt(raw))
	case err != nil || s == "" || s[0] == '+':
		return 0, errors.New("want an integer, got " + excerpt(raw))
	}
	return n, nil
}

// elements reads a list read's value: an array of integers, or null, or
// nothing (an empty list).
func elements(raw json.RawMessage) ([]history.Value, error) {
	if isNull(raw) {
		return nil, nil
	}
	var items []json.RawMessage
	if !isArray(raw) || json.Unmarshal(raw, &items) != nil {
		return nil, errors.New("want the list read, an array of integers, got " + excerpt(raw))
	}
	var out []history.Value
	for i, it := range items {
		n, err := integer(it)
		if err != nil {
			return nil, fmt.Errorf("element %d: %v", i, err)
		}
		out = append(out, history.IntValue(n))
	}
	return out, nil
}

// isNull reports whether raw is null or missing.
func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

func isObject(raw json.RawMessage) bool { return len(raw) > 0 && raw[0] == '{' }

func isArray(raw json.RawMessage) bool { return len(raw) > 0 && raw[0] == '[' }

// excerpt quotes raw JSON for a message, shortened.
func excerpt(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "nothing"
	}
	s := string(raw)
	if len(s) > 40 {
		s = s[:37] + "…"
	}
	return s
}

// Sniff reports whether prefix, the first bytes of an input, looks like a
// TimeKiller history: a JSON array whose first element is an object with
// an "sts" or "cts" field holding an object (a hybrid logical clock).
func Sniff(prefix []byte) bool {
	prefix = bytes.TrimPrefix(prefix, []byte("\xef\xbb\xbf"))
	dec := json.NewDecoder(bytes.NewReader(prefix))
	for _, want := range []json.Delim{'[', '{'} {
		if tok, err := dec.Token(); err != nil || tok != want {
			return false
		}
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return false
		}
		if k, _ := tok.(string); (k == "sts" || k == "cts") && isObject(v) {
			return true
		}
	}
	return false
}
