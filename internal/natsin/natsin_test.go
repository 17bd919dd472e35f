package natsin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/isoscope/isoscope/internal/natsin"
	"github.com/isoscope/isoscope/internal/testservice"
	"github.com/isoscope/isoscope/internal/wire"
)

// natsURL is the NATS server these machines run.
var natsURL = testservice.NATSAddr()

// jetStream connects to the local server, or skips when there is none.
func jetStream(t *testing.T) jetstream.JetStream {
	t.Helper()
	testservice.NATS(t)
	nc, err := nats.Connect(natsURL, nats.Timeout(2*time.Second))
	if err != nil {
		t.Fatalf("NATS at %s: %v", natsURL, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// readVerdicts reads n verdicts from sub, waiting for each up to wait.
func readVerdicts(t *testing.T, sub *nats.Subscription, n int, wait time.Duration) []wire.Verdict {
	t.Helper()
	var out []wire.Verdict
	for range n {
		m, err := sub.NextMsg(wait)
		if err != nil {
			t.Fatalf("verdicts: %v", err)
		}
		var v wire.Verdict
		if err := json.Unmarshal(m.Data, &v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

// TestSource: batches published to the subject reach submit in order,
// with the identity their headers name, each message acknowledged; a
// message that is no batch is refused and reported; each message's
// verdict (accepted and how many, or refused and why) is published to
// the subject its Isoscope-Verdicts header names; a second source on the same durable consumer does not see
// the acknowledged ones again.
func TestSource(t *testing.T) {
	js := jetStream(t)
	name := fmt.Sprintf("ISOTEST%d", time.Now().UnixNano())
	cfg := natsin.Config{URL: natsURL, Stream: name, Subject: strings.ToLower(name) + ".txns", Durable: "d"}
	ctx := context.Background()
	if _, err := natsin.Consumer(ctx, js, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { js.DeleteStream(context.Background(), name) })
	msgs := []string{
		`{"id":1,"session":0,"start_ts":1,"commit_ts":2,"ops":[["w","x",1]]}` + "\n" + `{"id":2,"session":1,"start_ts":3,"commit_ts":4,"ops":[["r","x",1]]}` + "\n",
		`{"id":3,"session":0,"ops":[["bogus"]]}` + "\n",
		`{"id":4,"session":0,"start_ts":5,"commit_ts":6,"ops":[["r","x",1]]}` + "\n",
	}
	nc, err := nats.Connect(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	inbox := nats.NewInbox()
	verdicts, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range msgs {
		msg := nats.NewMsg(cfg.Subject)
		msg.Data = []byte(m)
		msg.Header.Set(wire.VerdictsHeader, inbox)
		if i == 2 {
			msg.Header.Set(wire.StreamHeader, "s2")
			msg.Header.Set(wire.KeyspaceHeader, "k2")
		}
		if _, err := js.PublishMsg(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var got []string
	var rejected []error
	done := make(chan struct{})
	cfg.Rejected = func(err error) { mu.Lock(); rejected = append(rejected, err); mu.Unlock() }
	sctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		errc <- natsin.Source(cfg).Run(sctx, func(id wire.Identity, name string, body []byte) (int, error) {
			_, txns, err := wire.ParseBatch(bytes.NewReader(body), name)
			if err != nil {
				return 0, &wire.Refusal{Reason: "bad_input", Status: 400, Err: err}
			}
			mu.Lock()
			defer mu.Unlock()
			for _, tx := range txns {
				got = append(got, id.Stream+"/"+id.Keyspace+":"+tx.ID.String())
			}
			if len(got) == 3 {
				close(done)
			}
			return len(txns), nil
		})
	}()
	<-done
	answers := readVerdicts(t, verdicts, len(msgs), 5*time.Second)
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != "/:1,/:2,s2/k2:4" {
		t.Fatalf("submitted %v", got)
	}
	if len(rejected) != 1 || !strings.Contains(rejected[0].Error(), "message 2:1") {
		t.Fatalf("rejected %v", rejected)
	}
	if answers[0].Accepted != 2 || answers[1].Reason != "bad_input" || !strings.Contains(answers[1].Refused, "message 2:1") || answers[2].Accepted != 1 {
		t.Fatalf("verdicts %+v", answers)
	}
	cons, err := js.Consumer(ctx, name, "d")
	if err != nil {
		t.Fatal(err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.NumPending != 0 || info.NumAckPending != 0 {
		t.Fatalf("consumer left %d pending, %d unacknowledged", info.NumPending, info.NumAckPending)
	}
}
