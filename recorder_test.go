package isoscope_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/isoscope/isoscope"
)

// lineWriter keeps each Write call apart, to show the stream's lines each
// arrive whole.
type lineWriter struct {
	mu     sync.Mutex
	writes []string
	fail   error
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fail != nil {
		return 0, w.fail
	}
	w.writes = append(w.writes, string(p))
	return len(p), nil
}

// TestRecorderSerialStore: 64 goroutines run transactions through a
// Recorder against a store that runs them one at a time (a mutex held from
// begin to end). The recorded history is strictly serializable, each
// transaction reached the stream as one whole line in one Write, and the
// stream reads back as the history History gives.
func TestRecorderSerialStore(t *testing.T) {
	w := &lineWriter{}
	rec, err := isoscope.NewRecorder(isoscope.RecorderOptions{Stream: w})
	if err != nil {
		t.Fatal(err)
	}
	var store struct {
		sync.Mutex
		m map[int64]int64
	}
	store.m = map[int64]int64{}
	var wg sync.WaitGroup
	for s := range int64(64) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range int64(20) {
				tx := rec.Begin(isoscope.Int(s))
				store.Lock()
				k := (s + n) % 5
				if v, ok := store.m[k]; ok {
					tx.Read(isoscope.Int(k), isoscope.Int(v))
				} else {
					tx.Read(isoscope.Int(k), isoscope.Null)
				}
				v := s*1000 + n
				store.m[k] = v
				tx.Write(isoscope.Int(k), isoscope.Int(v))
				if n%7 == 3 {
					delete(store.m, k)
					tx.Delete(isoscope.Int(k))
				}
				store.Unlock()
				if err := tx.Commit(); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if err := rec.Err(); err != nil {
		t.Fatal(err)
	}
	h, err := rec.History()
	if err != nil {
		t.Fatal(err)
	}
	if h.Len() != 64*20 {
		t.Fatalf("%d transactions, want %d", h.Len(), 64*20)
	}
	if len(w.writes) != 1+h.Len() {
		t.Fatalf("%d writes for a header and %d transactions", len(w.writes), h.Len())
	}
	for i, line := range w.writes {
		if strings.Count(line, "\n") != 1 || !strings.HasSuffix(line, "\n") {
			t.Fatalf("write %d is not one whole line: %q", i, line)
		}
	}
	streamed, err := isoscope.ReadHistory(strings.NewReader(strings.Join(w.writes, "")), "stream")
	if err != nil {
		t.Fatal(err)
	}
	for i := range h.Len() {
		a, b := h.Txn(i), streamed.Txn(i)
		if a.ID != b.ID || a.Begin != b.Begin || a.End != b.End || len(a.Ops) != len(b.Ops) {
			t.Fatalf("transaction %d: History %+v, the stream %+v", i, a, b)
		}
	}
	res, err := isoscope.Check(context.Background(), h, isoscope.Options{Level: isoscope.StrictSerializable})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != isoscope.Satisfied || res.CheckedAt != 0 {
		t.Fatalf("a serial store's history: %v (checked at %v) %+v", res.Outcome, res.CheckedAt, res.Anomalies)
	}
}

// TestRecorderMisuse: a second transaction in a busy session, an
// operation after the end, an end twice, keys of two kinds, a null
// session and an open transaction are each refused with what went wrong,
// and so is History for a Recorder that only streams.
func TestRecorderMisuse(t *testing.T) {
	x := isoscope.Str("x")
	for _, c := range []struct {
		name, want string
		run        func(r *isoscope.Recorder) error
	}{
		{"busy session", "while its transaction 1 was open", func(r *isoscope.Recorder) error {
			r.Begin(isoscope.Int(1))
			tx := r.Begin(isoscope.Int(1))
			tx.Write(x, isoscope.Int(1))
			return tx.Commit()
		}},
		{"after the end", "after the transaction ended", func(r *isoscope.Recorder) error {
			tx := r.Begin(isoscope.Int(1))
			tx.Write(x, isoscope.Int(1))
			if err := tx.Commit(); err != nil {
				return err
			}
			tx.Read(x, isoscope.Int(1))
			return nil
		}},
		{"twice", "ended twice", func(r *isoscope.Recorder) error {
			tx := r.Begin(isoscope.Int(1))
			tx.Write(x, isoscope.Int(1))
			if err := tx.Commit(); err != nil {
				return err
			}
			return tx.Abort()
		}},
		{"two kinds of key", "another kind", func(r *isoscope.Recorder) error {
			tx := r.Begin(isoscope.Int(1))
			tx.Write(x, isoscope.Int(1))
			tx.Write(isoscope.Int(7), isoscope.Int(1))
			return tx.Commit()
		}},
		{"null session", "needs a session", func(r *isoscope.Recorder) error {
			tx := r.Begin(isoscope.Null)
			tx.Write(x, isoscope.Int(1))
			return tx.Commit()
		}},
		{"open", "still open", func(r *isoscope.Recorder) error {
			r.Begin(isoscope.Int(1)).Write(x, isoscope.Int(1))
			return nil
		}},
		{"stream only", "keeps no history", func(r *isoscope.Recorder) error { return nil }},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := isoscope.NewRecorder(isoscope.RecorderOptions{Stream: &lineWriter{}, StreamOnly: c.name == "stream only"})
			if err != nil {
				t.Fatal(err)
			}
			err = c.run(r)
			if _, herr := r.History(); err == nil {
				err = herr
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one saying %q", err, c.want)
			}
		})
	}
}

// TestRecorderStreamFailure: a stream that fails makes the end of the
// transaction, Err and History report it.
func TestRecorderStreamFailure(t *testing.T) {
	w := &lineWriter{}
	rec, err := isoscope.NewRecorder(isoscope.RecorderOptions{Stream: w})
	if err != nil {
		t.Fatal(err)
	}
	broken := errors.New("disk full")
	w.fail = broken
	tx := rec.Begin(isoscope.Int(1))
	tx.Write(isoscope.Int(1), isoscope.Int(1))
	if err := tx.Commit(); !errors.Is(err, broken) {
		t.Fatalf("Commit: %v, want the stream's error", err)
	}
	if _, err := rec.History(); !errors.Is(err, broken) {
		t.Fatalf("History: %v, want the stream's error", err)
	}
}

// TestRecorderVersionOrder: the version hints become the history's
// version order, and decide what the reads alone cannot. T1 and T2 write x
// blindly in two sessions; T3 then reads T1's value in T2's session. If
// T2's version came first, the history is serializable (T2 T1 T3); if
// T1's came first, T3 read a version its own session had overwritten.
func TestRecorderVersionOrder(t *testing.T) {
	x := isoscope.Str("x")
	check := func(v1, v2 uint64) isoscope.Outcome {
		rec, err := isoscope.NewRecorder(isoscope.RecorderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		tx := rec.Begin(isoscope.Int(1))
		tx.Write(x, isoscope.Int(1))
		tx.Version(x, v1)
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		tx = rec.Begin(isoscope.Int(2))
		tx.Write(x, isoscope.Int(2))
		tx.Version(x, v2)
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		tx = rec.Begin(isoscope.Int(2))
		tx.Read(x, isoscope.Int(1))
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		h, err := rec.History()
		if err != nil {
			t.Fatal(err)
		}
		res, err := isoscope.Check(context.Background(), h, isoscope.Options{Level: isoscope.Serializable})
		if err != nil {
			t.Fatal(err)
		}
		return res.Outcome
	}
	if got := check(2, 1); got != isoscope.Satisfied {
		t.Fatalf("T2's version before T1's: %v, want satisfied (T2 T1 T3)", got)
	}
	if got := check(1, 2); got != isoscope.Violated {
		t.Fatalf("T1's version before T2's: %v, want a violation (T3 read over T2, its own session's write)", got)
	}
}

// BenchmarkRecorder measures the Recorder's overhead per transaction of
// four operations (two reads, two writes), in memory and streaming to
// io.Discard: sequential, and with 64 goroutines (txn/s reports the
// throughput, op-ns the time per operation).
func BenchmarkRecorder(b *testing.B) {
	run := func(b *testing.B, stream bool, goroutines int) {
		o := isoscope.RecorderOptions{}
		if stream {
			o.Stream, o.StreamOnly = discard{}, true
		}
		rec, err := isoscope.NewRecorder(o)
		if err != nil {
			b.Fatal(err)
		}
		keys := make([]isoscope.Value, 64)
		for i := range keys {
			keys[i] = isoscope.Int(int64(i))
		}
		var sessions sync.Mutex
		next := int64(0)
		body := func(session isoscope.Value, n int64) {
			tx := rec.Begin(session)
			k1, k2 := keys[n%64], keys[(n+7)%64]
			tx.Read(k1, isoscope.Int(n))
			tx.Read(k2, isoscope.Null)
			tx.Write(k1, isoscope.Int(n+1))
			tx.Write(k2, isoscope.Int(n+2))
			if err := tx.Commit(); err != nil {
				b.Error(err)
			}
		}
		b.ReportAllocs()
		start := time.Now()
		if goroutines <= 1 {
			for n := range int64(b.N) {
				body(isoscope.Int(1), n)
			}
		} else {
			b.SetParallelism((goroutines + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
			b.RunParallel(func(pb *testing.PB) {
				sessions.Lock()
				next++
				session := isoscope.Int(next)
				sessions.Unlock()
				for n := int64(0); pb.Next(); n++ {
					body(session, n)
				}
			})
		}
		elapsed := time.Since(start)
		b.ReportMetric(float64(b.N)/elapsed.Seconds(), "txn/s")
		b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N)/4, "op-ns")
	}
	b.Run("memory", func(b *testing.B) { run(b, false, 1) })
	b.Run("stream", func(b *testing.B) { run(b, true, 1) })
	b.Run("memory-64", func(b *testing.B) { run(b, false, 64) })
	b.Run("stream-64", func(b *testing.B) { run(b, true, 64) })
}

// discard is io.Discard as a distinct type, so the stream's writes are
// not optimised away.
type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
