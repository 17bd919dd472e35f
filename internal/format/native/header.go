package native

import (
	"strconv"

	"github.com/isoscope/isoscope/internal/format"
	"github.com/isoscope/isoscope/internal/history"
)

// FormatName is the value of the header's "format" field.
const FormatName = "isoscope-history"

// Version is the version of the format this package reads and writes.
const Version = 1

// headerKV is an entry of the header's initial or version_order object,
// kept until the history's kind of key is known.
type headerKV struct {
	key string
	val history.Value   // initial
	ids []history.Value // version_order
}

// isHeader reports whether the line is a JSON object with a top-level
// "format" field.
func isHeader(line []byte) bool {
	s := scanner{b: line, op: -1}
	if s.ws() != '{' {
		return false
	}
	s.i++
	if s.ws() == '}' {
		return false
	}
	for {
		if s.ws() != '"' {
			return false
		}
		name, err := s.str()
		if err != nil {
			return false
		}
		if string(name) == "format" {
			return true
		}
		if s.expect(':', "") != nil || s.skip(0) != nil {
			return false
		}
		if more, err := s.more('}'); !more || err != nil {
			return false
		}
	}
}

// header parses the header line into r.h.Header and the pending initial
// values and version order.
func (r *Reader) header() error {
	s := &r.s
	hd := &r.h.Header
	hd.Present = true
	r.headerLine = s.line
	if err := s.expect('{', "a header object"); err != nil {
		return err
	}
	seen := map[string]bool{}
	var version bool
	for {
		if s.ws() != '"' {
			return s.syntax("a field name")
		}
		s.field = ""
		b, err := s.str()
		if err != nil {
			return err
		}
		name := string(b)
		s.field = name
		if seen[name] {
			return s.errf(name, "given twice")
		}
		seen[name] = true
		if err := s.expect(':', "':'"); err != nil {
			return err
		}
		switch name {
		case "format":
			if b, ok, err := r.headerString(); err != nil {
				return err
			} else if !ok || string(b) != FormatName {
				return s.errf(name, "must be "+strconv.Quote(FormatName))
			}
		case "version":
			x, err := s.scalar("must be the integer " + strconv.Itoa(Version))
			if err != nil {
				return err
			}
			if x.kind != sInt || x.n != Version {
				return s.errf(name, "unsupported version "+x.value().String()+" (this reader knows version "+strconv.Itoa(Version)+")")
			}
			hd.Version, version = Version, true
		case "initial":
			err = r.initial()
		case "unique_values":
			hd.UniqueValues, err = s.boolean(name, true)
		case "deletes":
			b, ok, err := r.headerString()
			switch {
			case err != nil:
				return err
			case !ok || string(b) == "physical":
				hd.Deletes = history.PhysicalDeletes
			case string(b) == "tombstone":
				hd.Deletes = history.TombstoneDeletes
			default:
				return s.errf(name, "must be \"physical\" or \"tombstone\", not "+strconv.Quote(string(b)))
			}
		case "version_order":
			err = r.versionOrder()
		case "source":
			b, _, err := r.headerString()
			if err != nil {
				return err
			}
			hd.Source = string(b)
		case "fence_key":
			x, err := s.scalar("must be a string or an integer key")
			if err != nil {
				return err
			}
			hd.FenceKey = x.value()
		default:
			err = s.skip(0)
		}
		if err != nil {
			return err
		}
		s.field = ""
		if more, err := s.more('}'); err != nil {
			return err
		} else if !more {
			break
		}
	}
	if s.ws() != 0 {
		return s.syntax("the end of the line after the header")
	}
	if !version {
		return s.errf("version", "missing")
	}
	return nil
}

// headerString scans a string or null (ok false) for the current field.
func (r *Reader) headerString() ([]byte, bool, error) {
	s := &r.s
	switch s.ws() {
	case '"':
		b, err := s.str()
		return b, true, err
	case 'n':
		return nil, false, s.literal("null")
	}
	return nil, false, s.wrongType(s.where(), "must be a string")
}

// initial parses "absent" or an object of initial values.
func (r *Reader) initial() error {
	s := &r.s
	switch s.ws() {
	case '"', 'n':
		b, ok, err := r.headerString()
		if err != nil {
			return err
		}
		if ok && string(b) != "absent" {
			return s.errf("initial", `must be "absent" or an object of initial values, not `+strconv.Quote(string(b)))
		}
		return nil
	case '{':
	default:
		return s.wrongType("initial", `must be "absent" or an object of initial values`)
	}
	return r.headerObject(func(key string) error {
		x, err := s.scalar("initial value of " + strconv.Quote(key) + " must be an integer, a string or null")
		r.initPending = append(r.initPending, headerKV{key: key, val: x.value()})
		return err
	})
}

// versionOrder parses {key: [id, …], …}.
func (r *Reader) versionOrder() error {
	s := &r.s
	switch s.ws() {
	case 'n':
		return s.literal("null")
	case '{':
	default:
		return s.wrongType("version_order", "must be an object of key: [id, …]")
	}
	return r.headerObject(func(key string) error {
		what := "the writers of " + strconv.Quote(key) + " must be an array of transaction ids"
		if s.ws() != '[' {
			return s.wrongType("version_order", what)
		}
		s.i++
		e := headerKV{key: key}
		if s.ws() == ']' {
			s.i++
		} else {
			for {
				x, err := s.scalar(what)
				if err != nil {
					return err
				}
				if x.kind == sNull {
					return s.errf("version_order", what+", not null")
				}
				e.ids = append(e.ids, x.value())
				if more, err := s.more(']'); err != nil {
					return err
				} else if !more {
					break
				}
			}
		}
		r.voPending = append(r.voPending, e)
		return nil
	})
}

// headerObject walks the object at s.i, calling f at each member's value;
// a key given twice is an error.
func (r *Reader) headerObject(f func(key string) error) error {
	s := &r.s
	field := s.field
	s.i++
	if s.ws() == '}' {
		s.i++
		return nil
	}
	seen := map[string]bool{}
	for {
		if s.ws() != '"' {
			return s.syntax("a key")
		}
		b, err := s.str()
		if err != nil {
			return err
		}
		key := string(b)
		if seen[key] {
			return s.errf(field, "key "+strconv.Quote(key)+" given twice")
		}
		seen[key] = true
		if err := s.expect(':', "':'"); err != nil {
			return err
		}
		if err := f(key); err != nil {
			return err
		}
		if more, err := s.more('}'); err != nil {
			return err
		} else if !more {
			return nil
		}
	}
}

// headerErr is bad input in the header's field.
func (r *Reader) headerErr(field, msg string) error {
	return &format.Error{File: r.s.file, Line: r.headerLine, Field: field, Msg: msg}
}

// headerKey converts a key of the header's objects (a JSON string) to a key
// of the history's kind.
func (r *Reader) headerKey(key, field string) (history.Value, error) {
	if r.keyKind != history.Int {
		return history.StringValue(key), nil
	}
	n, err := strconv.ParseInt(key, 10, 64)
	if err != nil {
		return history.Value{}, r.headerErr(field, "key "+strconv.Quote(key)+" is not an integer, but this history's keys are integers (since line "+
			strconv.Itoa(r.keyKindLine)+")")
	}
	return history.IntValue(n), nil
}

// resolveInitial interns the initial values' keys once the history's kind
// of key is known (at its first key, or at the end of the input).
func (r *Reader) resolveInitial() error {
	if r.initDone {
		return nil
	}
	r.initDone = true
	if err := r.resolveFenceKey(); err != nil {
		return err
	}
	if len(r.initPending) == 0 {
		return nil
	}
	vals := make(map[history.KeyID]history.Value, len(r.initPending))
	for _, e := range r.initPending {
		k, err := r.headerKey(e.key, "initial")
		if err != nil {
			return err
		}
		id := r.intern(k)
		if _, dup := vals[id]; dup {
			return r.headerErr("initial", "key "+k.String()+" given twice")
		}
		vals[id] = e.val
	}
	r.initPending = nil
	r.h.Header.Initial.Values = vals
	return nil
}

// resolveVersionOrder resolves the version order's ids to transactions
// once every transaction is read.
func (r *Reader) resolveVersionOrder() error {
	if len(r.voPending) == 0 {
		return nil
	}
	vo := make(map[history.KeyID][]history.TxnID, len(r.voPending))
	for _, e := range r.voPending {
		k, err := r.headerKey(e.key, "version_order")
		if err != nil {
			return err
		}
		id := r.intern(k)
		if _, dup := vo[id]; dup {
			return r.headerErr("version_order", "key "+k.String()+" given twice")
		}
		txns := make([]history.TxnID, len(e.ids))
		seen := make(map[history.TxnID]bool, len(e.ids))
		for j, x := range e.ids {
			t, ok := r.lookupID(x)
			if !ok {
				return r.headerErr("version_order", "key "+k.String()+": no transaction has id "+x.String())
			}
			if seen[t] {
				return r.headerErr("version_order", "key "+k.String()+": transaction "+x.String()+" is listed twice")
			}
			seen[t] = true
			txns[j] = t
		}
		vo[id] = txns
	}
	r.voPending = nil
	r.h.Header.VersionOrder = vo
	return nil
}

// resolveFenceKey converts the header's fence_key to the history's kind of
// key once it is known: a string of digits names an integer key, an
// integer names the string of its digits.
func (r *Reader) resolveFenceKey() error {
	fk := &r.h.Header.FenceKey
	switch {
	case fk.IsNull() || r.keyKind == history.Null || fk.Kind == r.keyKind:
		return nil
	case r.keyKind == history.String:
		*fk = history.StringValue(strconv.FormatInt(fk.N, 10))
		return nil
	}
	k, err := r.headerKey(fk.S, "fence_key")
	if err != nil {
		return err
	}
	*fk = k
	return nil
}
