package serve_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/check/aion"
	"github.com/isoscope/isoscope/internal/gen"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/serve"
	"github.com/isoscope/isoscope/internal/serve/spillfile"
	"github.com/isoscope/isoscope/internal/workload"
)

// skewHistory is what `isoscope gen --txns 200 --timestamps --ts-fault
// skew --ts-faults 3 --seed 7` writes: a history whose planted clock
// skews give reads beyond the snapshot, among other findings.
func skewHistory(t *testing.T) *history.History {
	t.Helper()
	h, _, err := gen.Generate(gen.Config{Txns: 200, Sessions: 24, Keys: 1000, Dist: workload.Zipfian, ReadOnlyRatio: 0.2,
		Seed: 7, Timestamps: true, Mode: gen.Serial})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gen.InjectTimestampFaults(h, gen.Skew, 3, 7); err != nil {
		t.Fatal(err)
	}
	return h
}

// reshaped is batch b with every transaction line's keys in another
// order and spaces added: the same transactions written differently.
func reshaped(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		if _, txn := m["id"]; !txn {
			out.Write(sc.Bytes())
			out.WriteByte('\n')
			continue
		}
		enc, err := json.MarshalIndent(m, "", "") // the keys sorted: id is no longer first
		if err != nil {
			t.Fatal(err)
		}
		out.Write(bytes.ReplaceAll(enc, []byte("\n"), []byte(" ")))
		out.WriteByte('\n')
	}
	return out.Bytes()
}

// retryRun serves a history posted as the batches posts gives, and
// returns the findings once every verdict is final, the state then, and
// the summary.
func retryRun(t *testing.T, posts func(url string)) (string, serve.State, serve.Summary) {
	t.Helper()
	clk := newClock()
	l := start(t, serve.Config{Checker: aion.Config{Clock: clk.Now}, Tick: time.Hour})
	posts(l.url)
	clk.add(time.Hour)
	l.s.Advance()
	l.s.Sync()
	var st serve.State
	if err := json.Unmarshal([]byte(get(t, l.url+"/v1/state")), &st); err != nil {
		t.Fatal(err)
	}
	sum := l.stop()
	return l.out.String(), st, sum
}

// TestRetryIdempotent: a batch posted twice — as it was, written
// differently (keys in another order, spaces), or overlapping the first
// — gives the findings of one post exactly: 202 each time, the repeated
// transactions counted as duplicates in the answer, /v1/state, /metrics
// and the summary, nothing refused, nothing suppressed.
func TestRetryIdempotent(t *testing.T) {
	h := skewHistory(t)
	whole := body(t, h, h.Txns).Bytes()
	once, st1, _ := retryRun(t, func(url string) {
		if code, msg := post(t, url, bytes.NewReader(whole)); code != http.StatusAccepted {
			t.Fatalf("the history: %d %s", code, msg)
		}
	})
	if st1.Violations < 10 || st1.Suppressed != 0 {
		t.Fatalf("posted once: %d violations, %d suppressed; the planted skews should show", st1.Violations, st1.Suppressed)
	}
	for _, c := range []struct {
		name  string
		posts [][]byte
		dups  []int
	}{
		{"twice", [][]byte{whole, whole}, []int{0, 200}},
		{"written differently", [][]byte{whole, reshaped(t, whole)}, []int{0, 200}},
		{"overlapping", [][]byte{body(t, h, h.Txns[:120]).Bytes(), body(t, h, h.Txns[100:]).Bytes(), body(t, h, h.Txns[150:170]).Bytes()}, []int{0, 20, 20}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var metrics string
			out, st, sum := retryRun(t, func(url string) {
				for i, b := range c.posts {
					code, msg := post(t, url, bytes.NewReader(b))
					var answer struct{ Accepted, Duplicates int }
					json.Unmarshal([]byte(msg), &answer)
					if code != http.StatusAccepted || answer.Duplicates != c.dups[i] {
						t.Fatalf("post %d: %d %s, want 202 with %d duplicates", i+1, code, msg, c.dups[i])
					}
				}
				metrics = get(t, url+"/metrics")
			})
			if out != once {
				t.Errorf("the findings differ from one post's:\n%s\nwant:\n%s", out, once)
			}
			total := uint64(0)
			for _, d := range c.dups {
				total += uint64(d)
			}
			if st.Duplicates != total || st.Suppressed != 0 || len(st.Refused) != 0 || len(st.Warnings) != 0 || st.Violations != st1.Violations {
				t.Errorf("state: %d duplicates, %d suppressed, refused %v, warnings %q, %d violations", st.Duplicates, st.Suppressed, st.Refused, st.Warnings, st.Violations)
			}
			if want := `isoscope_transactions_duplicate_total{source="http"} ` + jsonNumber(total); !strings.Contains(metrics, want) {
				t.Errorf("metrics lack %s", want)
			}
			if sum.Duplicates != total || sum.Suppressed != 0 || len(sum.Rejected) != 0 {
				t.Errorf("summary %+v", sum)
			}
		})
	}
}

func jsonNumber(n uint64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestConflictingRetryRefused: a different transaction under an id the
// stream holds is refused (409, naming the line and the id), whatever
// else its batch repeats; its keyspace's findings about reads are then
// suppressed, and /v1/state, the summary and the live page say so as a
// warning.
func TestConflictingRetryRefused(t *testing.T) {
	h := skewHistory(t)
	whole := body(t, h, h.Txns).Bytes()
	changed := append([]history.Txn(nil), h.Txns...)
	// Transaction 1 again, one written value changed.
	t1 := changed[0]
	t1.Ops = append([]history.Op(nil), t1.Ops...)
	for i := range t1.Ops {
		if t1.Ops[i].Kind == history.Write {
			t1.Ops[i].Value = history.IntValue(t1.Ops[i].Value.N + 100000)
			break
		}
	}
	changed[0] = t1
	conflicting := body(t, h, changed).Bytes()
	out, st, sum := retryRun(t, func(url string) {
		if code, msg := post(t, url, bytes.NewReader(whole)); code != http.StatusAccepted {
			t.Fatalf("the history: %d %s", code, msg)
		}
		code, msg := post(t, url, bytes.NewReader(conflicting))
		if code != http.StatusConflict || !strings.Contains(msg, "line 2") || !strings.Contains(msg, "duplicate id 1") || !strings.Contains(msg, "different") {
			t.Fatalf("a different transaction 1: %d %s", code, msg)
		}
	})
	if st.Suppressed == 0 || st.Duplicates != 0 || st.Refused["duplicate_id"] != 1 {
		t.Fatalf("state: %d suppressed, %d duplicates, refused %v", st.Suppressed, st.Duplicates, st.Refused)
	}
	if len(st.Warnings) != 1 || !strings.Contains(st.Warnings[0], jsonNumber(st.Suppressed)+" findings suppressed") {
		t.Errorf("state warnings %q", st.Warnings)
	}
	if sum.Suppressed != st.Suppressed || len(sum.Tainted) != 1 || sum.Tainted[0] != "" {
		t.Errorf("summary %+v", sum)
	}
	if n := uint64(strings.Count(out, "\n")); n != st.Violations {
		t.Errorf("%d lines written, %d violations counted", n, st.Violations)
	}
}

// TestRetryAfterSpill: under a memory bound the checker spills the
// transactions whose verdicts are final; a batch of them posted again is
// still a retry (202, duplicates), and a changed one still a conflict
// (409): the digests outlive the spilling.
func TestRetryAfterSpill(t *testing.T) {
	h := skewHistory(t)
	first, second := body(t, h, h.Txns[:150]).Bytes(), body(t, h, h.Txns[150:]).Bytes()
	run := func(retry bool) (string, serve.State) {
		store, err := spillfile.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		clk := newClock()
		l := start(t, serve.Config{Checker: aion.Config{Clock: clk.Now, MemoryBound: 16 << 10, Store: store}, Tick: time.Hour})
		if code, msg := post(t, l.url, bytes.NewReader(first)); code != http.StatusAccepted {
			t.Fatalf("the first part: %d %s", code, msg)
		}
		clk.add(time.Hour) // every verdict of the first part final: it may spill
		l.s.Advance()
		if code, msg := post(t, l.url, bytes.NewReader(second)); code != http.StatusAccepted {
			t.Fatalf("the second part: %d %s", code, msg)
		}
		clk.add(time.Hour) // every verdict final
		l.s.Advance()
		if retry {
			if st := l.s.Progress(); st.Spilled == 0 {
				t.Fatalf("nothing spilled: %+v", st)
			}
			code, msg := post(t, l.url, bytes.NewReader(first))
			if code != http.StatusAccepted || !strings.Contains(msg, `"duplicates":150`) {
				t.Fatalf("the first part again, spilled: %d %s", code, msg)
			}
			changed := strings.Replace(string(first), `["w",26,1]`, `["w",26,100001]`, 1)
			if changed == string(first) {
				t.Fatal("transaction 1 is not what the test expects")
			}
			if code, msg := post(t, l.url, strings.NewReader(changed)); code != http.StatusConflict || !strings.Contains(msg, "duplicate id 1") {
				t.Fatalf("a different transaction 1, spilled: %d %s", code, msg)
			}
		}
		l.s.Sync()
		st := l.s.Progress()
		l.stop()
		return l.out.String(), st
	}
	once, _ := run(false)
	again, st := run(true)
	if st.Duplicates != 150 || st.Refused["duplicate_id"] != 1 {
		t.Errorf("state: %d duplicates, refused %v", st.Duplicates, st.Refused)
	}
	// The conflict came after every finding was final: none was
	// suppressed, and the findings are those of one post.
	if again != once || st.Suppressed != 0 {
		t.Errorf("the findings differ (%d suppressed):\n%s\nwant:\n%s", st.Suppressed, again, once)
	}
}

// TestRetryKeepsFaultsOnce: a batch of transactions and fault records
// posted again is a retry of both: its fault records are kept once.
func TestRetryKeepsFaultsOnce(t *testing.T) {
	l := start(t, serve.Config{Checker: aion.Config{Timeout: time.Hour}, Tick: time.Hour})
	batch := ids1to4 + `{"fault":"kill","node":"n1","begin":1,"end":5}` + "\n"
	for i, want := range []string{`{"accepted":4,"duplicates":0}`, `{"accepted":4,"duplicates":4}`} {
		if code, msg := postTo(t, l.url, batch); code != http.StatusAccepted || strings.TrimSpace(msg) != want {
			t.Fatalf("post %d: %d %s, want %s", i+1, code, msg, want)
		}
	}
	if st := l.s.Progress(); st.Faults != 1 || st.Duplicates != 4 {
		t.Fatalf("%d fault records kept, %d duplicates", st.Faults, st.Duplicates)
	}
}
