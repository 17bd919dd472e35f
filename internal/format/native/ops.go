package native

import (
	"strconv"
	"strings"

	"github.com/isoscope/isoscope/internal/history"
)

// slabOps is how many operations one shared allocation holds.
const slabOps = 2048

// ops parses the "ops" array into t.Ops, sized exactly.
func (r *Reader) ops(t *history.Txn) error {
	s := &r.s
	switch s.ws() {
	case '[':
		s.i++
	case 0:
		return s.syntax("an array of operations")
	default:
		return s.wrongType("ops", "must be an array of operations")
	}
	ops := r.scratch[:0]
	if s.ws() == ']' {
		s.i++
	} else {
		for i := 0; ; i++ {
			ops = append(ops, history.Op{})
			s.op = i
			err := r.op(&ops[i], i)
			s.op = -1
			if err != nil {
				r.scratch = ops[:0]
				return err
			}
			more, err := s.more(']')
			if err != nil {
				r.scratch = ops[:0]
				return err
			}
			if !more {
				break
			}
		}
	}
	r.scratch = ops[:0]
	t.Ops = r.alloc(len(ops))
	copy(t.Ops, ops)
	clear(ops) // drop references to lists and ranges
	return nil
}

// alloc returns n zeroed operations carved from a shared slab.
func (r *Reader) alloc(n int) []history.Op {
	if n == 0 {
		return nil
	}
	if n > len(r.slab) {
		if n > slabOps/4 {
			return make([]history.Op, n)
		}
		r.slab = make([]history.Op, slabOps)
	}
	out := r.slab[:n:n]
	r.slab = r.slab[n:]
	return out
}

// opField names operation i for messages.
func opField(i int) string { return "ops[" + strconv.Itoa(i) + "]" }

// arity is the message for an operation of the wrong shape.
func arity(name string) string {
	switch name {
	case "r":
		return `"r" needs a key and a value (or a list)`
	case "w":
		return `"w" needs a key and a value`
	case "d":
		return `"d" needs a key`
	case "append":
		return `"append" needs a key and an element`
	}
	return strconv.Quote(name) + " needs lo, hi and the list of [key, value] pairs"
}

// op parses operation i.
func (r *Reader) op(op *history.Op, i int) error {
	s := &r.s
	if c := s.ws(); c != '[' {
		if c == ']' || c == 0 {
			return s.syntax("an operation")
		}
		return s.wrongType(opField(i), "an operation must be an array that starts with its name")
	}
	s.i++
	if s.ws() != '"' {
		return s.errf(opField(i), "an operation must be an array that starts with its name")
	}
	b, err := s.str()
	if err != nil {
		return err
	}
	var name string
	switch string(b) {
	case "r":
		name, op.Kind = "r", history.Read
	case "w":
		name, op.Kind = "w", history.Write
	case "d":
		name, op.Kind = "d", history.Delete
	case "append":
		name, op.Kind = "append", history.Append
	case "scan":
		name, op.Kind = "scan", history.Scan
	case "iter":
		name, op.Kind = "iter", history.Iter
	default:
		return s.errf(opField(i), "unknown operation "+strconv.Quote(string(b)))
	}
	if err := r.arg(i, name); err != nil {
		return err
	}
	if op.Kind.IsRange() {
		op.Key = history.NoKey
		if err := r.rangeOp(op, i, name); err != nil {
			return err
		}
	} else {
		if op.Key, err = r.key(i, "key"); err != nil {
			return err
		}
		if op.Kind != history.Delete {
			if err := r.arg(i, name); err != nil {
				return err
			}
			if op.Kind == history.Read && s.ws() == '[' {
				op.Kind = history.ReadList
				if op.List, err = r.list(i); err != nil {
					return err
				}
			} else if err := r.value(&op.Value, i, name); err != nil {
				return err
			}
		}
	}
	return r.attrs(op, i, name)
}

// arg consumes the ',' before a required argument of operation i.
func (r *Reader) arg(i int, name string) error {
	s := &r.s
	switch s.ws() {
	case ',':
		s.i++
		return nil
	case ']':
		return s.errf(opField(i), arity(name))
	}
	return s.syntax("',' or ']'")
}

// attrs parses the optional trailing attributes and the closing ']'.
func (r *Reader) attrs(op *history.Op, i int, name string) error {
	s := &r.s
	switch s.ws() {
	case ']':
		s.i++
		return nil
	case ',':
		s.i++
	default:
		return s.syntax("',' or ']'")
	}
	if s.ws() != '{' {
		return s.errf(opField(i), arity(name))
	}
	s.i++
	if s.ws() == '}' {
		s.i++
	} else {
		for {
			if s.ws() != '"' {
				return s.syntax("an attribute name")
			}
			b, err := s.str()
			if err != nil {
				return err
			}
			if err := s.expect(':', "':'"); err != nil {
				return err
			}
			if string(b) == "lock" {
				if op.Lock, err = s.boolean(opField(i), true); err != nil {
					return s.errf(opField(i), `attribute "lock" must be true or false`)
				}
			} else if err := s.skip(1); err != nil {
				return err
			}
			more, err := s.more('}')
			if err != nil {
				return err
			}
			if !more {
				break
			}
		}
	}
	if s.ws() != ']' {
		return s.errf(opField(i), arity(name))
	}
	s.i++
	return nil
}

// value scans the value of a read or write, or the element of an append.
func (r *Reader) value(v *history.Value, i int, name string) error {
	s := &r.s
	if c := s.ws(); c == ']' || c == '{' {
		return s.errf(opField(i), arity(name))
	}
	what := "the value must be an integer, a string or null"
	switch name {
	case "r":
		what = "the value read must be an integer, a string, null or a list"
	case "append":
		what = "the element must be an integer, a string or null"
	}
	x, err := s.scalar(what)
	if err != nil {
		return err
	}
	*v = x.value()
	return nil
}

// value converts a scanned scalar, allocating a string if needed.
func (x scalar) value() history.Value {
	switch x.kind {
	case sInt:
		return history.IntValue(x.n)
	case sString:
		return history.StringValue(string(x.s))
	}
	return history.NullValue
}

// list parses the result of a list read.
func (r *Reader) list(i int) ([]history.Value, error) {
	s := &r.s
	s.i++ // '['
	if s.ws() == ']' {
		s.i++
		return nil, nil
	}
	var out []history.Value
	for {
		x, err := s.scalar("a list element must be an integer, a string or null")
		if err != nil {
			return nil, err
		}
		out = append(out, x.value())
		if more, err := s.more(']'); err != nil {
			return nil, err
		} else if !more {
			return out, nil
		}
	}
}

// key scans a key of operation i and interns it.
func (r *Reader) key(i int, what string) (history.KeyID, error) {
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

// intern adds key k to the history (or finds it).
func (r *Reader) intern(k history.Value) history.KeyID {
	if k.Kind == history.Int {
		// h.Key is the truth; the dense table and the map only speed it up.
		if slot := dense(&r.denseKeys, k.N, len(r.h.Keys)); slot != nil {
			if *slot == 0 {
				*slot = int32(r.h.Key(k)) + 1
			}
			return history.KeyID(*slot - 1)
		}
		if id, ok := r.intKeys[k.N]; ok {
			return id
		}
		id := r.h.Key(k)
		r.intKeys[k.N] = id
		return id
	}
	if id, ok := r.strKeys[k.S]; ok {
		return id
	}
	id := r.h.Key(k)
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
