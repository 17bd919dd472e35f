// Package etcdtrace records the history of a program that uses etcd, for
// isoscope to check. KV wraps a clientv3.KV and is one: Put, Get, Delete,
// Do and Txn behave as the wrapped client's and record each call as one
// transaction of an isoscope.Recorder, with its result:
//
//	kv := etcdtrace.New(client, rec)
//	kv.Put(ctx, "x", "1")
//	resp, err := kv.Txn(ctx).If(cmp).Then(clientv3.OpGet("x"), clientv3.OpPut("y", "2")).Commit()
//
// Keys and values are recorded as strings (isoscope.Bytes). A Get of one
// key records a read (of null when absent); a range Get a scan over its
// range, or, when a limit left keys out (More), an iterator operation; a
// Put a write, a Delete a delete of each key it deleted (a range delete is
// sent with WithPrevKV, so that its response names them). A Txn records
// the operations of the branch that ran. A write's revision is its version
// hint (isoscope.Tx.Version): the history's version order is etcd's.
// A call that failed without an answer records the writes it may have
// made, its outcome unknown.
// Comparisons are not recorded (the history format has no "read x, it
// was not 5"), which loses constraints but never adds one.
//
// Not recorded, and counted by Unrecorded: Gets with WithCountOnly,
// WithKeysOnly, WithRev or a revision filter, ranges over keys that are
// not valid UTF-8 or whose result is not in ascending key order, and a
// failed Txn whose Else branch writes (which branch ran is unknown). A
// Get with a limit and a sort other than by key would be recorded as
// sorted by key, and a Put with WithIgnoreValue as a write of "": use
// neither in a traced program.
//
// A call that succeeds is committed. One that fails with an answer from
// the server (a gRPC status other than Unavailable, DeadlineExceeded,
// Canceled, Aborted or Unknown) is aborted; otherwise, its outcome is
// unknown.
package etcdtrace

import (
	"bytes"
	"context"
	"errors"
	"sync/atomic"
	"unicode/utf8"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/isoscope/isoscope"
)

// KV is a clientv3.KV whose calls are recorded.
type KV struct {
	kv  clientv3.KV
	rec *isoscope.Recorder
	// session names the session of every call; null: each call is a
	// session of its own, named by a negative integer.
	session  isoscope.Value
	counters *counters
}

type counters struct{ sessions, unrecorded atomic.Int64 }

var _ clientv3.KV = (*KV)(nil)

// New returns kv (a *clientv3.Client, or its KV) recording its calls in
// rec, each in a session of its own.
func New(kv clientv3.KV, rec *isoscope.Recorder) *KV {
	return &KV{kv: kv, rec: rec, counters: &counters{}}
}

// Session returns the KV whose calls are the session named name (not
// null, and not a negative integer): a goroutine that makes its calls one
// after another.
func (k *KV) Session(name isoscope.Value) *KV {
	return &KV{kv: k.kv, rec: k.rec, session: name, counters: k.counters}
}

// Unrecorded counts the operations left out of the history.
func (k *KV) Unrecorded() int64 { return k.counters.unrecorded.Load() }

// Put puts val at key, as clientv3.KV.Put does, and records the write.
func (k *KV) Put(ctx context.Context, key, val string, opts ...clientv3.OpOption) (*clientv3.PutResponse, error) {
	r, err := k.Do(ctx, clientv3.OpPut(key, val, opts...))
	return r.Put(), err
}

// Get gets key (or a range), as clientv3.KV.Get does, and records the read
// or the scan.
func (k *KV) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	r, err := k.Do(ctx, clientv3.OpGet(key, opts...))
	return r.Get(), err
}

// Delete deletes key (or a range), as clientv3.KV.Delete does, and records
// the deletes.
func (k *KV) Delete(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.DeleteResponse, error) {
	r, err := k.Do(ctx, clientv3.OpDelete(key, opts...))
	return r.Del(), err
}

// Compact compacts etcd's history, as clientv3.KV.Compact does; it
// records nothing.
func (k *KV) Compact(ctx context.Context, rev int64, opts ...clientv3.CompactOption) (*clientv3.CompactResponse, error) {
	return k.kv.Compact(ctx, rev, opts...)
}

// Do runs op, as clientv3.KV.Do does, and records it as one transaction.
func (k *KV) Do(ctx context.Context, op clientv3.Op) (clientv3.OpResponse, error) {
	op = withPrevKV(op)
	tx := k.begin()
	r, err := k.kv.Do(ctx, op)
	if err != nil {
		k.failed(tx, err, []clientv3.Op{op}, nil)
		return r, err
	}
	var ro pb.ResponseOp
	var rev int64
	switch {
	case op.IsGet():
		ro.Response, rev = &pb.ResponseOp_ResponseRange{ResponseRange: (*pb.RangeResponse)(r.Get())}, r.Get().Header.GetRevision()
	case op.IsPut():
		ro.Response, rev = &pb.ResponseOp_ResponsePut{ResponsePut: (*pb.PutResponse)(r.Put())}, r.Put().Header.GetRevision()
	case op.IsDelete():
		ro.Response, rev = &pb.ResponseOp_ResponseDeleteRange{ResponseDeleteRange: (*pb.DeleteRangeResponse)(r.Del())}, r.Del().Header.GetRevision()
	case op.IsTxn():
		ro.Response, rev = &pb.ResponseOp_ResponseTxn{ResponseTxn: (*pb.TxnResponse)(r.Txn())}, r.Txn().Header.GetRevision()
	}
	k.record(tx, op, &ro, uint64(rev))
	_ = tx.Commit()
	return r, nil
}

// Txn returns a transaction, as clientv3.KV.Txn does, recorded when it
// commits.
func (k *KV) Txn(ctx context.Context) clientv3.Txn { return &txn{k: k, ctx: ctx} }

// txn is a recorded clientv3.Txn: it keeps its comparisons and branches
// until Commit.
type txn struct {
	k               *KV
	ctx             context.Context
	cmps            []clientv3.Cmp
	thenOp, elseOps []clientv3.Op
}

func (t *txn) If(cs ...clientv3.Cmp) clientv3.Txn {
	t.cmps = append(t.cmps, cs...)
	return t
}

func (t *txn) Then(ops ...clientv3.Op) clientv3.Txn {
	t.thenOp = append(t.thenOp, ops...)
	return t
}

func (t *txn) Else(ops ...clientv3.Op) clientv3.Txn {
	t.elseOps = append(t.elseOps, ops...)
	return t
}

// Commit runs the transaction, as clientv3.Txn.Commit does, and records
// the branch that ran.
func (t *txn) Commit() (*clientv3.TxnResponse, error) {
	op := withPrevKV(clientv3.OpTxn(t.cmps, t.thenOp, t.elseOps))
	_, thenOps, elseOps := op.Txn()
	tx := t.k.begin()
	r, err := t.k.kv.Txn(t.ctx).If(t.cmps...).Then(thenOps...).Else(elseOps...).Commit()
	if err != nil {
		t.k.failed(tx, err, thenOps, elseOps)
		return r, err
	}
	t.k.record(tx, op, &pb.ResponseOp{Response: &pb.ResponseOp_ResponseTxn{ResponseTxn: (*pb.TxnResponse)(r)}}, uint64(r.Header.GetRevision()))
	_ = tx.Commit()
	return r, nil
}

func (k *KV) begin() *isoscope.Tx {
	s := k.session
	if s.IsNull() {
		s = isoscope.Int(-k.counters.sessions.Add(1))
	}
	return k.rec.Begin(s)
}

// withPrevKV returns op with every range delete in it asking for the
// deleted pairs, so that the response names the keys deleted.
func withPrevKV(op clientv3.Op) clientv3.Op {
	switch {
	case op.IsDelete() && len(op.RangeBytes()) > 0:
		return clientv3.OpDelete(string(op.KeyBytes()), clientv3.WithRange(string(op.RangeBytes())), clientv3.WithPrevKV())
	case op.IsTxn():
		cmps, thenOps, elseOps := op.Txn()
		return clientv3.OpTxn(cmps, withPrevKVs(thenOps), withPrevKVs(elseOps))
	}
	return op
}

func withPrevKVs(ops []clientv3.Op) []clientv3.Op {
	out := make([]clientv3.Op, len(ops))
	for i, op := range ops {
		out[i] = withPrevKV(op)
	}
	return out
}

// record records op, which ran at revision rev and answered r.
func (k *KV) record(tx *isoscope.Tx, op clientv3.Op, r *pb.ResponseOp, rev uint64) {
	key := op.KeyBytes()
	switch {
	case op.IsGet():
		k.recordGet(tx, op, r.GetResponseRange())
	case op.IsPut():
		tx.Write(isoscope.Bytes(key), isoscope.Bytes(op.ValueBytes()))
		tx.Version(isoscope.Bytes(key), rev)
	case op.IsDelete() && len(op.RangeBytes()) == 0:
		tx.Delete(isoscope.Bytes(key))
		if r.GetResponseDeleteRange().GetDeleted() > 0 { // a delete of an absent key makes no revision
			tx.Version(isoscope.Bytes(key), rev)
		}
	case op.IsDelete():
		for _, kv := range r.GetResponseDeleteRange().GetPrevKvs() {
			tx.Delete(isoscope.Bytes(kv.Key))
			tx.Version(isoscope.Bytes(kv.Key), rev)
		}
	case op.IsTxn():
		tr := r.GetResponseTxn()
		_, thenOps, elseOps := op.Txn()
		ran := elseOps
		if tr.GetSucceeded() {
			ran = thenOps
		}
		for i, o := range ran {
			if i < len(tr.GetResponses()) {
				k.record(tx, o, tr.GetResponses()[i], rev)
			}
		}
	}
}

// recordGet records a Get: a read of one key, or a scan or iterator over
// a range.
func (k *KV) recordGet(tx *isoscope.Tx, op clientv3.Op, r *pb.RangeResponse) {
	if op.IsCountOnly() || op.IsKeysOnly() || op.Rev() != 0 || op.MinModRev() != 0 || op.MaxModRev() != 0 ||
		op.MinCreateRev() != 0 || op.MaxCreateRev() != 0 {
		k.counters.unrecorded.Add(1)
		return
	}
	key, end := op.KeyBytes(), op.RangeBytes()
	if len(end) == 0 {
		if len(r.GetKvs()) == 0 {
			tx.Read(isoscope.Bytes(key), isoscope.Null)
		} else {
			tx.Read(isoscope.Bytes(key), isoscope.Bytes(r.GetKvs()[0].Value))
		}
		return
	}
	ok := utf8.Valid(key) && utf8.Valid(end)
	pairs := make([]isoscope.KV, 0, len(r.GetKvs()))
	for i, kv := range r.GetKvs() {
		ok = ok && utf8.Valid(kv.Key) && (i == 0 || bytes.Compare(r.GetKvs()[i-1].Key, kv.Key) < 0)
		pairs = append(pairs, isoscope.KV{Key: isoscope.Str(string(kv.Key)), Value: isoscope.Bytes(kv.Value)})
	}
	if !ok {
		k.counters.unrecorded.Add(1)
		return
	}
	hi := isoscope.Str(string(end))
	if bytes.Equal(end, []byte{0}) { // WithFromKey, WithPrefix of "": no bound
		hi = isoscope.Null
	}
	if r.GetMore() {
		tx.Iter(isoscope.Str(string(key)), hi, pairs)
	} else {
		tx.Scan(isoscope.Str(string(key)), hi, pairs)
	}
}

// failed ends tx, a call that failed with err: aborted when the server
// answered; otherwise unknown, with the writes of thenOps, which may have
// taken effect. When which writes it may have made is not known (a range
// delete, or a branch chosen by comparisons that both write), it records
// nothing and counts the call as unrecorded.
func (k *KV) failed(tx *isoscope.Tx, err error, thenOps, elseOps []clientv3.Op) {
	if answered(err) {
		_ = tx.Abort()
		return
	}
	if writes(elseOps) || !knownWrites(thenOps) {
		k.counters.unrecorded.Add(1)
		_ = tx.Abort() // with no operation, it is left out
		return
	}
	for _, op := range thenOps {
		switch {
		case op.IsPut():
			tx.Write(isoscope.Bytes(op.KeyBytes()), isoscope.Bytes(op.ValueBytes()))
		case op.IsDelete():
			tx.Delete(isoscope.Bytes(op.KeyBytes()))
		}
	}
	_ = tx.Unknown()
}

// knownWrites reports whether the keys ops write are known without their
// answer: no range delete, no nested transaction that writes.
func knownWrites(ops []clientv3.Op) bool {
	for _, op := range ops {
		if op.IsDelete() && len(op.RangeBytes()) > 0 || op.IsTxn() && writes([]clientv3.Op{op}) {
			return false
		}
	}
	return true
}

// writes reports whether any of ops writes.
func writes(ops []clientv3.Op) bool {
	for _, op := range ops {
		if op.IsPut() || op.IsDelete() {
			return true
		}
		if op.IsTxn() {
			_, thenOps, elseOps := op.Txn()
			if writes(thenOps) || writes(elseOps) {
				return true
			}
		}
	}
	return false
}

// answered reports whether err is the server's answer, after which the
// call took no effect: a gRPC status other than those of a lost
// connection or an interrupted call.
func answered(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	s, ok := status.FromError(err)
	if !ok {
		return false
	}
	switch s.Code() {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.Aborted, codes.Unknown:
		return false
	}
	return true
}
