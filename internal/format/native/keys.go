package native

import (
	"strconv"
	"strings"

	"github.com/isoscope/isoscope/internal/history"
)

// key scans a key of operation i and interns it.
func (r *Reader) key(i int, what string) (history.KeyID, error) {
	s := &r.s
	if c := s.ws(); c-'0' <= 9 && r.keyKind == history.Int {
		// The fast path: an integer key already seen.
		start := s.i
		if mag, _, kind, err := s.number(); err == nil && kind == numInt && mag <= 1<<63-1 {
			if id, ok := r.intKeys.get(int64(mag)); ok {
				return history.KeyID(id), nil
			}
		}
		s.i = start
	}
	must := "key must be an integer or a string"
	if what != "key" {
		must = "a result key must be an integer or a string"
	}
	x, err := r.s.scalar(must)
	if err != nil {
		return 0, err
	}
	if x.kind == sNull {
		return 0, r.s.errf(opField(i), what+" must be an integer or a string, not null")
	}
	if err := r.kind(x, i, what); err != nil {
		return 0, err
	}
	if x.kind == sInt {
		return r.intern(history.IntValue(x.n)), nil
	}
	if id, ok := r.strKeys[string(x.s)]; ok {
		return id, nil
	}
	return r.intern(x.value()), nil
}

// intern adds key k to the history (or finds it). The reader's tables are
// the truth: the history's own index of keys is not kept while reading
// (history.AddKey).
func (r *Reader) intern(k history.Value) history.KeyID {
	if k.Kind == history.Int {
		if id, ok := r.intKeys.get(k.N); ok {
			return history.KeyID(id)
		}
		bound := max(len(r.h.Keys), r.keyBound)
		id := r.h.AddKey(k)
		r.intKeys.put(k.N, int32(id), bound)
		return id
	}
	if id, ok := r.strKeys[k.S]; ok {
		return id
	}
	id := r.h.AddKey(k)
	r.strKeys[k.S] = id
	return id
}

// kind checks that key x is of the history's kind of key, fixing the kind
// at the first key.
func (r *Reader) kind(x scalar, i int, what string) error {
	k := history.ValueKind(x.kind)
	if k == r.keyKind {
		return nil
	}
	if r.keyKind == history.Null {
		r.keyKind, r.keyKindLine = k, r.s.line
		return r.resolveInitial()
	}
	return r.s.errf(opField(i), what+" "+x.value().String()+" is "+kindName(k)+", but this history's keys are "+
		kindName(r.keyKind)[strings.IndexByte(kindName(r.keyKind), ' ')+1:]+"s (since line "+strconv.Itoa(r.keyKindLine)+")")
}

func kindName(k history.ValueKind) string {
	if k == history.Int {
		return "an integer"
	}
	return "a string"
}

// rangeOp parses lo, hi and the pairs of a scan or iterator.
func (r *Reader) rangeOp(op *history.Op, i int, name string) error {
	s := &r.s
	rg := &history.Range{}
	lo, err := s.scalar("lo must be an integer or a string")
	if err != nil {
		return err
	}
	if lo.kind == sNull {
		return s.errf(opField(i), "lo must be an integer or a string, not null")
	}
	if err := r.kind(lo, i, "lo"); err != nil {
		return err
	}
	rg.Lo = lo.value()
	if err := r.arg(i, name); err != nil {
		return err
	}
	hi, err := s.scalar("hi must be an integer, a string or null")
	if err != nil {
		return err
	}
	if hi.kind == sNull {
		rg.HiOpen = true
	} else if err := r.kind(hi, i, "hi"); err != nil {
		return err
	}
	rg.Hi = hi.value()
	if err := r.arg(i, name); err != nil {
		return err
	}
	if s.ws() != '[' {
		if c := s.ws(); c == '{' || c == ']' {
			return s.errf(opField(i), arity(name))
		}
		return s.wrongType(opField(i), "the result must be an array of [key, value] pairs")
	}
	s.i++
	if s.ws() == ']' {
		s.i++
	} else {
		for {
			if s.ws() != '[' {
				return s.errf(opField(i), "the result must be an array of [key, value] pairs")
			}
			s.i++
			k, err := r.key(i, "a result key")
			if err != nil {
				return err
			}
			if s.ws() != ',' {
				return s.errf(opField(i), "the result must be an array of [key, value] pairs")
			}
			s.i++
			x, err := s.scalar("a result value must be an integer, a string or null")
			if err != nil {
				return err
			}
			if s.ws() != ']' {
				return s.errf(opField(i), "the result must be an array of [key, value] pairs")
			}
			s.i++
			rg.Pairs = append(rg.Pairs, history.KV{Key: k, Value: x.value()})
			if more, err := s.more(']'); err != nil {
				return err
			} else if !more {
				break
			}
		}
	}
	op.Range = rg
	return r.checkRange(rg, i)
}

// checkRange checks that the pairs are in strictly ascending key order
// inside [lo, hi).
func (r *Reader) checkRange(rg *history.Range, i int) error {
	keys := r.h.Keys
	for j, p := range rg.Pairs {
		k := keys[p.Key]
		if j > 0 {
			if prev := keys[rg.Pairs[j-1].Key]; history.Compare(prev, k) >= 0 {
				return r.s.errf(opField(i), "result keys are not in strictly ascending order: "+k.String()+" after "+prev.String())
			}
		}
		if history.Compare(k, rg.Lo) < 0 || !rg.HiOpen && history.Compare(k, rg.Hi) >= 0 {
			hi := "∞"
			if !rg.HiOpen {
				hi = rg.Hi.String()
			}
			return r.s.errf(opField(i), "result key "+k.String()+" is outside the range ["+rg.Lo.String()+", "+hi+")")
		}
	}
	return nil
}
