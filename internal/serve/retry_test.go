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
