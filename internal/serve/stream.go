package serve

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/wire"
)

// The checker holds one id space, one session table and one key table for
// everything; a stream's ids and sessions and a keyspace's keys are
// mapped into them by the index of their stream or keyspace (0 for the
// default ones). A value that is an integer in [0, 2^spaceShift) of a
// space below maxIntSpace stays an integer, space<<spaceShift | n, so the
// checker's integer fast paths hold and the order of a stream's ids is
// kept; any other value becomes a string: a NUL byte, the space (4 bytes,
// big-endian), then 'i' and the integer (8 bytes, big-endian, sign bit
// flipped: order kept), 's' and the string, or 'n' for null. No string
// of the input reaches the checker as it is, so none collides with these.
const (
	spaceShift  = 40
	maxIntSpace = 1 << (59 - spaceShift)
)

// encode maps v of space into the checker's values.
func encode(space uint32, v history.Value) history.Value {
	if v.Kind == history.Int && v.N >= 0 && v.N < 1<<spaceShift && space < maxIntSpace {
		return history.IntValue(int64(space)<<spaceShift | v.N)
	}
	b := make([]byte, 0, 14+len(v.S))
	b = append(b, 0)
	b = binary.BigEndian.AppendUint32(b, space)
	switch v.Kind {
	case history.Int:
		b = append(b, 'i')
		b = binary.BigEndian.AppendUint64(b, uint64(v.N)^1<<63)
	case history.String:
		b = append(b, 's')
		b = append(b, v.S...)
	default:
		b = append(b, 'n')
	}
	return history.StringValue(string(b))
}

// decode is encode's inverse: the space and the value as the input had
// it. A value encode never makes is returned as it is, in space 0.
func decode(v history.Value) (uint32, history.Value) {
	switch {
	case v.Kind == history.Int && v.N >= 0:
		return uint32(v.N >> spaceShift), history.IntValue(v.N & (1<<spaceShift - 1))
	case v.Kind != history.String || len(v.S) < 6 || v.S[0] != 0:
		return 0, v
	}
	space := binary.BigEndian.Uint32([]byte(v.S[1:5]))
	switch rest := v.S[6:]; v.S[5] {
	case 'i':
		if len(rest) == 8 {
			return space, history.IntValue(int64(binary.BigEndian.Uint64([]byte(rest)) ^ 1<<63))
		}
	case 's':
		return space, history.StringValue(rest)
	case 'n':
		return space, history.NullValue
	}
	return 0, v
}

// stream is what the service knows of one stream: its index, its
// keyspace's, and the ids it has accepted with their transactions'
// digests.
type stream struct {
	name     string
	idx      uint32
	keyspace uint32
	seen     digestSet
}

// streams is the registry of streams and keyspaces; the checker's
// goroutine owns it.
type streams struct {
	byName    map[string]*stream
	list      []*stream
	spaces    map[string]uint32
	spaceName []string
}

func newStreams() *streams {
	s := &streams{byName: map[string]*stream{}, spaces: map[string]uint32{"": 0}, spaceName: []string{""}}
	s.list = append(s.list, &stream{})
	s.byName[""] = s.list[0]
	return s
}

// errKeyspace refuses a stream's batch naming another keyspace.
var errKeyspace = errors.New("a stream keeps the keyspace of its first batch")

// get returns id's stream, registering it (and its keyspace) on its first
// batch.
func (r *streams) get(id wire.Identity) (*stream, error) {
	ks, ok := r.spaces[id.Keyspace]
	if !ok {
		ks = uint32(len(r.spaceName))
		r.spaces[id.Keyspace] = ks
		r.spaceName = append(r.spaceName, id.Keyspace)
	}
	if st := r.byName[id.Stream]; st != nil {
		if st.keyspace != ks {
			return nil, fmt.Errorf("%w: stream %q is in keyspace %q, not %q", errKeyspace, id.Stream, r.spaceName[st.keyspace], id.Keyspace)
		}
		return st, nil
	}
	st := &stream{name: id.Stream, idx: uint32(len(r.list)), keyspace: ks}
	r.list = append(r.list, st)
	r.byName[id.Stream] = st
	return st, nil
}

// name returns the name of the stream with index i.
func (r *streams) name(i uint32) string {
	if int(i) < len(r.list) {
		return r.list[i].name
	}
	return ""
}

// errConflict is a transaction under an id its stream holds for another.
var errConflict = errors.New("a different transaction under a used id")

// repeats sorts the transactions txns, whose digests are digests, of a
// batch against what the stream has accepted: it returns which of them
// are there already as they are, or repeat one before them in txns as it
// is (nil when none), and how many; or the index of the first that is a
// different transaction under an id the stream or the batch has, and
// errConflict.
func (st *stream) repeats(txns []history.Txn, digests []uint64) ([]bool, int, int, error) {
	var batch map[history.Value]uint64
	if len(txns) > 1 && !growing(txns) {
		batch = make(map[history.Value]uint64, len(txns))
	}
	var dup []bool
	n := 0
	for i := range txns {
		id := txns[i].ID
		d, seen := st.seen.get(id)
		if !seen && batch != nil {
			d, seen = batch[id]
		}
		switch {
		case seen && d != digests[i]:
			return nil, 0, i, errConflict
		case seen:
			if dup == nil {
				dup = make([]bool, len(txns))
			}
			dup[i] = true
			n++
		case batch != nil:
			batch[id] = digests[i]
		}
	}
	return dup, n, -1, nil
}

// growing says whether txns' ids are integers in increasing order, as a
// producer numbering its transactions sends them: then none repeats
// another of the batch.
func growing(txns []history.Txn) bool {
	for i := range txns {
		if txns[i].ID.Kind != history.Int || i > 0 && txns[i].ID.N <= txns[i-1].ID.N {
			return false
		}
	}
	return true
}

// encodeBatch maps the ids and sessions of src's transactions txns into
// st's space and src's keys into st's keyspace, in place.
func (st *stream) encodeBatch(src *history.History, txns []history.Txn) {
	for i := range src.Keys {
		src.Keys[i] = encode(st.keyspace, src.Keys[i])
	}
	for i := range src.Sessions {
		src.Sessions[i] = encode(st.idx, src.Sessions[i])
	}
	for i := range txns {
		txns[i].ID = encode(st.idx, txns[i].ID)
	}
}

// readKinds are the findings about a read of another transaction's write:
// a transaction missing from the checker (refused, lost) may be that
// writer, or write the same value later, so they are not reported in a
// keyspace that lost any.
var readKinds = map[anomaly.Kind]bool{
	anomaly.ThinAirRead: true, anomaly.AbortedRead: true, anomaly.IntermediateRead: true,
	anomaly.FutureRead: true, anomaly.StaleRead: true, anomaly.ReadBeyondSnapshot: true,
}

// decoded returns the finding a over h, a violation's small history, with
// the input's ids, sessions and keys (keys the finding names only), and
// the streams of its transactions and its keyspace.
func (r *streams) decoded(h *history.History, a anomaly.Anomaly) (*history.History, anomaly.Anomaly, []string, uint32) {
	d := &history.History{Header: h.Header}
	keys := map[history.KeyID]history.KeyID{}
	keyspace := uint32(0)
	key := func(k history.KeyID) history.KeyID {
		if k < 0 || int(k) >= len(h.Keys) {
			return k
		}
		if n, ok := keys[k]; ok {
			return n
		}
		n := history.KeyID(len(d.Keys))
		keys[k] = n
		var v history.Value
		keyspace, v = decode(h.Keys[k])
		d.Keys = append(d.Keys, v)
		return n
	}
	if a.Key != history.NoKey {
		a.Key = key(a.Key)
	}
	a.Cycle = slices.Clone(a.Cycle)
	for i := range a.Cycle {
		if a.Cycle[i].Key != history.NoKey {
			a.Cycle[i].Key = key(a.Cycle[i].Key)
		}
	}
	for _, s := range h.Sessions {
		_, v := decode(s)
		d.Sessions = append(d.Sessions, v)
	}
	names := make([]string, len(h.Txns))
	d.Txns = slices.Clone(h.Txns)
	for i := range d.Txns {
		t := &d.Txns[i]
		var sp uint32
		sp, t.ID = decode(t.ID)
		names[i] = r.name(sp)
		t.Ops = slices.Clone(t.Ops)
		for j := range t.Ops {
			t.Ops[j].Key = key(t.Ops[j].Key)
		}
	}
	if len(h.Header.Initial.Values) > 0 {
		d.Header.Initial.Values = map[history.KeyID]history.Value{}
		for k, v := range h.Header.Initial.Values {
			d.Header.Initial.Values[key(k)] = v
		}
	}
	return d, a, names, keyspace
}
