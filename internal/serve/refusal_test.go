package serve_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/check/aion"
	"github.com/isoscope/isoscope/internal/report"
	"github.com/isoscope/isoscope/internal/serve"
)

// live is a Server serving on a loopback port.
type live struct {
	s    *serve.Server
	url  string
	out  *lockedBuffer
	stop func() serve.Summary
}

// start serves cfg (its Out, when nil, a buffer) until the test ends or
// stop is called.
func start(t *testing.T, cfg serve.Config) *live {
	t.Helper()
	l := &live{out: &lockedBuffer{}}
	if cfg.Out == nil {
		cfg.Out = l.out
	}
	if cfg.Explain == nil {
		cfg.Explain = report.Explain // as the command line does
	}
	s, err := serve.New(cfg)
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
	var res *result
	l.s, l.url = s, "http://"+ln.Addr().String()
	l.stop = func() serve.Summary {
		if res == nil {
			cancel()
			r := <-done
			res = &r
			if r.err != nil {
				t.Errorf("serve: %v", r.err)
			}
		}
		return res.sum
	}
	t.Cleanup(func() { l.stop() })
	return l
}

// postTo posts body to the service with the given request headers.
func postTo(t *testing.T, url, body string, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, endpoint(url), strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp.StatusCode, b.String()
}

const ids1to4 = `{"id":1,"session":0,"start_ts":1,"commit_ts":2,"ops":[["w","x",1]]}
{"id":2,"session":0,"start_ts":3,"commit_ts":4,"ops":[["r","x",1],["w","x",2]]}
{"id":3,"session":1,"start_ts":5,"commit_ts":6,"ops":[["r","x",2],["w","y",3]]}
{"id":4,"session":1,"start_ts":7,"commit_ts":8,"ops":[["r","y",3]]}
`

// TestDuplicateRefusedBeforeAccepted: a batch holding a different
// transaction under an id the service holds gets 409 naming the line, not
// 202 and a refusal later; so does a batch repeating an id of its own,
// and a transaction under the id of an aborted one; the same batch again
// is a retry, accepted without effect; the same ids in another stream are
// accepted; the
// checker's own refusal names the line, id and key as sent. The
// refusals are counted by reason, and nothing but findings reaches the
// output.
func TestDuplicateRefusedBeforeAccepted(t *testing.T) {
	l := start(t, serve.Config{Checker: aion.Config{Timeout: time.Hour}, Tick: time.Hour})
	if code, msg := postTo(t, l.url, ids1to4); code != http.StatusAccepted {
		t.Fatalf("first batch: %d %s", code, msg)
	}
	if code, msg := postTo(t, l.url, ids1to4); code != http.StatusAccepted || msg != `{"accepted":4,"duplicates":4}`+"\n" {
		t.Fatalf("the same batch again: %d %s", code, msg)
	}
	changed := strings.Replace(ids1to4, `["w","x",1]]`, `["w","x",9]]`, 1)
	if code, msg := postTo(t, l.url, changed); code != http.StatusConflict || !strings.Contains(msg, "line 1") || !strings.Contains(msg, "duplicate id 1") {
		t.Fatalf("a different transaction 1: %d %s", code, msg)
	}
	twice := `{"id":5,"session":0,"start_ts":9,"commit_ts":10,"ops":[["w","z",5]]}
{"id":5,"session":0,"start_ts":11,"commit_ts":12,"ops":[["w","z",6]]}
`
	if code, msg := postTo(t, l.url, twice); code != http.StatusBadRequest || !strings.Contains(msg, "batch:2:") || !strings.Contains(msg, "duplicate id 5") {
		t.Fatalf("an id twice in a batch: %d %s", code, msg)
	}
	aborted := `{"id":6,"session":0,"status":"aborted","ops":[["w","z",7]]}` + "\n"
	if code, msg := postTo(t, l.url, aborted); code != http.StatusAccepted {
		t.Fatalf("aborted: %d %s", code, msg)
	}
	again := `{"id":6,"session":0,"start_ts":13,"commit_ts":14,"ops":[["w","z",8]]}` + "\n"
	if code, msg := postTo(t, l.url, again); code != http.StatusConflict || !strings.Contains(msg, "duplicate id 6") {
		t.Fatalf("the id of an aborted transaction: %d %s", code, msg)
	}
	if code, msg := postTo(t, l.url, ids1to4, "Isoscope-Stream", "other", "Isoscope-Keyspace", "other"); code != http.StatusAccepted {
		t.Fatalf("the same ids in another stream: %d %s", code, msg)
	}
	if code, msg := postTo(t, l.url+"?stream=third&keyspace=third", ids1to4); code != http.StatusAccepted {
		t.Fatalf("the same ids in a stream named by the query: %d %s", code, msg)
	}
	if code, msg := postTo(t, l.url+"?stream=third&keyspace=else", "", "Isoscope-Stream", "third"); code != http.StatusBadRequest || !strings.Contains(msg, "keyspace") {
		t.Fatalf("a stream moving to another keyspace: %d %s", code, msg)
	}
	list := `{"id":7,"session":0,"start_ts":15,"commit_ts":16,"ops":[["append","x",1]]}` + "\n"
	if code, msg := postTo(t, l.url+"?stream=third&keyspace=third", list); code != http.StatusBadRequest || !strings.Contains(msg, `transaction 7 (line 1): ops[0] appends to or reads the list at key x, which`) {
		t.Fatalf("a value key appended to: %d %s", code, msg)
	}
	metrics := get(t, l.url+"/metrics")
	for _, m := range []string{
		`isoscope_batches_rejected_total{reason="duplicate_id",source="http"} 2`,
		`isoscope_batches_rejected_total{reason="bad_input",source="http"} 3`,
		`isoscope_transactions_rejected_total{reason="duplicate_id",source="http"} 5`,
		`isoscope_batches_accepted_total 5`,
		`isoscope_transactions_duplicate_total{source="http"} 4`,
		`isoscope_transactions_checked_total 12`,
	} {
		if !strings.Contains(metrics, m) {
			t.Errorf("metrics lack %s", m)
		}
	}
	sum := l.stop()
	if sum.Rejected["duplicate_id"] != 2 || sum.Rejected["bad_input"] != 3 || sum.RejectedTxns != 6 || sum.Checked != 12 || sum.Duplicates != 4 {
		t.Errorf("summary %+v", sum)
	}
	if out := l.out.String(); out != "" {
		t.Errorf("the output holds more than findings:\n%s", out)
	}
}

// TestRefusedWriterNoThinAir: when a stream's batch is refused, a later
// read of a value its transactions wrote is not reported as a thin-air
// read (the writer was refused, not absent), final or pending; it is
// counted as suppressed. In a stream with nothing refused the same read
// is a thin-air read.
func TestRefusedWriterNoThinAir(t *testing.T) {
	l := start(t, serve.Config{Checker: aion.Config{Timeout: time.Hour}, Tick: time.Hour})
	writer := `{"id":1,"session":0,"start_ts":1,"commit_ts":2,"ops":[["w","x",1]]}
{"id":2,"session":0,"start_ts":3,"commit_ts":4,"ops":[["w","x",2],["scan","a","z",[]]]}
`
	if code, msg := postTo(t, l.url, writer, "Isoscope-Stream", "a", "Isoscope-Keyspace", "a"); code != http.StatusBadRequest || !strings.Contains(msg, "line 2") {
		t.Fatalf("the writer's batch: %d %s", code, msg)
	}
	reader := `{"id":3,"session":1,"start_ts":5,"commit_ts":6,"ops":[["r","x",1]]}` + "\n"
	for _, ks := range []string{"a", "b"} {
		if code, msg := postTo(t, l.url, reader, "Isoscope-Stream", ks, "Isoscope-Keyspace", ks); code != http.StatusAccepted {
			t.Fatalf("the reader in %s: %d %s", ks, code, msg)
		}
	}
	sum := l.stop()
	out := l.out.String()
	if strings.Count(out, "thin-air-read") != 1 || !strings.Contains(out, `"stream":"b"`) || strings.Contains(out, `"stream":"a"`) {
		t.Fatalf("want one thin-air read, in stream b:\n%s", out)
	}
	if sum.Suppressed != 1 || sum.Pending != 1 || sum.Rejected["bad_input"] != 1 {
		t.Fatalf("summary %+v", sum)
	}
}

// TestStreamsShareKeyspace: the streams of one keyspace share its keys
// (a read in one of a write in another is explained; two overlapping
// writers from two streams are a lost update naming both streams, and
// its explanation each transaction with its stream), those
// of another keyspace do not (the same read there is a thin-air read).
func TestStreamsShareKeyspace(t *testing.T) {
	l := start(t, serve.Config{Checker: aion.Config{Timeout: time.Hour}, Tick: time.Hour})
	w := `{"id":1,"session":0,"start_ts":1,"commit_ts":2,"ops":[["w","x",1]]}` + "\n"
	r := `{"id":1,"session":0,"start_ts":3,"commit_ts":4,"ops":[["r","x",1]]}` + "\n"
	lost := `{"id":%d,"session":0,"start_ts":10,"commit_ts":%d,"ops":[["r","y",null],["w","y",%d]]}` + "\n"
	for _, p := range []struct{ stream, keyspace, body string }{
		{"a", "db", w}, {"b", "db", r}, {"c", "else", r},
		{"a", "db", fmt.Sprintf(lost, 2, 11, 1)}, {"b", "db", fmt.Sprintf(lost, 2, 12, 2)},
	} {
		if code, msg := postTo(t, l.url, p.body, "Isoscope-Stream", p.stream, "Isoscope-Keyspace", p.keyspace); code != http.StatusAccepted {
			t.Fatalf("%+v: %d %s", p, code, msg)
		}
	}
	l.stop()
	out := l.out.String()
	if strings.Count(out, "\n") != 2 || !strings.Contains(out, `"stream":"c","kind":"thin-air-read","transactions":[1],"key":"x"`) ||
		!strings.Contains(out, `"stream":"a","streams":["a","b"],"kind":"lost-update","phenomenon":"G-SIa","transactions":[2,2],"key":"y"`) {
		t.Fatalf("want a thin-air read in c and a lost update of a and b:\n%s", out)
	}
	if !strings.Contains(out, "T2@b (start_ts 10)") || !strings.Contains(out, "T2@a wrote y") {
		t.Fatalf("the lost update's explanation does not tell the streams' transactions apart:\n%s", out)
	}
}
