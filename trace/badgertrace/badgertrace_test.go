package badgertrace_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/isoscope/isoscope"
	"github.com/isoscope/isoscope/isoscopetest"
	"github.com/isoscope/isoscope/trace/badgertrace"
)

func openBadger(t *testing.T) *badger.DB {
	t.Helper()
	bdb, err := badger.Open(badger.DefaultOptions("").WithInMemory(true).WithLoggingLevel(badger.ERROR).
		WithMemTableSize(8 << 20).WithNumCompactors(2))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bdb.Close() })
	return bdb
}

// TestConcurrentProgram runs a concurrent program through the wrapper:
// eight sessions read, write, delete and iterate over a few keys in
// read-write transactions (retried on conflict) and read-only ones, and
// one-off transactions of sessions of their own join them. Every
// transaction the program ran is in the history, with its outcome, and
// the history is serializable, as Badger promises.
func TestConcurrentProgram(t *testing.T) {
	rec, err := isoscope.NewRecorder(isoscope.RecorderOptions{Source: "badgertrace test"})
	if err != nil {
		t.Fatal(err)
	}
	db := badgertrace.New(openBadger(t), rec)
	var committed, aborted atomic.Int64
	var wg sync.WaitGroup
	for s := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			session := db.Session(isoscope.Int(int64(s)))
			rng := rand.New(rand.NewPCG(7, uint64(s)))
			for n := range 60 {
				key := func() []byte { return fmt.Appendf(nil, "k/%d", rng.IntN(6)) }
				var err error
				switch rng.IntN(4) {
				case 0:
					err = session.View(func(txn *badgertrace.Txn) error {
						it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte("k/")})
						defer it.Close()
						seen := 0
						for it.Seek(key()); it.Valid() && seen < 3; it.Next() {
							seen++
						}
						_, err := txn.Get(key())
						if errors.Is(err, badger.ErrKeyNotFound) {
							err = nil
						}
						return err
					})
				default:
					update := session.Update
					if n%10 == 9 {
						update = db.Update // a session of its own
					}
					err = update(func(txn *badgertrace.Txn) error {
						for i := range 1 + rng.IntN(3) {
							k := key()
							if _, err := txn.Get(k); err != nil && !errors.Is(err, badger.ErrKeyNotFound) {
								return err
							}
							switch rng.IntN(3) {
							case 0:
								if err := txn.Delete(k); err != nil {
									return err
								}
							default:
								if err := txn.Set(k, fmt.Appendf(nil, "%d-%d-%d", s, n, i)); err != nil {
									return err
								}
							}
						}
						return nil
					})
				}
				switch {
				case err == nil:
					committed.Add(1)
				case errors.Is(err, badger.ErrConflict):
					aborted.Add(1)
				default:
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	h, err := rec.History()
	if err != nil {
		t.Fatal(err)
	}
	st := h.Stats()
	if int64(st.Committed) != committed.Load() || int64(st.Aborted) != aborted.Load() || st.Unknown != 0 {
		t.Fatalf("recorded %d committed and %d aborted (%d unknown); the program saw %d and %d", st.Committed, st.Aborted, st.Unknown, committed.Load(), aborted.Load())
	}
	if db.Unrecorded() != 0 {
		t.Fatalf("%d iterations not recorded", db.Unrecorded())
	}
	res := isoscopetest.RequireLevel(t, h, isoscope.Serializable)
	t.Logf("%d transactions (%d aborted on conflict), %d operations: %v by %s", st.Transactions, st.Aborted, st.Operations, res.Outcome, res.Checker)
}
