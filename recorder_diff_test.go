package isoscope

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/isoscope/isoscope/internal/history"
)

// mvccStore is a small in-memory multi-version store under snapshot
// isolation: a transaction reads the versions committed before it began
// (and its own writes), buffers its writes, and commits unless a key it
// wrote was committed by another since it began (first committer wins).
// Keys below listBase hold integers; keys from listBase hold lists.
//
// The store keeps its own log of what it did: each transaction's
// operations and results as it executed them, and the store's own order
// of events (a begin, a commit or an abort each take the next number).
type mvccStore struct {
	mu       sync.Mutex
	clock    uint64 // the last commit timestamp
	event    int    // the last event number
	txns     int    // the last transaction number
	versions map[int64][]storeVersion
	log      []storeTxn
}

const listBase = 100

type storeVersion struct {
	ts      uint64
	deleted bool
	value   int64
	list    []int64
	writer  int // the store's transaction number
}

// storeTxn is one transaction in the store's log.
type storeTxn struct {
	n                 int // the store's transaction number, from 1
	session           int64
	startTS, commitTS uint64
	beginEv, endEv    int
	status            history.Status
	ops               []string // in the notation opString renders
	writes            map[int64]*storeVersion
	written           []int64 // keys in the order first written
}

func newMVCCStore(keys int) *mvccStore {
	s := &mvccStore{versions: map[int64][]storeVersion{}}
	for k := range int64(keys) {
		s.versions[k] = []storeVersion{{value: 0}}
	}
	return s
}

func (s *mvccStore) begin(session int64) *storeTxn {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.event++
	s.txns++
	return &storeTxn{n: s.txns, session: session, startTS: s.clock, beginEv: s.event, writes: map[int64]*storeVersion{}}
}

// visible returns key's version t sees, or nil when the key is absent.
func (s *mvccStore) visible(t *storeTxn, key int64) *storeVersion {
	if v, ok := t.writes[key]; ok {
		return v
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	vs := s.versions[key]
	for i := len(vs) - 1; i >= 0; i-- {
		if vs[i].ts <= t.startTS {
			return &vs[i]
		}
	}
	return nil
}

func (s *mvccStore) read(t *storeTxn, key int64) (int64, bool) {
	v := s.visible(t, key)
	if v == nil || v.deleted {
		t.ops = append(t.ops, fmt.Sprintf("r %d _", key))
		return 0, false
	}
	t.ops = append(t.ops, fmt.Sprintf("r %d %d", key, v.value))
	return v.value, true
}

func (t *storeTxn) put(key int64, v storeVersion) {
	if _, ok := t.writes[key]; !ok {
		t.written = append(t.written, key)
	}
	t.writes[key] = &v
}

func (s *mvccStore) write(t *storeTxn, key, value int64) {
	t.put(key, storeVersion{value: value})
	t.ops = append(t.ops, fmt.Sprintf("w %d %d", key, value))
}

func (s *mvccStore) delete(t *storeTxn, key int64) {
	t.put(key, storeVersion{deleted: true})
	t.ops = append(t.ops, fmt.Sprintf("d %d", key))
}

func (s *mvccStore) appendList(t *storeTxn, key, elem int64) {
	var list []int64
	if v := s.visible(t, key); v != nil {
		list = v.list
	}
	t.put(key, storeVersion{list: append(slices.Clone(list), elem)})
	t.ops = append(t.ops, fmt.Sprintf("a %d %d", key, elem))
}

func (s *mvccStore) readList(t *storeTxn, key int64) []int64 {
	var list []int64
	if v := s.visible(t, key); v != nil {
		list = v.list
	}
	t.ops = append(t.ops, fmt.Sprintf("r %d %s", key, strings.Trim(fmt.Sprint(list), "[]")))
	return list
}

// scan returns the present keys of lo <= key < hi (hi < 0: no bound) in
// ascending order, at most limit of them (limit < 0: all; an iterator
// otherwise).
func (s *mvccStore) scan(t *storeTxn, lo, hi int64, limit int) [][2]int64 {
	var out [][2]int64
	var parts []string
	for k := lo; k < listBase && (hi < 0 || k < hi) && (limit < 0 || len(out) < limit); k++ {
		if v := s.visible(t, k); v != nil && !v.deleted {
			out = append(out, [2]int64{k, v.value})
			parts = append(parts, fmt.Sprintf("%d=%d", k, v.value))
		}
	}
	kind, h := "scan", "_"
	if limit >= 0 {
		kind = "iter"
	}
	if hi >= 0 {
		h = strconv.FormatInt(hi, 10)
	}
	t.ops = append(t.ops, fmt.Sprintf("%s %d %s [%s]", kind, lo, h, strings.Join(parts, ",")))
	return out
}

// commit commits t unless a key it wrote was committed since it began;
// it returns whether it committed.
func (s *mvccStore) commit(t *storeTxn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.event++
	t.endEv = s.event
	for _, k := range t.written {
		if vs := s.versions[k]; len(vs) > 0 && vs[len(vs)-1].ts > t.startTS {
			t.status = history.Aborted
			s.log = append(s.log, *t)
			return false
		}
	}
	if len(t.written) > 0 {
		s.clock++
		t.commitTS = s.clock
		for _, k := range t.written {
			v := *t.writes[k]
			v.ts, v.writer = s.clock, t.n
			s.versions[k] = append(s.versions[k], v)
		}
	} else {
		t.commitTS = t.startTS
	}
	s.log = append(s.log, *t)
	return true
}

// runDifferential drives a store from sessions goroutines, each running txns
// random transactions through rec, and returns the store.
// Lists adds appends and list reads.
func runDifferential(t *testing.T, rec *Recorder, sessions, txns, keys int, seed uint64, lists bool) *mvccStore {
	t.Helper()
	st := newMVCCStore(keys)
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for s := range int64(sessions) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(s)))
			for n := range txns {
				tx := rec.Begin(Int(s))
				stx := st.begin(s)
				tx.StartTS(stx.startTS)
				for i := range 1 + rng.IntN(5) {
					key := rng.Int64N(int64(keys))
					value := s*1_000_000 + int64(n)*10 + int64(i) // unique per write
					kinds := 7
					if lists {
						kinds = 8
					}
					switch rng.IntN(kinds) {
					case 0, 1:
						v, ok := st.read(stx, key)
						if ok {
							tx.Read(Int(key), Int(v))
						} else {
							tx.Read(Int(key), Null)
						}
					case 2, 3:
						st.write(stx, key, value)
						tx.Write(Int(key), Int(value))
					case 4:
						st.delete(stx, key)
						tx.Delete(Int(key))
					case 5, 6:
						lo := rng.Int64N(int64(keys))
						hi, limit := int64(-1), -1
						if rng.IntN(2) == 0 {
							hi = lo + 1 + rng.Int64N(4)
						}
						if rng.IntN(2) == 0 {
							limit = rng.IntN(3)
						}
						var pairs []KV
						for _, p := range st.scan(stx, lo, hi, limit) {
							pairs = append(pairs, KV{Int(p[0]), Int(p[1])})
						}
						h := Null
						if hi >= 0 {
							h = Int(hi)
						}
						if limit >= 0 {
							tx.Iter(Int(lo), h, pairs)
						} else {
							tx.Scan(Int(lo), h, pairs)
						}
					default:
						lk := listBase + key%3
						if rng.IntN(2) == 0 {
							st.appendList(stx, lk, value)
							tx.Append(Int(lk), Int(value))
						} else {
							var list []Value
							for _, e := range st.readList(stx, lk) {
								list = append(list, Int(e))
							}
							tx.ReadList(Int(lk), list...)
						}
					}
				}
				var err error
				if st.commit(stx) {
					tx.CommitTS(stx.commitTS)
					for _, k := range stx.written {
						tx.Version(Int(k), stx.commitTS)
					}
					err = tx.Commit()
				} else {
					err = tx.Abort()
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return st
}

// opString renders op of h as the store's log writes it.
func opString(h *history.History, op history.Op) string {
	v := func(x history.Value) string {
		if x.IsNull() {
			return "_"
		}
		return x.String()
	}
	switch op.Kind {
	case history.Read, history.Write:
		return fmt.Sprintf("%s %s %s", op.Kind, h.Keys[op.Key], v(op.Value))
	case history.Delete:
		return fmt.Sprintf("d %s", h.Keys[op.Key])
	case history.Append:
		return fmt.Sprintf("a %s %s", h.Keys[op.Key], v(op.Value))
	case history.ReadList:
		items := make([]string, len(op.List))
		for i, e := range op.List {
			items[i] = e.String()
		}
		return fmt.Sprintf("r %s %s", h.Keys[op.Key], strings.Join(items, " "))
	case history.Scan, history.Iter:
		items := make([]string, len(op.Range.Pairs))
		for i, p := range op.Range.Pairs {
			items[i] = h.Keys[p.Key].String() + "=" + v(p.Value)
		}
		hi := "_"
		if !op.Range.HiOpen {
			hi = op.Range.Hi.String()
		}
		return fmt.Sprintf("%s %s %s [%s]", op.Kind, op.Range.Lo, hi, strings.Join(items, ","))
	}
	return "?"
}

// TestRecorderAgreesWithStoreLog is the differential test: a history the
// Recorder records from a concurrent program over a simulated store is the
// history the store's own log gives. Session by session, the transactions
// are the same, in the same order, with the same status, operations,
// results and timestamps; the version order is the store's; and whenever
// the recorded instants say one transaction ended before another began,
// the store saw it so too. The stream says what History says, and the
// history satisfies snapshot isolation, the store's level (checked without
// lists, which no checker decides together with scans).
func TestRecorderAgreesWithStoreLog(t *testing.T) {
	for _, c := range []struct {
		seed  uint64
		lists bool
	}{{1, true}, {2, true}, {3, false}, {4, false}} {
		t.Run(fmt.Sprintf("seed=%d,lists=%v", c.seed, c.lists), func(t *testing.T) {
			var stream bytes.Buffer
			var initial []KV
			for k := range int64(8) {
				initial = append(initial, KV{Int(k), Int(0)})
			}
			rec, err := NewRecorder(RecorderOptions{Stream: &stream, Initial: initial})
			if err != nil {
				t.Fatal(err)
			}
			st := runDifferential(t, rec, 16, 60, 8, c.seed, c.lists)
			got, err := rec.History()
			if err != nil {
				t.Fatal(err)
			}
			h := got.h

			// Session by session, the same transactions.
			bySession := map[int64][]storeTxn{}
			for _, x := range st.log {
				bySession[x.session] = append(bySession[x.session], x)
			}
			for _, x := range bySession {
				slices.SortFunc(x, func(a, b storeTxn) int { return a.beginEv - b.beginEv })
			}
			storeOf := make([]*storeTxn, len(h.Txns)) // the store's record of each recorded transaction
			seen := map[int64]int{}
			for i := range h.Txns {
				x := &h.Txns[i]
				s := h.Sessions[x.Session].N
				j := seen[s]
				seen[s]++
				if j >= len(bySession[s]) {
					t.Fatalf("session %d: the recorder has more transactions than the store's %d", s, len(bySession[s]))
				}
				want := &bySession[s][j]
				storeOf[i] = want
				var ops []string
				for _, op := range x.Ops {
					ops = append(ops, opString(h, op))
				}
				if !slices.Equal(ops, want.ops) || x.Status != want.status {
					t.Fatalf("session %d, transaction %d of it: recorded %v %q, the store did %v %q", s, j, x.Status, ops, want.status, want.ops)
				}
				if x.StartTS != want.startTS || (x.Status == history.Committed) != x.HasCommitTS || x.HasCommitTS && x.CommitTS != want.commitTS {
					t.Fatalf("session %d, transaction %d of it: recorded timestamps %d/%d, the store's %d/%d", s, j, x.StartTS, x.CommitTS, want.startTS, want.commitTS)
				}
				if !x.HasTime || x.End < x.Begin {
					t.Fatalf("transaction %v: instants %d..%d", x.ID, x.Begin, x.End)
				}
			}
			for s, xs := range bySession {
				if seen[s] != len(xs) {
					t.Fatalf("session %d: recorded %d transactions, the store ran %d", s, seen[s], len(xs))
				}
			}

			// Real time: recorded precedence is the store's.
			for i := range h.Txns {
				for j := range h.Txns {
					if h.Txns[i].End < h.Txns[j].Begin && storeOf[i].endEv > storeOf[j].beginEv {
						t.Fatalf("transactions %v and %v: recorded as one ending before the other began, the store began the second first",
							h.Txns[i].ID, h.Txns[j].ID)
					}
				}
			}

			// The version order is the store's: writers by commit timestamp.
			for k, order := range h.Header.VersionOrder {
				key := h.Keys[k].N
				var want []int
				for _, v := range st.versions[key] {
					if v.writer != 0 { // not the initial state
						want = append(want, v.writer)
					}
				}
				var gotOrder []int
				for _, id := range order {
					gotOrder = append(gotOrder, storeOf[id].n)
				}
				if !slices.Equal(gotOrder, want) {
					t.Fatalf("key %d: version order %v, the store's %v", key, gotOrder, want)
				}
			}

			written := 0
			for _, vs := range st.versions {
				if vs[len(vs)-1].writer != 0 {
					written++
				}
			}
			if len(h.Header.VersionOrder) != written {
				t.Fatalf("a version order for %d keys, the store wrote %d", len(h.Header.VersionOrder), written)
			}

			// The stream holds the same transactions, in the same order.
			streamed, err := ReadHistory(&stream, "stream")
			if err != nil {
				t.Fatal(err)
			}
			if len(streamed.h.Txns) != len(h.Txns) {
				t.Fatalf("the stream has %d transactions, History %d", len(streamed.h.Txns), len(h.Txns))
			}
			for i := range h.Txns {
				a, b := &h.Txns[i], &streamed.h.Txns[i]
				var oa, ob []string
				for _, op := range a.Ops {
					oa = append(oa, opString(h, op))
				}
				for _, op := range b.Ops {
					ob = append(ob, opString(streamed.h, op))
				}
				if a.ID != b.ID || a.Status != b.Status || a.Begin != b.Begin || a.End != b.End || !slices.Equal(oa, ob) {
					t.Fatalf("line %d: the stream says %v %v %q, History %v %v %q", i+2, b.ID, b.Status, ob, a.ID, a.Status, oa)
				}
			}

			if c.lists {
				return
			}
			res, err := Check(context.Background(), got, Options{Level: SnapshotIsolation})
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != Satisfied {
				t.Fatalf("the snapshot-isolation store's history: %v %+v", res.Outcome, res.Anomalies)
			}
		})
	}
}
