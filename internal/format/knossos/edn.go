package knossos

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"

	"github.com/isoscope/isoscope/internal/format/edn"
	"github.com/isoscope/isoscope/internal/history"
)

// isEDN reports whether p starts like a knossos history in EDN: a vector
// of operation maps, or maps one after another (comments allowed before),
// whose first map has a :type and an :f of the register model (:read,
// :write or :cas) and no :key (porcupine's key-value logs have one).
func isEDN(p []byte) bool {
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
	p = bytes.TrimLeft(bytes.TrimPrefix(p, []byte("[")), " \t\r\n,")
	if len(p) == 0 || p[0] != '{' {
		return false
	}
	// The first map, decoded from what the prefix holds of it.
	v, err := edn.NewDecoder(bytes.NewReader(p), "").Decode()
	if err != nil || v.Kind != edn.Map {
		return false
	}
	if _, ok := v.Get("key"); ok {
		return false
	}
	typ, _ := v.Get("type")
	f, _ := v.Get("f")
	t, ok1 := typ.Name()
	fn, ok2 := f.Name()
	return ok1 && ok2 && typ.Kind == edn.Keyword && f.Kind == edn.Keyword &&
		(t == "invoke" || t == "ok" || t == "fail" || t == "info") && (fn == "read" || fn == "write" || fn == "cas")
}

// readEDN reads a knossos history of the cas-register model in EDN, as
// knossos keeps its test data (data/cas-register/*.edn): operation maps
//
//	{:process 3, :type :invoke, :f :cas, :value [1 2]}
//
// in one vector or one after another, with :type :invoke, :ok, :fail or
// :info and :f :read, :write or :cas, modelled as the text log's lines
// are (Read). The position of an operation among them is its instant (a
// history is recorded in real-time order; :time, when present, is not
// used). Maps whose :process is not an integer (the nemesis's) are left
// out.
func readEDN(r io.Reader, name string) (*history.History, error) {
	b := newBuilder(name, "a knossos history")
	d := edn.NewDecoder(r, name)
	n := 0
	err := d.Each(func(v edn.Value) error {
		if v.Kind != edn.Map {
			return b.bad(v.Line, "an operation is %s, not a map", v.Kind)
		}
		p, _ := v.Get("process")
		if p.Kind != edn.Int {
			return nil // the nemesis, or another process that is not a client
		}
		n++
		typ, _ := v.Get("type")
		f, _ := v.Get("f")
		t, ok1 := typ.Name()
		fn, ok2 := f.Name()
		if !ok1 || !ok2 {
			return b.bad(v.Line, "an operation without :type or :f")
		}
		x, _ := v.Get("value")
		value, err := textOf(x)
		if err != nil {
			return b.bad(v.Line, ":value %s: %v", x, err)
		}
		return b.event(n, v.Line, p.N, ":"+t, ":"+fn, value)
	})
	if err != nil {
		return nil, err
	}
	return b.finish(n+1, d.Line())
}

// textOf writes an operation's :value as the text log would: nil, an
// integer, [old new], or a keyword (:timed-out).
func textOf(v edn.Value) (string, error) {
	switch v.Kind {
	case edn.Nil:
		return "nil", nil
	case edn.Int:
		return strconv.FormatInt(v.N, 10), nil
	case edn.Keyword:
		return ":" + v.Text, nil
	case edn.Vector:
		parts := make([]string, len(v.Items))
		for i, x := range v.Items {
			s, err := textOf(x)
			if err != nil {
				return "", err
			}
			parts[i] = s
		}
		return "[" + strings.Join(parts, " ") + "]", nil
	}
	return "", errors.New("not nil, an integer or a vector of them")
}
