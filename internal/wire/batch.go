package wire

import (
	"bytes"
	"errors"
	"io"

	"github.com/isoscope/isoscope/internal/check/aion"
	"github.com/isoscope/isoscope/internal/format/native"
	"github.com/isoscope/isoscope/internal/history"
)

// ParseBatch reads a batch of transactions (JSON Lines of the history
// format, an optional header first) and checks each with
// aion.CheckInput. Errors name the batch (name) and the line.
func ParseBatch(r io.Reader, name string) (*history.History, []history.Txn, error) {
	return parseBatch(r, name, 0, aion.CheckInput)
}

// InputCheck says what makes a transaction of a batch unfit for the
// checker that takes it, naming its id and line; nil when it is fit.
type InputCheck func(h *history.History, t *history.Txn) error

// ParseBatchFor is ParseBatch with the transactions held to check (the
// black-box checker takes transactions without timestamps).
func ParseBatchFor(r io.Reader, name string, check InputCheck) (*history.History, []history.Txn, error) {
	return parseBatch(r, name, 0, check)
}

// ParseLinesFor is ParseLines with the transactions held to check.
func ParseLinesFor(body []byte, name string, check InputCheck) (*history.History, []history.Txn, error) {
	return parseBatch(bytes.NewReader(body), name, bytes.Count(body, []byte{'\n'})+1, check)
}

// ParseLines is ParseBatch of a body in memory, with room made for its
// lines at once.
func ParseLines(body []byte, name string) (*history.History, []history.Txn, error) {
	return parseBatch(bytes.NewReader(body), name, bytes.Count(body, []byte{'\n'})+1, aion.CheckInput)
}

// parseBatch is ParseBatch with room for lines transactions made at once
// (a batch of thousands grows its slice a dozen times otherwise).
func parseBatch(r io.Reader, name string, lines int, check InputCheck) (*history.History, []history.Txn, error) {
	rd, err := native.NewReader(r, name)
	if err != nil {
		return nil, nil, err
	}
	txns := make([]history.Txn, 0, lines)
	for {
		t, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return rd.History(), txns, nil
		}
		if err != nil {
			return nil, nil, err
		}
		if err := check(rd.History(), t); err != nil {
			return nil, nil, err
		}
		txns = append(txns, *t)
	}
}
