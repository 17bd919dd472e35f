package redistrace_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/isoscope/isoscope"
	"github.com/isoscope/isoscope/isoscopetest"
	"github.com/isoscope/isoscope/trace/redistrace"
)

// addr is the machine's Redis, which the tests use with keys of a prefix
// of their own, deleted when they end.
const addr = "127.0.0.1:6379"

// connect returns a client of the Redis at addr that does not retry, and
// a key prefix unique to the test run; the test is skipped when no Redis
// answers there, and its keys are deleted when it ends.
func connect(t testing.TB) (*redis.Client, string) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, PoolSize: 16})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		_ = c.Close()
		t.Skipf("no Redis at %s: %v", addr, err)
	}
	prefix := fmt.Sprintf("redistrace-%s-%d/", t.Name(), time.Now().UnixNano())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		keys, err := c.Keys(ctx, prefix+"*").Result()
		if err == nil && len(keys) > 0 {
			err = c.Del(ctx, keys...).Err()
		}
		if err != nil {
			t.Errorf("deleting the test's keys: %v", err)
		}
		_ = c.Close()
	})
	return c, prefix
}

func newRecorder(t testing.TB, source string) *isoscope.Recorder {
	t.Helper()
	rec, err := isoscope.NewRecorder(isoscope.RecorderOptions{Source: source})
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestConcurrentProgram runs a concurrent program through the wrapper on
// the machine's Redis: six sessions increment counters in read-modify-
// write transactions (WATCH, GET, MULTI SET EXEC, tried again on
// redis.TxFailedErr) and read them with single GETs; six more append to
// lists in transactions that read two lists first (WATCH, LRANGE, MULTI
// RPUSH LRANGE EXEC), read lists with single LRANGEs and append with
// single RPUSHes; one-off calls of sessions of their own join them.
// isoscope's checkers decide registers or lists, not both in one
// history, so the counters are recorded in one Recorder and the lists in
// another. Every transaction the program ran is in its history with its
// outcome, the counters count every committed increment, and both
// histories are serializable, as WATCH/MULTI/EXEC promises.
func TestConcurrentProgram(t *testing.T) {
	rc, prefix := connect(t)
	regRec, listRec := newRecorder(t, "redistrace test: counters"), newRecorder(t, "redistrace test: lists")
	regs, err := redistrace.New(rc, regRec)
	if err != nil {
		t.Fatal(err)
	}
	lists, err := redistrace.New(rc, listRec)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	counter := func(i int) string { return prefix + "c" + strconv.Itoa(i) }
	list := func(i int) string { return prefix + "l" + strconv.Itoa(i) }
	var uniq atomic.Int64 // makes every written value and element unique
	// committed and aborted count each history's transactions as the
	// program saw them end: [0] the counters', [1] the lists'.
	var committed, aborted [2]atomic.Int64
	var increments atomic.Int64
	var wg sync.WaitGroup
	for s := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			kind := s % 2 // 0: counters, 1: lists
			c := []*redistrace.Client{regs, lists}[kind]
			session := c.Session(isoscope.Int(int64(s)))
			rng := rand.New(rand.NewPCG(5, uint64(s)))
			for n := range 50 {
				var err error
				switch op := rng.IntN(4); {
				case kind == 0 && op < 3: // increment a counter, tried again on conflict
					k := counter(rng.IntN(2))
					for {
						err = session.Watch(ctx, func(tx *redistrace.Tx) error {
							v, err := tx.Get(ctx, k).Int64()
							if err != nil && !errors.Is(err, redis.Nil) {
								return err
							}
							next := (v/1_000_000+1)*1_000_000 + uniq.Add(1)
							_, err = tx.TxPipelined(ctx, func(p *redistrace.Pipe) error {
								p.Set(ctx, k, next, 0)
								return nil
							})
							return err
						}, k)
						if !errors.Is(err, redis.TxFailedErr) {
							break
						}
						aborted[kind].Add(1)
					}
					if err == nil {
						increments.Add(1)
					}
				case kind == 0: // single reads, one in a session of its own
					for _, c := range []*redistrace.Client{session, c} {
						if err = c.Get(ctx, counter(rng.IntN(2))).Err(); errors.Is(err, redis.Nil) {
							err = nil
						}
						if err != nil {
							break
						}
						committed[kind].Add(1)
					}
					committed[kind].Add(-1)
				case op < 2: // read two lists, append to one of them
					l1, l2 := list(rng.IntN(3)), list(rng.IntN(3))
					err = session.Watch(ctx, func(tx *redistrace.Tx) error {
						for _, l := range []string{l1, l2} {
							if err := tx.LRange(ctx, l, 0, -1).Err(); err != nil {
								return err
							}
						}
						_, err := tx.TxPipelined(ctx, func(p *redistrace.Pipe) error {
							p.RPush(ctx, l1, uniq.Add(1), uniq.Add(1))
							p.LRange(ctx, l1, 0, -1)
							return nil
						})
						return err
					}, l1, l2)
					if errors.Is(err, redis.TxFailedErr) {
						aborted[kind].Add(1)
						continue
					}
				case op == 2: // single list reads, one in a session of its own
					for _, c := range []*redistrace.Client{session, c} {
						if err = c.LRange(ctx, list(rng.IntN(3)), 0, -1).Err(); err != nil {
							break
						}
						committed[kind].Add(1)
					}
					committed[kind].Add(-1)
				default: // a single append
					err = session.RPush(ctx, list(rng.IntN(3)), fmt.Sprintf("s%d-%d", s, n)).Err()
				}
				if err != nil {
					t.Error(err)
					return
				}
				committed[kind].Add(1)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	for i, rec := range []*isoscope.Recorder{regRec, listRec} {
		name := []string{"counters", "lists"}[i]
		h, err := rec.History()
		if err != nil {
			t.Fatal(err)
		}
		st := h.Stats()
		if int64(st.Committed) != committed[i].Load() || int64(st.Aborted) != aborted[i].Load() || st.Unknown != 0 {
			t.Fatalf("%s: recorded %d committed, %d aborted, %d unknown; the program saw %d committed and %d aborted",
				name, st.Committed, st.Aborted, st.Unknown, committed[i].Load(), aborted[i].Load())
		}
		if st.Aborted == 0 {
			t.Errorf("%s: no transaction was aborted: WATCH was not exercised", name)
		}
		res := isoscopetest.RequireLevel(t, h, isoscope.Serializable)
		t.Logf("%s: %d transactions (%d aborted by EXEC nil), %d operations: %v by %s", name, st.Transactions, st.Aborted, st.Operations, res.Outcome, res.Checker)
	}
	var total int64
	for i := range 2 {
		v, err := rc.Get(ctx, counter(i)).Int64()
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Fatal(err)
		}
		total += v / 1_000_000
	}
	if total != increments.Load() {
		t.Fatalf("the counters count %d increments; %d committed", total, increments.Load())
	}
}

// TestLostUpdate runs a deliberately broken program: workers increment
// one counter by GET then MULTI SET EXEC without WATCH, so two of them
// can read the same value and both write, losing an update. Each round's
// history is checked at snapshot isolation, and the verdict held against
// an oracle: with one key and every transaction a read-modify-write of
// unique values, the history violates snapshot isolation exactly when two
// committed transactions read the same value. Rounds run until one loses
// an update (at most 30); a round without contention must be satisfied.
func TestLostUpdate(t *testing.T) {
	rc, prefix := connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var uniq atomic.Int64
	for round := range 30 {
		rec := newRecorder(t, "redistrace lost update")
		c, err := redistrace.New(rc, rec)
		if err != nil {
			t.Fatal(err)
		}
		k := prefix + "counter" + strconv.Itoa(round)
		var mu sync.Mutex
		readers := map[string]int{} // value read → committed readers
		var wg sync.WaitGroup
		for s := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				session := c.Session(isoscope.Int(int64(s)))
				for range 15 {
					var read string
					err := session.Watch(ctx, func(tx *redistrace.Tx) error { // no key watched
						v, err := tx.Get(ctx, k).Result()
						if err != nil && !errors.Is(err, redis.Nil) {
							return err
						}
						read = v
						n, _ := strconv.ParseInt(v, 10, 64)
						next := (n/1_000_000+1)*1_000_000 + uniq.Add(1)
						_, err = tx.TxPipelined(ctx, func(p *redistrace.Pipe) error {
							p.Set(ctx, k, next, 0)
							return nil
						})
						return err
					})
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					readers[read]++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		lost := false
		for _, n := range readers {
			lost = lost || n > 1
		}
		h, err := rec.History()
		if err != nil {
			t.Fatal(err)
		}
		res, err := isoscope.Check(ctx, h, isoscope.Options{Level: isoscope.SnapshotIsolation})
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]isoscope.Outcome{true: isoscope.Violated, false: isoscope.Satisfied}[lost]; res.Outcome != want {
			t.Fatalf("round %d: two transactions read the same value: %v; Check at SI: %v, want %v", round, lost, res.Outcome, want)
		}
		if lost {
			t.Logf("round %d lost an update; Check at SI: %v, %d anomalies, the first: %s", round, res.Outcome, len(res.Anomalies), res.Anomalies[0].Kind)
			return
		}
	}
	t.Fatal("30 rounds of 4 workers lost no update")
}

// TestRefused checks that the calls the history could not state are
// refused before anything is sent, and record nothing; and that New
// refuses a client that retries.
func TestRefused(t *testing.T) {
	rc, prefix := connect(t)
	ctx := context.Background()
	retrying := redis.NewClient(&redis.Options{Addr: addr})
	defer retrying.Close()
	if _, err := redistrace.New(retrying, newRecorder(t, "")); !errors.Is(err, redistrace.ErrRefused) {
		t.Fatalf("New of a client that retries: %v, want ErrRefused", err)
	}
	rec := newRecorder(t, "redistrace refusals")
	c, err := redistrace.New(rc, rec)
	if err != nil {
		t.Fatal(err)
	}
	k, l := prefix+"k", prefix+"l"
	calls := map[string]error{
		"SET with expiration": c.Set(ctx, k, "v", time.Minute).Err(),
		"SET of a float":      c.Set(ctx, k, 1.5, 0).Err(),
		"RPUSH of a bool":     c.RPush(ctx, l, true).Err(),
		"RPUSH of nothing":    c.RPush(ctx, l).Err(),
		"LRANGE 0 1":          c.LRange(ctx, l, 0, 1).Err(),
		"a queued SET refused": c.Watch(ctx, func(tx *redistrace.Tx) error {
			_, err := tx.TxPipelined(ctx, func(p *redistrace.Pipe) error {
				p.Set(ctx, k, "ok", 0)
				p.RPush(ctx, l, 2.5)
				return nil
			})
			return err
		}),
	}
	var after []error
	calls["commands after EXEC"] = c.Watch(ctx, func(tx *redistrace.Tx) error {
		if _, err := tx.TxPipelined(ctx, func(p *redistrace.Pipe) error {
			p.RPush(ctx, l, "first")
			return nil
		}); err != nil {
			return err
		}
		_, err := tx.TxPipelined(ctx, func(p *redistrace.Pipe) error {
			p.RPush(ctx, l, "second")
			return nil
		})
		after = append(after, err, tx.Get(ctx, k).Err(), tx.LRange(ctx, l, 0, -1).Err())
		return nil
	})
	for name, err := range calls {
		switch {
		case name == "commands after EXEC":
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
			for _, err := range after {
				if !errors.Is(err, redistrace.ErrRefused) {
					t.Errorf("%s: %v, want ErrRefused", name, err)
				}
			}
		case !errors.Is(err, redistrace.ErrRefused):
			t.Errorf("%s: %v, want ErrRefused", name, err)
		}
	}
	if n, err := rc.Exists(ctx, k).Result(); err != nil || n != 0 {
		t.Errorf("%s exists (%d, %v): a refused SET was sent", k, n, err)
	}
	if got, err := rc.LRange(ctx, l, 0, -1).Result(); err != nil || len(got) != 1 || got[0] != "first" {
		t.Errorf("%s holds %q (%v), want [first]", l, got, err)
	}
	h, err := rec.History()
	if err != nil {
		t.Fatal(err)
	}
	if h.Len() != 1 || len(h.Txn(0).Ops) != 1 {
		t.Fatalf("recorded %d transactions, want the one that appended first", h.Len())
	}
}

// TestExample runs Example, which needs the machine's Redis, and checks
// what it prints.
func TestExample(t *testing.T) {
	connect(t) // skips without a Redis
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	Example()
	os.Stdout = stdout
	_ = w.Close()
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	want := "counter 1\n2 transactions: satisfied\nr counter null\nw counter 1\nr counter 1\n"
	if string(out) != want {
		t.Fatalf("Example printed\n%s\nwant\n%s", out, want)
	}
}

// cutProxy forwards TCP connections to Redis and, on a connection whose
// client sends a request containing cut (a command as RESP writes it,
// "$4\r\nexec\r\n"), forwards that request and then drops every answer
// and closes the connection: the command ran, and its answer was lost.
type cutProxy struct {
	ln  net.Listener
	cut []byte
	wg  sync.WaitGroup
}

func newCutProxy(t *testing.T, cut string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, cut: []byte(cut)}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(func() { _ = ln.Close(); p.wg.Wait() })
	return p
}

func (p *cutProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", addr)
		if err != nil {
			_ = c.Close()
			continue
		}
		var cut atomic.Bool
		p.wg.Add(2)
		go func() { // client → server
			defer p.wg.Done()
			buf := make([]byte, 64<<10)
			for {
				n, err := c.Read(buf)
				if n > 0 {
					if bytes.Contains(bytes.ToLower(buf[:n]), p.cut) {
						cut.Store(true)
					}
					if _, err := s.Write(buf[:n]); err != nil {
						break
					}
				}
				if err != nil {
					break
				}
			}
			_ = s.Close()
		}()
		go func() { // server → client, until the cut
			defer p.wg.Done()
			buf := make([]byte, 64<<10)
			for {
				n, err := s.Read(buf)
				if cut.Load() {
					time.Sleep(50 * time.Millisecond) // the command has run
					break
				}
				if n > 0 {
					if _, err := c.Write(buf[:n]); err != nil {
						break
					}
				}
				if err != nil {
					break
				}
			}
			_ = c.Close()
			_ = s.Close()
		}()
	}
}

// TestLostAnswer loses the answer to an EXEC and to an RPUSH (a proxy
// forwards the command to Redis and closes the connection instead of
// answering): the program sees an error that is not Redis's answer, each
// transaction is recorded unknown with its writes, and Redis shows that
// both took effect, which unknown allows.
func TestLostAnswer(t *testing.T) {
	rc, prefix := connect(t)
	ctx := context.Background()
	k, l := prefix+"k", prefix+"l"
	for _, cut := range []string{"$4\r\nexec\r\n", "$5\r\nrpush\r\n"} {
		proxy := newCutProxy(t, cut)
		pc := redis.NewClient(&redis.Options{Addr: proxy.ln.Addr().String(), MaxRetries: -1})
		rec := newRecorder(t, "redistrace lost answers")
		c, err := redistrace.New(pc, rec)
		if err != nil {
			t.Fatal(err)
		}
		if cut[1] == '4' {
			err = c.Watch(ctx, func(tx *redistrace.Tx) error {
				if err := tx.Get(ctx, k).Err(); !errors.Is(err, redis.Nil) {
					return fmt.Errorf("GET %s: %v, want redis.Nil", k, err)
				}
				_, err := tx.TxPipelined(ctx, func(p *redistrace.Pipe) error {
					p.Set(ctx, k, "v1", 0)
					p.Get(ctx, k)
					return nil
				})
				return err
			}, k)
		} else {
			err = c.RPush(ctx, l, 7, "eight").Err()
		}
		_ = pc.Close()
		var re redis.Error
		if err == nil || errors.As(err, &re) {
			t.Fatalf("cut at %q: %v, want a lost connection", cut, err)
		}
		h, err := rec.History()
		if err != nil {
			t.Fatal(err)
		}
		if st := h.Stats(); h.Len() != 1 || st.Unknown != 1 {
			t.Fatalf("cut at %q: %d transactions, %d unknown; want one, unknown", cut, h.Len(), st.Unknown)
		}
		var got []string
		for _, op := range h.Txn(0).Ops {
			got = append(got, fmt.Sprint(op.Kind, " ", op.Value))
		}
		want := map[byte]string{'4': "[r null w v1]", '5': "[append 7 append eight]"}[cut[1]]
		if fmt.Sprint(got) != want {
			t.Fatalf("cut at %q: recorded %v, want %s", cut, got, want)
		}
	}
	if v, err := rc.Get(ctx, k).Result(); err != nil || v != "v1" {
		t.Errorf("GET %s: %q, %v: the EXEC did not run", k, v, err)
	}
	if v, err := rc.LRange(ctx, l, 0, -1).Result(); err != nil || fmt.Sprint(v) != "[7 eight]" {
		t.Errorf("LRANGE %s: %q, %v: the RPUSH did not run", l, v, err)
	}
}

// TestFailureInsideExec runs a MULTI/EXEC one of whose commands fails
// when EXEC runs it (RPUSH to a string: WRONGTYPE). Redis runs the
// others: the transaction is committed with them, the failed command
// left out; and a GET of an absent key inside EXEC is a read of null.
func TestFailureInsideExec(t *testing.T) {
	rc, prefix := connect(t)
	ctx := context.Background()
	str, k, absent := prefix+"str", prefix+"k", prefix+"absent"
	if err := rc.Set(ctx, str, "a string", 0).Err(); err != nil {
		t.Fatal(err)
	}
	rec := newRecorder(t, "redistrace failure inside EXEC")
	c, err := redistrace.New(rc, rec)
	if err != nil {
		t.Fatal(err)
	}
	err = c.Watch(ctx, func(tx *redistrace.Tx) error {
		_, err := tx.TxPipelined(ctx, func(p *redistrace.Pipe) error {
			p.RPush(ctx, str, 1)
			p.Set(ctx, k, 5, 0)
			p.Get(ctx, absent)
			return nil
		})
		return err
	}, k)
	if err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
		t.Fatalf("EXEC: %v, want WRONGTYPE", err)
	}
	if v, err := rc.Get(ctx, k).Result(); err != nil || v != "5" {
		t.Fatalf("GET %s: %q, %v: want 5, the SET EXEC ran", k, v, err)
	}
	h, err := rec.History()
	if err != nil {
		t.Fatal(err)
	}
	if h.Len() != 1 || h.Stats().Committed != 1 {
		t.Fatalf("%d transactions, %d committed; want one, committed", h.Len(), h.Stats().Committed)
	}
	var got []string
	for _, op := range h.Txn(0).Ops {
		got = append(got, fmt.Sprint(op.Kind, " ", op.Value))
	}
	if fmt.Sprint(got) != "[w 5 r null]" {
		t.Fatalf("recorded %v, want [w 5 r null]", got)
	}
}

// BenchmarkIncrement measures one read-modify-write transaction (WATCH,
// GET, MULTI SET EXEC) from one goroutine on the machine's Redis, through
// go-redis itself and through the wrapper: the difference is the
// recording's cost.
func BenchmarkIncrement(b *testing.B) {
	rc, prefix := connect(b)
	ctx := context.Background()
	key := prefix + "counter"
	increment := func(tx *redis.Tx) error {
		n, err := tx.Get(ctx, key).Int64()
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, key, n+1, 0)
			return nil
		})
		return err
	}
	b.Run("go-redis", func(b *testing.B) {
		for b.Loop() {
			if err := rc.Watch(ctx, increment, key); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("redistrace", func(b *testing.B) {
		rec, err := isoscope.NewRecorder(isoscope.RecorderOptions{StreamOnly: true, Stream: io.Discard})
		if err != nil {
			b.Fatal(err)
		}
		c, err := redistrace.New(rc, rec)
		if err != nil {
			b.Fatal(err)
		}
		s := c.Session(isoscope.Int(1))
		for b.Loop() {
			err := s.Watch(ctx, func(tx *redistrace.Tx) error {
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
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}
