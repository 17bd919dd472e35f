package online

import (
	"context"
	"fmt"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/history"
)

// state is what the checker holds: the window of transactions not yet
// forgotten, as a history of its own (keys and sessions interned by
// name).
type state struct {
	cfg      Config
	win      *history.History
	sessions map[history.Value]int32
	findings []Finding
	arrived  uint64
	forgot   uint64
	rounds   uint64
	headerOK bool
}

func (s *state) init(cfg Config) {
	s.cfg = cfg
	s.win = history.New()
	s.sessions = map[history.Value]int32{}
}

// where names t for messages: its id and input line.
func where(t *history.Txn) string {
	s := "transaction " + t.ID.String()
	if t.Line > 0 {
		s += fmt.Sprintf(" (line %d)", t.Line)
	}
	return s
}

// validate says what makes t, of src, unfit: a session or key outside
// src's tables, an operation other than a read, write, append or list
// read.
func validate(src *history.History, t *history.Txn) error {
	if t.Session < 0 || int(t.Session) >= len(src.Sessions) {
		return fmt.Errorf("%s: session %d outside the history's session table", where(t), t.Session)
	}
	for j := range t.Ops {
		o := &t.Ops[j]
		switch o.Kind {
		case history.Read, history.Write, history.Append, history.ReadList:
		default:
			return fmt.Errorf("%s: ops[%d] is %s: online checking takes reads, writes, appends and list reads", where(t), j, o.Kind.Noun())
		}
		if o.Key < 0 || int(o.Key) >= len(src.Keys) {
			return fmt.Errorf("%s: ops[%d] key %d outside the history's key table", where(t), j, o.Key)
		}
	}
	return nil
}

func (s *state) add(src *history.History, batch []history.Txn) ([]Finding, error) {
	for i := range batch {
		if err := validate(src, &batch[i]); err != nil {
			return nil, err
		}
	}
	if !s.headerOK {
		s.headerOK = true
		s.win.Header.Present = true
		s.win.Header.Version = src.Header.Version
		s.win.Header.UniqueValues = src.Header.UniqueValues
	}
	for i := range batch {
		s.win.Txns = append(s.win.Txns, s.copyTxn(src, &batch[i]))
		s.arrived++
	}
	return nil, nil
}

// copyTxn returns t with its keys and session interned in the window.
func (s *state) copyTxn(src *history.History, t *history.Txn) history.Txn {
	out := *t
	label := src.Sessions[t.Session]
	id, ok := s.sessions[label]
	if !ok {
		id = int32(len(s.win.Sessions))
		s.win.Sessions = append(s.win.Sessions, label)
		s.sessions[label] = id
	}
	out.Session = id
	out.Ops = make([]history.Op, len(t.Ops))
	for j, o := range t.Ops {
		o.Key = s.win.Key(src.Keys[o.Key])
		if o.List != nil {
			o.List = append([]history.Value(nil), o.List...)
		}
		out.Ops[j] = o
	}
	return out
}

func (s *state) drain(ctx context.Context) (Result, error) {
	res, err := check.Run(ctx, s.win, s.cfg.Level, check.Options{})
	if err != nil {
		return Result{}, err
	}
	out := Result{Outcome: res.Outcome, Reason: res.Reason, Caveat: res.Caveat}
	out.Findings = append(out.Findings, s.findings...)
	for _, a := range res.Anomalies {
		out.Findings = append(out.Findings, Finding{Anomaly: a, History: s.win, Arrived: s.arrived})
	}
	out.Stats = s.stats()
	return out, nil
}

func (s *state) stats() Stats {
	st := Stats{Arrived: s.arrived, Held: uint64(len(s.win.Txns)), Forgotten: s.forgot, Rounds: s.rounds, Findings: len(s.findings)}
	if s.cfg.MemoryBytes > 0 {
		st.Warning = "this checker keeps every transaction: memory is not bounded"
	}
	return st
}
