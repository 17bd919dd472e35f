package serve_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/gen"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
	"github.com/isoscope/isoscope/internal/report"
	"github.com/isoscope/isoscope/internal/serve"
	"github.com/isoscope/isoscope/internal/workload"
)

// blackBoxServer runs a black-box service at lv on a loopback port; stop
// shuts it down and returns its summary and output lines.
func blackBoxServer(t *testing.T, cfg serve.BlackBoxConfig) (url string, s *serve.Server, stop func() (serve.Summary, []string)) {
	t.Helper()
	out := &lockedBuffer{}
	s, err := serve.New(serve.Config{BlackBox: &cfg, Out: out, Explain: report.Explain})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	type result struct {
		sum serve.Summary
		err error
	}
	done := make(chan result, 1)
	go func() {
		sum, err := s.Serve(ctx, ln)
		done <- result{sum, err}
	}()
	stopped := false
	stop = func() (serve.Summary, []string) {
		if stopped {
			t.Fatal("stopped twice")
		}
		stopped = true
		cancel()
		r := <-done
		if r.err != nil {
			t.Fatalf("Serve: %v", r.err)
		}
		var lines []string
		sc := bufio.NewScanner(strings.NewReader(out.String()))
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		return r.sum, lines
	}
	t.Cleanup(func() {
		if !stopped {
			stop()
		}
	})
	return "http://" + ln.Addr().String(), s, stop
}

// shuffled returns h's transactions in a random interleaving of its
// sessions, each session's in order: an order a stream allows.
func shuffled(h *history.History, seed uint64) []history.Txn {
	r := rand.New(rand.NewPCG(seed, 7))
	bySess := map[int32][]history.Txn{}
	for _, tx := range h.Txns {
		bySess[tx.Session] = append(bySess[tx.Session], tx)
	}
	var order []history.Txn
	for len(bySess) > 0 {
		s := int32(r.IntN(len(h.Sessions)))
		if q := bySess[s]; len(q) > 0 {
			order = append(order, q[0])
			if bySess[s] = q[1:]; len(bySess[s]) == 0 {
				delete(bySess, s)
			}
		}
	}
	return order
}

// servedLine is what the test reads of a violation's line.
type servedLine struct {
	Kind         string `json:"kind"`
	Transactions []any  `json:"transactions"`
	Explanation  string `json:"explanation"`
	Level        string `json:"level"`
	Stream       string `json:"stream"`
	Pending      bool   `json:"pending"`
}

// TestBlackBoxHTTP: fenced generated histories (list-append and
// mini-transactions, with and without planted anomalies) sent over HTTP in
// shuffled batches, to two keyspaces at once, get the offline checker's
// verdict in each keyspace: violations exactly when it finds some, each
// naming transactions of the history, explained, final; /v1/state shows
// the black-box checker's state.
func TestBlackBoxHTTP(t *testing.T) {
	type tc struct {
		name string
		h    *history.History
		lv   level.ID
	}
	var cases []tc
	for _, plant := range []bool{false, true} {
		lc := gen.ListAppendConfig{Txns: 1500, Sessions: 6, ActiveKeys: 6, AppendsPerKey: 20, MaxOps: 4, ReadRatio: 0.5,
			Dist: workload.Uniform, Mode: gen.SnapshotIsolation, AbortRatio: 0.05, Seed: 4, FenceEvery: 5}
		mc := gen.Config{Txns: 1500, Sessions: 6, Keys: 30, Dist: workload.Zipfian, Mode: gen.SnapshotIsolation, ReadOnlyRatio: 0.2,
			Seed: 5, FenceEvery: 5}
		if plant {
			lc.Plant = []gen.ListPlant{gen.PlantG2Item, gen.PlantG1c}
			mc.Plant = []anomaly.Kind{anomaly.WriteSkew}
		}
		lh, _, err := gen.GenerateListAppend(lc)
		if err != nil {
			t.Fatal(err)
		}
		mh, _, err := gen.Generate(mc)
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, tc{fmt.Sprintf("list-append/plant=%v/ser", plant), lh, level.Serializable},
			tc{fmt.Sprintf("list-append/plant=%v/si", plant), lh, level.SnapshotIsolation},
			tc{fmt.Sprintf("list-append/plant=%v/rc", plant), lh, level.ReadCommitted},
			tc{fmt.Sprintf("mt/plant=%v/ser", plant), mh, level.Serializable})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := check.Run(context.Background(), c.h, level.Get(c.lv), check.Options{})
			if err != nil {
				t.Fatal(err)
			}
			url, srv, stop := blackBoxServer(t, serve.BlackBoxConfig{Level: level.Get(c.lv), MemoryBytes: 64 << 20})
			ids := map[string]bool{}
			for _, tx := range c.h.Txns {
				ids[tx.ID.String()] = true
			}
			for _, ks := range []string{"a", "b"} {
				order := shuffled(c.h, uint64(len(ks)))
				for i := 0; i < len(order); i += 53 {
					q := fmt.Sprintf("?stream=%s&keyspace=%s", ks, ks)
					if code, msg := post(t, url+q, body(t, c.h, order[i:min(i+53, len(order))])); code != http.StatusAccepted {
						t.Fatalf("batch at %d: %d %s", i, code, msg)
					}
				}
			}
			srv.Sync() // the state after the last batch
			var state struct {
				Checked  uint64               `json:"checked"`
				BlackBox *serve.BlackBoxState `json:"black_box"`
			}
			if err := json.Unmarshal([]byte(get(t, url+"/v1/state")), &state); err != nil {
				t.Fatal(err)
			}
			if state.BlackBox == nil || state.BlackBox.Keyspaces != 2 || state.BlackBox.Fenced != 2 || state.BlackBox.Arrived != uint64(2*len(c.h.Txns)) {
				t.Fatalf("state %+v, black box %+v; want 2 fenced keyspaces, %d transactions", state, state.BlackBox, 2*len(c.h.Txns))
			}
			sum, lines := stop()
			per := map[string]int{}
			for _, l := range lines {
				var v servedLine
				if err := json.Unmarshal([]byte(l), &v); err != nil {
					t.Fatalf("%v: %s", err, l)
				}
				if v.Explanation == "" || v.Pending || v.Level != level.Get(c.lv).Name {
					t.Fatalf("line without explanation, pending, or at another level: %s", l)
				}
				for _, x := range v.Transactions {
					if s, ok := x.(string); ok && s == "init" {
						continue
					}
					if !ids[fmt.Sprint(x)] {
						t.Fatalf("a finding names transaction %v, which the history does not have: %s", x, l)
					}
				}
				per[v.Stream]++
			}
			violated := res.Outcome == check.Violated
			for _, ks := range []string{"a", "b"} {
				if (per[ks] > 0) != violated {
					t.Errorf("keyspace %s: %d findings, offline %v (%d anomalies)", ks, per[ks], res.Outcome, len(res.Anomalies))
				}
			}
			if sum.Violations != uint64(len(lines)) || sum.BlackBox == nil || sum.BlackBox.Arrived != uint64(2*len(c.h.Txns)) {
				t.Errorf("summary %+v black box %+v for %d lines", sum, sum.BlackBox, len(lines))
			}
		})
	}
}

// TestBlackBoxRefusals: a transaction the black-box checker cannot take
// (a delete), a fence_key that is not the keyspace's, and one that is not
// the service's are refused with 400 naming what is wrong, and nothing of
// the batch is kept.
func TestBlackBoxRefusals(t *testing.T) {
	hdr := `{"format":"isoscope-history","version":1,"fence_key":"f"}`
	ok := `{"id":1,"session":0,"ops":[["r","f",null],["w","f",1]]}`
	url, _, stop := blackBoxServer(t, serve.BlackBoxConfig{Level: level.Get(level.Serializable)})
	if code, msg := post(t, url+"?keyspace=k&stream=s1", strings.NewReader(hdr+"\n"+ok+"\n")); code != http.StatusAccepted {
		t.Fatalf("%d %s", code, msg)
	}
	for _, c := range []struct{ name, q, body, want string }{
		{"delete", "?keyspace=k&stream=s1", hdr + "\n" + `{"id":2,"session":0,"ops":[["d","x"]]}` + "\n", "line 2"},
		{"another fence key", "?keyspace=k&stream=s2", `{"format":"isoscope-history","version":1,"fence_key":"g"}` + "\n" + `{"id":2,"session":0,"ops":[["r","x",null]]}` + "\n", `fence_key g is not keyspace "k"'s`},
		{"a scan", "?keyspace=k&stream=s1", hdr + "\n" + `{"id":3,"session":0,"ops":[["scan","a","z",[]]]}` + "\n", "ops[0]"},
	} {
		code, msg := post(t, url+c.q, strings.NewReader(c.body))
		if code != http.StatusBadRequest || !strings.Contains(msg, c.want) {
			t.Errorf("%s: %d %s; want 400 with %q", c.name, code, msg, c.want)
		}
	}
	sum, lines := stop()
	if sum.Checked != 1 || len(lines) != 0 {
		t.Fatalf("summary %+v, lines %v: want the one good transaction, no finding", sum, lines)
	}

	url, _, stop = blackBoxServer(t, serve.BlackBoxConfig{Level: level.Get(level.SnapshotIsolation), FenceKey: "7"})
	code, msg := post(t, url, strings.NewReader(`{"format":"isoscope-history","version":1,"fence_key":8}`+"\n"+`{"id":1,"session":0,"ops":[["r",8,null],["w",8,1]]}`+"\n"))
	if code != http.StatusBadRequest || !strings.Contains(msg, "is not the service's fence key 7") {
		t.Errorf("fence_key beside --fence-key: %d %s", code, msg)
	}
	if code, msg := post(t, url, strings.NewReader(`{"id":1,"session":0,"ops":[["r",7,null],["w",7,1]]}`+"\n")); code != http.StatusAccepted {
		t.Errorf("%d %s", code, msg)
	}
	stop()

	if _, err := serve.New(serve.Config{BlackBox: &serve.BlackBoxConfig{Level: level.Get(level.StrictSerializable)}}); err == nil {
		t.Error("a level the black-box checker does not check was accepted")
	}
}
