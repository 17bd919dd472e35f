package serve

import (
	"errors"
	"net/http"
	"strings"

	"github.com/isoscope/isoscope/internal/check/aion"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/wire"
)

// engine is the checker the loop's goroutine owns: Aion by timestamps
// (aionEngine), or the online black-box checker (blackBox). Its findings
// come as aion.Violation values: an anomaly over a small history of the
// checker's encoded values, and when it became final.
type engine interface {
	// add takes txns of src, a batch of stream st whose values are
	// encoded already, or refuses it whole: a *wire.Refusal.
	add(st *stream, src *history.History, txns []history.Txn) error
	// advance reads the clock and makes final what its passing settles.
	advance() error
	// take returns the violations that became final since the last call.
	take() []aion.Violation
	// finish ends the stream at shutdown: the findings that became
	// final with its end, and those still pending (reported as such).
	finish() (final, pending []aion.Violation, err error)
	// stats counts what the checker holds and did, in Aion's terms
	// (Checked, Skipped, Pending, Memory, InMemory, …).
	stats() aion.Stats
	// blackBox returns the black-box checker's own state, nil for Aion.
	blackBox() *BlackBoxState
}

// aionEngine is the Aion checker as the loop's engine.
type aionEngine struct{ c *aion.Checker }

func (e aionEngine) add(_ *stream, src *history.History, txns []history.Txn) error {
	err := e.c.Add(src, txns)
	var bad *aion.InputError
	if errors.As(err, &bad) {
		// The message names the transaction and the key as sent:
		// decoded from the checker's values (encode's inverse).
		t := &txns[bad.Index]
		_, id := decode(t.ID)
		msg := strings.Replace(bad.Error(), "transaction "+t.ID.String(), "transaction "+id.String(), 1)
		for _, o := range t.Ops {
			if o.Key >= 0 && int(o.Key) < len(src.Keys) {
				_, key := decode(src.Keys[o.Key])
				msg = strings.Replace(msg, "key "+src.Keys[o.Key].String()+",", "key "+key.String()+",", 1)
			}
		}
		return &wire.Refusal{Reason: wire.ReasonBadInput, Status: http.StatusBadRequest, Txns: len(txns), Err: errors.New(msg)} // msg names the line
	}
	return err
}

func (e aionEngine) advance() error         { return e.c.Advance() }
func (e aionEngine) take() []aion.Violation { return e.c.Take() }
func (e aionEngine) stats() aion.Stats      { return e.c.Stats() }
func (e aionEngine) blackBox() *BlackBoxState {
	return nil
}

func (e aionEngine) finish() (final, pending []aion.Violation, err error) {
	return nil, e.c.Pending(), nil
}
