package format

import (
	"fmt"

	"github.com/isoscope/isoscope/internal/history"
)

// Writers refuse what their format cannot record when losing it could
// change a verdict: the helpers below return a *LossError naming the
// format and the first transaction (with its input line) that has it, or
// nil.

// LossError is a writer's refusal of something in the history that its
// format cannot record and that a checker may decide by. What names it
// ("instants", "timestamps" or "version-order"), so that a caller can
// offer to drop it knowingly.
type LossError struct {
	What string
	Msg  string
}

func (e *LossError) Error() string { return e.Msg }

// RefuseTimestamps refuses a history whose transactions carry the
// database's start or commit timestamps: the timestamp checkers (chronos,
// aion) decide by them, so dropping them can change a verdict.
func RefuseTimestamps(name string, h *history.History) error {
	for i := range h.Txns {
		if t := &h.Txns[i]; t.HasStartTS || t.HasCommitTS {
			return &LossError{"timestamps", fmt.Sprintf("%s: transaction %s%s carries the database's timestamps (start_ts/commit_ts), which %s cannot record; checkers decide by them",
				name, h.TxnName(history.TxnID(i)), lineOf(t), name)}
		}
	}
	return nil
}

// RefuseVersionOrder refuses a history with a white-box version order
// (the header's version_order): without it a checker must infer the order
// of writes and may accept what the known order refutes.
func RefuseVersionOrder(name string, h *history.History) error {
	for k := range h.Header.VersionOrder {
		return &LossError{"version-order", fmt.Sprintf("%s: the history has a white-box version order (of key %s and perhaps others), which %s cannot record; checkers decide by it",
			name, h.KeyName(k), name)}
	}
	return nil
}

// RefuseInstants refuses a history with begin and end instants: without
// them strict serializability, which needs them, can no longer be checked.
func RefuseInstants(name string, h *history.History) error {
	for i := range h.Txns {
		if t := &h.Txns[i]; t.HasTime {
			return &LossError{"instants", fmt.Sprintf("%s: transaction %s%s has begin and end instants (real time), which %s cannot record; strict serializability is checked by them",
				name, h.TxnName(history.TxnID(i)), lineOf(t), name)}
		}
	}
	return nil
}

// lineOf is " (line n)" for a transaction read from a file, "" otherwise.
func lineOf(t *history.Txn) string {
	if t.Line > 0 {
		return fmt.Sprintf(" (line %d)", t.Line)
	}
	return ""
}
