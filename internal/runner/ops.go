package runner

import (
	"context"

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
	ops        []history.Op
}

// add appends op; a nil record (tracing off) records nothing.
func (r *record) add(op history.Op) {
	if r != nil {
		r.ops = append(r.ops, op)
	}
}

func intValue(v int64, ok bool) history.Value {
	if !ok {
		return history.NullValue
	}
	return history.IntValue(v)
}

// do performs one planned operation and traces it. A write is traced
// before it is sent: if it fails, the aborted transaction still shows
// what it tried to write (a reader of that value then reads an aborted
// write, not a value from thin air). Reads are traced with their results.
func (s *session) do(ctx context.Context, op *workload.Op, rec *record) error {
	c := s.conn
	k := history.KeyID(op.Key)
	switch op.Kind {
	case workload.ReadOp:
		v, ok, err := c.Read(ctx, op.Key)
		if err != nil {
			return err
		}
		rec.add(history.Op{Kind: history.Read, Key: k, Value: intValue(v, ok)})
		s.know(op.Key, intValue(v, ok))
	case workload.WriteOp:
		v := op.Value
		if !op.Fixed {
			v = s.fresh()
		}
		rec.add(history.Op{Kind: history.Write, Key: k, Value: history.IntValue(v)})
		return c.Write(ctx, op.Key, v)
	case workload.DeleteOp:
		rec.add(history.Op{Kind: history.Delete, Key: k})
		return c.Delete(ctx, op.Key)
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
			rg := &history.Range{Lo: history.IntValue(op.Key), Hi: history.IntValue(op.Hi), Pairs: make([]history.KV, len(kvs))}
			for i, kv := range kvs {
				rg.Pairs[i] = history.KV{Key: history.KeyID(kv.Key), Value: history.IntValue(kv.Value)}
			}
			rec.add(history.Op{Kind: kind, Key: history.NoKey, Range: rg})
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
	actual, present, err := s.conn.Read(ctx, key)
	if err != nil {
		return err
	}
	rec.add(history.Op{Kind: history.Read, Key: k, Value: intValue(actual, present)})
	s.know(key, intValue(actual, present))
	return nil
}

// know remembers, for the lwt workload, the value the session saw at key.
// A value from a transaction that then aborts may be stale: the next
// compare-and-set fails, reads the actual value and learns it.
func (s *session) know(key int64, v history.Value) {
	if s.r.c.Plan.Config.Workload == workload.LWT {
		s.known[key] = v
	}
}
