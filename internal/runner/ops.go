package runner

import (
	"context"
	"errors"

	"github.com/isoscope/isoscope/internal/db"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/workload"
)

// record is one traced transaction on its way to the recorder. Until the
// recorder interns them, its operations hold raw keys: an op's Key (and a
// range pair's Key) is the integer key itself, not a KeyID.
type record struct {
	session    int64
	status     history.Status
	begin, end int64
	// startTS and commitTS are the database's timestamps of a committed
	// transaction, valid when hasTS is set (db.Timestamper).
	startTS, commitTS uint64
	hasTS             bool
	ops               []history.Op
	// fault, when set, makes the record a fault the nemesis applied
	// rather than a transaction.
	fault *history.Fault
}

// add appends op; a nil record (tracing off) records nothing.
func (r *record) add(op history.Op) {
	if r != nil {
		r.ops = append(r.ops, op)
	}
}

// do performs one planned operation and traces it. A write is traced
// before it is sent: if it fails, the aborted transaction still shows
// what it tried to write (a reader of that value then reads an aborted
// write, not a value from thin air). Reads are traced with their results.
// A delete is traced as a delete when it deleted a row (or failed), and
// as a locking read of null when the key was absent: SQL's DELETE of a
// missing row writes nothing, so it cannot conflict with a concurrent
// insert the way a delete in a key-value store does, and a history that
// showed it as a write would claim a write conflict the database never
// had to resolve.
func (s *session) do(ctx context.Context, op *workload.Op, rec *record) error {
	c := s.conn
	k := history.KeyID(op.Key)
	switch op.Kind {
	case workload.ReadOp:
		if op.Lock {
			return s.lockedRead(ctx, op.Key, rec)
		}
		vs, err := c.Read(ctx, op.Key)
		if err != nil {
			return err
		}
		s.know(op.Key, s.traceRead(rec, k, vs))
	case workload.WriteOp:
		v := op.Value
		if !op.Fixed {
			v = s.fresh()
		}
		rec.add(history.Op{Kind: history.Write, Key: k, Value: history.IntValue(v)})
		return c.Write(ctx, op.Key, v)
	case workload.DeleteOp:
		found, err := c.Delete(ctx, op.Key)
		if err != nil || found {
			rec.add(history.Op{Kind: history.Delete, Key: k})
			return err
		}
		// The statement deleted no row: it wrote nothing, and it found k
		// absent where a locking read would have looked (the snapshot on
		// PostgreSQL, the latest committed state on InnoDB).
		rec.add(history.Op{Kind: history.Read, Key: k, Value: history.NullValue, Lock: true})
	case workload.ScanOp, workload.IterOp:
		limit, kind := 0, history.Scan
		if op.Kind == workload.IterOp {
			limit, kind = op.Limit, history.Iter
		}
		kvs, err := c.Scan(ctx, op.Key, op.Hi, limit)
		if err != nil {
			return err
		}
		if rec != nil {
			traceRange(rec, kind, op.Key, op.Hi, kvs)
		}
	case workload.AppendOp:
		e := s.fresh()
		rec.add(history.Op{Kind: history.Append, Key: k, Value: history.IntValue(e)})
		return c.Append(ctx, op.Key, e)
	case workload.ReadListOp:
		l, err := c.ReadList(ctx, op.Key)
		if err != nil {
			return err
		}
		if rec != nil {
			vs := make([]history.Value, len(l))
			for i, e := range l {
				vs[i] = history.IntValue(e)
			}
			if len(vs) == 0 {
				vs = nil
			}
			rec.add(history.Op{Kind: history.ReadList, Key: k, List: vs})
		}
	case workload.CASOp:
		return s.cas(ctx, op.Key, rec)
	}
	return nil
}

// traceRange traces a scan or iterator of [lo, hi) that returned kvs, in
// key order. A key the database returned in more than one row (PostgreSQL's
// REPEATABLE READ, after a concurrent delete and a re-insert) cannot appear
// twice in a range result, whose keys strictly ascend: the range keeps the
// key's first row, and each further row follows it as a read of the key,
// so that the history still shows every row the client saw.
func traceRange(rec *record, kind history.OpKind, lo, hi int64, kvs []db.KV) {
	rg := &history.Range{Lo: history.IntValue(lo), Hi: history.IntValue(hi), Pairs: make([]history.KV, 0, len(kvs))}
	var again []db.KV
	for _, kv := range kvs {
		if n := len(rg.Pairs); n > 0 && kv.Key <= int64(rg.Pairs[n-1].Key) {
			again = append(again, kv)
			continue
		}
		rg.Pairs = append(rg.Pairs, history.KV{Key: history.KeyID(kv.Key), Value: history.IntValue(kv.Value)})
	}
	rec.add(history.Op{Kind: kind, Key: history.NoKey, Range: rg})
	for _, kv := range again {
		rec.add(history.Op{Kind: history.Read, Key: history.KeyID(kv.Key), Value: history.IntValue(kv.Value)})
	}
}

// cas is a lightweight transaction on key k: compare-and-set from the
// value the session last saw to a fresh one, or insert-if-not-exists when
// it saw none. A success is traced [r k old, w k new]; a failure reads the
// actual value in the same transaction and is traced [r k actual].
func (s *session) cas(ctx context.Context, key int64, rec *record) error {
	k := history.KeyID(key)
	old := s.known[key]
	v := s.fresh()
	var ok bool
	var err error
	if old.IsNull() {
		ok, err = s.conn.InsertIfAbsent(ctx, key, v)
	} else {
		ok, err = s.conn.CompareAndSet(ctx, key, old.N, v)
	}
	if err != nil {
		return err
	}
	if ok {
		rec.add(history.Op{Kind: history.Read, Key: k, Value: old})
		rec.add(history.Op{Kind: history.Write, Key: k, Value: history.IntValue(v)})
		s.know(key, history.IntValue(v))
		return nil
	}
	vs, err := s.conn.Read(ctx, key)
	if err != nil {
		return err
	}
	s.know(key, s.traceRead(rec, k, vs))
	return nil
}

// traceRead traces a point read that returned the values vs of k's rows:
// a read of null when there were none, and one read per row otherwise, in
// the order the database returned them (a key with several rows is what
// the client saw, and stays in the history). It returns the last value.
func (s *session) traceRead(rec *record, k history.KeyID, vs []int64) history.Value {
	if len(vs) == 0 {
		rec.add(history.Op{Kind: history.Read, Key: k, Value: history.NullValue})
		return history.NullValue
	}
	for _, v := range vs {
		rec.add(history.Op{Kind: history.Read, Key: k, Value: history.IntValue(v)})
	}
	return history.IntValue(vs[len(vs)-1])
}

// know remembers, for the lwt workload, the value the session saw at key.
// A value from a transaction that then aborts may be stale: the next
// compare-and-set fails, reads the actual value and learns it.
func (s *session) know(key int64, v history.Value) {
	if s.r.c.Plan.Config.Workload == workload.LWT {
		s.known[key] = v
	}
}

// errNoLockingReads fails a locking read on a database that has none.
var errNoLockingReads = errors.New("this database has no locking reads (SELECT … FOR UPDATE)")

// lockedRead performs a locking read of key (SELECT … FOR UPDATE, the
// plan's LockRMW) and traces it with the lock attribute, one read per row
// as traceRead does.
func (s *session) lockedRead(ctx context.Context, key int64, rec *record) error {
	lr, ok := s.conn.(db.LockingReader)
	if !ok {
		return errNoLockingReads
	}
	vs, err := lr.ReadLocked(ctx, key)
	if err != nil {
		return err
	}
	k := history.KeyID(key)
	if len(vs) == 0 {
		rec.add(history.Op{Kind: history.Read, Key: k, Value: history.NullValue, Lock: true})
	}
	for _, v := range vs {
		rec.add(history.Op{Kind: history.Read, Key: k, Value: history.IntValue(v), Lock: true})
	}
	return nil
}
