package native

import (
	"strconv"

	"github.com/isoscope/isoscope/internal/history"
)

// slabOps is how many operations one shared allocation holds.
const slabOps = 2048

// ops parses the "ops" array into t.Ops, sized exactly. The operations
// are parsed in place at the head of the shared slab (no copy: the copy of
// 8M operations with their pointers cost a 1M-transaction read more than a
// second); a transaction that outgrows what is left of the slab moves to a
// fresh one.
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
	if s.ws() == ']' {
		s.i++
		t.Ops = nil
		return nil
	}
	n := 0
	for i := 0; ; i++ {
		if n == len(r.slab) {
			fresh := make([]history.Op, max(slabOps, 2*n))
			copy(fresh, r.slab[:n])
			r.slab = fresh
		}
		r.slab[n] = history.Op{}
		s.op = i
		err := r.op(&r.slab[n], i)
		s.op = -1
		n++
		if err != nil {
			clear(r.slab[:n]) // nothing of a bad transaction is kept
			return err
		}
		more, err := s.more(']')
		if err != nil {
			clear(r.slab[:n])
			return err
		}
		if !more {
			break
		}
	}
	t.Ops = r.slab[:n:n]
	r.slab = r.slab[n:]
	return nil
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
	if fastOps && r.fastOp(op) {
		return nil
	}
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
		name, op.Kind, r.lists = "append", history.Append, true
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
				op.Kind, r.lists = history.ReadList, true
				if err := r.list(i); err != nil {
					return err
				}
			} else if err := r.value(&op.Value, i, name); err != nil {
				return err
			}
		}
	}
	return r.attrs(op, i, name)
}

// listRead is where a list read's elements are in listArena: the
// transaction's operation op, elements start to end.
type listRead struct{ op, start, end int }

// fastOps enables fastOp; off in a test, to compare.
var fastOps = true

// fastOp parses the most common operations, a read or write of an
// integer key of at most 18 digits and a non-negative integer or null, written
// without spaces: ["r",k,v] or ["w",k,v]. For anything else it reports
// false and consumes nothing, leaving the operation to op, which parses
// every operation (and names what is wrong).
func (r *Reader) fastOp(op *history.Op) bool {
	s := &r.s
	b, i := s.b, s.i
	if r.keyKind != history.Int || len(b)-i < 9 || b[i] != '[' || b[i+1] != '"' || b[i+3] != '"' || b[i+4] != ',' {
		return false
	}
	kind := history.Read
	switch b[i+2] {
	case 'r':
	case 'w':
		kind = history.Write
	default:
		return false
	}
	k, i, ok := smallUint(b, i+5)
	if !ok || i >= len(b) || b[i] != ',' {
		return false
	}
	i++
	var v history.Value
	if len(b)-i >= 4 && string(b[i:i+4]) == "null" {
		i += 4
	} else {
		n, j, ok := smallUint(b, i)
		if !ok {
			return false
		}
		v, i = history.IntValue(int64(n)), j
	}
	if i >= len(b) || b[i] != ']' {
		return false
	}
	id, seen := r.intKeys.get(int64(k))
	if !seen {
		id = int32(r.intern(history.IntValue(int64(k))))
	}
	*op = history.Op{Kind: kind, Key: history.KeyID(id), Value: v}
	s.i = i + 1
	return true
}

// smallUint scans the digits at b[i:] as a JSON integer of at most 18
// digits without a sign or a leading zero; ok is false for anything else
// (no digit, a leading zero, more digits).
func smallUint(b []byte, i int) (n uint64, end int, ok bool) {
	start := i
	for ; i < len(b) && b[i]-'0' <= 9; i++ {
		n = n*10 + uint64(b[i]-'0')
	}
	if d := i - start; d == 0 || d > 18 || d > 1 && b[start] == '0' {
		return 0, i, false
	}
	return n, i, true
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

// fastLists turns on list's path for plain integer elements; a variable
// for the tests, which hold it to the scanner's.
var fastLists = true

// list parses the result of a list read, the transaction's operation op,
// into listArena: the transaction's shareLists gives it its list once the
// line is read.
func (r *Reader) list(op int) error {
	s := &r.s
	s.i++ // '['
	if s.ws() == ']' {
		s.i++
		return nil
	}
	start := len(r.listArena)
	for {
		// The common element: a non-negative integer of at most 18
		// digits (it fits in 64 bits) with no leading zero, right before
		// the ',' or ']' after it. Anything else goes to the scanner.
		b, i := s.b, s.i
		n, j := int64(0), i
		for j < len(b) && j-i < 18 {
			c := b[j] - '0'
			if c > 9 {
				break
			}
			n = n*10 + int64(c)
			j++
		}
		if fastLists && j > i && j < len(b) && (b[j] == ',' || b[j] == ']') && (b[i] != '0' || j-i == 1) {
			r.listArena = append(r.listArena, history.IntValue(n))
			s.i = j + 1
			if b[j] == ']' {
				r.listReads = append(r.listReads, listRead{op: op, start: start, end: len(r.listArena)})
				return nil
			}
			continue
		}
		x, err := s.scalar("a list element must be an integer, a string or null")
		if err != nil {
			return err
		}
		r.listArena = append(r.listArena, x.value())
		if more, err := s.more(']'); err != nil {
			return err
		} else if !more {
			r.listReads = append(r.listReads, listRead{op: op, start: start, end: len(r.listArena)})
			return nil
		}
	}
}
