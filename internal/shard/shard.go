// Package shard cuts transactions into the pieces that checkers of one
// shard each check, for online checking spread over several processes.
//
// The Chronos/Aion axioms partition: Int, Ext and NoConflict (and
// Aion-SER's order of a key's writers) concern the operations on one key
// at a time, and the Session axiom the transactions of one session. So a
// transaction is cut into one key piece per key shard it touches — the
// shard of a key is a hash of the key, modulo the number of shards — with
// its operations on that shard's keys, and one session piece, on the shard
// of its session, with its first operation only (the history format wants
// one, and the session axiom reads none). Every piece carries the
// transaction's id, session, status and start and commit timestamps (not
// the client's begin and end instants, which the timestamp checkers do not
// read), so it names its transaction; and a piece's message says how many pieces its
// transaction has and where the piece's operations are in it.
package shard

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/isoscope/isoscope/internal/format/native"
	"github.com/isoscope/isoscope/internal/history"
)

// Kind is what a piece is for: a key shard's or a session shard's.
type Kind byte

// The kinds of shard, and of piece.
const (
	Keys     Kind = 'k'
	Sessions Kind = 's'
)

// ID names a shard: its kind and number.
type ID struct {
	Kind  Kind
	Shard int
}

// String writes id as k:3 or s:0.
func (id ID) String() string { return string(id.Kind) + ":" + strconv.Itoa(id.Shard) }

// Subject is the NATS subject of id's pieces under prefix: PREFIX.k.3.
func (id ID) Subject(prefix string) string {
	return prefix + "." + string(id.Kind) + "." + strconv.Itoa(id.Shard)
}

// ParseID reads k:3 or s:0, a shard of n (when n > 0: the number must be
// below n).
func ParseID(s string, n int) (ID, error) {
	kind, num, ok := strings.Cut(s, ":")
	if !ok || (kind != "k" && kind != "s") {
		return ID{}, fmt.Errorf("shard %q: want k:N (keys) or s:N (sessions)", s)
	}
	i, err := strconv.Atoi(num)
	if err != nil || i < 0 {
		return ID{}, fmt.Errorf("shard %q: %q is not a shard number", s, num)
	}
	if n > 0 && i >= n {
		return ID{}, fmt.Errorf("shard %q: the shards are numbered 0 to %d", s, n-1)
	}
	return ID{Kind(kind[0]), i}, nil
}

// Function names the hash Of shards by. Every message of pieces says it,
// with the number of shards (Sharding), and a worker refuses pieces cut
// otherwise: a key's state must be at one worker.
const Function = "fnv1a64-fmix64"

// Of returns the shard of v (a key or a session label) among n: an FNV-1a
// hash of its kind and value, finished by MurmurHash3's 64-bit mixer,
// modulo n. Every publisher shards alike. (FNV-1a alone is a poor hash
// modulo a power of two: its low bits depend only on the low bits of each
// byte, so that with 4 shards the keys 0, 4, 8, …, 252 all fell in one.)
func Of(v history.Value, n int) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New64a()
	var b [9]byte
	switch v.Kind {
	case history.Int:
		b[0] = 'i'
		binary.BigEndian.PutUint64(b[1:], uint64(v.N))
		h.Write(b[:])
	case history.String:
		h.Write([]byte{'s'})
		h.Write([]byte(v.S))
	default:
		h.Write([]byte{'n'})
	}
	return int(fmix64(h.Sum64()) % uint64(n))
}

// fmix64 is MurmurHash3's finalizer: every bit of x reaches every bit of
// the result.
func fmix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// Sharding says how pieces were cut: Function and n shards, as
// "fnv1a64-fmix64/4".
func Sharding(n int) string { return Function + "/" + strconv.Itoa(n) }

// ParseSharding reads what Sharding wrote: the number of shards. It
// refuses another function, or no number of shards.
func ParseSharding(s string) (int, error) {
	if s == "" {
		return 0, fmt.Errorf("no sharding named (pieces cut by an isoscope before %s, or by another program)", Function)
	}
	f, num, _ := strings.Cut(s, "/")
	if f != Function {
		return 0, fmt.Errorf("sharding %q: cut by function %q, not %s", s, f, Function)
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("sharding %q: %q is not a number of shards", s, num)
	}
	return n, nil
}

// Piece is one piece of a transaction.
type Piece struct {
	ID ID
	// Of is the number of pieces of the transaction.
	Of int
	// Ops are the indexes of the piece's operations in the transaction,
	// in order (none for a session piece, which carries the
	// transaction's first operation, or none).
	Ops []int
}

// Split cuts t, a transaction of h, into its pieces among n key shards
// and n session shards: the key pieces in the order of their shards, then
// the session piece.
func Split(h *history.History, t *history.Txn, n int) []Piece {
	var byShard [][]int
	var order []int
	for j := range t.Ops {
		s := Of(h.Keys[t.Ops[j].Key], n)
		for len(byShard) <= s {
			byShard = append(byShard, nil)
		}
		if byShard[s] == nil {
			order = append(order, s)
		}
		byShard[s] = append(byShard[s], j)
	}
	slices.Sort(order)
	out := make([]Piece, 0, len(order)+1)
	for _, s := range order {
		out = append(out, Piece{ID: ID{Keys, s}, Ops: byShard[s]})
	}
	out = append(out, Piece{ID: ID{Sessions, Of(h.Sessions[t.Session], n)}})
	for i := range out {
		out[i].Of = len(out)
	}
	return out
}

// AppendLine appends the piece p of t (of h) to b as a line of the history
// format: t with the piece's operations, without the client's instants
// (begin, end), which the timestamp checkers do not read. ops is scratch
// space, returned for the next call.
func AppendLine(b []byte, h *history.History, t *history.Txn, p *Piece, ops []history.Op) ([]byte, []history.Op, error) {
	piece := *t
	piece.HasTime = false // the client's instants: Aion reads the database's timestamps only
	if p.ID.Kind == Sessions {
		piece.Ops = t.Ops[:min(1, len(t.Ops))]
	} else {
		ops = ops[:0]
		for _, j := range p.Ops {
			ops = append(ops, t.Ops[j])
		}
		piece.Ops = ops
	}
	if len(piece.Ops) == 0 && piece.Status == history.Committed {
		return b, ops, fmt.Errorf("transaction %s (line %d) commits no operations: the history format holds none", t.ID, t.Line)
	}
	b, err := native.AppendTxn(b, h, &piece)
	return b, ops, err
}

// Header is a piece's entry in its message's header (one per line of the
// message, in order): the number of pieces of its transaction, and when
// the piece's operations are not the transaction's first ones in order,
// their indexes in the transaction — "3", or "3/0.2.5" — so that a
// checker of the piece can place an operation in the whole transaction.
func (p *Piece) Header() string {
	b := strconv.AppendInt(nil, int64(p.Of), 10)
	if p.ID.Kind == Sessions || isPrefix(p.Ops) {
		return string(b)
	}
	for i, j := range p.Ops {
		if i == 0 {
			b = append(b, '/')
		} else {
			b = append(b, '.')
		}
		b = strconv.AppendInt(b, int64(j), 10)
	}
	return string(b)
}

// isPrefix says whether ops are 0, 1, 2, ….
func isPrefix(ops []int) bool {
	for i, j := range ops {
		if i != j {
			return false
		}
	}
	return true
}

// ParseHeader reads a Header entry: the number of pieces, and the
// operations' indexes in the transaction (nil when they are its first).
func ParseHeader(s string) (int, []int32, error) {
	n, ops, err := AppendHeader(nil, s)
	return n, ops, err
}

// AppendHeader reads a Header entry: it returns the number of pieces, and
// dst with the operations' indexes in the transaction appended (dst as it
// was when they are its first). It allocates nothing when dst has room.
func AppendHeader(dst []int32, s string) (int, []int32, error) {
	of, rest, more := strings.Cut(s, "/")
	n, ok := smallInt(of)
	if !ok || n < 1 {
		return 0, dst, fmt.Errorf("piece header %q: %q is not a number of pieces", s, of)
	}
	if !more {
		return n, dst, nil
	}
	for rest != "" || more {
		var f string
		f, rest, more = strings.Cut(rest, ".")
		j, ok := smallInt(f)
		if !ok {
			return 0, dst, fmt.Errorf("piece header %q: %q is not an operation's index", s, f)
		}
		dst = append(dst, int32(j))
	}
	return n, dst, nil
}

// smallInt reads a non-negative decimal below 2^31.
func smallInt(s string) (int, bool) {
	if s == "" || len(s) > 10 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, n <= math.MaxInt32
}
