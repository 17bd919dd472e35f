package cobra

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/isoscope/isoscope/internal/format"
	"github.com/isoscope/isoscope/internal/history"
)

// Cobra's special ids.
const (
	// InitID is the id of the initial transaction and of its writes.
	InitID = 0xbebeebee
	// NullID is the write id of a read that found nothing.
	NullID = 0xdeadbeef
	// GCTrueID and GCFalseID are the write ids of garbage-collection
	// reads, which this package drops.
	GCTrueID  = 0x23332333
	GCFalseID = 0x66666666
)

// InitValue is the value a read of the initial write reads, and the
// initial value of every key read that way: the initial write id.
var InitValue = history.IntValue(InitID)

// sessionLog is one log file of a directory: session number n of T<n>.log.
type sessionLog struct {
	N    int64
	Path string
}

// sessionLogs lists the session logs of dir (files named T<n>.log, n a
// decimal number), ordered by n.
func sessionLogs(dir string) ([]sessionLog, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []sessionLog
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		n, ok := format.LogNumber(e.Name(), "T")
		if !ok {
			continue
		}
		out = append(out, sessionLog{N: n, Path: filepath.Join(dir, e.Name())})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].N < out[j].N })
	return out, nil
}

// ReadDir reads the Cobra log directory path: one session per T<n>.log.
// Bad input is a *format.Error naming the file and, in its message, the
// byte offset of the bad record.
func ReadDir(path string) (*history.History, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, &format.Error{File: path, Msg: "not a directory: a Cobra history is a directory of T<n>.log files"}
	}
	sessions, err := sessionLogs(path)
	if err != nil {
		return nil, err
	}
	if len(sessions) == 0 {
		return nil, &format.Error{File: path, Msg: "no session logs (T<n>.log) in the directory"}
	}
	r := newReader(path)
	for _, s := range sessions {
		data, err := os.ReadFile(s.Path)
		if err != nil {
			return nil, err
		}
		if err := r.session(s.Path, history.IntValue(s.N), data); err != nil {
			return nil, err
		}
	}
	return r.finish(), nil
}

// readFiles reads a Cobra history from in-memory logs: logs[i] is the
// content of the log of session labels[i], named names[i] in messages.
// It is ReadDir without the file system (for tests and fuzzing).
func readFiles(source string, labels []int64, names []string, logs [][]byte) (*history.History, error) {
	if len(labels) != len(logs) || len(names) != len(logs) {
		return nil, fmt.Errorf("cobra: %d labels and %d names for %d logs", len(labels), len(names), len(logs))
	}
	r := newReader(source)
	seen := map[int64]bool{}
	for i, data := range logs {
		if seen[labels[i]] {
			return nil, &format.Error{File: names[i], Msg: fmt.Sprintf("session %d appears twice", labels[i])}
		}
		seen[labels[i]] = true
		if err := r.session(names[i], history.IntValue(labels[i]), data); err != nil {
			return nil, err
		}
	}
	return r.finish(), nil
}

// pendingRead is a read whose writer is checked once every log is read.
type pendingRead struct {
	txn, op int
	wt, wid uint64
	val     uint64 // the value hash the read returned
}

// writeInfo is the transaction that wrote a write id, where its first
// write is (transaction index and operation), with the value hash it
// wrote, and whether more than one write used the id.
type writeInfo struct {
	txn    uint64
	at, op int
	val    uint64
	dup    bool
}

// sharedWrite is a write whose id an earlier write used already.
type sharedWrite struct {
	at, op   int
	wid, val uint64
}

type reader struct {
	h        *history.History
	keys     map[uint64]history.KeyID
	ids      map[uint64]string // transaction id -> file that started it
	writes   map[uint64]writeInfo
	shared   []sharedWrite
	pending  []pendingRead
	initKeys []history.KeyID
	initSeen map[history.KeyID]bool
	ops      []history.Op
}

func newReader(source string) *reader {
	h := history.New()
	h.Name = source
	h.Header.Present = true
	h.Header.Version = 1
	h.Header.Source = "converted from Cobra logs " + source
	return &reader{
		h:        h,
		keys:     map[uint64]history.KeyID{},
		ids:      map[uint64]string{},
		writes:   map[uint64]writeInfo{},
		initSeen: map[history.KeyID]bool{},
	}
}

func (r *reader) key(k uint64) history.KeyID {
	if id, ok := r.keys[k]; ok {
		return id
	}
	id := r.h.Key(history.IntValue(int64(k)))
	r.keys[k] = id
	return id
}

// recordSize is the size of a record with tag c, tag included; 0 for an
// unknown tag.
func recordSize(c byte) int {
	switch c {
	case 'S', 'C':
		return 1 + 8
	case 'W':
		return 1 + 3*8
	case 'R':
		return 1 + 4*8
	}
	return 0
}

func tagName(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return strconv.QuoteRune(rune(c))
	}
	return fmt.Sprintf("0x%02x", c)
}

// session reads one session's log.
func (r *reader) session(name string, label history.Value, data []byte) error {
	h := r.h
	sess := int32(len(h.Sessions))
	h.Sessions = append(h.Sessions, label)
	cur := -1 // index in h.Txns of the open transaction
	var curID uint64
	closeTxn := func(status history.Status) {
		t := &h.Txns[cur]
		t.Status = status
		t.Ops = append([]history.Op(nil), r.ops...)
		r.ops = r.ops[:0]
		cur = -1
	}
	bad := func(off int, field, msg string) error {
		return &format.Error{File: name, Field: field, Msg: fmt.Sprintf("%s (record at byte %d)", msg, off)}
	}
	u := func(off, i int) uint64 { return binary.BigEndian.Uint64(data[off+1+8*i:]) }
	for off := 0; off < len(data); {
		tag := data[off]
		n := recordSize(tag)
		if n == 0 {
			return bad(off, "", "unknown record tag "+tagName(tag)+" (want 'S', 'W', 'R' or 'C')")
		}
		if off+n > len(data) {
			return bad(off, "record "+tagName(tag), fmt.Sprintf("truncated: the record needs %d bytes, %d are left", n, len(data)-off))
		}
		switch tag {
		case 'S':
			if cur >= 0 {
				closeTxn(history.Aborted) // no 'C': it did not commit
			}
			id := u(off, 0)
			if prev, dup := r.ids[id]; dup {
				where := ""
				if prev != name {
					where = " (first in " + prev + ")"
				}
				return bad(off, "record 'S'", fmt.Sprintf("transaction %d starts twice%s", int64(id), where))
			}
			r.ids[id] = name
			cur, curID = len(h.Txns), id
			h.Txns = append(h.Txns, history.Txn{ID: history.IntValue(int64(id)), Session: sess})
		case 'C':
			id := u(off, 0)
			if cur < 0 {
				return bad(off, "record 'C'", fmt.Sprintf("commit of transaction %d, which is not open", int64(id)))
			}
			if id != curID {
				return bad(off, "record 'C'", fmt.Sprintf("commit of transaction %d inside transaction %d", int64(id), int64(curID)))
			}
			closeTxn(history.Committed)
		case 'W':
			if cur < 0 {
				return bad(off, "record 'W'", "write outside a transaction")
			}
			wid, k, val := u(off, 0), u(off, 1), u(off, 2)
			switch wid {
			case InitID, NullID, GCTrueID, GCFalseID:
				return bad(off, "record 'W'", fmt.Sprintf("write with the special write id %#x", wid))
			}
			if w, ok := r.writes[wid]; ok {
				w.dup = true
				r.writes[wid] = w
				r.shared = append(r.shared, sharedWrite{at: cur, op: len(r.ops), wid: wid, val: val})
			} else {
				r.writes[wid] = writeInfo{txn: curID, at: cur, op: len(r.ops), val: val}
			}
			r.ops = append(r.ops, history.Op{Kind: history.Write, Key: r.key(k), Value: history.IntValue(int64(wid))})
		case 'R':
			if cur < 0 {
				return bad(off, "record 'R'", "read outside a transaction")
			}
			wt, wid, k, val := u(off, 0), u(off, 1), u(off, 2), u(off, 3)
			var v history.Value
			switch wid {
			case GCTrueID, GCFalseID:
				off += n
				continue // a garbage-collection read: not the workload's
			case NullID:
				v = history.NullValue
			case InitID:
				v = InitValue
				if kid := r.key(k); !r.initSeen[kid] {
					r.initSeen[kid] = true
					r.initKeys = append(r.initKeys, kid)
				}
			default:
				v = history.IntValue(int64(wid))
				r.pending = append(r.pending, pendingRead{txn: cur, op: len(r.ops), wt: wt, wid: wid, val: val})
			}
			r.ops = append(r.ops, history.Op{Kind: history.Read, Key: r.key(k), Value: v})
		}
		off += n
	}
	if cur >= 0 {
		closeTxn(history.Aborted)
	}
	return nil
}

// finish checks each read's writer, sets the initial state and returns
// the history.
func (r *reader) finish() *history.History {
	h := r.h
	// A write id several writes share does not identify a write: those
	// writes, and the reads that name the id, are told apart by the
	// value hash as well.
	for _, s := range r.shared {
		h.Txns[s.at].Ops[s.op].Value = sharedValue(s.wid, s.val)
		if w := r.writes[s.wid]; w.at >= 0 {
			h.Txns[w.at].Ops[w.op].Value = sharedValue(s.wid, w.val)
			w.at = -1 // renamed
			r.writes[s.wid] = w
		}
	}
	for _, p := range r.pending {
		w, ok := r.writes[p.wid]
		if ok && w.dup {
			h.Txns[p.txn].Ops[p.op].Value = sharedValue(p.wid, p.val)
			continue
		}
		if !ok || w.txn == p.wt {
			continue
		}
		// The read names a write that exists, but by another
		// transaction: the version it names does not exist.
		h.Txns[p.txn].Ops[p.op].Value = history.StringValue("T" + strconv.FormatInt(int64(p.wt), 10) + ":W" + strconv.FormatInt(int64(p.wid), 10))
	}
	if len(r.initKeys) > 0 {
		h.Header.Initial.Values = make(map[history.KeyID]history.Value, len(r.initKeys))
		for _, k := range r.initKeys {
			h.Header.Initial.Values[k] = InitValue
		}
	}
	return h
}

// sharedValue is the value of a write whose id other writes share, and of
// a read that names that id: "W<writeId>:V<value hash>", both decimal.
func sharedValue(wid, val uint64) history.Value {
	return history.StringValue("W" + strconv.FormatUint(wid, 10) + ":V" + strconv.FormatUint(val, 10))
}

// Sniff reports whether prefix, the first bytes of a file, looks like a
// Cobra session log: it starts with an 'S' record, and every record of the
// first transaction, up to its 'C' record or the end of the prefix, has a
// known tag. The records after it are the reader's to judge: a bad one
// later is bad input of this format, which ReadDir reports with its
// offset, not a reason to doubt the format. An empty prefix is not a log.
func Sniff(prefix []byte) bool {
	if len(prefix) < recordSize('S') || prefix[0] != 'S' {
		return false
	}
	for off := 0; off < len(prefix); {
		tag := prefix[off]
		n := recordSize(tag)
		switch {
		case n == 0:
			return false
		case tag == 'C':
			return true
		case off+n > len(prefix):
			return true // cut short by the prefix
		}
		off += n
	}
	return true
}

// SniffDir reports whether path is a directory that looks like a Cobra
// history: it holds session logs named T<n>.log, and the first 4 KiB of
// the first non-empty one look like a Cobra log (Sniff).
func SniffDir(path string) bool {
	st, err := os.Stat(path)
	if err != nil || !st.IsDir() {
		return false
	}
	sessions, err := sessionLogs(path)
	if err != nil {
		return false
	}
	for _, s := range sessions {
		f, err := os.Open(s.Path)
		if err != nil {
			return false
		}
		buf := make([]byte, 4096)
		n, _ := io.ReadFull(f, buf)
		f.Close()
		if n == 0 {
			continue
		}
		return Sniff(buf[:n])
	}
	return false
}
