package natsin_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/isoscope/isoscope/internal/check/aion"
	"github.com/isoscope/isoscope/internal/format/native"
	"github.com/isoscope/isoscope/internal/gen"
	"github.com/isoscope/isoscope/internal/natsin"
	"github.com/isoscope/isoscope/internal/serve"
	"github.com/isoscope/isoscope/internal/wire"
	"github.com/isoscope/isoscope/internal/workload"
)

// TestSourceRetry: a batch published to the service's subject again, as
// a producer retrying after a lost acknowledgement does, is accepted
// (its verdict says so), counted as duplicates, and the findings are
// those of one message; the skewed history of `gen --txns 200
// --timestamps --ts-fault skew --ts-faults 3 --seed 7` shows all 10.
func TestSourceRetry(t *testing.T) {
	js := jetStream(t)
	h, _, err := gen.Generate(gen.Config{Txns: 200, Sessions: 24, Keys: 1000, Dist: workload.Zipfian, ReadOnlyRatio: 0.2,
		Seed: 7, Timestamps: true, Mode: gen.Serial})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gen.InjectTimestampFaults(h, gen.Skew, 3, 7); err != nil {
		t.Fatal(err)
	}
	var batch bytes.Buffer
	if err := native.Write(&batch, h); err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	findings := func(copies int) (string, serve.State, []wire.Verdict) {
		name := fmt.Sprintf("ISOTEST%d", time.Now().UnixNano())
		cfg := natsin.Config{URL: natsURL, Stream: name, Subject: strings.ToLower(name) + ".txns", Durable: "d"}
		ctx := context.Background()
		if _, err := natsin.Consumer(ctx, js, cfg); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { js.DeleteStream(context.Background(), name) })
		inbox := nats.NewInbox()
		verdicts, err := nc.SubscribeSync(inbox)
		if err != nil {
			t.Fatal(err)
		}
		for range copies {
			msg := nats.NewMsg(cfg.Subject)
			msg.Data = batch.Bytes()
			msg.Header.Set(wire.VerdictsHeader, inbox)
			if _, err := js.PublishMsg(ctx, msg); err != nil {
				t.Fatal(err)
			}
		}
		var clk atomic.Int64
		clk.Store(int64(time.Hour))
		out := &syncBuffer{}
		s, err := serve.New(serve.Config{Checker: aion.Config{Clock: func() time.Time { return time.Unix(0, clk.Load()) }}, Tick: time.Hour, Out: out,
			Sources: []serve.Source{natsin.Source(cfg)}})
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		sctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			_, err := s.Serve(sctx, ln)
			done <- err
		}()
		answers := readVerdicts(t, verdicts, copies, 20*time.Second)
		clk.Add(int64(time.Hour))
		s.Advance()
		st := s.Progress()
		stop()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		return out.String(), st, answers
	}
	once, st1, _ := findings(1)
	if st1.Violations != 10 {
		t.Fatalf("one message: %d violations, want 10", st1.Violations)
	}
	twice, st, answers := findings(2)
	if twice != once {
		t.Errorf("published twice, the findings differ from one message's:\n%s\nwant:\n%s", twice, once)
	}
	for i, v := range answers {
		if v.Accepted != 200 || v.Refused != "" {
			t.Errorf("message %d: verdict %+v", i+1, v)
		}
	}
	if st.Duplicates != 200 || st.Suppressed != 0 || len(st.Refused) != 0 || len(st.Warnings) != 0 {
		t.Errorf("state: %d duplicates, %d suppressed, refused %v, warnings %q", st.Duplicates, st.Suppressed, st.Refused, st.Warnings)
	}
}
