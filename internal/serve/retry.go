package serve

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math/bits"
	"slices"
	"strings"

	"github.com/isoscope/isoscope/internal/history"
)

// Retries. A client that resends a batch after a timeout (HTTP), or a
// message delivered or published again (NATS), repeats transactions the
// stream already holds. A transaction is the same as one accepted under
// its id when its canonical encoding (appendCanonical) is: what it says,
// not how its line was written, so that the order of a line's keys, its
// spaces and the line it came on do not matter. The same transaction
// again is taken without effect and counted as a duplicate; a different
// one under a used id refuses its batch (409), and its keyspace then
// suppresses findings about reads (the missing transaction may be their
// writer).
//
// The service keeps, for every transaction id a stream accepted, a 64-bit
// digest of the transaction: hash/maphash of the canonical encoding, with
// a seed drawn at random when the service starts and never shown. A retry
// is compared with the one digest under its id, so the birthday bound
// plays no part: a different transaction passes for the accepted one only
// when the two encodings collide under the seed, about 2^-64 per
// comparison (5 in 10^11 over 10^9 conflicting retries). maphash is not a
// cryptographic hash, but a sender sees neither the seed nor a digest,
// only 202 or 409; and where SHA-256 would add some 40% to the parsing of
// every transaction received, the encoding and maphash add some 12%.
//
// The digests stay in memory for the service's life: the checker's
// spilling of old transactions under --memory-mb leaves them alone, so a
// retry of a transaction spilled long ago is still told from a conflict.
// They take about 9.5 bytes a transaction for a stream that numbers its
// transactions densely, some 75 for sparse integer ids, and some 70 plus
// the id for string ids, outside the checker's memory bound.

// digester computes transactions' digests with the service's seed.
type digester struct {
	seed maphash.Seed
}

func newDigester() *digester { return &digester{seed: maphash.MakeSeed()} }

// batch returns the digest of each of txns, of batch h.
func (d *digester) batch(h *history.History, txns []history.Txn) []uint64 {
	out := make([]uint64, len(txns))
	var buf []byte
	for i := range txns {
		buf = appendCanonical(buf[:0], h, &txns[i])
		out[i] = maphash.Bytes(d.seed, buf)
	}
	return out
}

// appendCanonical appends the canonical encoding of transaction t of h:
// its id, its session's name, status, client times and database
// timestamps (each with whether it is there), and each operation's kind,
// lock, key (by name), value, list and range — everything the
// transaction says but the line it came on. Each value is its kind, then
// 8 bytes of an integer or the length and bytes of a string, so no two
// transactions share an encoding.
func appendCanonical(b []byte, h *history.History, t *history.Txn) []byte {
	b = append(b, 1) // the encoding's version
	b = appendValue(b, t.ID)
	session := history.NullValue
	if int(t.Session) >= 0 && int(t.Session) < len(h.Sessions) {
		session = h.Sessions[t.Session]
	}
	b = appendValue(b, session)
	b = append(b, byte(t.Status), flag(t.HasTime), flag(t.HasStartTS), flag(t.HasCommitTS))
	b = binary.BigEndian.AppendUint64(b, uint64(t.Begin))
	b = binary.BigEndian.AppendUint64(b, uint64(t.End))
	b = binary.BigEndian.AppendUint64(b, t.StartTS)
	b = binary.BigEndian.AppendUint64(b, t.CommitTS)
	b = binary.AppendUvarint(b, uint64(len(t.Ops)))
	key := func(b []byte, k history.KeyID) []byte {
		if k < 0 || int(k) >= len(h.Keys) {
			return append(b, 0xff)
		}
		return appendValue(b, h.Keys[k])
	}
	for _, o := range t.Ops {
		b = append(b, byte(o.Kind), flag(o.Lock))
		b = key(b, o.Key)
		b = appendValue(b, o.Value)
		b = binary.AppendUvarint(b, uint64(len(o.List)))
		for _, v := range o.List {
			b = appendValue(b, v)
		}
		if o.Range == nil {
			b = append(b, 0)
			continue
		}
		r := o.Range
		b = append(b, 1, flag(r.HiOpen))
		b = appendValue(b, r.Lo)
		b = appendValue(b, r.Hi)
		b = binary.AppendUvarint(b, uint64(len(r.Pairs)))
		for _, kv := range r.Pairs {
			b = key(b, kv.Key)
			b = appendValue(b, kv.Value)
		}
	}
	return b
}

func flag(v bool) byte {
	if v {
		return 1
	}
	return 0
}

// appendValue appends v's kind and its integer or string.
func appendValue(b []byte, v history.Value) []byte {
	b = append(b, byte(v.Kind))
	switch v.Kind {
	case history.Int:
		b = binary.BigEndian.AppendUint64(b, uint64(v.N))
	case history.String:
		b = binary.AppendUvarint(b, uint64(len(v.S)))
		b = append(b, v.S...)
	}
	return b
}

// digestSet maps a stream's accepted transaction ids to their digests.
// Integer ids are kept in blocks of 64 consecutive ids: a mask of those
// present and their digests in order, so that densely numbered ids cost
// little more than their digests; other ids in a map.
type digestSet struct {
	blocks map[int64]digestBlock
	other  map[history.Value]uint64
}

// digestBlock holds the ids 64*k to 64*k+63 present in a digestSet: bit
// i of has for id 64*k+i, whose digest is d[the bits of has below i].
type digestBlock struct {
	has uint64
	d   []uint64
}

// get returns the digest of id, and whether id is in s.
func (s *digestSet) get(id history.Value) (uint64, bool) {
	if id.Kind != history.Int {
		d, ok := s.other[id]
		return d, ok
	}
	blk, ok := s.blocks[id.N>>6]
	bit := uint64(1) << (id.N & 63)
	if !ok || blk.has&bit == 0 {
		return 0, false
	}
	return blk.d[bits.OnesCount64(blk.has&(bit-1))], true
}

// put records digest d for id, which s does not hold.
func (s *digestSet) put(id history.Value, d uint64) {
	if id.Kind != history.Int {
		if s.other == nil {
			s.other = map[history.Value]uint64{}
		}
		s.other[id] = d
		return
	}
	if s.blocks == nil {
		s.blocks = map[int64]digestBlock{}
	}
	k := id.N >> 6
	blk := s.blocks[k]
	bit := uint64(1) << (id.N & 63)
	blk.d = slices.Insert(blk.d, bits.OnesCount64(blk.has&(bit-1)), d)
	blk.has |= bit
	s.blocks[k] = blk
}

// SuppressionWarning says what a verdict may miss when suppressed
// findings about reads went unreported because the keyspaces tainted lost
// refused transactions: the warning the service's state, its summary,
// its live page and the merged findings of shards give beside the
// verdict. It is empty when nothing was suppressed.
func SuppressionWarning(suppressed uint64, tainted []string) string {
	if suppressed == 0 {
		return ""
	}
	names := make([]string, len(tainted))
	for i, k := range tainted {
		names[i] = fmt.Sprintf("%q", k)
		if k == "" {
			names[i] = "the default keyspace"
		}
	}
	where := "keyspaces that"
	if len(names) == 1 {
		where = "keyspace " + names[0] + ", which"
		if tainted[0] == "" {
			where = "the default keyspace, which"
		}
	} else if len(names) > 1 {
		where = "keyspaces " + strings.Join(names, ", ") + ", which"
	}
	noun := "findings"
	if suppressed == 1 {
		noun = "finding"
	}
	return fmt.Sprintf("%d %s suppressed: reads of other transactions' writes in %s lost transactions the service refused (a different transaction under a used id, or a bad batch), are not reported, since a lost transaction may be their writer; violations may be missing from this verdict",
		suppressed, noun, where)
}
