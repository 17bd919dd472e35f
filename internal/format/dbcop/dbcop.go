package dbcop

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/isoscope/isoscope/internal/format"
	"github.com/isoscope/isoscope/internal/history"
)

// Sizes of the fixed parts of the encoding.
const (
	headerInts = 5 // id n_node n_variable n_transaction n_event
	eventSize  = 1 + 16 + 1
	maxInfo    = 1 << 20 // the longest info string Sniff accepts
)

// decoder walks the bytes of a file.
type decoder struct {
	name  string
	b     []byte
	off   int
	field string
}

func (d *decoder) fail(at int, msg string) error {
	return &format.Error{File: d.name, Field: d.field, Msg: fmt.Sprintf("%s (at byte %d)", msg, at)}
}

func (d *decoder) u64(what string) (uint64, error) {
	if len(d.b)-d.off < 8 {
		return 0, d.fail(d.off, fmt.Sprintf("truncated: %s needs 8 bytes, %d are left", what, len(d.b)-d.off))
	}
	v := binary.LittleEndian.Uint64(d.b[d.off:])
	d.off += 8
	return v, nil
}

func (d *decoder) boolean(what string) (bool, error) {
	if d.off >= len(d.b) {
		return false, d.fail(d.off, "truncated: "+what+" needs 1 byte, none is left")
	}
	c := d.b[d.off]
	if c > 1 {
		return false, d.fail(d.off, fmt.Sprintf("%s is %d, want a bool (0 or 1)", what, c))
	}
	d.off++
	return c == 1, nil
}

// count reads a length and checks that the rest of the file can hold that
// many items of at least min bytes each.
func (d *decoder) count(what string, min int) (int, error) {
	at := d.off
	n, err := d.u64(what)
	if err != nil {
		return 0, err
	}
	if left := uint64(len(d.b) - d.off); n > left/uint64(min) {
		return 0, d.fail(at, fmt.Sprintf("%s is %d, more than the %d bytes left can hold", what, n, left))
	}
	return int(n), nil
}

func (d *decoder) str(what string) (string, error) {
	n, err := d.count(what+" length", 1)
	if err != nil {
		return "", err
	}
	s := d.b[d.off : d.off+n]
	if !utf8.Valid(s) {
		return "", d.fail(d.off, what+" is not valid UTF-8")
	}
	d.off += n
	return string(s), nil
}

// Read reads a dbcop history.bincode from r; name names it in messages.
func Read(r io.Reader, name string) (*history.History, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	return decode(data, name)
}

func decode(data []byte, name string) (*history.History, error) {
	d := &decoder{name: name, b: data, field: "header"}
	for _, what := range [headerInts]string{"id", "n_node", "n_variable", "n_transaction", "n_event"} {
		if _, err := d.u64(what); err != nil {
			return nil, err
		}
	}
	info, err := d.str("info")
	if err != nil {
		return nil, err
	}
	if _, err := d.str("start"); err != nil {
		return nil, err
	}
	if _, err := d.str("end"); err != nil {
		return nil, err
	}
	h := history.New()
	h.Name = name
	h.Header.Present = true
	h.Header.Version = 1
	h.Header.Source = "converted from dbcop history " + name
	if info != "" {
		h.Header.Source += " (" + info + ")"
	}
	d.field = "sessions"
	nsess, err := d.count("the number of sessions", 8)
	if err != nil {
		return nil, err
	}
	keys := map[uint64]history.KeyID{}
	key := func(k uint64) history.KeyID {
		if id, ok := keys[k]; ok {
			return id
		}
		id := h.Key(history.IntValue(int64(k)))
		keys[k] = id
		return id
	}
	var ops []history.Op
	for s := 1; s <= nsess; s++ {
		label := strconv.Itoa(s)
		d.field = "session " + label
		h.Sessions = append(h.Sessions, history.IntValue(int64(s)))
		ntx, err := d.count("the number of transactions", 8+1)
		if err != nil {
			return nil, err
		}
		for j := 0; j < ntx; j++ {
			id := label + ":" + strconv.Itoa(j)
			d.field = "session " + label + ", transaction " + strconv.Itoa(j)
			nev, err := d.count("the number of events", eventSize)
			if err != nil {
				return nil, err
			}
			ops = ops[:0]
			for e := 0; e < nev; e++ {
				d.field = "session " + label + ", transaction " + strconv.Itoa(j) + ", event " + strconv.Itoa(e)
				write, err := d.boolean("write")
				if err != nil {
					return nil, err
				}
				k, err := d.u64("key")
				if err != nil {
					return nil, err
				}
				v, err := d.u64("value")
				if err != nil {
					return nil, err
				}
				ok, err := d.boolean("success")
				if err != nil {
					return nil, err
				}
				if !ok {
					continue // a failed event did not take effect
				}
				op := history.Op{Kind: history.Read, Key: key(k), Value: history.IntValue(int64(v))}
				if write {
					op.Kind = history.Write
				}
				ops = append(ops, op)
			}
			d.field = "session " + label + ", transaction " + strconv.Itoa(j)
			success, err := d.boolean("txn_success")
			if err != nil {
				return nil, err
			}
			t := history.Txn{ID: history.StringValue(id), Session: int32(s - 1), Status: history.Committed}
			if !success {
				t.Status = history.Aborted
			}
			if len(ops) > 0 {
				t.Ops = append([]history.Op(nil), ops...)
			}
			h.Txns = append(h.Txns, t)
		}
	}
	if d.off != len(d.b) {
		d.field = ""
		return nil, d.fail(d.off, fmt.Sprintf("%d bytes after the history", len(d.b)-d.off))
	}
	if len(h.Keys) > 0 {
		h.Header.Initial.Values = make(map[history.KeyID]history.Value, len(h.Keys))
		for k := range h.Keys {
			h.Header.Initial.Values[history.KeyID(k)] = history.IntValue(0)
		}
	}
	return h, nil
}

// Sniff reports whether prefix, the first bytes of an input, looks like a
// dbcop history.bincode: five small u64 parameters (each below 2^32), an
// info string of sensible length that is valid UTF-8, and a start string
// that begins like a date ("2024-"). It needs the first 53 bytes at least.
func Sniff(prefix []byte) bool {
	d := &decoder{b: prefix}
	for range headerInts {
		v, err := d.u64("")
		if err != nil || v >= 1<<32 {
			return false
		}
	}
	n, err := d.u64("")
	if err != nil || n > maxInfo {
		return false
	}
	if uint64(len(prefix)-d.off) < n {
		return false // cannot see the start date
	}
	if !utf8.Valid(prefix[d.off : d.off+int(n)]) {
		return false
	}
	d.off += int(n)
	n, err = d.u64("")
	if err != nil || n < 10 || n > 64 || len(prefix)-d.off < 5 {
		return false
	}
	date := prefix[d.off : d.off+5]
	for i, c := range date {
		if i == 4 {
			if c != '-' {
				return false
			}
		} else if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// epoch is the start and end date Write records: dbcop parses them as
// chrono dates, and a converted history has none.
const epoch = "1970-01-01T00:00:00+00:00"

// Write writes h as a dbcop history.bincode: sessions in h.Sessions order,
// each with its transactions in session order. It refuses, with an error
// naming the transaction, what dbcop cannot express: operations other than
// reads and writes, keys or values that are not integers, null reads,
// transactions of unknown outcome, initial values other than 0, writes of
// 0 (dbcop's initial value) and reads of 0 from keys whose initial value
// is not 0, begin and end instants (strict serializability is checked by
// them), the database's timestamps and a white-box version order (checkers
// decide by them). Integers are written as their 64-bit two's-complement
// patterns.
func Write(w io.Writer, h *history.History) error {
	for _, refuse := range []func(string, *history.History) error{format.RefuseInstants, format.RefuseTimestamps, format.RefuseVersionOrder} {
		if err := refuse("dbcop", h); err != nil {
			return err
		}
	}
	for k, v := range h.Header.Initial.Values {
		if v != history.IntValue(0) {
			return fmt.Errorf("dbcop: key %s has initial value %s; dbcop's initial value is 0 for every key", h.KeyName(k), v)
		}
	}
	var maxKey uint64 // the largest key, as dbcop sees it
	anyKey, maxEvents := false, 0
	for i := range h.Txns {
		t := &h.Txns[i]
		if t.Status == history.Unknown {
			return fmt.Errorf("dbcop: transaction %s: its outcome is unknown; dbcop records committed and aborted transactions only", h.TxnName(history.TxnID(i)))
		}
		if t.Session < 0 || int(t.Session) >= len(h.Sessions) {
			return fmt.Errorf("dbcop: transaction %s: no session %d", h.TxnName(history.TxnID(i)), t.Session)
		}
		maxEvents = max(maxEvents, len(t.Ops))
		for j, op := range t.Ops {
			bad := func(msg string) error {
				return fmt.Errorf("dbcop: transaction %s, operation %d (%s): %s", h.TxnName(history.TxnID(i)), j, history.OpString(h, op), msg)
			}
			if op.Kind != history.Read && op.Kind != history.Write {
				return bad("dbcop has reads and writes only")
			}
			if op.Key < 0 || int(op.Key) >= len(h.Keys) {
				return bad("no such key")
			}
			k := h.Keys[op.Key]
			if k.Kind != history.Int {
				return bad("dbcop keys are integers")
			}
			if op.Value.Kind != history.Int {
				if op.Value.IsNull() && op.Kind == history.Read {
					return bad("dbcop has no null reads (a read of an absent key)")
				}
				return bad("dbcop values are integers")
			}
			if op.Value.N == 0 {
				if op.Kind == history.Write {
					return bad("a write of 0, which dbcop takes for the initial value")
				}
				if h.InitialValue(op.Key) != history.IntValue(0) {
					return bad("a read of 0, which dbcop takes for the initial value, but the key's initial value is " + h.InitialValue(op.Key).String())
				}
			}
			if !anyKey || uint64(k.N) > maxKey {
				maxKey, anyKey = uint64(k.N), true
			}
		}
	}
	order := h.SessionOrder()
	maxTxns := 0
	for _, s := range order {
		maxTxns = max(maxTxns, len(s))
	}
	bw := bufio.NewWriter(w)
	var buf [8]byte
	u64 := func(v uint64) {
		binary.LittleEndian.PutUint64(buf[:], v)
		bw.Write(buf[:])
	}
	boolean := func(b bool) {
		if b {
			bw.WriteByte(1)
		} else {
			bw.WriteByte(0)
		}
	}
	str := func(s string) {
		u64(uint64(len(s)))
		bw.WriteString(s)
	}
	info := h.Header.Source
	if !utf8.ValidString(info) {
		info = "isoscope"
	}
	u64(0)
	u64(uint64(len(order)))
	if anyKey {
		u64(maxKey + 1) // dbcop's variables are 0 … n_variable-1
	} else {
		u64(0)
	}
	u64(uint64(maxTxns))
	u64(uint64(maxEvents))
	str(info)
	str(epoch)
	str(epoch)
	u64(uint64(len(order)))
	for _, s := range order {
		u64(uint64(len(s)))
		for _, id := range s {
			t := &h.Txns[id]
			u64(uint64(len(t.Ops)))
			for _, op := range t.Ops {
				boolean(op.Kind == history.Write)
				u64(uint64(h.Keys[op.Key].N))
				u64(uint64(op.Value.N))
				boolean(true)
			}
			boolean(t.Status == history.Committed)
		}
	}
	if err := bw.Flush(); err != nil {
		return errors.Join(errors.New("dbcop: writing the history"), err)
	}
	return nil
}
