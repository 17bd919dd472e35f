package isoscope_test

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/isoscope/isoscope"
)

// A Recorder records what a concurrent program's transactions did as they
// run. Here two goroutines each read a counter and write it back plus
// one, in transactions that see each other's effects only after they
// commit — and the recorded history shows the update one of them lost.
func ExampleRecorder() {
	rec, err := isoscope.NewRecorder(isoscope.RecorderOptions{Initial: []isoscope.KV{{Key: isoscope.Str("counter"), Value: isoscope.Int(0)}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	counter := isoscope.Str("counter")
	var read sync.WaitGroup // both read before either writes
	read.Add(2)
	var wg sync.WaitGroup
	for session := int64(1); session <= 2; session++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tx := rec.Begin(isoscope.Int(session))
			tx.Read(counter, isoscope.Int(0)) // what the database returned
			read.Done()
			read.Wait()
			tx.Write(counter, isoscope.Int(1))
			if err := tx.Commit(); err != nil {
				fmt.Println(err)
			}
		}()
	}
	wg.Wait()
	h, err := rec.History()
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := isoscope.Check(context.Background(), h, isoscope.Options{Level: isoscope.SnapshotIsolation})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Outcome, res.Anomalies[0].Kind)
	// Output:
	// violation lost-update
}

// With a Stream, the Recorder writes each transaction's line as the
// transaction ends, in the format `isoscope check` reads; the Begin and
// End instants come from the Recorder's monotonic clock.
func ExampleRecorder_stream() {
	var out strings.Builder
	rec, err := isoscope.NewRecorder(isoscope.RecorderOptions{Stream: &out, Source: "example"})
	if err != nil {
		fmt.Println(err)
		return
	}
	tx := rec.Begin(isoscope.Str("client-1"))
	tx.Write(isoscope.Str("x"), isoscope.Int(1))
	tx.Scan(isoscope.Str("a"), isoscope.Null, []isoscope.KV{{Key: isoscope.Str("x"), Value: isoscope.Int(1)}})
	tx.CommitTS(42)
	if err := tx.Commit(); err != nil {
		fmt.Println(err)
		return
	}
	tx = rec.Begin(isoscope.Str("client-1"))
	tx.Read(isoscope.Str("x"), isoscope.Int(1))
	if err := tx.Abort(); err != nil {
		fmt.Println(err)
		return
	}
	h, err := isoscope.ReadHistory(strings.NewReader(out.String()), "stream")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d lines, %+v\n", strings.Count(out.String(), "\n"), h.Stats())
	fmt.Println(h.Txn(0).Timed, h.Txn(0).End >= h.Txn(0).Begin, h.Txn(1).Begin >= h.Txn(0).End)
	// Output:
	// 3 lines, {Transactions:2 Committed:1 Aborted:1 Unknown:0 Sessions:1 Operations:3 Keys:1}
	// true true true
}
