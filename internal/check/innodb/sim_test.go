package innodb_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// innoSim simulates InnoDB's REPEATABLE READ as its documentation
// describes it, one statement at a time over interleaved sessions: a
// transaction's read view is created by its first snapshot read and sees
// the commits before it; a snapshot read returns the transaction's own
// last write of the key, or the view's version; a locking read and a
// write take the key's exclusive lock (waiting while another transaction
// holds it) and a locking read returns the own write or the latest
// committed version; a scan is a snapshot read of every key of its range;
// commit installs the writes and releases the locks. A deadlock aborts
// the waiting transaction.
type innoSim struct {
	r        *rand.Rand
	keys     int
	clock    int
	versions [][]version // per key, in commit order
	lock     []int       // the transaction holding each key's lock, or -1
	h        *history.History
	fresh    int64
}

type version struct {
	at    int
	value int64
}

type simTxn struct {
	id      int
	ops     []plannedOp
	next    int
	view    int // -1: no view yet
	own     map[int]int64
	locks   []int
	rec     []history.Op
	waitFor int // the key it waits for, or -1
}

type plannedOp struct {
	kind byte // 's' snapshot read, 'l' locking read, 'w' write, 'r' range scan
	key  int
}

func (s *innoSim) latest(k, before int) (int64, bool) {
	vs := s.versions[k]
	for i := len(vs) - 1; i >= 0; i-- {
		if vs[i].at < before {
			return vs[i].value, true
		}
	}
	return 0, false
}

func (s *innoSim) value(v int64, ok bool) history.Value {
	if !ok {
		return history.NullValue
	}
	return history.IntValue(v)
}

// step runs t's next statement; it reports false when t must wait for a
// lock.
func (s *innoSim) step(t *simTxn) bool {
	op := t.ops[t.next]
	s.clock++
	k := history.KeyID(op.key)
	switch op.kind {
	case 's', 'r':
		if t.view < 0 {
			t.view = s.clock
		}
		if op.kind == 's' {
			v, ok := t.own[op.key]
			if !ok {
				v, ok = s.latest(op.key, t.view)
			}
			t.rec = append(t.rec, history.Op{Kind: history.Read, Key: k, Value: s.value(v, ok)})
			break
		}
		hi := min(op.key+3, s.keys)
		rg := &history.Range{Lo: history.IntValue(int64(op.key)), Hi: history.IntValue(int64(hi))}
		for key := op.key; key < hi; key++ {
			v, ok := t.own[key]
			if !ok {
				v, ok = s.latest(key, t.view)
			}
			if ok {
				rg.Pairs = append(rg.Pairs, history.KV{Key: history.KeyID(key), Value: history.IntValue(v)})
			}
		}
		t.rec = append(t.rec, history.Op{Kind: history.Scan, Key: history.NoKey, Range: rg})
	case 'l', 'w':
		if holder := s.lock[op.key]; holder >= 0 && holder != t.id {
			t.waitFor = op.key
			return false
		}
		t.waitFor = -1
		if s.lock[op.key] < 0 {
			s.lock[op.key] = t.id
			t.locks = append(t.locks, op.key)
		}
		if op.kind == 'l' {
			v, ok := t.own[op.key]
			if !ok {
				v, ok = s.latest(op.key, s.clock+1)
			}
			t.rec = append(t.rec, history.Op{Kind: history.Read, Key: k, Value: s.value(v, ok), Lock: true})
			break
		}
		s.fresh++
		t.own[op.key] = s.fresh
		t.rec = append(t.rec, history.Op{Kind: history.Write, Key: k, Value: history.IntValue(s.fresh)})
	}
	t.next++
	return true
}

func (s *innoSim) end(t *simTxn, session int32, status history.Status) {
	s.clock++
	if status == history.Committed {
		for k, v := range t.own {
			s.versions[k] = append(s.versions[k], version{s.clock, v})
		}
	}
	for _, k := range t.locks {
		s.lock[k] = -1
	}
	s.h.Txns = append(s.h.Txns, history.Txn{ID: history.IntValue(int64(len(s.h.Txns) + 1)), Session: session, Status: status, Ops: t.rec})
}

// simulate runs sessions × perSession transactions of up to 6 statements
// over keys keys and returns the history the clients saw.
func simulate(seed uint64, sessions, perSession, keys int) *history.History {
	s := &innoSim{r: rand.New(rand.NewPCG(seed, 11)), keys: keys, versions: make([][]version, keys), lock: make([]int, keys), h: history.New()}
	for k := range s.lock {
		s.lock[k] = -1
	}
	for k := range keys {
		s.h.Key(history.IntValue(int64(k)))
	}
	for i := range sessions {
		s.h.Sessions = append(s.h.Sessions, history.IntValue(int64(i)))
	}
	left := make([]int, sessions)
	cur := make([]*simTxn, sessions)
	ids := 0
	for i := range left {
		left[i] = perSession
	}
	for {
		var ready []int
		for i := range sessions {
			if cur[i] == nil && left[i] > 0 {
				left[i]--
				n := 1 + s.r.IntN(6)
				t := &simTxn{id: ids, view: -1, own: map[int]int64{}, waitFor: -1}
				ids++
				for range n {
					kinds := "sslwwr"
					t.ops = append(t.ops, plannedOp{kinds[s.r.IntN(len(kinds))], s.r.IntN(keys)})
				}
				cur[i] = t
			}
			if cur[i] != nil {
				ready = append(ready, i)
			}
		}
		if len(ready) == 0 {
			return s.h
		}
		progressed := false
		for _, i := range s.r.Perm(len(ready)) {
			sess := ready[i]
			t := cur[sess]
			if t.next == len(t.ops) {
				s.end(t, int32(sess), history.Committed)
				cur[sess] = nil
				progressed = true
				break
			}
			if s.step(t) {
				progressed = true
				break
			}
		}
		if !progressed {
			// Every session waits: a deadlock. InnoDB rolls one back.
			sess := ready[s.r.IntN(len(ready))]
			s.end(cur[sess], int32(sess), history.Aborted)
			cur[sess] = nil
		}
	}
}

// TestSimulatedInnoDB: every history of the simulated InnoDB holds under
// the innodb-rr model — though many violate snapshot isolation — and when
// a snapshot read is then made to return the key's last committed version
// instead of its view's, the history is refuted (not always: another
// schedule may explain it, so only some must be).
func TestSimulatedInnoDB(t *testing.T) {
	const simSeeds uint64 = 150
	rr, si := level.Get(level.RepeatableRead), level.Get(level.SnapshotIsolation)
	notSI, faulty, caught := 0, 0, 0
	for seed := range simSeeds {
		h := simulate(seed, 4, 5, 4)
		res, err := check.Run(context.Background(), h, rr, check.Options{InnoDBRR: true})
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome != check.Satisfied {
			t.Fatalf("seed %d: innodb-rr refutes InnoDB's documented behaviour: %s\n%s", seed, kinds(res), history.Notation(h))
		}
		std, err := check.Run(context.Background(), h, si, check.Options{Checker: "sat"})
		if err != nil {
			t.Fatal(err)
		}
		if std.Outcome == check.Violated {
			notSI++
		}
		// The fault: the first snapshot read of a key that another
		// transaction wrote returns the final version instead.
		bad, ok := staleToLatest(h)
		if !ok {
			continue
		}
		faulty++
		res, err = check.Run(context.Background(), bad, rr, check.Options{InnoDBRR: true})
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome == check.Violated {
			caught++
		}
	}
	t.Logf("%d of %d simulated histories violate SI; %d of %d faulty ones refuted", notSI, simSeeds, caught, faulty)
	if notSI == 0 {
		t.Error("no simulated history violates SI: the simulation shows nothing InnoDB-specific")
	}
	if caught == 0 {
		t.Error("no faulty history was refuted")
	}
}

// staleToLatest returns a copy of h in which the first plain read that
// returned a version older than the key's last committed one returns the
// last one instead.
func staleToLatest(h *history.History) (*history.History, bool) {
	last := map[history.KeyID]history.Value{}
	for i := range h.Txns {
		if h.Txns[i].Status != history.Committed {
			continue
		}
		for _, op := range h.Txns[i].Ops {
			if op.Kind == history.Write {
				last[op.Key] = op.Value
			}
		}
	}
	for i := range h.Txns {
		tx := &h.Txns[i]
		for j, op := range tx.Ops {
			v, ok := last[op.Key]
			if op.Kind != history.Read || op.Lock || !ok || op.Value == v {
				continue
			}
			written := false
			for _, o := range tx.Ops[:j] {
				written = written || o.Kind == history.Write && o.Key == op.Key
			}
			for _, o := range tx.Ops {
				written = written || o.Kind == history.Write && o.Key == op.Key && o.Value == v
			}
			if written {
				continue
			}
			out := *h
			out.Txns = append([]history.Txn(nil), h.Txns...)
			ops := append([]history.Op(nil), tx.Ops...)
			ops[j].Value = v
			out.Txns[i].Ops = ops
			return &out, true
		}
	}
	return nil, false
}
