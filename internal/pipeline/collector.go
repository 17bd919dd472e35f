package pipeline

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/isoscope/isoscope/internal/collect"
	"github.com/isoscope/isoscope/internal/db"
	"github.com/isoscope/isoscope/internal/natsshard"
	"github.com/isoscope/isoscope/internal/wire"
)

// collected says on standard error what became of the batches the
// collector published, and fails a run whose online check is incomplete:
// a batch the service refused or never confirmed turns a run whose level
// holds into an undecided one, as a run cut short is. A violation found
// in the history, or an error (failed), stays.
func (r *run) collected(ctx context.Context, cw *collect.Writer, res Result, failed error) Result {
	wait, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.Collector.Wait)
	defer cancel()
	o := cw.Outcome(wait)
	if o.Complete() {
		fmt.Fprintf(r.io.Stderr, "collector: %s took all %d batches (%d transactions)\n", r.Collector.URL, o.Batches, o.Txns)
		return res
	}
	r.lost = o.RefusedTxns
	fmt.Fprintf(r.io.Stderr, "collector: %s refused %d of %d batches (%d of %d transactions; a batch it could not be sent counts as refused)", r.Collector.URL, o.Refused, o.Batches, o.RefusedTxns, o.Txns)
	if o.Unconfirmed > 0 {
		fmt.Fprintf(r.io.Stderr, "; %d batches had no verdict within %s", o.Unconfirmed, r.Collector.Wait)
	}
	fmt.Fprintln(r.io.Stderr, ": the online check is incomplete")
	if o.First != nil {
		fmt.Fprintf(r.io.Stderr, "  first refusal: %v\n", o.First)
	}
	if failed == nil && res.Status == Holds {
		res.Status = Undecided
	}
	return res
}

// identity is the run's stream at the collector's service: its own id
// space (every run numbers its transactions from 1), in the keyspace of
// its database — the run's own when the database lives in this process,
// the database's address and table otherwise, which other runs against it
// share.
func (r *run) identity(target db.Target) wire.Identity {
	id := wire.Identity{Stream: r.Collector.Stream}
	if id.Stream == "" {
		var b [4]byte
		_, _ = crand.Read(b[:])
		id.Stream = fmt.Sprintf("run-%s-%x", time.Now().UTC().Format("20060102T150405"), b)
	}
	id.Keyspace = target.Display + "#" + r.Table
	if target.InMemory() {
		id.Keyspace = id.Stream
	}
	return id
}

// publisher connects to the collector, publishing as id.
func (r *run) publisher(id wire.Identity) (collect.Publisher, error) {
	c := r.Collector
	switch {
	case strings.HasPrefix(c.URL, "nats://") && c.Shards > 0:
		return natsshard.NewPublisher(context.Background(), natsshard.PublisherConfig{Config: natsshard.Config{URL: c.URL, Prefix: c.Prefix},
			Shards: c.Shards, Identity: id})
	case strings.HasPrefix(c.URL, "nats://"):
		return collect.DialNATS(c.URL, c.Subject, id)
	case strings.HasPrefix(c.URL, "http://"), strings.HasPrefix(c.URL, "https://"):
		return &collect.HTTP{URL: c.URL, Token: c.Token, ID: id}, nil
	}
	return nil, fmt.Errorf("--collector %q: want an http://, https:// or nats:// URL", c.URL)
}

// lineRewriter rewrites each complete line written through it (tests
// plant faults in a run's history, file and collector alike).
type lineRewriter struct {
	w       io.Writer
	rewrite func([]byte) []byte
	partial []byte
}

func (l *lineRewriter) Write(p []byte) (int, error) {
	buf := append(l.partial, p...)
	end := bytes.LastIndexByte(buf, '\n')
	if end < 0 {
		l.partial = buf
		return len(p), nil
	}
	var out []byte
	for _, line := range bytes.SplitAfter(buf[:end+1], []byte("\n")) {
		if len(line) > 0 {
			out = append(out, l.rewrite(line)...)
		}
	}
	l.partial = append([]byte(nil), buf[end+1:]...)
	if _, err := l.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}
