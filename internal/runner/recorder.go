package runner

import (
	"context"
	"time"

	"github.com/isoscope/isoscope/internal/format/native"
	"github.com/isoscope/isoscope/internal/history"
)

// recorder is the one goroutine that owns the history: it receives the
// sessions' records in the order they finished, numbers them, interns
// their keys and sessions, keeps them, and streams them to Out. Each
// session sends its records in its own order over the one channel, so
// file order is session order.
type recorder struct {
	h        *history.History
	w        *native.Writer
	sessions map[int64]int32
	hook     func(int)
	err      error
	// forget keeps no transaction once written (Config.Forget); n
	// counts those recorded.
	forget bool
	n      int
	last   history.Txn
}

func newRecorder(c Config, sessions int) *recorder {
	h := history.New()
	h.Header = history.Header{Present: true, Version: native.Version, UniqueValues: c.Plan.UniqueValues, Source: c.Source}
	if pc := c.Plan.Config; pc.FenceEvery > 0 {
		h.Header.FenceKey = history.IntValue(pc.FenceKey())
	}
	rec := &recorder{h: h, sessions: make(map[int64]int32, sessions), hook: c.Hook, forget: c.Forget}
	for i := range sessions {
		rec.session(int64(i))
	}
	if c.Out != nil {
		// A header never breaks the model: NewWriter cannot fail here.
		rec.w, rec.err = native.NewWriter(c.Out, h)
	}
	return rec
}

// session returns the index of the session labelled label.
func (rc *recorder) session(label int64) int32 {
	if i, ok := rc.sessions[label]; ok {
		return i
	}
	i := int32(len(rc.h.Sessions))
	rc.h.Sessions = append(rc.h.Sessions, history.IntValue(label))
	rc.sessions[label] = i
	return i
}

// drain records everything the channel brings until it is closed. If the
// history cannot be written it cancels the run, keeps the records in
// memory, and returns the error at the end.
func (rc *recorder) drain(in <-chan *record, cancel context.CancelFunc) error {
	if rc.err != nil {
		cancel()
	}
	lastFlush := time.Now()
	for r := range in {
		if r.fault != nil {
			rc.h.Faults = append(rc.h.Faults, *r.fault)
			if rc.w != nil && rc.err == nil {
				if rc.err = rc.w.WriteFault(r.fault); rc.err == nil {
					rc.err = rc.w.Flush()
				}
				if rc.err != nil {
					cancel()
				}
			}
			continue
		}
		t := rc.add(r)
		if rc.w != nil && rc.err == nil {
			if err := rc.w.WriteTxn(t); err != nil {
				rc.err = err
				cancel()
			} else if len(in) == 0 || time.Since(lastFlush) >= FlushEvery {
				rc.err = rc.w.Flush()
				lastFlush = time.Now()
			}
		}
		if rc.hook != nil {
			rc.hook(rc.n)
		}
	}
	if rc.w != nil && rc.err == nil {
		rc.err = rc.w.Flush()
	}
	return rc.err
}

// add turns a record into the history's next transaction and returns it:
// kept in the history, or, forgetting, only until the next (and then the
// history's key table holds only its keys, so that it does not grow with
// keys that come and go).
func (rc *recorder) add(r *record) *history.Txn {
	h := rc.h
	if rc.forget {
		h.Keys = h.Keys[:0]
		key := func(k history.KeyID) history.KeyID {
			v := history.IntValue(int64(k))
			for i, x := range h.Keys {
				if x == v {
					return history.KeyID(i)
				}
			}
			h.Keys = append(h.Keys, v)
			return history.KeyID(len(h.Keys) - 1)
		}
		for i := range r.ops {
			op := &r.ops[i]
			if op.Key != history.NoKey {
				op.Key = key(op.Key)
			}
			if op.Range != nil {
				for j := range op.Range.Pairs {
					p := &op.Range.Pairs[j]
					p.Key = key(p.Key)
				}
			}
		}
	}
	for i := range r.ops {
		if rc.forget {
			break
		}
		op := &r.ops[i]
		if op.Key != history.NoKey {
			op.Key = h.Key(history.IntValue(int64(op.Key)))
		}
		if op.Range != nil {
			for j := range op.Range.Pairs {
				p := &op.Range.Pairs[j]
				p.Key = h.Key(history.IntValue(int64(p.Key)))
			}
		}
	}
	rc.n++
	t := history.Txn{
		ID:      history.IntValue(int64(rc.n)),
		Session: rc.session(r.session),
		Status:  r.status,
		Begin:   r.begin, End: r.end, HasTime: true,
		StartTS: r.startTS, CommitTS: r.commitTS, HasStartTS: r.hasTS, HasCommitTS: r.hasTS,
		Ops: r.ops,
	}
	if rc.forget {
		rc.last = t
		return &rc.last
	}
	h.Txns = append(h.Txns, t)
	return &h.Txns[len(h.Txns)-1]
}
