package native

import (
	"bytes"
	"compress/gzip"
	"errors"
	"testing"

	"github.com/isoscope/isoscope/internal/format"
)

// FuzzRead checks that Read never panics, that every error it returns for
// in-memory input is a *format.Error, and that whatever it accepts
// round-trips through Write and Read to an equal history and the same text.
func FuzzRead(f *testing.F) {
	for _, c := range goodCases {
		f.Add([]byte(c.in))
	}
	for _, c := range badCases {
		f.Add([]byte(c.in))
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(goodCases[0].in))
	zw.Close()
	f.Add(gz.Bytes())
	f.Fuzz(func(t *testing.T, in []byte) {
		h, err := Read(bytes.NewReader(in), "fuzz")
		if err != nil {
			var fe *format.Error
			if !errors.As(err, &fe) {
				t.Fatalf("error %v (%T) is not a *format.Error", err, err)
			}
			return
		}
		again, text, err := roundTrip(h)
		if err != nil {
			t.Fatalf("round trip: %v\n%s", err, text)
		}
		if d := diff(h, again); d != "" {
			t.Fatalf("round trip: %s\n%s", d, text)
		}
		if _, text2, err := roundTrip(again); err != nil || !bytes.Equal(text, text2) {
			t.Fatalf("Write is not stable (%v):\n%s\n%s", err, text, text2)
		}
	})
}
