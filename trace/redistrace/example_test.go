package redistrace_test

import (
	"context"
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/isoscope/isoscope"
	"github.com/isoscope/isoscope/trace/redistrace"
)

// A program uses the wrapped client as it would use go-redis's: here a
// read-modify-write transaction, tried again when a watched key changed,
// then a single read. The Recorder holds the history of what it did.
// (It needs a Redis at 127.0.0.1:6379; TestExample runs it and checks
// what it prints:
//
//	counter 1
//	2 transactions: satisfied
//	r counter null
//	w counter 1
//	r counter 1
//
// when the key is new.)
func Example() {
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", MaxRetries: -1})
	defer rc.Close()
	rec, err := isoscope.NewRecorder(isoscope.RecorderOptions{Source: "redistrace example"})
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := redistrace.New(rc, rec)
	if err != nil {
		fmt.Println(err)
		return
	}
	key := fmt.Sprintf("redistrace-example-%d/counter", time.Now().UnixNano())
	defer rc.Del(ctx, key)

	for { // increment the counter
		err = c.Watch(ctx, func(tx *redistrace.Tx) error {
			n, err := tx.Get(ctx, key).Int64()
			if err != nil && !errors.Is(err, redis.Nil) {
				return err
			}
			_, err = tx.TxPipelined(ctx, func(p *redistrace.Pipe) error {
				p.Set(ctx, key, n+1, 0)
				return nil
			})
			return err
		}, key)
		if !errors.Is(err, redis.TxFailedErr) {
			break
		}
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	n, err := c.Get(ctx, key).Int64()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("counter", n)

	h, err := rec.History()
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := isoscope.Check(ctx, h, isoscope.Options{Level: isoscope.StrictSerializable})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(h.Len(), "transactions:", res.Outcome)
	for i := range h.Len() {
		for _, op := range h.Txn(i).Ops {
			k, _ := op.Key.Str()
			fmt.Println(op.Kind, path.Base(k), op.Value)
		}
	}
}
