package serve_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/check/aion"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/wire"
)

// FuzzParseBatch feeds the online service's batch parser arbitrary bytes:
// it must never panic; an error names where (the batch or the line); a
// batch it takes passes aion's input checks transaction by transaction
// and has every committed transaction's timestamps.
func FuzzParseBatch(f *testing.F) {
	f.Add([]byte(`{"id":1,"session":0,"start_ts":1,"commit_ts":2,"ops":[["w","x",1]]}` + "\n" +
		`{"id":2,"session":1,"start_ts":3,"commit_ts":4,"ops":[["r","x",1],["append","l",5],["r","l",[5]]]}` + "\n"))
	f.Add([]byte(`{"format":"isoscope-history","version":1,"initial":{"x":0}}` + "\n" +
		`{"id":"a","session":"s","status":"aborted","ops":[["w","x",1]]}` + "\n" +
		`{"id":3,"session":0,"start_ts":1,"commit_ts":2,"ops":[["scan",1,5,[]]]}` + "\n"))
	f.Add([]byte(`{"id":1152921504606846977,"session":0,"start_ts":1,"commit_ts":2,"ops":[]}`))
	f.Add([]byte(`{"id":1,"session":0,"ops":[["d","x"]]}` + "\n"))
	f.Add([]byte("\x1f\x8b\x08\x00"))
	f.Fuzz(func(t *testing.T, in []byte) {
		h, txns, err := wire.ParseBatch(bytes.NewReader(in), "batch 7")
		if err != nil {
			if msg := err.Error(); !strings.Contains(msg, "batch 7") && !strings.Contains(msg, "line ") {
				t.Fatalf("error %q names neither the batch nor a line", msg)
			}
			return
		}
		for i := range txns {
			tx := &txns[i]
			if err := aion.CheckInput(h, tx); err != nil {
				t.Fatalf("a taken transaction fails the input checks: %v", err)
			}
			if tx.Status == history.Committed && (!tx.HasStartTS || !tx.HasCommitTS) {
				t.Fatalf("committed transaction %v taken without its timestamps", tx.ID)
			}
		}
	})
}
