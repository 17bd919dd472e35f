package online

import (
	"context"
	"fmt"
	"strings"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/history"
)

// drain checks the held window whole, judges the stale reads still
// pending, and gives the verdict.
func (s *state) drain(ctx context.Context) (Result, error) {
	res, err := s.checkWindow(ctx, s.held, nil)
	if err != nil {
		return Result{}, err
	}
	v := s.buildView()
	s.judgeAll(v)
	pending, late := 0, s.lateGone
	for _, st := range s.stale {
		switch {
		case st.judged:
		case st.r.sess.idx >= st.el.sessions:
			late++
		default:
			pending++
		}
	}
	out := Result{Findings: append([]Finding(nil), s.findings...), Stats: s.stats()}
	var why []string
	if n := pending + s.unresolved; n > 0 {
		why = append(why, fmt.Sprintf("%d committed list reads returned a state older than one the checker had settled and forgotten, with no path from the forgotten appender to the reader certain: whether they close a cycle depends on what was forgotten", n))
	}
	if late > 0 {
		why = append(why, fmt.Sprintf("%d committed list reads, by sessions that first arrived after the element they missed was forgotten, returned a state older than it: the fences of a session not yet seen cannot be asked to read past what is forgotten", late))
	}
	if s.misplaced > 0 {
		why = append(why, fmt.Sprintf("%d committed list reads showed an element whose appender was forgotten before any read showed it after elements appended since", s.misplaced))
	}
	if s.droppedTouch > 0 {
		why = append(why, fmt.Sprintf("%d transactions touched keys whose settled state was dropped under the memory bound (%d keys dropped)", s.droppedTouch, s.droppedKeys))
	}
	// A transaction of unknown outcome counts only if a read shows one
	// of its appends (it is held: never forgotten).
	effective := 0
	for _, r := range s.unjudged {
		seen := false
		for _, o := range r.ops {
			if kv := v.keys[o.key]; o.kind == history.Append && kv != nil {
				_, seen = kv.pos[o.val]
				if seen {
					break
				}
			}
		}
		if seen {
			effective++
		}
	}
	if effective > 0 {
		why = append(why, fmt.Sprintf("%d transactions of unknown outcome that took effect read lists departing from a settled prefix: whether they close a cycle depends on what was forgotten", effective))
	}
	out.Unjudged = strings.Join(why, "; ")
	switch {
	case len(out.Findings) > 0:
		out.Outcome = check.Violated
	case res.Outcome == check.Undecided:
		out.Outcome, out.Reason = check.Undecided, res.Reason
	case len(why) > 0:
		out.Outcome, out.Reason = check.Undecided, strings.Join(why, "; ")
	default:
		out.Outcome = check.Satisfied
	}
	if res.Caveat != "" {
		out.Caveat = res.Caveat
	}
	if out.Outcome == check.Violated && len(why) > 0 {
		// The findings are certain; what could not be judged may hide
		// others.
		out.Caveat = strings.TrimPrefix(out.Caveat+"; other violations may be missing: "+strings.Join(why, "; "), "; ")
	}
	if w := out.Stats.Warning; w != "" {
		out.Caveat = strings.TrimPrefix(out.Caveat+"; "+w, "; ")
	}
	return out, nil
}

// bytes is the checker's estimate of what it holds.
func (s *state) bytes() int64 { return s.heldBytes() + s.keysBytes() + s.goneBytes() }

// keysBytes is the estimate's part for the keys' settled state.
func (s *state) keysBytes() int64 {
	return int64(len(s.keys))*keyBytes + int64(s.keyElems)*elemBytes
}

// goneBytes is what remembers the dropped keys: the set of integer keys
// and the filter of the others (0 before the first).
func (s *state) goneBytes() int64 { return s.goneIntsB + int64(len(s.gone))*8 }

// heldBytes is the estimate's part for the held transactions, the
// sessions and the findings.
func (s *state) heldBytes() int64 {
	return s.recsB + int64(len(s.sess))*160 + int64(len(s.reported))*64
}

// recBytes is the estimate's cost of a held transaction.
func recBytes(r *rec) int64 {
	b := int64(96 + 24)
	for _, o := range r.ops {
		b += 96 + 32*int64(cap(o.list))
	}
	return b
}

// recount sets the estimate of the held transactions afresh (their reads
// shrink as prefixes settle).
func (s *state) recount() {
	s.recsB = 0
	for _, r := range s.held {
		s.recsB += recBytes(r)
	}
}

func (s *state) stats() Stats {
	st := Stats{Arrived: s.arrived, Held: uint64(len(s.held)), Forgotten: s.forgot, Rounds: s.rounds, Findings: len(s.findings), Bytes: s.bytes(), Bound: s.bound, DroppedKeys: s.droppedKeys, DroppedTouched: s.droppedTouch}
	if s.cfg.MemoryBytes > 0 && st.Bytes > s.cfg.MemoryBytes {
		st.Warning = fmt.Sprintf("holding %d transactions (%d bytes) above the %d-byte bound: %s", st.Held, st.Bytes, s.cfg.MemoryBytes, s.why())
	}
	return st
}

// why says what keeps transactions held.
func (s *state) why() string {
	switch {
	case s.registers:
		return "read/write registers are held in full (no garbage collection for registers)"
	case s.ser && s.fkey == nil:
		return "no fence key: at serializability and snapshot isolation only fences let the checker forget"
	case s.ser:
		for _, ss := range s.order {
			if ss.fenceVis < 0 {
				return fmt.Sprintf("session %s has run no fence", ss.label)
			}
		}
		return "the sessions' fences have not settled the held transactions (a session that stopped running fences holds everything after its last one)"
	}
	return "the lists' orders have not settled the held transactions (appends no read has shown, or reads of appends not yet arrived)"
}
