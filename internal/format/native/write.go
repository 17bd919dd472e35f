package native

import (
	"errors"
	"io"
	"slices"
	"strconv"

	"github.com/isoscope/isoscope/internal/history"
)

// flushAt is how much Write buffers before it writes to its writer.
const flushAt = 64 << 10

// Write writes h in the isoscope format: a header line when h has one or
// when its header says anything (initial values, unique values, tombstone
// deletes, a version order, a source), then one line per transaction in
// file order, fields in the format's order. Reading the output back gives
// h again. Write fails only on a write error, a history that breaks the
// model (a null id, a session, key or transaction out of range, a range
// operation without its range), or one the format cannot hold (keys of
// two kinds, a committed transaction without operations).
func Write(w io.Writer, h *history.History) error {
	if err := expressible(h); err != nil {
		return err
	}
	buf := make([]byte, 0, flushAt+4096)
	var err error
	if needsHeader(h) {
		if buf, err = appendHeader(buf, h); err != nil {
			return err
		}
	}
	for i := range h.Txns {
		if buf, err = appendTxn(buf, h, &h.Txns[i]); err != nil {
			return err
		}
		if len(buf) >= flushAt {
			if _, err := w.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	for i := range h.Faults {
		buf = appendFault(buf, &h.Faults[i])
	}
	if len(buf) > 0 {
		_, err = w.Write(buf)
	}
	return err
}

// expressible refuses the two things other formats' readers can give a
// history that the format cannot hold, and that its reader would reject:
// keys of two kinds (integers and strings), and a committed transaction
// without operations.
func expressible(h *history.History) error {
	for i, k := range h.Keys {
		if k.Kind != h.Keys[0].Kind {
			return errModel("keys of two kinds, " + h.Keys[0].String() + " and " + h.KeyName(history.KeyID(i)) +
				"; the isoscope format has integer keys or string keys, not both")
		}
	}
	for i := range h.Txns {
		if t := &h.Txns[i]; t.Status == history.Committed && len(t.Ops) == 0 {
			return errModel("transaction " + h.TxnName(history.TxnID(i)) +
				" commits no operations; the isoscope format allows no operations only in an aborted transaction")
		}
	}
	return nil
}

func needsHeader(h *history.History) bool {
	hd := &h.Header
	return hd.Present || len(hd.Initial.Values) > 0 || hd.UniqueValues || hd.Deletes != history.PhysicalDeletes ||
		len(hd.VersionOrder) > 0 || hd.Source != "" || !hd.FenceKey.IsNull()
}

// errModel is the error of a history that breaks the model.
func errModel(msg string) error { return errors.New("native.Write: " + msg) }

// appendKeyString appends key k as a JSON object key (a string).
func appendKeyString(b []byte, h *history.History, k history.KeyID) ([]byte, error) {
	if k < 0 || int(k) >= len(h.Keys) {
		return b, errModel("key " + strconv.Itoa(int(k)) + " out of range")
	}
	if v := h.Keys[k]; v.Kind == history.Int {
		b = append(b, '"')
		b = strconv.AppendInt(b, v.N, 10)
		return append(b, '"'), nil
	}
	return history.AppendJSONString(b, h.Keys[k].S), nil
}

func appendHeader(b []byte, h *history.History) ([]byte, error) {
	hd := &h.Header
	b = append(b, `{"format":"`+FormatName+`","version":`+strconv.Itoa(Version)+`,"initial":`...)
	if len(hd.Initial.Values) == 0 {
		b = append(b, `"absent"`...)
	} else {
		keys := sortedKeys(hd.Initial.Values)
		for j, k := range keys {
			b = append(b, "{,"[min(j, 1)])
			var err error
			if b, err = appendKeyString(b, h, k); err != nil {
				return b, err
			}
			b = append(b, ':')
			b = hd.Initial.Values[k].AppendJSON(b)
		}
		b = append(b, '}')
	}
	if hd.UniqueValues {
		b = append(b, `,"unique_values":true`...)
	}
	if hd.Deletes == history.TombstoneDeletes {
		b = append(b, `,"deletes":"tombstone"`...)
	}
	if len(hd.VersionOrder) > 0 {
		b = append(b, `,"version_order":`...)
		for j, k := range sortedKeys(hd.VersionOrder) {
			b = append(b, "{,"[min(j, 1)])
			var err error
			if b, err = appendKeyString(b, h, k); err != nil {
				return b, err
			}
			b = append(b, ":["...)
			for n, t := range hd.VersionOrder[k] {
				if t < 0 || int(t) >= len(h.Txns) {
					return b, errModel("version order names transaction " + strconv.Itoa(int(t)) + ", out of range")
				}
				if n > 0 {
					b = append(b, ',')
				}
				b = h.Txns[t].ID.AppendJSON(b)
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	if hd.Source != "" {
		b = append(b, `,"source":`...)
		b = history.AppendJSONString(b, hd.Source)
	}
	if !hd.FenceKey.IsNull() {
		b = append(b, `,"fence_key":`...)
		b = hd.FenceKey.AppendJSON(b)
	}
	return append(b, "}\n"...), nil
}

func sortedKeys[V any](m map[history.KeyID]V) []history.KeyID {
	keys := make([]history.KeyID, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func appendTxn(b []byte, h *history.History, t *history.Txn) ([]byte, error) {
	if t.ID.IsNull() {
		return b, errModel("transaction on line " + strconv.Itoa(t.Line) + " has a null id")
	}
	if t.Session < 0 || int(t.Session) >= len(h.Sessions) || h.Sessions[t.Session].IsNull() {
		return b, errModel("transaction " + t.ID.String() + ": session out of range")
	}
	b = append(b, `{"id":`...)
	b = t.ID.AppendJSON(b)
	b = append(b, `,"session":`...)
	b = h.Sessions[t.Session].AppendJSON(b)
	switch t.Status {
	case history.Committed:
	case history.Aborted:
		b = append(b, `,"status":"aborted"`...)
	case history.Unknown:
		b = append(b, `,"status":"unknown"`...)
	default:
		return b, errModel("transaction " + t.ID.String() + ": bad status")
	}
	if t.HasTime {
		b = append(b, `,"begin":`...)
		b = strconv.AppendInt(b, t.Begin, 10)
		b = append(b, `,"end":`...)
		b = strconv.AppendInt(b, t.End, 10)
	}
	if t.HasStartTS {
		b = append(b, `,"start_ts":`...)
		b = strconv.AppendUint(b, t.StartTS, 10)
	}
	if t.HasCommitTS {
		b = append(b, `,"commit_ts":`...)
		b = strconv.AppendUint(b, t.CommitTS, 10)
	}
	b = append(b, `,"ops":[`...)
	var err error
	for j := range t.Ops {
		if j > 0 {
			b = append(b, ',')
		}
		if b, err = appendOp(b, h, &t.Ops[j]); err != nil {
			return b, errModel("transaction " + t.ID.String() + ": " + err.Error())
		}
	}
	return append(b, "]}\n"...), nil
}

func appendKey(b []byte, h *history.History, k history.KeyID) ([]byte, error) {
	if k < 0 || int(k) >= len(h.Keys) {
		return b, errors.New("key " + strconv.Itoa(int(k)) + " out of range")
	}
	return h.Keys[k].AppendJSON(b), nil
}

func appendOp(b []byte, h *history.History, op *history.Op) ([]byte, error) {
	var err error
	switch op.Kind {
	case history.Read, history.Write, history.Append, history.Delete:
		switch op.Kind {
		case history.Read:
			b = append(b, `["r",`...)
		case history.Write:
			b = append(b, `["w",`...)
		case history.Append:
			b = append(b, `["append",`...)
		default:
			b = append(b, `["d",`...)
		}
		if b, err = appendKey(b, h, op.Key); err != nil {
			return b, err
		}
		if op.Kind != history.Delete {
			b = append(b, ',')
			b = op.Value.AppendJSON(b)
		}
	case history.ReadList:
		b = append(b, `["r",`...)
		if b, err = appendKey(b, h, op.Key); err != nil {
			return b, err
		}
		b = append(b, ",["...)
		for j, v := range op.List {
			if j > 0 {
				b = append(b, ',')
			}
			b = v.AppendJSON(b)
		}
		b = append(b, ']')
	case history.Scan, history.Iter:
		if op.Range == nil {
			return b, errors.New(op.Kind.String() + " without a range")
		}
		b = append(b, `["`...)
		b = append(b, op.Kind.String()...)
		b = append(b, `",`...)
		b = op.Range.Lo.AppendJSON(b)
		b = append(b, ',')
		if op.Range.HiOpen {
			b = append(b, "null"...)
		} else {
			b = op.Range.Hi.AppendJSON(b)
		}
		b = append(b, ",["...)
		for j, p := range op.Range.Pairs {
			if j > 0 {
				b = append(b, ',')
			}
			b = append(b, '[')
			if b, err = appendKey(b, h, p.Key); err != nil {
				return b, err
			}
			b = append(b, ',')
			b = p.Value.AppendJSON(b)
			b = append(b, ']')
		}
		b = append(b, ']')
	default:
		return b, errors.New("unknown operation kind " + op.Kind.String())
	}
	if op.Lock {
		b = append(b, `,{"lock":true}`...)
	}
	return append(b, ']'), nil
}

// AppendTxn appends t, a transaction of h, to b as one line of the format
// (with its newline), as Write writes it.
func AppendTxn(b []byte, h *history.History, t *history.Txn) ([]byte, error) {
	return appendTxn(b, h, t)
}
