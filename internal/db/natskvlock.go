package db

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// natsLockBucket is the KV bucket that holds the table locks of every
// nats-kv run: outside every table's bucket, so that Reset, which deletes
// the table's bucket, never deletes a lock.
const natsLockBucket = "isoscope_locks"

// natsLockTTL is the lock bucket's TTL (its stream's MaxAge): a lock not
// renewed for that long (its run crashed, or lost the cluster) expires.
// The holder renews it every natsLockRenew.
var (
	natsLockTTL   = 30 * time.Second
	natsLockRenew = 5 * time.Second
)

// natsLockWait bounds how long releasing a lock waits for the cluster: a
// lock not deleted expires after natsLockTTL.
const natsLockWait = time.Second

// lockTable holds the table with the key named after it in natsLockBucket,
// made with Create (which fails when the key is present) and holding
// holder's description. A goroutine renews it (an Update on the revision
// it holds, which rewrites the key and so restarts its TTL) until release
// stops it and deletes the key, on its revision, so that it never deletes
// another run's lock. When another run holds the table, lockTable returns
// that run's description as held, and no error.
//
// On a nats-server release with the compare-and-set race (2.9.10,
// Debian 12's, has it; 2.15.3 has not), two runs that lock one table at
// the same instant may both succeed: such a release checks a Create's
// expected revision before proposing it to the stream's replicas, not in
// order with the proposals in flight (docs/evidence/nats-kv-cas-race.md).
func (d *natsKVDB) lockTable(ctx context.Context, holder string) (release func() error, held string, err error) {
	fail := func(err error) (func() error, string, error) {
		return nil, "", fmt.Errorf("locking table %s with the NATS KV key %s.%s: %v", d.table, natsLockBucket, d.table, err)
	}
	kv, err := d.js.KeyValue(ctx, natsLockBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = d.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: natsLockBucket, Description: TableMark,
			History: 1, TTL: natsLockTTL, Replicas: d.t.natsKV.replicas, Storage: jetstream.FileStorage})
		if err != nil {
			// Another run made it first.
			kv, err = d.js.KeyValue(ctx, natsLockBucket)
		}
	}
	if err != nil {
		return fail(err)
	}
	rev, err := kv.Create(ctx, d.table, []byte(holder))
	if isWrongLastSequence(err) {
		held = "NATS KV key " + natsLockBucket + "." + d.table
		if e, gerr := kv.Get(ctx, d.table); gerr == nil {
			held = fmt.Sprintf("%s; %s, which expires %s after its last renewal", e.Value(), held, natsLockTTL)
		}
		return nil, held, nil
	}
	if err != nil {
		return fail(err)
	}
	l := &natsLock{kv: kv, key: d.table, holder: []byte(holder), rev: rev, every: natsLockRenew, stop: make(chan struct{})}
	l.wg.Go(l.renew)
	return l.release, "", nil
}

// natsLock is a held table lock: its key and the revision that holds it.
type natsLock struct {
	kv     jetstream.KeyValue
	key    string
	holder []byte
	// every is how often it is renewed.
	every time.Duration
	stop  chan struct{}
	wg    sync.WaitGroup
	// mu guards rev, which renew advances.
	mu  sync.Mutex
	rev uint64
}

// renew rewrites the key on its revision every l.every until stop
// closes. A renewal that fails (no quorum during a fault) is tried again
// at the next tick.
func (l *natsLock) renew() {
	t := time.NewTicker(l.every)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		l.mu.Lock()
		rev := l.rev
		l.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), l.every)
		next, err := l.kv.Update(ctx, l.key, l.holder, rev)
		cancel()
		if err == nil {
			l.mu.Lock()
			l.rev = next
			l.mu.Unlock()
		}
	}
}

// release stops the renewals and deletes the key on the revision this
// lock wrote last, waiting at most natsLockWait.
func (l *natsLock) release() error {
	close(l.stop)
	l.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), natsLockWait)
	defer cancel()
	err := l.kv.Delete(ctx, l.key, jetstream.LastRevision(l.rev))
	if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("releasing the NATS KV key %s: %v", l.key, err)
	}
	return nil
}

// Lock holds the run's table: a key of the isoscope_locks bucket made
// with Create and refreshed until released (lockTable); a table in use
// is an InUseError naming the holder the key records.
func (d *natsKVDB) Lock(ctx context.Context) (*TableLock, error) {
	release, held, err := d.lockTable(ctx, holderText())
	if err != nil {
		return nil, err
	}
	if held != "" {
		return nil, &InUseError{Table: d.table, Where: d.t.Display, Holder: held}
	}
	return &TableLock{release: release}, nil
}
