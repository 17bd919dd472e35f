package badgertrace_test

import (
	"context"
	"fmt"

	"github.com/dgraph-io/badger/v4"

	"github.com/isoscope/isoscope"
	"github.com/isoscope/isoscope/trace/badgertrace"
)

// A program uses the wrapped database as it would use Badger's; the
// Recorder holds the history of what it did.
func Example() {
	bdb, err := badger.Open(badger.DefaultOptions("").WithInMemory(true).WithLoggingLevel(badger.ERROR))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer bdb.Close()
	rec, err := isoscope.NewRecorder(isoscope.RecorderOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	db := badgertrace.New(bdb, rec)

	err = db.Update(func(txn *badgertrace.Txn) error {
		return txn.Set([]byte("greeting"), []byte("hello"))
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	err = db.View(func(txn *badgertrace.Txn) error {
		item, err := txn.Get([]byte("greeting"))
		if err != nil {
			return err
		}
		return item.Value(func(v []byte) error {
			fmt.Printf("read %s\n", v)
			return nil
		})
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	h, err := rec.History()
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := isoscope.Check(context.Background(), h, isoscope.Options{Level: isoscope.StrictSerializable})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(h.Len(), "transactions:", res.Outcome)
	for i := range h.Len() {
		for _, op := range h.Txn(i).Ops {
			fmt.Println(op.Kind, op.Key, op.Value)
		}
	}
	// Output:
	// read hello
	// 2 transactions: satisfied
	// w greeting hello
	// r greeting hello
}
