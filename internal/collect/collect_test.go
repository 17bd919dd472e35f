package collect_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/collect"
	"github.com/isoscope/isoscope/internal/wire"
)

// recorder is a Publisher that keeps what it is given, and refuses the
// batches holding "bad".
type recorder struct{ batches []string }

func (r *recorder) Publish(_ context.Context, b []byte, _ int) error {
	if strings.Contains(string(b), "bad") {
		return errors.New("refused: bad")
	}
	r.batches = append(r.batches, string(b))
	return nil
}
func (r *recorder) Close() error { return nil }

// TestWriterBatches: each write's complete lines go out as one batch, the
// header line left out, a partial line kept for the next write, and
// Mutate applied line by line.
func TestWriterBatches(t *testing.T) {
	rec := &recorder{}
	w := collect.NewWriter(context.Background(), rec)
	w.Mutate = func(l []byte) []byte { return []byte(strings.ReplaceAll(string(l), "7", "8")) }
	for _, s := range []string{
		"{\"format\":\"isoscope-history\",\"version\":1}\n{\"id\":1}\n{\"id\":",
		"2}\n",
		"{\"id\":3}\n{\"id\":7}\n",
	} {
		if _, err := io.WriteString(w, s); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"{\"id\":1}\n", "{\"id\":2}\n", "{\"id\":3}\n{\"id\":8}\n"}
	if strings.Join(rec.batches, "|") != strings.Join(want, "|") || w.Published != 4 {
		t.Fatalf("batches %q, published %d", rec.batches, w.Published)
	}
	if o := w.Outcome(context.Background()); !o.Complete() || o.Batches != 3 || o.Txns != 4 {
		t.Fatalf("outcome %+v", o)
	}
}

// TestWriterCountsRefusals: a refused batch does not fail the write (the
// run and its history go on); the outcome counts it and keeps the first
// refusal.
func TestWriterCountsRefusals(t *testing.T) {
	rec := &recorder{}
	w := collect.NewWriter(context.Background(), rec)
	for _, s := range []string{"{\"id\":1}\n", "{\"id\":\"bad\"}\n{\"id\":3}\n", "{\"id\":4}\n"} {
		if n, err := io.WriteString(w, s); err != nil || n != len(s) {
			t.Fatalf("write %q: %d, %v", s, n, err)
		}
	}
	o := w.Outcome(context.Background())
	if o.Complete() || o.Refused != 1 || o.RefusedTxns != 2 || o.Batches != 3 || o.Txns != 4 || o.First == nil || w.Published != 2 {
		t.Fatalf("outcome %+v, published %d", o, w.Published)
	}
}

// TestHTTPPublisher: a 429 is waited out and the batch sent again with the
// token and the stream's identity; another refusal is an error with the service's message.
func TestHTTPPublisher(t *testing.T) {
	calls := 0
	var bodies []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, string(b))
		switch {
		case r.Header.Get("Authorization") != "Bearer tok":
			http.Error(w, "no token", http.StatusUnauthorized)
		case r.Header.Get(wire.StreamHeader) != "run-1" || r.Header.Get(wire.KeyspaceHeader) != "db":
			http.Error(w, "no identity", http.StatusBadRequest)
		case calls == 1:
			http.Error(w, "full", http.StatusTooManyRequests)
		case strings.Contains(string(b), "bad"):
			http.Error(w, "batch:1: bad", http.StatusBadRequest)
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	defer ts.Close()
	p := &collect.HTTP{URL: ts.URL, Token: "tok", ID: wire.Identity{Stream: "run-1", Keyspace: "db"}}
	if err := p.Publish(context.Background(), []byte("{\"id\":1}\n"), 1); err != nil {
		t.Fatal(err)
	}
	if calls != 2 || bodies[1] != "{\"id\":1}\n" {
		t.Fatalf("%d calls, bodies %q", calls, bodies)
	}
	if err := p.Publish(context.Background(), []byte("bad\n"), 1); err == nil || !strings.Contains(err.Error(), "batch:1: bad") {
		t.Fatalf("error %v", err)
	}
}

// TestWriterSkipsFaults: the run's fault records stay in the history
// file; the service gets only transactions, and a write of faults alone
// publishes nothing.
func TestWriterSkipsFaults(t *testing.T) {
	rec := &recorder{}
	w := collect.NewWriter(context.Background(), rec)
	for _, s := range []string{
		"{\"id\":1}\n{\"fault\":\"partition\",\"node\":\"n2\",\"begin\":5,\"end\":9}\n{\"id\":2}\n",
		"{\"fault\":\"cut\",\"begin\":11}\n",
	} {
		if _, err := io.WriteString(w, s); err != nil {
			t.Fatal(err)
		}
	}
	if strings.Join(rec.batches, "|") != "{\"id\":1}\n{\"id\":2}\n" || w.Published != 2 {
		t.Fatalf("batches %q, published %d", rec.batches, w.Published)
	}
}
