package saturate

import (
	"slices"

	"github.com/isoscope/isoscope/internal/check/smalltab"
	"github.com/isoscope/isoscope/internal/history"
)

// reader is the inferences' scratch for one reader at a time: its
// distinct read keys in the order first read, each read's key as a
// position among them, and small hash tables from a key to its position
// and from a transaction read from to the first read from it (package
// smalltab).
type reader struct {
	keys []history.KeyID // distinct read keys, in the order first read
	at   []int32         // per read (from rFirst[t]): its key's position in keys
	key  smalltab.Table  // key -> position in keys
	src  smalltab.Table  // transaction read from -> the first read from it
}

// load starts reader t: its keys and positions, and no source yet.
func (s *state) load(rd *reader, t history.TxnID) {
	lo, hi := s.rFirst[t], s.rFirst[t+1]
	rd.keys, rd.at = rd.keys[:0], rd.at[:0]
	rd.key.Reset(int(hi - lo))
	rd.src.Reset(int(hi - lo))
	for r := lo; r < hi; r++ {
		k := s.rKey[r]
		i, ok := rd.key.Get(int32(k))
		if !ok {
			i = int32(len(rd.keys))
			rd.keys = append(rd.keys, k)
			rd.key.Put(int32(k), i)
		}
		rd.at = append(rd.at, i)
	}
}

// common returns, in out, the positions in rd.keys of every key source
// writes that the reader reads, walking the smaller of the two sets: in
// source's (sorted) order when its writes are fewer, else in the order
// the reader first read them.
func (s *state) common(rd *reader, source history.TxnID, out []int32) []int32 {
	out = out[:0]
	ws := s.writes(source)
	if len(ws) <= len(rd.keys) {
		for _, k := range ws {
			if i, ok := rd.key.Get(int32(k)); ok {
				out = append(out, i)
			}
		}
		return out
	}
	for i, k := range rd.keys {
		if _, ok := slices.BinarySearch(ws, k); ok {
			out = append(out, int32(i))
		}
	}
	return out
}

// warmSources loads, for the reads lo..hi, where the written keys of the
// transaction each read from start, and the first of them, and returns a
// value made of them that means nothing: the loads do not depend on one
// another, so their cache misses overlap, where the reader's walk of its
// sources' writes (common) would wait for each in turn.
func (s *state) warmSources(lo, hi int32) uint32 {
	var sum uint32
	for _, w := range s.rWriter[lo:hi] {
		if w >= 0 {
			sum += uint32(s.wFirst[w])
		}
	}
	for _, w := range s.rWriter[lo:hi] {
		if w >= 0 {
			if f := s.wFirst[w]; f < s.wFirst[w+1] {
				sum += uint32(s.wKey[f])
			}
		}
	}
	return sum
}
