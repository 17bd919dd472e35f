package history

import (
	"fmt"
	"strconv"
	"strings"
)

// Parse reads the one-line notation that tests and examples use:
//
//	s0: r x _ w x 1 | s1: r x 1 w x 2 | s2: r x 1 w x 3
//
// Transactions are separated by "|" or newlines and appear in file order.
// Each may start with prefixes that end in ":":
//
//	sN:        the session (default: a session of its own)
//	tN:        the id (default: the 1-based position)
//	aborted: unknown:   the status (default committed)
//	@B-E:      real-time instants begin and end
//	ts=S-C:    database start and commit timestamps
//
// Operations: "r k v", "w k v", "d k", "a k e" (append), "r k [1,2]" (list
// read; "[]" empty), "scan lo hi [k=v,k=v]" and "iter lo hi [k=v]" ("_" as
// hi: unbounded). A "*" after an operation name marks a locking read
// ("r* x 1"). A value "_" is null; integers are integers, other tokens
// strings. A first segment "init: x=0 y=1" sets initial values and
// "unique:" as a prefix of it promises unique values.
func Parse(s string) (*History, error) {
	h := New()
	sessions := map[Value]int32{}
	session := func(v Value) int32 {
		if id, ok := sessions[v]; ok {
			return id
		}
		id := int32(len(h.Sessions))
		h.Sessions = append(h.Sessions, v)
		sessions[v] = id
		return id
	}
	segs := strings.FieldsFunc(s, func(r rune) bool { return r == '|' || r == '\n' })
	ids := map[Value]bool{}
	for _, seg := range segs {
		f := strings.Fields(seg)
		if len(f) == 0 {
			continue
		}
		if f[0] == "init:" || f[0] == "unique:" {
			if err := parseInit(h, f); err != nil {
				return nil, err
			}
			continue
		}
		t := Txn{ID: IntValue(int64(len(h.Txns) + 1)), Session: -1}
		for len(f) > 0 && strings.HasSuffix(f[0], ":") {
			p := strings.TrimSuffix(f[0], ":")
			f = f[1:]
			switch {
			case p == "aborted":
				t.Status = Aborted
			case p == "unknown":
				t.Status = Unknown
			case p == "committed":
				t.Status = Committed
			case strings.HasPrefix(p, "ts="):
				a, b, ok := strings.Cut(p[3:], "-")
				sv, e1 := strconv.ParseUint(a, 10, 64)
				cv, e2 := strconv.ParseUint(b, 10, 64)
				if !ok || e1 != nil || e2 != nil {
					return nil, fmt.Errorf("notation: bad timestamps %q", p)
				}
				t.StartTS, t.CommitTS, t.HasStartTS, t.HasCommitTS = sv, cv, true, true
			case strings.HasPrefix(p, "@"):
				a, b, ok := strings.Cut(p[1:], "-")
				bv, e1 := strconv.ParseInt(a, 10, 64)
				ev, e2 := strconv.ParseInt(b, 10, 64)
				if !ok || e1 != nil || e2 != nil {
					return nil, fmt.Errorf("notation: bad instants %q", p)
				}
				t.Begin, t.End, t.HasTime = bv, ev, true
			case strings.HasPrefix(p, "s") && len(p) > 1:
				t.Session = session(token(p[1:]))
			case strings.HasPrefix(p, "t") && len(p) > 1:
				t.ID = token(p[1:])
			default:
				return nil, fmt.Errorf("notation: unknown prefix %q", p)
			}
		}
		if t.Session < 0 {
			t.Session = session(StringValue(fmt.Sprintf("auto%d", len(h.Txns)+1)))
		}
		if ids[t.ID] {
			return nil, fmt.Errorf("notation: duplicate id %v", t.ID)
		}
		ids[t.ID] = true
		ops, err := parseOps(h, f)
		if err != nil {
			return nil, fmt.Errorf("notation: transaction %v: %w", t.ID, err)
		}
		t.Ops = ops
		h.Txns = append(h.Txns, t)
	}
	return h, nil
}

// MustParse is Parse for tests: it panics on a malformed notation.
func MustParse(s string) *History {
	h, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return h
}

func parseInit(h *History, f []string) error {
	for _, w := range f {
		switch w {
		case "init:":
			continue
		case "unique:":
			h.Header.UniqueValues = true
			continue
		}
		k, v, ok := strings.Cut(w, "=")
		if !ok {
			return fmt.Errorf("notation: bad initial value %q", w)
		}
		if h.Header.Initial.Values == nil {
			h.Header.Initial.Values = map[KeyID]Value{}
		}
		h.Header.Initial.Values[h.Key(token(k))] = token(v)
	}
	return nil
}

func token(s string) Value {
	if s == "_" {
		return NullValue
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return IntValue(n)
	}
	return StringValue(s)
}

func parseOps(h *History, f []string) ([]Op, error) {
	var ops []Op
	need := func(n int) error {
		if len(f) < n {
			return fmt.Errorf("operation %q needs %d arguments", f[0], n-1)
		}
		return nil
	}
	for len(f) > 0 {
		name := f[0]
		lock := strings.HasSuffix(name, "*")
		name = strings.TrimSuffix(name, "*")
		var op Op
		switch name {
		case "r", "w", "a":
			if err := need(3); err != nil {
				return nil, err
			}
			op.Key = h.Key(token(f[1]))
			arg := f[2]
			switch {
			case name == "r" && strings.HasPrefix(arg, "["):
				op.Kind = ReadList
				for _, e := range listItems(arg) {
					op.List = append(op.List, token(e))
				}
			case name == "r":
				op.Kind, op.Value = Read, token(arg)
			case name == "w":
				op.Kind, op.Value = Write, token(arg)
			default:
				op.Kind, op.Value = Append, token(arg)
			}
			f = f[3:]
		case "d":
			if err := need(2); err != nil {
				return nil, err
			}
			op.Kind, op.Key = Delete, h.Key(token(f[1]))
			f = f[2:]
		case "scan", "iter":
			if err := need(4); err != nil {
				return nil, err
			}
			op.Kind = Scan
			if name == "iter" {
				op.Kind = Iter
			}
			op.Key = NoKey
			r := &Range{Lo: token(f[1]), Hi: token(f[2])}
			r.HiOpen = r.Hi.IsNull()
			for _, e := range listItems(f[3]) {
				k, v, ok := strings.Cut(e, "=")
				if !ok {
					return nil, fmt.Errorf("bad range pair %q", e)
				}
				r.Pairs = append(r.Pairs, KV{Key: h.Key(token(k)), Value: token(v)})
			}
			op.Range = r
			f = f[4:]
		default:
			return nil, fmt.Errorf("unknown operation %q", f[0])
		}
		op.Lock = lock
		ops = append(ops, op)
	}
	return ops, nil
}

func listItems(s string) []string {
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// Notation renders h in the notation Parse reads (without header hints
// other than initial values and the unique-values promise).
func Notation(h *History) string {
	var b strings.Builder
	if h.Header.UniqueValues || len(h.Header.Initial.Values) > 0 {
		if h.Header.UniqueValues {
			b.WriteString("unique: ")
		} else {
			b.WriteString("init: ")
		}
		for k := range h.Keys {
			if v, ok := h.Header.Initial.Values[KeyID(k)]; ok {
				fmt.Fprintf(&b, "%s=%s ", h.Keys[k], v)
			}
		}
		b.WriteString("| ")
	}
	for i := range h.Txns {
		if i > 0 {
			b.WriteString(" | ")
		}
		t := &h.Txns[i]
		fmt.Fprintf(&b, "t%v: s%v: ", t.ID, h.Sessions[t.Session])
		if t.Status != Committed {
			b.WriteString(t.Status.String() + ": ")
		}
		if t.HasTime {
			fmt.Fprintf(&b, "@%d-%d: ", t.Begin, t.End)
		}
		if t.HasStartTS && t.HasCommitTS {
			fmt.Fprintf(&b, "ts=%d-%d: ", t.StartTS, t.CommitTS)
		}
		for j, op := range t.Ops {
			if j > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(OpString(h, op))
		}
	}
	return b.String()
}

// OpString renders one operation in the notation.
func OpString(h *History, op Op) string {
	lock := ""
	if op.Lock {
		lock = "*"
	}
	v := func(x Value) string {
		if x.IsNull() {
			return "_"
		}
		return x.String()
	}
	switch op.Kind {
	case Read, Write:
		return fmt.Sprintf("%s%s %s %s", op.Kind, lock, h.KeyName(op.Key), v(op.Value))
	case Append:
		return fmt.Sprintf("a %s %s", h.KeyName(op.Key), v(op.Value))
	case Delete:
		return fmt.Sprintf("d %s", h.KeyName(op.Key))
	case ReadList:
		items := make([]string, len(op.List))
		for i, e := range op.List {
			items[i] = v(e)
		}
		return fmt.Sprintf("r%s %s [%s]", lock, h.KeyName(op.Key), strings.Join(items, ","))
	case Scan, Iter:
		items := make([]string, len(op.Range.Pairs))
		for i, p := range op.Range.Pairs {
			items[i] = h.KeyName(p.Key) + "=" + v(p.Value)
		}
		hi := v(op.Range.Hi)
		if op.Range.HiOpen {
			hi = "_"
		}
		return fmt.Sprintf("%s%s %s %s [%s]", op.Kind, lock, v(op.Range.Lo), hi, strings.Join(items, ","))
	}
	return "?"
}
