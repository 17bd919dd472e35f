package serve

import (
	"context"
	"fmt"
	"net/http"
	"runtime/metrics"
	"slices"
	"strconv"
	"time"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check/aion"
	"github.com/isoscope/isoscope/internal/check/online"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
	"github.com/isoscope/isoscope/internal/wire"
)

// The black-box mode: serve's loop feeds the online black-box checker
// (internal/check/online) instead of Aion. Transactions need no
// timestamps; the checker sees each keyspace as a history of its own (a
// stream keeps one keyspace, and keyspaces share no key, so no cycle
// crosses two), with the keyspace's fence key: the fence_key of its
// first batch's header, or BlackBoxConfig.FenceKey. A finding is final
// when the checker is certain of it; the ones the end of the stream
// settles are reported, final, at shutdown (Drain).

// BlackBoxConfig sets up the black-box mode.
type BlackBoxConfig struct {
	// Level is serializable, snapshot isolation or read committed.
	Level level.Level
	// MemoryBytes bounds each keyspace's checker (0: no bound); the
	// state's warnings say when the checkers together hold more.
	MemoryBytes int64
	// FenceKey, when set, is every keyspace's fence key (an integer key
	// when it is one and the keyspace's keys are integers): a batch whose
	// header names another is refused. Unset, a keyspace's first batch's
	// fence_key is its fence key, and a keyspace whose first batch names
	// none has no fences.
	FenceKey string
	// Drain bounds the time the final verdicts may take at shutdown (1
	// minute when 0).
	Drain time.Duration
	// HeapTarget, when set with MemoryBytes, gives the live heap (bytes)
	// the process is to stay under. After each batch that follows a
	// collection, the process's live heap as that collection left it
	// (runtime/metrics /gc/heap/live:bytes) is held against it: above
	// it, every keyspace's checker lowers its bound by a quarter
	// (online.Checker.SetBound: idle keys' settled state is dropped at
	// once), down to a quarter of MemoryBytes; below three quarters of
	// it, the bounds rise back by a sixteenth of MemoryBytes at a time.
	HeapTarget func() int64
}

// BlackBoxState is what the black-box checker holds and did, summed
// over the keyspaces, as /v1/state serves it.
type BlackBoxState struct {
	// Keyspaces counts the keyspaces seen; Fenced those with a fence
	// key.
	Keyspaces int `json:"keyspaces"`
	Fenced    int `json:"fenced_keyspaces"`
	// Arrived counts the transactions taken, Held those in memory,
	// Forgotten those garbage-collected; Rounds the garbage-collection
	// rounds run.
	Arrived   uint64 `json:"arrived"`
	Held      uint64 `json:"held"`
	Forgotten uint64 `json:"forgotten"`
	Rounds    uint64 `json:"rounds"`
	// Bytes is the checkers' estimate of what they hold; Bound the sum
	// of the bounds they keep it under (lowered from the configured one
	// while the process's heap is above its target).
	Bytes int64 `json:"bytes"`
	Bound int64 `json:"bound"`
	// DroppedKeys counts the keys whose settled state was dropped to
	// keep the bound (a later transaction that touches one leaves the
	// verdict undecided).
	DroppedKeys uint64 `json:"dropped_keys"`
	// Warnings say when memory is not bounded as asked.
	Warnings []string `json:"warnings,omitempty"`
	// Unjudged says, once the stream is drained, for each keyspace whose
	// checker could not judge every transaction, why (the verdict is
	// then undecided, or a violation with others possibly missing).
	Unjudged []string `json:"unjudged,omitempty"`
}

// bbSpace is one keyspace's checker.
type bbSpace struct {
	name     string
	c        *online.Checker
	fence    history.Value // as the batches send it; null for none
	reported int           // findings Add returned
}

// blackBox is the online black-box checker as the loop's engine.
type blackBox struct {
	cfg    BlackBoxConfig
	names  func(ks uint32) string
	spaces map[uint32]*bbSpace
	order  []uint32
	out    []aion.Violation
	// checked and skipped count committed and other transactions taken.
	checked, skipped uint64
	// heap samples the live heap and the collections for HeapTarget;
	// cycles is the count of collections at the last look.
	heap   []metrics.Sample
	cycles uint64
	// unjudged says, after finish, why keyspaces' checkers could not
	// judge every transaction.
	unjudged []string
}

func newBlackBox(cfg BlackBoxConfig, names func(ks uint32) string) (*blackBox, error) {
	// New refuses a level it does not check; try it once here so that
	// the service refuses it at its start, not at its first batch.
	if _, err := online.New(online.Config{Level: cfg.Level, MemoryBytes: cfg.MemoryBytes}); err != nil {
		return nil, err
	}
	if cfg.Drain == 0 {
		cfg.Drain = time.Minute
	}
	return &blackBox{cfg: cfg, names: names, spaces: map[uint32]*bbSpace{},
		heap: []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}}}, nil
}

// CheckBlackBoxInput is the black-box mode's check of a batch's
// transaction: an id, a session and keys in the batch's tables, and only
// reads, writes, appends and list reads. Timestamps are not needed.
func CheckBlackBoxInput(src *history.History, t *history.Txn) error {
	where := "transaction " + t.ID.String()
	if t.Line > 0 {
		where += " (line " + strconv.Itoa(t.Line) + ")"
	}
	if t.ID.IsNull() {
		return fmt.Errorf("%s has no id", where)
	}
	if t.Session < 0 || int(t.Session) >= len(src.Sessions) {
		return fmt.Errorf("%s: session %d outside the history's session table", where, t.Session)
	}
	for j, op := range t.Ops {
		switch op.Kind {
		case history.Read, history.Write, history.Append, history.ReadList:
		default:
			return fmt.Errorf("%s: ops[%d] is %s; black-box online checking takes reads, writes, appends and list reads", where, j, op.Kind.Noun())
		}
		if op.Key < 0 || int(op.Key) >= len(src.Keys) {
			return fmt.Errorf("%s: ops[%d] uses a key outside the history's key table", where, j)
		}
	}
	return nil
}

func badBatch(txns int, format string, args ...any) *wire.Refusal {
	return &wire.Refusal{Reason: wire.ReasonBadInput, Status: http.StatusBadRequest, Txns: txns, Err: fmt.Errorf(format, args...)}
}

// flagFence is the configured fence key as a key like the batch's:
// an integer when it is one and the batch's keys (encoded already) are
// integers.
func (b *blackBox) flagFence(src *history.History) history.Value {
	n, err := strconv.ParseInt(b.cfg.FenceKey, 10, 64)
	if err != nil {
		return history.StringValue(b.cfg.FenceKey)
	}
	if len(src.Keys) > 0 {
		if _, k := decode(src.Keys[0]); k.Kind == history.String {
			return history.StringValue(b.cfg.FenceKey)
		}
	}
	return history.IntValue(n)
}

// space returns st's keyspace's checker, making it at the keyspace's
// first batch, or refuses a batch whose fence_key is not the keyspace's.
func (b *blackBox) space(st *stream, src *history.History, txns int) (*bbSpace, error) {
	fk := src.Header.FenceKey
	sp := b.spaces[st.keyspace]
	if sp == nil {
		fence := fk
		if b.cfg.FenceKey != "" {
			if want := b.flagFence(src); fk.IsNull() {
				fence = want
			} else if fk != want {
				return nil, badBatch(txns, "the batch's fence_key %s is not the service's fence key %s (--fence-key)", fk, want)
			}
		}
		cfg := online.Config{Level: b.cfg.Level, MemoryBytes: b.cfg.MemoryBytes}
		if !fence.IsNull() {
			enc := encode(st.keyspace, fence)
			cfg.FenceKey = &enc
		}
		c, err := online.New(cfg)
		if err != nil {
			return nil, err
		}
		sp = &bbSpace{name: b.names(st.keyspace), c: c, fence: fence}
		b.spaces[st.keyspace] = sp
		b.order = append(b.order, st.keyspace)
		return sp, nil
	}
	if !fk.IsNull() && fk != sp.fence {
		what := "no fence key"
		if !sp.fence.IsNull() {
			what = "fence key " + sp.fence.String()
		}
		return nil, badBatch(txns, "the batch's fence_key %s is not keyspace %q's: it has %s since its first batch", fk, sp.name, what)
	}
	return sp, nil
}

func (b *blackBox) add(st *stream, src *history.History, txns []history.Txn) error {
	sp, err := b.space(st, src, len(txns))
	if err != nil {
		return err
	}
	found, err := sp.c.Add(src, txns)
	if err != nil {
		// The online checker refuses a batch whole, naming the
		// transaction: the ids it names are the service's encoded ones
		// only for transactions the checker's own rules refuse, and
		// CheckBlackBoxInput caught the input's already.
		return badBatch(len(txns), "%s", err.Error())
	}
	for i := range txns {
		if txns[i].Status == history.Committed {
			b.checked++
		} else {
			b.skipped++
		}
	}
	now := time.Now()
	for _, f := range found {
		b.out = append(b.out, violationOf(f, now))
	}
	sp.reported += len(found)
	b.relieve()
	return nil
}

// relieve holds the checkers' bounds to the process's live heap
// (BlackBoxConfig.HeapTarget), once per collection.
func (b *blackBox) relieve() {
	if b.cfg.HeapTarget == nil || b.cfg.MemoryBytes <= 0 {
		return
	}
	metrics.Read(b.heap)
	if b.heap[0].Value.Kind() != metrics.KindUint64 || b.heap[1].Value.Kind() != metrics.KindUint64 {
		return
	}
	cycles := b.heap[1].Value.Uint64()
	if cycles == b.cycles {
		return // no collection since the last look: the same measurement
	}
	b.cycles = cycles
	live, target := int64(b.heap[0].Value.Uint64()), b.cfg.HeapTarget()
	floor := b.cfg.MemoryBytes / 4
	for _, ks := range b.order {
		c := b.spaces[ks].c
		bound := c.Stats().Bound
		switch {
		case live > target && bound > floor:
			c.SetBound(max(bound/4*3, floor))
		case live < target/4*3 && bound < b.cfg.MemoryBytes:
			c.SetBound(bound + b.cfg.MemoryBytes/16)
		}
	}
}

// violationOf is finding f as a violation, over a history of only the
// transactions it names.
func violationOf(f online.Finding, at time.Time) aion.Violation {
	h, a := small(f.History, f.Anomaly)
	return aion.Violation{Anomaly: a, History: h, At: at}
}

// small returns a history of h's transactions that a names (and its
// initial values), and a over it.
func small(h *history.History, a anomaly.Anomaly) (*history.History, anomaly.Anomaly) {
	if h == nil {
		return &history.History{}, a
	}
	idx := map[history.TxnID]history.TxnID{history.Init: history.Init}
	d := &history.History{Header: h.Header, Keys: h.Keys, Name: h.Name}
	sess := map[int32]int32{}
	of := func(t history.TxnID) history.TxnID {
		if n, ok := idx[t]; ok {
			return n
		}
		if t < 0 || int(t) >= len(h.Txns) {
			return t
		}
		tx := h.Txns[t]
		s, ok := sess[tx.Session]
		if !ok {
			s = int32(len(d.Sessions))
			sess[tx.Session] = s
			label := history.NullValue
			if tx.Session >= 0 && int(tx.Session) < len(h.Sessions) {
				label = h.Sessions[tx.Session]
			}
			d.Sessions = append(d.Sessions, label)
		}
		tx.Session = s
		n := history.TxnID(len(d.Txns))
		d.Txns = append(d.Txns, tx)
		idx[t] = n
		return n
	}
	a.Txns = slices.Clone(a.Txns)
	for i, t := range a.Txns {
		a.Txns[i] = of(t)
	}
	a.Cycle = slices.Clone(a.Cycle)
	for i := range a.Cycle {
		a.Cycle[i].From, a.Cycle[i].To = of(a.Cycle[i].From), of(a.Cycle[i].To)
	}
	a.Ops = slices.Clone(a.Ops)
	for i := range a.Ops {
		a.Ops[i].Txn = of(a.Ops[i].Txn)
	}
	a.Core = slices.Clone(a.Core)
	for i, t := range a.Core {
		a.Core[i] = of(t)
	}
	return d, a
}

func (b *blackBox) advance() error { return nil }

func (b *blackBox) take() []aion.Violation {
	out := b.out
	b.out = nil
	return out
}

// finish drains every keyspace's checker: the findings the end of the
// stream settles are final.
func (b *blackBox) finish() (final, pending []aion.Violation, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), b.cfg.Drain)
	defer cancel()
	now := time.Now()
	for _, ks := range b.order {
		sp := b.spaces[ks]
		res, derr := sp.c.Drain(ctx)
		if derr != nil {
			if err == nil {
				err = fmt.Errorf("keyspace %q: the final verdict: %w", sp.name, derr)
			}
			continue
		}
		for _, f := range res.Findings[min(sp.reported, len(res.Findings)):] {
			final = append(final, violationOf(f, now))
		}
		if res.Unjudged != "" {
			b.unjudged = append(b.unjudged, fmt.Sprintf("keyspace %q: %s", sp.name, res.Unjudged))
		}
	}
	return final, nil, err
}

func (b *blackBox) stats() aion.Stats {
	st := aion.Stats{Checked: b.checked, Skipped: b.skipped}
	for _, ks := range b.order {
		s := b.spaces[ks].c.Stats()
		st.InMemory += int(s.Held)
		st.Memory += s.Bytes
	}
	return st
}

func (b *blackBox) blackBox() *BlackBoxState {
	out := &BlackBoxState{Keyspaces: len(b.order)}
	for _, ks := range b.order {
		sp := b.spaces[ks]
		s := sp.c.Stats()
		if !sp.fence.IsNull() {
			out.Fenced++
		}
		out.Arrived += s.Arrived
		out.Held += s.Held
		out.Forgotten += s.Forgotten
		out.Rounds += s.Rounds
		out.Bytes += s.Bytes
		out.Bound += s.Bound
		out.DroppedKeys += s.DroppedKeys
		if s.Warning != "" {
			out.Warnings = append(out.Warnings, fmt.Sprintf("keyspace %q: %s", sp.name, s.Warning))
		}
	}
	out.Unjudged = slices.Clone(b.unjudged)
	if b.cfg.MemoryBytes > 0 && len(b.order) > 1 && out.Bytes > b.cfg.MemoryBytes {
		out.Warnings = append(out.Warnings, fmt.Sprintf("the %d keyspaces' checkers hold %d bytes together, more than the bound of %d (each keeps to it alone)",
			len(b.order), out.Bytes, b.cfg.MemoryBytes))
	}
	return out
}
