package native_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/check/aion"
	"github.com/isoscope/isoscope/internal/format/native"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// Histories of lists read as null: the format allows null for
// an absent list, and a key's appends and list reads say it is one.
var (
	// listsNull holds at serializability: x and y are read as null before
	// their first appends (x in the transaction that appends to it).
	listsNull = strings.Join([]string{
		`{"id":1,"session":0,"start_ts":1,"commit_ts":2,"ops":[["r","x",null],["append","x",1]]}`,
		`{"id":2,"session":1,"start_ts":3,"commit_ts":4,"ops":[["r","x",[1]],["append","x",2]]}`,
		`{"id":3,"session":2,"start_ts":5,"commit_ts":6,"ops":[["r","x",[1,2]],["r","y",null]]}`,
		`{"id":4,"session":0,"start_ts":7,"commit_ts":8,"ops":[["append","y",1],["r","z",null]]}`,
	}, "\n") + "\n"
	// listsNullBad: 3 reads y=[1] from 2, which read x=[1] from 1, and
	// then reads x as absent: a cycle, and a stale snapshot.
	listsNullBad = strings.Join([]string{
		`{"id":1,"session":0,"start_ts":1,"commit_ts":2,"ops":[["append","x",1]]}`,
		`{"id":2,"session":1,"start_ts":3,"commit_ts":4,"ops":[["r","x",[1]],["append","y",1]]}`,
		`{"id":3,"session":2,"start_ts":5,"commit_ts":6,"ops":[["r","y",[1]],["r","x",null]]}`,
	}, "\n") + "\n"
	// listAndRegister uses x as both.
	listAndRegister = strings.Join([]string{
		`{"id":1,"session":0,"start_ts":1,"commit_ts":2,"ops":[["w","x",1]]}`,
		`{"id":2,"session":1,"start_ts":3,"commit_ts":4,"ops":[["append","x",2]]}`,
		`{"id":3,"session":2,"start_ts":5,"commit_ts":6,"ops":[["r","x",null]]}`,
	}, "\n") + "\n"
)

func read(t *testing.T, in string) *history.History {
	t.Helper()
	h, err := native.Read(strings.NewReader(in), "lists.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestReadListNull: in a history with lists, Read takes a null read of a
// key that nothing uses as a register, before or after the key's first
// append, for a read of the empty list; a key written, deleted, read as a
// value, returned by a scan or given an initial value keeps its null
// reads, and so does every key of a history without lists.
func TestReadListNull(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{listsNull, "t1: s0: ts=1-2: r x [] a x 1 | t2: s1: ts=3-4: r x [1] a x 2 | t3: s2: ts=5-6: r x [1,2] r y [] | t4: s0: ts=7-8: a y 1 r z []"},
		{strings.Join([]string{
			`{"format":"isoscope-history","version":1,"initial":{"e":0}}`,
			`{"id":1,"session":0,"ops":[["r","a",null],["w","a",1],["r","b",null],["d","b"],["r","c",null],["r","c",5]]}`,
			`{"id":2,"session":0,"ops":[["r","e",null],["scan","f","g",[["f",1]]],["r","f",null],["r","l",null],["append","l",1]]}`,
		}, "\n"), "init: e=0 | t1: s0: r a _ w a 1 r b _ d b r c _ r c 5 | t2: s0: r e _ scan f g [f=1] r f _ r l [] a l 1"},
		{`{"id":1,"session":0,"ops":[["r","x",null],["r","y",null],["w","y",1]]}`, "t1: s0: r x _ r y _ w y 1"},
	} {
		if got := history.Notation(read(t, c.in)); got != c.want {
			t.Errorf("got  %s\nwant %s", got, c.want)
		}
	}
}

// TestListNullCheckers: the list-append checker and Chronos decide a
// history of lists read as null, and find what is wrong with one.
func TestListNullCheckers(t *testing.T) {
	for _, name := range []string{"list-append", "chronos", "auto"} {
		for _, lv := range []string{"ser", "si"} {
			l, err := level.Lookup(lv)
			if err != nil {
				t.Fatal(err)
			}
			res, err := check.Run(context.Background(), read(t, listsNull), l, check.Options{Checker: name})
			if err != nil || res.Outcome != check.Satisfied {
				t.Errorf("%s at %s: got %v, %v; want satisfied", name, lv, res.Outcome, err)
			}
			res, err = check.Run(context.Background(), read(t, listsNullBad), l, check.Options{Checker: name})
			if err != nil || res.Outcome != check.Violated {
				t.Errorf("%s at %s, the bad history: got %v, %v; want a violation", name, lv, res.Outcome, err)
			}
		}
	}
}

// TestListNullAion: Aion accepts lists read as null, as Read gives them
// (reads of the empty list) and as the Reader's Next gives them (plain
// reads of null, typed by the key's appends), and finds the stale read.
func TestListNullAion(t *testing.T) {
	nexts := func(in string) *history.History {
		rd, err := native.NewReader(strings.NewReader(in), "lists.jsonl")
		if err != nil {
			t.Fatal(err)
		}
		h := rd.History()
		for {
			tx, err := rd.Next()
			if errors.Is(err, io.EOF) {
				return h
			}
			if err != nil {
				t.Fatal(err)
			}
			h.Txns = append(h.Txns, *tx)
		}
	}
	run := func(h *history.History) []anomaly.Kind {
		c, err := aion.New(aion.Config{})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Add(h, h.Txns); err != nil {
			t.Fatal(err)
		}
		if err := c.Finish(); err != nil {
			t.Fatal(err)
		}
		var kinds []anomaly.Kind
		for _, v := range c.Take() {
			kinds = append(kinds, v.Anomaly.Kind)
		}
		return kinds
	}
	for how, get := range map[string]func(string) *history.History{"Read": func(in string) *history.History { return read(t, in) }, "Next": nexts} {
		if got := run(get(listsNull)); len(got) != 0 {
			t.Errorf("%s: found %v in a good history", how, got)
		}
		if got := run(get(listsNullBad)); len(got) == 0 {
			t.Errorf("%s: found nothing in the bad history", how)
		}
	}
}

// TestListAndRegister: a key written as a value and appended to is still
// refused, null reads or not.
func TestListAndRegister(t *testing.T) {
	h := read(t, listAndRegister)
	for _, name := range []string{"list-append", "chronos", "auto"} {
		if _, err := check.Run(context.Background(), h, level.Level{ID: level.Serializable, Name: "serializable"}, check.Options{Checker: name}); err == nil {
			t.Errorf("%s decided a history whose key x is a value and a list", name)
		}
	}
	c, err := aion.New(aion.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Add(h, h.Txns); err == nil || !strings.Contains(err.Error(), "which other operations use as a value") {
		t.Errorf("aion: got %v, want an error about x used as a value and a list", err)
	}
}
