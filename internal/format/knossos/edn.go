package knossos

import (
	"bytes"
	"errors"
	"io"

	"github.com/isoscope/isoscope/internal/format/edn"
	"github.com/isoscope/isoscope/internal/format/jepsen"
	"github.com/isoscope/isoscope/internal/history"
)

// looksEDN reports whether p, after blank lines and EDN comments, starts
// with a map, or a vector or list (of maps).
func looksEDN(p []byte) bool {
	for {
		p = bytes.TrimLeft(p, " \t\r\n,")
		if len(p) > 0 && p[0] == ';' {
			if _, rest, ok := bytes.Cut(p, []byte("\n")); ok {
				p = rest
				continue
			}
			return false
		}
		break
	}
	return len(p) > 0 && (p[0] == '{' || p[0] == '[' || p[0] == '(')
}

// errSniffed stops the decoding of a prefix once it has decided.
var errSniffed = errors.New("sniffed")

// sniffOps is how many operations isEDN reads at most.
const sniffOps = 1000

// isEDN reports whether p starts like a knossos history in EDN or JSON:
// operation maps, in a vector or one after another, whose first client
// operation (one whose :process is a number, or which has none; the
// nemesis's come before it in many histories) has a :type of the four, an
// :f of the register model (:read, :write or :cas) and a value a register
// operation has (the first such operation with a value not nil decides,
// the reads invoked before it being the model's too) (nil, a value, [old new] for a compare-and-set, or such a
// value in a jepsen.independent tuple [key value]), and no :key
// (porcupine's key-value logs have one). A read whose value is a
// transaction (Elle's long-fork histories, :f :read with micro-operations)
// is not one.
func isEDN(p []byte) bool {
	if !looksEDN(p) {
		return false
	}
	found := false
	n := 0
	_ = edn.NewDecoder(bytes.NewReader(p), "").Each(func(v edn.Value) error {
		if n++; v.Kind != edn.Map || n > sniffOps {
			return errSniffed
		}
		if proc, ok := v.Get("process"); ok && proc.Kind != edn.Nil && proc.Kind != edn.Int {
			return nil // the nemesis
		}
		found = isRegisterOp(v)
		if x, _ := v.Get("value"); found && x.Kind == edn.Nil {
			return nil // an invocation of a read: the value read decides
		}
		return errSniffed
	})
	return found
}

// isRegisterOp reports whether the operation map v is a register's.
func isRegisterOp(v edn.Value) bool {
	if _, ok := v.Get("key"); ok {
		return false
	}
	typ, _ := v.Get("type")
	f, _ := v.Get("f")
	t, ok1 := typ.Name()
	fn, ok2 := f.Name()
	if !ok1 || !ok2 || !(t == "invoke" || t == "ok" || t == "fail" || t == "info") {
		return false
	}
	x, _ := v.Get("value")
	switch fn {
	case "read", "write":
		return !isMicroOps(x) && (x.Kind != edn.Vector || isTuple(":"+fn, x))
	case "cas":
		return x.Kind == edn.Vector && len(x.Items) == 2
	}
	return false
}

// readEDN reads a knossos history of the cas-register model in EDN (or
// in its JSON form), as knossos keeps its test data
// (data/cas-register/*.edn): operation maps
//
//	{:process 3, :type :invoke, :f :cas, :value [1 2]}
//
// in one vector or one after another, with :type :invoke, :ok, :fail or
// :info and :f :read, :write or :cas, modelled as the text log's lines
// are (Read). The position of an operation among them is its instant (a
// history is recorded in real-time order; :time, when present, is not
// used). An operation without :process belongs to one anonymous process
// (0); a history mixes the two only by mistake, and that is an error.
// Maps whose :process is a name (the nemesis's) are its faults.
func readEDN(r io.Reader, name string) (*history.History, error) {
	b := newBuilder(name, "a knossos history")
	d := edn.NewDecoder(r, name)
	var faults jepsen.Faults
	n := 0
	anonymous, named := 0, 0
	err := d.Each(func(v edn.Value) error {
		if v.Kind != edn.Map {
			return b.bad(v.Line, "", "an operation is %s, not a map", v.Kind)
		}
		n++
		p, ok := v.Get("process")
		switch {
		case !ok || p.Kind == edn.Nil:
			if anonymous == 0 {
				anonymous = v.Line
			}
			p = edn.Value{Kind: edn.Int}
		case p.Kind == edn.Int:
			if named == 0 {
				named = v.Line
			}
		case p.Kind == edn.Keyword || p.Kind == edn.String:
			faults.Add(v, p, int64(n), v.Line)
			return nil
		default:
			return b.bad(v.Line, "process", "%s is not an integer (a client) or a name (the nemesis)", p)
		}
		if anonymous != 0 && named != 0 {
			return b.bad(v.Line, "process", "operations with a :process (line %d) and without (line %d)", named, anonymous)
		}
		if _, ok := v.Get("key"); ok {
			return b.bad(v.Line, "key", "a register operation has no :key (porcupine's key-value logs do: --format porcupine)")
		}
		typ, ok1 := v.Get("type")
		f, ok2 := v.Get("f")
		t, ok3 := typ.Name()
		fn, ok4 := f.Name()
		switch {
		case !ok1:
			return b.bad(v.Line, "type", "missing")
		case !ok2:
			return b.bad(v.Line, "f", "missing")
		case !ok3:
			return b.bad(v.Line, "type", "%s is not a keyword", typ)
		case !ok4:
			return b.bad(v.Line, "f", "%s is not a keyword", f)
		}
		x, _ := v.Get("value")
		return b.event(n, v.Line, p.N, ":"+t, ":"+fn, x)
	})
	if err != nil {
		return nil, err
	}
	h, err := b.finish(n+1, d.Line())
	if err != nil {
		return nil, err
	}
	h.Faults = faults.Finish(int64(n + 1))
	return h, nil
}
