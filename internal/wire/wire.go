// Package wire is what the clients of `isoscope serve` (the collector,
// the shard publisher) and its servers (the HTTP service, the NATS
// source, the shard workers and aggregator) exchange: a batch's Identity
// and the headers that carry it, the batch's form (ParseBatch: JSON lines
// of the history format, held to the online checker's input rules, so a
// client refuses what the service would), a refused batch (Refusal), the
// verdict a NATS message gets (Verdict), and a violation's JSON line
// (Line). Both sides import it and neither imports the other; it holds
// data and its encoding only: no server, no client, no transport, no
// metrics. How a transaction is cut into shards' pieces, and their
// encoding, is package shard's.
package wire

import (
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/isoscope/isoscope/internal/finding"
)

// Identity names where a batch comes from. Stream is its producer's id
// space: transaction ids and sessions are the stream's own, so two
// producers that both number their transactions from 1 never collide.
// Keyspace is the database whose keys the stream reads and writes: the
// streams of one keyspace share keys (and so their timestamps are
// compared), those of different keyspaces share nothing. A stream keeps
// the keyspace of its first batch. The empty names are the default stream
// and keyspace, where a batch without identity goes (old clients).
type Identity struct {
	// Stream names the producer's id space ("": the default stream).
	Stream string
	// Keyspace names the database its keys belong to ("": the default
	// keyspace).
	Keyspace string
}

// Request headers (and, lower-case, query parameters) naming a batch's
// Identity over HTTP; NATS messages carry the same headers.
// VerdictsHeader names the subject a NATS message's Verdict is published
// to.
const (
	StreamHeader   = "Isoscope-Stream"
	KeyspaceHeader = "Isoscope-Keyspace"
	VerdictsHeader = "Isoscope-Verdicts"
)

// maxName bounds a stream's or keyspace's name, in bytes.
const maxName = 200

// Check reports a name that is too long or holds control characters.
func (id Identity) Check() error {
	for _, n := range [...]struct{ what, name string }{{"stream", id.Stream}, {"keyspace", id.Keyspace}} {
		if len(n.name) > maxName {
			return fmt.Errorf("%s name longer than %d bytes", n.what, maxName)
		}
		if i := strings.IndexFunc(n.name, func(r rune) bool { return unicode.IsControl(r) || r == unicode.ReplacementChar }); i >= 0 {
			return fmt.Errorf("%s name %q: a control character or invalid UTF-8 at byte %d", n.what, n.name, i)
		}
	}
	return nil
}

// String names id for messages.
func (id Identity) String() string {
	s := "the default stream"
	if id.Stream != "" {
		s = "stream " + id.Stream
	}
	if id.Keyspace != "" {
		s += " (keyspace " + id.Keyspace + ")"
	}
	return s
}

// Refusal is a batch the service refused: nothing of it was kept.
type Refusal struct {
	// Reason is the metrics' label: bad_input, duplicate_id, too_large,
	// queue_full, memory_full, slow_body, shutting_down or checker_failed.
	Reason string
	// Status is the HTTP status the refusal is answered with.
	Status int
	// Txns is how many transactions the batch held (0 when it did not
	// parse).
	Txns int
	// Err says why, naming the line where one is at fault.
	Err error
}

// Error says why the batch was refused.
func (r *Refusal) Error() string { return r.Err.Error() }

// Unwrap returns r.Err.
func (r *Refusal) Unwrap() error { return r.Err }

// Retry says whether the batch was refused for now only (queue full,
// shutting down): resent later, it may be taken. Other refusals lose the
// batch's transactions, and findings that may depend on them are
// suppressed.
func (r *Refusal) Retry() bool {
	switch r.Reason {
	case ReasonQueueFull, ReasonMemoryFull, ReasonSlowBody, ReasonShuttingDown:
		return true
	}
	return false
}

// The reasons of a batch's refusal (Refusal.Reason, Verdict.Reason).
const (
	ReasonBadInput      = "bad_input"
	ReasonDuplicate     = "duplicate_id"
	ReasonTooLarge      = "too_large"
	ReasonQueueFull     = "queue_full"
	ReasonMemoryFull    = "memory_full"
	ReasonSlowBody      = "slow_body"
	ReasonShuttingDown  = "shutting_down"
	ReasonCheckerFailed = "checker_failed"
)

// Line is one violation as the service writes it: a JSON line of its
// output and of GET /v1/violations, and a shard's finding message.
type Line struct {
	// Seq numbers violations from 1 in the order they became final.
	Seq uint64 `json:"seq"`
	// At is when it became final; Pending marks a verdict reported at
	// shutdown that was not final yet.
	At      time.Time `json:"at"`
	Pending bool      `json:"pending,omitempty"`
	Level   string    `json:"level"`
	// Stream is the stream of the finding's first transaction (empty:
	// the default stream); Streams, when its transactions come from more
	// than one, the stream of each, in the order of Transactions.
	Stream  string   `json:"stream,omitempty"`
	Streams []string `json:"streams,omitempty"`
	finding.Finding
	// Rank is set by a checker of a key shard on a NoConflict finding
	// (Config.Annotate): the index, in the earlier committer's whole
	// transaction, of its first write of the finding's key. One checker
	// names a pair of conflicting writers once, by the shared key whose
	// first write comes last (a lost update first); the shards' findings
	// of a pair are merged by it, and the merged line leaves it out.
	Rank *int `json:"rank,omitempty"`
}

// Verdict is what the service publishes to a NATS message's verdicts
// subject (VerdictsHeader), as JSON.
type Verdict struct {
	// Seq is the message's sequence number in the JetStream stream (its
	// publisher's acknowledgement has it too).
	Seq uint64 `json:"seq"`
	// Accepted is the number of transactions the checker took.
	Accepted int `json:"accepted"`
	// Refused says why the batch was refused, Reason is the refusal's
	// label; both are empty for a batch taken.
	Refused string `json:"refused,omitempty"`
	Reason  string `json:"reason,omitempty"`
}
