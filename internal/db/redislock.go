package db

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisLockTTL is how long a table lock lives unless renewed: a lock not
// renewed for that long (its run crashed, or lost the server) expires.
// The holder renews it every redisLockRenew.
var (
	redisLockTTL   = 30 * time.Second
	redisLockRenew = 5 * time.Second
)

// redisLockKey is the key that holds table's lock: outside the table's
// keys, so that Reset never deletes it.
func redisLockKey(table string) string { return "isoscope_lock:" + table }

// redisRenew sets the lock's expiry again, and redisUnlock deletes it,
// only while it holds this holder's text: never another run's lock.
var (
	redisRenew  = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("PEXPIRE", KEYS[1], ARGV[2]) else return 0 end`)
	redisUnlock = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) else return 0 end`)
)

// Lock holds the run's table: the key isoscope_lock:TABLE, set with NX
// to this run's holder text and an expiry of redisLockTTL, renewed until
// released. A table in use is an InUseError naming the holder the key
// records. The key is written on the primary and replicated
// asynchronously, as every write: a failover may lose it, as it may
// lose any acknowledged write (docs/databases.md).
func (d *redisDB) Lock(ctx context.Context) (*TableLock, error) {
	holder := holderText()
	key := redisLockKey(d.table)
	ok, err := d.primary.SetNX(ctx, key, holder, redisLockTTL).Result()
	if err != nil {
		return nil, fmt.Errorf("locking table %s with the Redis key %s: %v", d.table, key, err)
	}
	if !ok {
		held := "Redis key " + key
		if v, err := d.primary.Get(ctx, key).Result(); err == nil {
			held = fmt.Sprintf("%s; %s, which expires %s after its last renewal", v, held, redisLockTTL)
		}
		return nil, &InUseError{Table: d.table, Where: d.t.Display, Holder: held}
	}
	l := &redisLock{c: d.primary, key: key, holder: holder, every: redisLockRenew, stop: make(chan struct{})}
	l.wg.Go(l.renew)
	return &TableLock{release: l.release}, nil
}

// redisLock is a held table lock.
type redisLock struct {
	c           redis.UniversalClient
	key, holder string
	every       time.Duration
	stop        chan struct{}
	wg          sync.WaitGroup
}

// renew sets the key's expiry again every l.every until stop closes; a
// renewal that fails (during a failover) is tried at the next tick.
func (l *redisLock) renew() {
	t := time.NewTicker(l.every)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), l.every)
		_ = redisRenew.Run(ctx, l.c, []string{l.key}, l.holder, redisLockTTL.Milliseconds()).Err()
		cancel()
	}
}

// release stops the renewals and deletes the key if it still holds this
// lock's holder text, waiting at most a second.
func (l *redisLock) release() error {
	close(l.stop)
	l.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := redisUnlock.Run(ctx, l.c, []string{l.key}, l.holder).Err(); err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("releasing the Redis key %s: %v", l.key, err)
	}
	return nil
}
