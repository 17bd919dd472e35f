package isoscope

import (
	"bytes"
	"errors"
	"testing"

	"github.com/isoscope/isoscope/internal/format"
	"github.com/isoscope/isoscope/internal/format/registry"
)

// TestRecorderTornLine: a program that dies while writing a transaction's
// line leaves a torn last line, which `check`'s reader leaves out with a
// warning; every transaction that ended before it reads back.
func TestRecorderTornLine(t *testing.T) {
	var out bytes.Buffer
	rec, err := NewRecorder(RecorderOptions{Stream: &out})
	if err != nil {
		t.Fatal(err)
	}
	for i := range int64(3) {
		tx := rec.Begin(Int(1))
		tx.Write(Str("x"), Int(i))
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	torn := out.Bytes()[:out.Len()-10] // the last line cut short
	o, err := registry.Read(bytes.NewReader(torn), "torn", "auto", registry.Options{AllowTorn: true})
	if err != nil {
		t.Fatal(err)
	}
	var warning *format.Torn
	if len(o.Warnings) != 1 || !errors.As(o.Warnings[0], &warning) {
		t.Fatalf("warnings %v, want the torn line's", o.Warnings)
	}
	if n := len(o.History.Txns); n != 2 {
		t.Fatalf("%d transactions before the torn line, want 2", n)
	}
}
