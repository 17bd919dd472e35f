package aion_test

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/check/aion"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/report"
	"github.com/isoscope/isoscope/internal/serve/spillfile"
)

// tiny builds a history from transactions given as (id, session, start,
// commit, ops) over keys named by strings.
type tinyTxn struct {
	id, sess int64
	st, ct   uint64
	ops      []history.Op
}

func tiny(txns ...tinyTxn) *history.History {
	h := history.New()
	for s := range 4 {
		h.Sessions = append(h.Sessions, history.IntValue(int64(s)))
	}
	h.Key(history.StringValue("x"))
	h.Key(history.StringValue("y"))
	for _, t := range txns {
		h.Txns = append(h.Txns, history.Txn{ID: history.IntValue(t.id), Session: int32(t.sess), StartTS: t.st, CommitTS: t.ct,
			HasStartTS: true, HasCommitTS: true, Ops: t.ops, Line: len(h.Txns) + 1})
	}
	return h
}

func r(k history.KeyID, v int64) history.Op {
	return history.Op{Kind: history.Read, Key: k, Value: history.IntValue(v)}
}
func rnull(k history.KeyID) history.Op { return history.Op{Kind: history.Read, Key: k} }
func w(k history.KeyID, v int64) history.Op {
	return history.Op{Kind: history.Write, Key: k, Value: history.IntValue(v)}
}

const x, y history.KeyID = 0, 1

func newChecker(t *testing.T, clk *clock, cfg aion.Config) *aion.Checker {
	t.Helper()
	cfg.Clock = clk.Now
	c, err := aion.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func add(t *testing.T, c *aion.Checker, h *history.History, i int) {
	t.Helper()
	if err := c.Add(h, h.Txns[i:i+1]); err != nil {
		t.Fatal(err)
	}
}

// TestExtPendingThenCleared: a read that arrives before the write it
// read is pending, not reported; the write arriving within the timeout
// clears it (one flip-flop), and nothing is reported when it expires.
func TestExtPendingThenCleared(t *testing.T) {
	h := tiny(tinyTxn{1, 0, 10, 20, []history.Op{w(x, 1)}}, tinyTxn{2, 1, 30, 40, []history.Op{r(x, 1)}})
	clk := &clock{now: time.Unix(100, 0)}
	c := newChecker(t, clk, aion.Config{})
	add(t, c, h, 1)
	if st := c.Stats(); st.Pending != 1 || len(c.Pending()) != 1 || len(c.Take()) != 0 {
		t.Fatalf("after the read alone: %+v, pending %d", st, len(c.Pending()))
	}
	clk.now = clk.now.Add(2 * time.Second)
	add(t, c, h, 0)
	if st := c.Stats(); st.FlipFlops != 1 || len(c.Pending()) != 0 {
		t.Fatalf("after the write: %+v", st)
	}
	clk.now = clk.now.Add(5 * time.Second)
	if err := c.Advance(); err != nil {
		t.Fatal(err)
	}
	if vs := c.Take(); len(vs) != 0 || c.Stats().Pending != 0 {
		t.Fatalf("reported %v", aionFindings(vs))
	}
}

// TestExtStaleAfterTimeout: a read of the initial state that looks right
// until a late writer arrives becomes a stale read (one flip-flop), final
// and reported only when the timeout expires, explained with the
// timestamps.
func TestExtStaleAfterTimeout(t *testing.T) {
	h := tiny(tinyTxn{1, 0, 10, 20, []history.Op{w(x, 1)}}, tinyTxn{2, 1, 30, 40, []history.Op{rnull(x)}})
	clk := &clock{now: time.Unix(100, 0)}
	c := newChecker(t, clk, aion.Config{Timeout: 3 * time.Second})
	add(t, c, h, 1)
	clk.now = clk.now.Add(time.Second)
	add(t, c, h, 0)
	if st := c.Stats(); st.FlipFlops != 1 || len(c.Take()) != 0 {
		t.Fatalf("before the timeout: %+v", st)
	}
	clk.now = clk.now.Add(1999 * time.Millisecond)
	if err := c.Advance(); err != nil {
		t.Fatal(err)
	}
	if vs := c.Take(); len(vs) != 0 {
		t.Fatalf("reported before the timeout: %v", aionFindings(vs))
	}
	clk.now = clk.now.Add(time.Millisecond)
	if err := c.Advance(); err != nil {
		t.Fatal(err)
	}
	vs := c.Take()
	if got := aionFindings(vs); len(got) != 1 || got[0] != "stale-read/G-SIb txns=2,init,1 key=x value=null ops=2:0" {
		t.Fatalf("got %v", got)
	}
	if e := report.Explain(vs[0].History, &vs[0].Anomaly); !strings.Contains(e, "commit_ts 20") {
		t.Errorf("explanation without the writer's commit_ts: %s", e)
	}
	if !vs[0].At.Equal(clk.now) {
		t.Errorf("final at %s, want %s", vs[0].At, clk.now)
	}
}

// TestLateArrivalAfterTimeout: once a verdict is final, a late writer
// does not re-check it (the paper's rule): the thin-air read stands.
func TestLateArrivalAfterTimeout(t *testing.T) {
	h := tiny(tinyTxn{1, 0, 10, 20, []history.Op{w(x, 1)}}, tinyTxn{2, 1, 30, 40, []history.Op{r(x, 1)}})
	clk := &clock{now: time.Unix(100, 0)}
	c := newChecker(t, clk, aion.Config{})
	add(t, c, h, 1)
	clk.now = clk.now.Add(aion.DefaultTimeout)
	if err := c.Advance(); err != nil {
		t.Fatal(err)
	}
	if got := aionFindings(c.Take()); len(got) != 1 || !strings.HasPrefix(got[0], "thin-air-read/ txns=2 key=x value=1") {
		t.Fatalf("got %v", got)
	}
	add(t, c, h, 0)
	if err := c.Finish(); err != nil {
		t.Fatal(err)
	}
	if got := c.Take(); len(got) != 0 || c.Stats().FlipFlops != 0 {
		t.Fatalf("a final verdict was re-checked: %v", aionFindings(got))
	}
}

// TestImmediateFindings: NoConflict, Session, Int and commit-before-start
// are final as soon as the transactions that show them have arrived.
func TestImmediateFindings(t *testing.T) {
	h := tiny(
		tinyTxn{1, 0, 10, 30, []history.Op{rnull(x), w(x, 1)}},
		tinyTxn{2, 1, 20, 40, []history.Op{rnull(x), w(x, 2)}},
		tinyTxn{3, 0, 25, 50, []history.Op{w(y, 3), r(y, 4)}},
		tinyTxn{4, 2, 60, 55, []history.Op{r(y, 3), r(y, 5)}},
	)
	clk := &clock{now: time.Unix(100, 0)}
	c := newChecker(t, clk, aion.Config{})
	if err := c.Add(h, h.Txns); err != nil {
		t.Fatal(err)
	}
	got := aionFindings(c.Take())
	want := []string{
		"commit-before-start/ txns=4 key= value=null ops=",
		"lost-update/G-SIa txns=1,2 key=x value=null ops=2:0,1:1,2:1",
		"non-repeatable-read/ txns=4 key=y value=5 ops=4:0,4:1",
		"not-my-own-write/ txns=3 key=y value=4 ops=3:1,3:0",
		"session-guarantee-violation/ txns=1,3 key= value=null ops=",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// TestAxiomParts: a checker of the key axioms reports the history's
// findings but the session and commit-before-start ones, which a checker of
// the session axioms reports, ignoring the operations.
func TestAxiomParts(t *testing.T) {
	h := tiny(
		tinyTxn{1, 0, 10, 30, []history.Op{rnull(x), w(x, 1)}},
		tinyTxn{2, 1, 20, 40, []history.Op{rnull(x), w(x, 2)}},
		tinyTxn{3, 0, 25, 50, []history.Op{w(y, 3), r(y, 4)}},
		tinyTxn{4, 2, 60, 55, []history.Op{r(y, 3), r(y, 5)}},
	)
	clk := &clock{now: time.Unix(100, 0)}
	keys := newChecker(t, clk, aion.Config{Axioms: aion.KeyAxioms})
	if err := keys.Add(h, h.Txns); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"lost-update/G-SIa txns=1,2 key=x value=null ops=2:0,1:1,2:1",
		"non-repeatable-read/ txns=4 key=y value=5 ops=4:0,4:1",
		"not-my-own-write/ txns=3 key=y value=4 ops=3:1,3:0",
	}
	if got := aionFindings(keys.Take()); !slices.Equal(got, want) {
		t.Fatalf("key axioms: got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	sessions := newChecker(t, clk, aion.Config{Axioms: aion.SessionAxioms})
	if err := sessions.Add(h, h.Txns); err != nil {
		t.Fatal(err)
	}
	want = []string{
		"commit-before-start/ txns=4 key= value=null ops=",
		"session-guarantee-violation/ txns=1,3 key= value=null ops=",
	}
	if got := aionFindings(sessions.Take()); !slices.Equal(got, want) {
		t.Fatalf("sessions: got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// TestBadInput: a batch with a bad transaction is refused whole, with an
// error naming the transaction and its line.
func TestBadInput(t *testing.T) {
	h := tiny(tinyTxn{1, 0, 10, 20, []history.Op{w(x, 1)}}, tinyTxn{2, 1, 30, 40, []history.Op{r(x, 1)}})
	h.Txns[1].HasCommitTS = false
	clk := &clock{now: time.Unix(100, 0)}
	c := newChecker(t, clk, aion.Config{})
	err := c.Add(h, h.Txns)
	if err == nil || !strings.Contains(err.Error(), "transaction 2 (line 2) has no commit_ts") {
		t.Fatalf("error %v", err)
	}
	if st := c.Stats(); st.Checked != 0 {
		t.Fatalf("checked %d transactions of a refused batch", st.Checked)
	}
	h.Txns[1].HasCommitTS = true
	if err := c.Add(h, h.Txns); err != nil {
		t.Fatal(err)
	}
	if err := c.Add(h, h.Txns[:1]); err == nil || !strings.Contains(err.Error(), "duplicate id 1") {
		t.Fatalf("duplicate accepted: %v", err)
	}
	h.Txns[0].Ops = append(h.Txns[0].Ops, history.Op{Kind: history.Append, Key: x, Value: history.IntValue(9)})
	h.Txns[0].ID = history.IntValue(7)
	if err := c.Add(h, h.Txns[:1]); err == nil || !strings.Contains(err.Error(), "transaction 7 (line 1): ops[1] appends to or reads the list at key x, which other operations use as a value") {
		t.Fatalf("an append to a key written before accepted: %v", err)
	}
	h.Txns[0].Ops = append(h.Txns[0].Ops[:0], history.Op{Kind: history.Scan, Key: x})
	if err := c.Add(h, h.Txns[:1]); err == nil || !strings.Contains(err.Error(), "ops[0] is a scan operation") {
		t.Fatalf("a scan accepted: %v", err)
	}
	if _, err := aion.New(aion.Config{MemoryBound: 1}); err == nil {
		t.Fatal("a memory bound without a store accepted")
	}
}

// memStore is a Store in memory: a store of the user's own.
type memStore struct {
	segs map[int64][]byte
}

// memSegment is a segment being written to a memStore.
type memSegment struct {
	bytes.Buffer
	m  *memStore
	id int64
}

func (w *memSegment) Close() error {
	w.m.segs[w.id] = w.Bytes()
	return nil
}

func (m *memStore) Create(id int64) (io.WriteCloser, error) {
	if _, ok := m.segs[id]; ok {
		return nil, fmt.Errorf("segment %d created twice", id)
	}
	return &memSegment{m: m, id: id}, nil
}

func (m *memStore) Open(id int64) (io.ReadCloser, error) {
	data, ok := m.segs[id]
	if !ok {
		return nil, fmt.Errorf("no segment %d", id)
	}
	return io.NopCloser(bytes.NewReader(data)), nil
}

func (m *memStore) Delete(id int64) error {
	delete(m.segs, id)
	return nil
}

// TestSpillTransparent: with a memory bound small enough to spill all the
// time (to files, and to a store of the user's own), and some transactions arriving long after the timeout (so that
// they start below what was spilled and force reloads), Aion finds
// exactly what it finds with no bound, and its estimate stays near the
// bound.
func TestSpillTransparent(t *testing.T) {
	for seed := range uint64(2) {
		for _, g := range generate(t, 800, seed)[:4] {
			for _, ser := range []bool{false, true} {
				rnd := rand.New(rand.NewPCG(seed, 3))
				sched := scheduleLate(g.H, rnd, 10*time.Millisecond, 1.0/100, 300*time.Millisecond)
				cfg := aion.Config{Serializable: ser, Timeout: 20 * time.Millisecond}
				_, want := feed(t, g.H, sched, 20, cfg, &clock{now: time.Unix(0, 0)})
				var store aion.Store = &memStore{segs: map[int64][]byte{}}
				if seed == 0 {
					fs, err := spillfile.New(t.TempDir())
					if err != nil {
						t.Fatal(err)
					}
					store = fs
				}
				cfg.MemoryBound, cfg.Store = 24<<10, store
				c, got := feed(t, g.H, sched, 20, cfg, &clock{now: time.Unix(0, 0)})
				if w, g2 := aionFindings(want), aionFindings(got); !slices.Equal(w, g2) {
					t.Fatalf("%s ser=%v: spilling changed the findings:\nunbounded %s\nbounded   %s", g.Name, ser, strings.Join(w, "\n  "), strings.Join(g2, "\n  "))
				}
				st := c.Stats()
				if st.Spills == 0 || st.Reloads == 0 {
					t.Fatalf("%s: %d spills, %d reloads", g.Name, st.Spills, st.Reloads)
				}
			}
		}
	}
}

// TestSetAsideWriters: a read of a value only an aborted transaction wrote
// is an aborted read naming it; of a value only a transaction of unknown
// outcome wrote, no verdict (it may have committed); of a value nobody
// wrote, a thin-air read.
func TestSetAsideWriters(t *testing.T) {
	for _, c := range []struct {
		name   string
		status history.Status
		want   string // a prefix of the one finding, or "" for none
	}{
		{"aborted writer", history.Aborted, "aborted-read/G1a txns=2,1 key=x value=1"},
		{"writer of unknown outcome", history.Unknown, ""},
	} {
		h := tiny(tinyTxn{1, 0, 10, 20, []history.Op{w(x, 1)}}, tinyTxn{2, 1, 30, 40, []history.Op{r(x, 1)}})
		h.Txns[0].Status = c.status
		h.Txns[0].HasStartTS, h.Txns[0].HasCommitTS = false, false
		clk := &clock{now: time.Unix(100, 0)}
		chk := newChecker(t, clk, aion.Config{})
		add(t, chk, h, 0)
		add(t, chk, h, 1)
		clk.now = clk.now.Add(aion.DefaultTimeout)
		if err := chk.Advance(); err != nil {
			t.Fatal(err)
		}
		vs := chk.Take()
		got := aionFindings(vs)
		switch {
		case c.want == "" && len(got) != 0:
			t.Errorf("%s: reported %v", c.name, got)
		case c.want != "" && (len(got) != 1 || !strings.HasPrefix(got[0], c.want)):
			t.Errorf("%s: got %v, want %s…", c.name, got, c.want)
		case c.want != "":
			if e := report.Explain(vs[0].History, &vs[0].Anomaly); !strings.Contains(e, "which aborted") {
				t.Errorf("%s: explanation %q", c.name, e)
			}
		}
	}
}
