package gen

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/history"
)

// TimestampStep is the distance between two consecutive timestamps the
// simulated databases hand out (the first is TimestampStep): the gaps
// leave room for the timestamps InjectTimestampFaults moves.
const TimestampStep = 16

// tsClock is a simulated database's timestamp oracle: unique, increasing
// timestamps, one per start and per commit, when on.
type tsClock struct {
	on   bool
	last uint64
}

// next returns the next timestamp.
func (c *tsClock) next() uint64 {
	c.last += TimestampStep
	return c.last
}

// tick returns the next timestamp, or 0 when the clock is off.
func (c *tsClock) tick() uint64 {
	if !c.on {
		return 0
	}
	return c.next()
}

// stampSerial gives t the next timestamp as its start and, when it
// committed, the one after as its commit (a serial database: nothing
// happens in between).
func (c *tsClock) stampSerial(t *history.Txn) {
	if !c.on {
		return
	}
	t.StartTS, t.HasStartTS = c.next(), true
	if t.Status == history.Committed {
		t.CommitTS, t.HasCommitTS = c.next(), true
	}
}

// stampSI gives t, which started at start, the next timestamp as its
// commit when it committed (an aborted transaction keeps only its start).
func (c *tsClock) stampSI(t *history.Txn, start uint64) {
	if !c.on {
		return
	}
	t.StartTS, t.HasStartTS = start, true
	if t.Status == history.Committed {
		t.CommitTS, t.HasCommitTS = c.next(), true
	}
}

// TSFault names a timestamp fault InjectTimestampFaults plants.
type TSFault uint8

// The timestamp faults.
const (
	// EarlyCommit lowers a writer's commit timestamp below the start
	// timestamp of a transaction that read the version the writer
	// overwrote: by the timestamps the reader should have seen the write
	// and did not (a stale read). In a serial history, where the reader
	// ran wholly before the writer, the writer's start moves down with it.
	EarlyCommit TSFault = iota
	// Skew gives a reader the timestamps of a lagging clock: its start
	// and commit timestamps move down by the same amount, until it
	// commits just before the transaction whose write it read. By the
	// timestamps it read a version committed after its snapshot (SI) and
	// after its own commit (SER).
	Skew
	numTSFaults
)

var tsFaultNames = [numTSFaults]string{"early-commit", "skew"}

// String is the fault's name ("early-commit" or "skew").
func (f TSFault) String() string {
	if f < numTSFaults {
		return tsFaultNames[f]
	}
	return "TSFault(" + strconv.Itoa(int(f)) + ")"
}

// ParseTSFault returns the fault named s.
func ParseTSFault(s string) (TSFault, error) {
	for i, n := range tsFaultNames {
		if n == s {
			return TSFault(i), nil
		}
	}
	return 0, fmt.Errorf("unknown timestamp fault %q (early-commit or skew)", s)
}

// Kind is the anomaly the fault makes a timestamp checker find.
func (f TSFault) Kind() anomaly.Kind {
	if f == Skew {
		return anomaly.ReadBeyondSnapshot
	}
	return anomaly.StaleRead
}

// InjectTimestampFaults plants n faults of kind f in h, a history whose
// committed transactions carry the timestamps a simulated database handed
// out (multiples of TimestampStep), and returns them: each as the anomaly
// a timestamp checker must find and its transactions, the writer first,
// then the reader, whose read of the key the fault concerns is its first
// operation on it. Candidates are drawn with seed; moved timestamps are
// unique. It is an error when fewer than n faults fit.
func InjectTimestampFaults(h *history.History, f TSFault, n int, seed uint64) ([]Planted, error) {
	if f >= numTSFaults {
		return nil, fmt.Errorf("gen: unknown timestamp fault %s", f)
	}
	if n < 0 {
		return nil, fmt.Errorf("gen: negative fault count %d", n)
	}
	used := map[uint64]bool{}
	writers := make([][]history.TxnID, len(h.Keys)) // per key, committed writers by commit_ts
	for i := range h.Txns {
		t := &h.Txns[i]
		if t.Status != history.Committed || !t.HasStartTS || !t.HasCommitTS {
			if t.Status == history.Committed {
				return nil, fmt.Errorf("gen: transaction %s has no timestamps", h.TxnName(history.TxnID(i)))
			}
			continue
		}
		used[t.StartTS], used[t.CommitTS] = true, true
		for _, op := range t.Ops {
			if op.Kind.IsWrite() && !slices.Contains(writers[op.Key], history.TxnID(i)) {
				writers[op.Key] = append(writers[op.Key], history.TxnID(i))
			}
		}
	}
	for k := range writers {
		slices.SortFunc(writers[k], func(a, b history.TxnID) int { return cmp.Compare(h.Txns[a].CommitTS, h.Txns[b].CommitTS) })
	}
	r := rand.New(rand.NewPCG(seed, seed^0x510e527fade682d1))
	order := r.Perm(len(h.Txns))
	moved := make([]bool, len(h.Txns))
	free := func(ts uint64) bool { return ts > 0 && !used[ts] }
	var out []Planted
	for _, i := range order {
		if len(out) == n {
			break
		}
		rd := history.TxnID(i)
		t := &h.Txns[i]
		if t.Status != history.Committed || moved[i] {
			continue
		}
		for j, op := range t.Ops {
			if op.Kind != history.Read || firstOn(t.Ops, op.Key) != j {
				continue
			}
			ws := writers[op.Key]
			if f == EarlyCommit {
				// The first writer of the key to commit after the reader
				// started: the reader did not see it.
				p, _ := slices.BinarySearchFunc(ws, t.StartTS, func(w history.TxnID, ts uint64) int {
					if h.Txns[w].CommitTS <= ts {
						return -1
					}
					return 1
				})
				if p == len(ws) {
					continue
				}
				w := ws[p]
				wt := &h.Txns[w]
				c := t.StartTS - 1
				s := wt.StartTS
				if s > c {
					s = c - 1
				}
				if w == rd || moved[w] || finalValue(wt, op.Key) == op.Value || !free(c) || s != wt.StartTS && !free(s) {
					continue
				}
				delete(used, wt.CommitTS)
				delete(used, wt.StartTS)
				wt.CommitTS, wt.StartTS = c, s
				used[c], used[s] = true, true
				moved[w], moved[rd] = true, true
				out = append(out, Planted{Kind: f.Kind(), Txns: []history.TxnID{w, rd}})
				break
			}
			// Skew: the writer of the version read, the last of the key to
			// commit before the reader started.
			p, _ := slices.BinarySearchFunc(ws, t.StartTS, func(w history.TxnID, ts uint64) int {
				if h.Txns[w].CommitTS < ts {
					return -1
				}
				return 1
			})
			if p == 0 {
				continue
			}
			w := ws[p-1]
			wt := &h.Txns[w]
			c := wt.CommitTS - 1
			dur := t.CommitTS - t.StartTS
			if w == rd || moved[w] || finalValue(wt, op.Key) != op.Value || c <= dur || !free(c) || !free(c-dur) {
				continue
			}
			delete(used, t.StartTS)
			delete(used, t.CommitTS)
			t.StartTS, t.CommitTS = c-dur, c
			used[t.StartTS], used[t.CommitTS] = true, true
			moved[w], moved[rd] = true, true
			out = append(out, Planted{Kind: f.Kind(), Txns: []history.TxnID{w, rd}})
			break
		}
	}
	if len(out) < n {
		return out, fmt.Errorf("gen: only %d of %d %s faults fit this history (they need reads of keys that committed transactions write)", len(out), n, f)
	}
	return out, nil
}

// firstOn returns the position of the first operation on k.
func firstOn(ops []history.Op, k history.KeyID) int {
	for j, op := range ops {
		if !op.Kind.IsRange() && op.Key == k {
			return j
		}
	}
	return -1
}

// finalValue returns what t's last write or delete of k left (null for a
// delete).
func finalValue(t *history.Txn, k history.KeyID) history.Value {
	for j := len(t.Ops) - 1; j >= 0; j-- {
		if op := t.Ops[j]; (op.Kind == history.Write || op.Kind == history.Delete) && op.Key == k {
			return op.Value
		}
	}
	return history.NullValue
}
