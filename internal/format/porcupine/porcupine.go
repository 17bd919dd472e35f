package porcupine

import (
	"fmt"
	"io"
	"regexp"
	"slices"

	"github.com/isoscope/isoscope/internal/format"
	"github.com/isoscope/isoscope/internal/format/edn"
	"github.com/isoscope/isoscope/internal/history"
)

// sniffLine matches the first line of a porcupine key-value log.
var sniffLine = regexp.MustCompile(`^\{:process \d+, :type :(invoke|ok|fail|info), :f :(get|put|append), :key "`)

// Sniff reports whether the input starts like a porcupine key-value log.
func Sniff(p []byte) bool {
	for len(p) > 0 && (p[0] == ' ' || p[0] == '\t' || p[0] == '\r' || p[0] == '\n') {
		p = p[1:]
	}
	return sniffLine.Match(p)
}

// event is one line of the log.
type event struct {
	line    int
	process int64
	typ     string // invoke ok fail info
	f       string // get put append
	key     string
	value   history.Value // the argument, or what a :get returned
}

// op is one operation, its invocation and its completion paired.
type op struct {
	f          string
	key        history.KeyID
	arg        string // what a put or append wrote
	got        history.Value
	status     history.Status
	begin, end int
	session    int32
}

type elemKey struct {
	key  history.KeyID
	elem string
}

// reader reads one log.
type reader struct {
	name     string
	h        *history.History
	sessions map[int64]int32
	open     map[int64]event
	order    []int64 // processes with an open invocation, in order of invocation
	ops      []op
}

func (rd *reader) errf(line int, field, msg string, a ...any) error {
	return &format.Error{File: rd.name, Line: line, Field: field, Msg: fmt.Sprintf(msg, a...)}
}

// Read reads a porcupine key-value log from r; name names it in messages.
func Read(r io.Reader, name string) (*history.History, error) {
	rd := &reader{name: name, h: history.New(), sessions: map[int64]int32{}, open: map[int64]event{}}
	rd.h.Name = name
	rd.h.Header = history.Header{Present: true, Version: 1, Source: "converted from a porcupine key-value log " + name,
		Implies: "strict-serializable", ImpliedBy: "porcupine"}
	d := edn.NewDecoder(r, name)
	if err := d.Each(rd.event); err != nil {
		return nil, err
	}
	for _, proc := range rd.order {
		if e, ok := rd.open[proc]; ok {
			delete(rd.open, proc)
			rd.pair(e, event{line: d.Line() + 1, typ: "info"})
		}
	}
	rd.build()
	return rd.h, nil
}

// event reads one event map.
func (rd *reader) event(v edn.Value) error {
	if v.Kind != edn.Map {
		return rd.errf(v.Line, "", "an event is %s, not a map", v.Kind)
	}
	e := event{line: v.Line}
	name := func(field string, allowed ...string) (string, error) {
		x, ok := v.Get(field)
		n, isName := x.Name()
		if !ok || !isName || !slices.Contains(allowed, n) {
			return "", rd.errf(v.Line, field, "%s is none of :%v", x, allowed)
		}
		return n, nil
	}
	var err error
	if e.typ, err = name("type", "invoke", "ok", "fail", "info"); err != nil {
		return err
	}
	if e.f, err = name("f", "get", "put", "append"); err != nil {
		return err
	}
	p, ok := v.Get("process")
	if !ok || p.Kind != edn.Int {
		return rd.errf(v.Line, "process", "%s is not an integer", p)
	}
	e.process = p.N
	k, ok := v.Get("key")
	if !ok || k.Kind != edn.String {
		return rd.errf(v.Line, "key", "%s is not a string", k)
	}
	e.key = k.Text
	switch x, _ := v.Get("value"); x.Kind {
	case edn.String:
		e.value = history.StringValue(x.Text)
	case edn.Nil:
	default:
		return rd.errf(v.Line, "value", "%s is neither a string nor nil", x)
	}
	if e.typ == "invoke" {
		if _, busy := rd.open[e.process]; busy {
			return rd.errf(e.line, "", "process %d invokes again before its last operation completed", e.process)
		}
		if e.f != "get" && e.value.IsNull() {
			return rd.errf(e.line, "value", "%s of nil", map[string]string{"put": "a put", "append": "an append"}[e.f])
		}
		rd.open[e.process] = e
		rd.order = append(rd.order, e.process)
		return nil
	}
	inv, ok := rd.open[e.process]
	if !ok {
		return rd.errf(e.line, "", "process %d completes an operation it did not invoke", e.process)
	}
	if inv.f != e.f || inv.key != e.key {
		return rd.errf(e.line, "", "process %d invoked :%s of %q but completes :%s of %q", e.process, inv.f, inv.key, e.f, e.key)
	}
	if e.typ == "ok" && e.f == "get" && e.value.IsNull() {
		return rd.errf(e.line, "value", "a :get that completed returned nil, not a string")
	}
	delete(rd.open, e.process)
	rd.pair(inv, e)
	return nil
}

// pair records the operation of an invocation and its completion.
func (rd *reader) pair(inv, done event) {
	o := op{f: inv.f, key: rd.h.Key(history.StringValue(inv.key)), arg: inv.value.S, got: done.value, begin: inv.line, end: done.line}
	switch done.typ {
	case "ok":
		o.status = history.Committed
	case "fail":
		o.status = history.Aborted
	default:
		o.status = history.Unknown
	}
	if o.f == "get" && o.status != history.Committed {
		return // a read that did not complete had no effect
	}
	s, ok := rd.sessions[inv.process]
	if !ok {
		s = int32(len(rd.h.Sessions))
		rd.sessions[inv.process] = s
		rd.h.Sessions = append(rd.h.Sessions, history.IntValue(inv.process))
	}
	o.session = s
	rd.ops = append(rd.ops, o)
}

// state is a state an append extended, as reads show it: some :get saw
// the element appended to prefix.
type state struct {
	elemKey
	prefix string
}

// candidate is a state with when it was seen.
type candidate struct {
	state
	// seen is the earliest completion of a :get that saw it: the append
	// began before. after is the earliest invocation of the appends (or
	// puts) of the last element of prefix: the append ended after it.
	seen, after int
}

// build infers the state each append extended and makes the transactions.
func (rd *reader) build() {
	h := rd.h
	written := make([]map[string]bool, len(h.Keys)) // appended elements, then put values
	put := make([]map[string]bool, len(h.Keys))
	lengths := make([][]int, len(h.Keys))
	firstBegin := map[elemKey]int{}
	appends := map[elemKey][]int{} // the appends of each element that may have taken effect
	for i, o := range rd.ops {
		if o.f == "get" {
			continue
		}
		set := &written[o.key]
		if o.f == "put" {
			set = &put[o.key]
		}
		if *set == nil {
			*set = map[string]bool{}
		}
		(*set)[o.arg] = true
		if n := len(o.arg); n > 0 && !slices.Contains(lengths[o.key], n) {
			lengths[o.key] = append(lengths[o.key], n)
		}
		e := elemKey{o.key, o.arg}
		if b, ok := firstBegin[e]; !ok || o.begin < b {
			firstBegin[e] = o.begin
		}
		if o.f == "append" && o.status != history.Aborted {
			appends[e] = append(appends[e], i)
		}
	}
	read := map[string]bool{} // every value some operation reads
	index := map[state]int{}
	var cands []candidate
	for _, o := range rd.ops {
		if o.f != "get" {
			continue
		}
		s := o.got.S
		read[s] = true
		cuts := split(s, put[o.key], written[o.key], lengths[o.key])
		after := 0
		for i := 1; i < len(cuts); i++ {
			e := elemKey{o.key, s[cuts[i-1]:cuts[i]]}
			if i > 1 || written[o.key][e.elem] {
				st := state{e, s[:cuts[i-1]]}
				if j, ok := index[st]; ok {
					cands[j].seen = min(cands[j].seen, o.end)
				} else {
					index[st] = len(cands)
					cands = append(cands, candidate{st, o.end, after})
				}
			}
			after = firstBegin[e]
		}
	}
	// Give each state seen to an append that can have made it: one that
	// began before a read saw it and ended after the last element before
	// it was first written, the earliest to end first.
	slices.SortStableFunc(cands, func(a, b candidate) int {
		if a.seen != b.seen {
			return a.seen - b.seen
		}
		return len(a.prefix) - len(b.prefix)
	})
	before := make(map[int]string) // op → the state it extended
	for _, c := range cands {
		best := -1
		for _, i := range appends[c.elemKey] {
			o := &rd.ops[i]
			if _, taken := before[i]; taken || o.begin >= c.seen || o.end <= c.after {
				continue
			}
			if best < 0 || o.end < rd.ops[best].end {
				best = i
			}
		}
		if best >= 0 {
			before[best] = c.prefix
			read[c.prefix] = true
		}
	}
	h.Header.Initial.Values = make(map[history.KeyID]history.Value, len(h.Keys))
	for k := range h.Keys {
		h.Header.Initial.Values[history.KeyID(k)] = history.StringValue("")
	}
	h.Txns = make([]history.Txn, 0, len(rd.ops))
	for i, o := range rd.ops {
		t := history.Txn{ID: history.IntValue(int64(i + 1)), Session: o.session, Status: o.status,
			Begin: int64(o.begin), End: int64(o.end), HasTime: true, Line: o.begin}
		switch o.f {
		case "get":
			t.Ops = []history.Op{{Kind: history.Read, Key: o.key, Value: o.got}}
		case "put":
			t.Ops = []history.Op{{Kind: history.Write, Key: o.key, Value: history.StringValue(o.arg)}}
		default:
			if s, ok := before[i]; ok {
				t.Ops = []history.Op{{Kind: history.Read, Key: o.key, Value: history.StringValue(s)},
					{Kind: history.Write, Key: o.key, Value: history.StringValue(s + o.arg)}}
			} else {
				t.Ops = []history.Op{{Kind: history.Write, Key: o.key, Value: history.StringValue(unread(o.arg, read))}}
			}
		}
		h.Txns = append(h.Txns, t)
	}
}

// unread returns a value no operation reads for an append no read saw: its
// element, with "…" before it as often as needed.
func unread(e string, read map[string]bool) string {
	for read[e] {
		e = "…" + e
	}
	return e
}

// split cuts s into the elements written, in order: a put's or an
// append's first, appends' after. It returns the cut points (0, …,
// len(s)), or nil when s does not split so.
func split(s string, first, later map[string]bool, lengths []int) []int {
	prev := make([]int, len(s)+1) // prev[j]-1: where the element ending at j starts
	prev[0] = 1
	for i := 0; i < len(s); i++ {
		if prev[i] == 0 {
			continue
		}
		for _, n := range lengths {
			j := i + n
			if j > len(s) || prev[j] != 0 {
				continue
			}
			if e := s[i:j]; later[e] || i == 0 && first[e] {
				prev[j] = i + 1
			}
		}
	}
	if prev[len(s)] == 0 {
		return nil
	}
	cuts := []int{len(s)}
	for j := len(s); j > 0; j = prev[j] - 1 {
		cuts = append(cuts, prev[j]-1)
	}
	slices.Reverse(cuts)
	return cuts
}
