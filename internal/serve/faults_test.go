package serve_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/check/aion"
	"github.com/isoscope/isoscope/internal/format/native"
	"github.com/isoscope/isoscope/internal/gen"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/serve"
	"github.com/isoscope/isoscope/internal/workload"
)

// TestFaultRecords: a posted history file with fault records between its
// transactions is taken (202, every transaction accepted); the faults are
// counted and listed in /v1/state, /v1/faults and /metrics with their
// fields and stream, and the summary; the checker never sees them: the
// same transactions without the faults give the same findings. A batch
// of fault records alone is taken with no transaction; a refused batch
// keeps none of its faults.
func TestFaultRecords(t *testing.T) {
	h, _, err := gen.Generate(gen.Config{Txns: 300, Sessions: 4, Keys: 10, Dist: workload.Zipfian, Mode: gen.SnapshotIsolation,
		ReadOnlyRatio: 0.2, Seed: 5, Timestamps: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gen.InjectTimestampFaults(h, gen.EarlyCommit, 3, 5); err != nil {
		t.Fatal(err)
	}
	faults := []history.Fault{
		{Kind: "partition", Node: "n2", Begin: h.Txns[10].Begin, End: h.Txns[40].End, Info: "n2 cut off from the other nodes"},
		{Kind: "clock", Node: "n1", Begin: h.Txns[100].Begin, End: h.Txns[150].End, Offset: -83e9, Info: "n1's clock 1m23s behind"},
	}
	// The file as run writes it: the faults where they were recorded.
	var file bytes.Buffer
	w, err := native.NewWriter(&file, h)
	if err != nil {
		t.Fatal(err)
	}
	for i := range h.Txns {
		if err := w.WriteTxn(&h.Txns[i]); err != nil {
			t.Fatal(err)
		}
		for j := range faults {
			if i == []int{50, 160}[j] {
				if err := w.WriteFault(&faults[j]); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}

	findings := func(withFaults bool) (string, string, serve.Summary) {
		clk := newClock()
		l := start(t, serve.Config{Checker: aion.Config{Clock: clk.Now}, Tick: time.Hour})
		s, url := l.s, l.url
		var b *bytes.Buffer
		if withFaults {
			b = bytes.NewBuffer(file.Bytes())
		} else {
			b = body(t, h, h.Txns)
		}
		if code, msg := post(t, url+"?stream=run1", b); code != http.StatusAccepted || !strings.Contains(msg, `"accepted":300`) {
			t.Fatalf("posting the file: %d %s", code, msg)
		}
		state := ""
		if withFaults {
			// Faults alone; then a refused batch (a different transaction
			// under a used id) with a fault: neither adds a transaction,
			// the second no fault.
			alone := `{"fault":"kill","node":"n3","begin":5,"end":9}` + "\n"
			if code, msg := post(t, url+"?stream=run1", strings.NewReader(alone)); code != http.StatusAccepted || !strings.Contains(msg, `"accepted":0`) {
				t.Fatalf("a batch of faults alone: %d %s", code, msg)
			}
			// (In a keyspace of its own: a refusal taints its keyspace.)
			other := url + "?stream=run2&keyspace=other"
			if code, msg := post(t, other, body(t, h, h.Txns[:1])); code != http.StatusAccepted {
				t.Fatalf("%d %s", code, msg)
			}
			first := h.Txns[0]
			first.Ops = append([]history.Op{{Kind: history.Read, Key: first.Ops[0].Key, Value: history.IntValue(-7)}}, first.Ops...)
			again := body(t, h, []history.Txn{first})
			again.WriteString(`{"fault":"pause","node":"n1","begin":5}` + "\n")
			if code, _ := post(t, other, again); code != http.StatusConflict {
				t.Fatalf("a batch with a different transaction under a used id: %d, want 409", code)
			}
			s.Sync()
			state = get(t, url+"/v1/state")
			var st serve.State
			if err := json.Unmarshal([]byte(state), &st); err != nil {
				t.Fatal(err)
			}
			if st.Faults != 3 || len(st.LastFaults) != 3 || st.LastFaults[1].Kind != "clock" || st.LastFaults[1].Offset != -83e9 ||
				st.LastFaults[1].Node != "n1" || st.LastFaults[1].Stream != "run1" || st.LastFaults[1].Begin != faults[1].Begin {
				t.Errorf("state: %d faults, %+v", st.Faults, st.LastFaults)
			}
			var listed []serve.Fault
			if err := json.Unmarshal([]byte(get(t, url+"/v1/faults")), &listed); err != nil || len(listed) != 3 || listed[0].Kind != "partition" || listed[2].Kind != "kill" {
				t.Errorf("/v1/faults: %+v, %v", listed, err)
			}
			m := get(t, url+"/metrics")
			if !strings.Contains(m, `isoscope_faults_total{kind="clock"} 1`) || !strings.Contains(m, `isoscope_faults_total{kind="partition"} 1`) || strings.Contains(m, `kind="pause"`) {
				t.Errorf("/metrics does not count the faults by kind")
			}
		}
		clk.add(time.Hour)
		s.Advance()
		s.Sync()
		sum := l.stop()
		return l.out.String(), state, sum
	}
	with, _, sum := findings(true)
	without, _, sum0 := findings(false)
	if sum.Faults != 3 || sum0.Faults != 0 {
		t.Errorf("summaries count %d and %d faults, want 3 and 0", sum.Faults, sum0.Faults)
	}
	strip := func(s string) []string {
		var out []string
		for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
			var v map[string]any
			if json.Unmarshal([]byte(l), &v) == nil {
				delete(v, "at")
				b, _ := json.Marshal(v)
				out = append(out, string(b))
			}
		}
		return out
	}
	a, b := strip(with), strip(without)
	if len(a) == 0 || strings.Join(a, "\n") != strings.Join(b, "\n") {
		t.Errorf("findings with the faults (%d) differ from those without (%d)", len(a), len(b))
	}
}
