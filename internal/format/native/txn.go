package native

import (
	"math"
	"strconv"

	"github.com/isoscope/isoscope/internal/history"
)

// Bits of the fields a transaction line has given.
const (
	fID = 1 << iota
	fSession
	fStatus
	fBegin
	fEnd
	fStartTS
	fCommitTS
	fOps
)

// txn parses the transaction on the current line into t.
func (r *Reader) txn(t *history.Txn) error {
	s := &r.s
	t.Line = s.line
	r.listArena, r.listReads = r.listArena[:0], r.listReads[:0]
	if err := s.expect('{', "a transaction object"); err != nil {
		return err
	}
	var seen uint
	var hasBegin, hasEnd bool
	if s.ws() == '}' {
		s.i++
	} else {
		for {
			if s.ws() != '"' {
				return s.syntax("a field name")
			}
			s.field = ""
			name, err := s.str()
			if err != nil {
				return err
			}
			if err := s.expect(':', "':'"); err != nil {
				return err
			}
			bit := uint(0)
			switch string(name) {
			case "id":
				bit = fID
				s.field = "id"
				err = r.id(t)
			case "session":
				bit = fSession
				s.field = "session"
				err = r.session(t)
			case "status":
				bit = fStatus
				s.field = "status"
				err = r.status(t)
			case "begin":
				bit = fBegin
				s.field = "begin"
				t.Begin, hasBegin, err = r.instant()
			case "end":
				bit = fEnd
				s.field = "end"
				t.End, hasEnd, err = r.instant()
			case "start_ts":
				bit = fStartTS
				s.field = "start_ts"
				t.StartTS, t.HasStartTS, err = r.timestamp()
			case "commit_ts":
				bit = fCommitTS
				s.field = "commit_ts"
				t.CommitTS, t.HasCommitTS, err = r.timestamp()
			case "ops":
				bit = fOps
				s.field = "ops"
				err = r.ops(t)
			case "format":
				return s.errf("format", "a header is allowed only on the first line")
			case "hints": // reserved: skipped without copying its name
				s.field = "hints"
				err = s.skip(0)
			default:
				s.field = string(name)
				err = s.skip(0)
			}
			if err != nil {
				return err
			}
			if seen&bit != 0 {
				return s.errf(s.where(), "given twice")
			}
			seen |= bit
			s.field = ""
			if more, err := s.more('}'); err != nil {
				return err
			} else if !more {
				break
			}
		}
	}
	if s.ws() != 0 {
		return s.syntax("the end of the line after the transaction")
	}
	if err := r.checkTxn(t, seen, hasBegin, hasEnd); err != nil {
		return err
	}
	r.shareLists(t)
	return nil
}

// shareLists gives the list reads of t, parsed into listArena, their
// lists, shared with the other reads of their keys (history.Lists) now
// that t's status is known: a transaction that did not commit may have
// read its own appends at the end of a list, which are no key's.
func (r *Reader) shareLists(t *history.Txn) {
	for _, lr := range r.listReads {
		op := &t.Ops[lr.op]
		list := r.listArena[lr.start:lr.end]
		own := 0
		if t.Status != history.Committed {
			own = history.OwnTail(t.Ops[:lr.op], op.Key, list)
		}
		op.List = r.shared.Share(r.h.Keys[op.Key], list, own)
	}
}

// checkTxn checks what only the whole transaction tells.
func (r *Reader) checkTxn(t *history.Txn, seen uint, hasBegin, hasEnd bool) error {
	s := &r.s
	switch {
	case seen&fID == 0:
		return s.errf("id", "missing")
	case seen&fSession == 0:
		return s.errf("session", "missing")
	case seen&fOps == 0:
		return s.errf("ops", "missing")
	case len(t.Ops) == 0 && t.Status != history.Aborted:
		return s.errf("ops", "empty: only an aborted transaction may have no operations")
	}
	// An instant given alone leaves the other unknown: the earliest begin
	// or the latest end, which can order nothing in real time.
	if hasBegin || hasEnd {
		if !hasBegin {
			t.Begin = 0
		}
		if !hasEnd {
			t.End = math.MaxInt64
		}
		t.HasTime = true
		if t.Begin > t.End {
			return s.errf("end", "end "+strconv.FormatInt(t.End, 10)+" is before begin "+strconv.FormatInt(t.Begin, 10))
		}
	} else {
		t.Begin, t.End, t.HasTime = 0, 0, false
	}
	return nil
}

func (r *Reader) id(t *history.Txn) error {
	v, err := r.s.scalar("must be an integer or a string")
	if err != nil {
		return err
	}
	switch v.kind {
	case sInt:
		t.ID = history.IntValue(v.n)
	case sString:
		t.ID = history.StringValue(string(v.s))
	default:
		return r.s.errf("id", "must be an integer or a string, not null")
	}
	return nil
}

func (r *Reader) session(t *history.Txn) error {
	v, err := r.s.scalar("must be an integer or a string")
	if err != nil {
		return err
	}
	switch v.kind {
	case sInt:
		if slot := dense(&r.denseSessions, v.n, len(r.h.Sessions)); slot != nil && *slot != 0 {
			t.Session = *slot - 1
			return nil
		}
		t.Session = r.internSession(history.IntValue(v.n))
	case sString:
		if id, ok := r.strSessions[string(v.s)]; ok {
			t.Session = id
			return nil
		}
		t.Session = r.internSession(history.StringValue(string(v.s)))
	default:
		return r.s.errf("session", "must be an integer or a string, not null")
	}
	return nil
}

// internSession returns the index of session label v (an integer or a
// string), adding it to the history's sessions if it is new.
func (r *Reader) internSession(v history.Value) int32 {
	h := r.h
	if v.Kind == history.String {
		id, ok := r.strSessions[v.S]
		if !ok {
			id = int32(len(h.Sessions))
			h.Sessions = append(h.Sessions, v)
			r.strSessions[v.S] = id
		}
		return id
	}
	slot := dense(&r.denseSessions, v.N, len(h.Sessions))
	if slot != nil && *slot != 0 {
		return *slot - 1
	}
	id, ok := r.intSessions[v.N]
	if !ok {
		id = int32(len(h.Sessions))
		h.Sessions = append(h.Sessions, v)
		if slot == nil {
			r.intSessions[v.N] = id
		}
	}
	if slot != nil {
		*slot = id + 1
	}
	return id
}

func (r *Reader) status(t *history.Txn) error {
	s := &r.s
	switch s.ws() {
	case 'n':
		t.Status = history.Committed
		return s.literal("null")
	case '"':
	default:
		return s.wrongType("status", "must be a string")
	}
	b, err := s.str()
	if err != nil {
		return err
	}
	switch string(b) {
	case "committed":
		t.Status = history.Committed
	case "aborted":
		t.Status = history.Aborted
	case "unknown":
		t.Status = history.Unknown
	default:
		return s.errf("status", "unknown status "+strconv.Quote(string(b))+" (want committed, aborted or unknown)")
	}
	return nil
}

// instant scans a client instant: a non-negative integer, or null for not
// known.
func (r *Reader) instant() (int64, bool, error) {
	u, ok, err := r.unsigned("must be a non-negative integer of nanoseconds")
	if err != nil || !ok {
		return 0, false, err
	}
	if u > math.MaxInt64 {
		return 0, false, r.s.errf(r.s.where(), "must be a non-negative integer of nanoseconds: out of the 64-bit range")
	}
	return int64(u), true, nil
}

// timestamp scans a database timestamp: an unsigned integer, or null.
func (r *Reader) timestamp() (uint64, bool, error) {
	return r.unsigned("must be an unsigned integer")
}

// unsigned scans an unsigned 64-bit integer; ok is false for null.
func (r *Reader) unsigned(what string) (u uint64, ok bool, err error) {
	s := &r.s
	switch c := s.ws(); {
	case c == 'n':
		return 0, false, s.literal("null")
	case c == '-' || c-'0' <= 9:
		mag, neg, kind, err := s.number()
		switch {
		case err != nil:
			return 0, false, err
		case kind == numFloat:
			return 0, false, s.errf(s.where(), what+", not a non-integer number")
		case kind == numBig:
			return 0, false, s.errf(s.where(), what+": out of the 64-bit range")
		case neg && mag != 0:
			return 0, false, s.errf(s.where(), what+", not a negative number")
		}
		return mag, true, nil
	case c == 0:
		return 0, false, s.syntax("a value")
	}
	return 0, false, s.wrongType(s.where(), what)
}
