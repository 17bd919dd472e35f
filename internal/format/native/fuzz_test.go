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

// FuzzReadChunks reads arbitrary input with the parallel chunk reader cut
// into tiny chunks (1 to 64 bytes) on one to three workers, with and
// without AllowTorn, and checks that it reads the same history (and the
// same torn line), or fails with the same error, as the streaming reader
// reading one line at a time.
func FuzzReadChunks(f *testing.F) {
	for i, c := range goodCases {
		f.Add([]byte(c.in), uint8(i), uint8(i), i%2 == 0)
	}
	for i, c := range badCases {
		f.Add([]byte(c.in), uint8(i), uint8(i), i%2 == 1)
	}
	f.Add([]byte("{\"id\":1,\"session\":0,\"ops\":[[\"w\",\"x\",1]]}\n\n\n{\"id\":2,\"session\":0,\"ops\":[[\"r\",\"x\""), uint8(3), uint8(1), true)
	f.Fuzz(func(t *testing.T, in []byte, chunk, workers uint8, torn bool) {
		opts := Options{ChunkSize: 1 + int(chunk)%64, Workers: 1 + int(workers)%3, AllowTorn: torn}
		got, gerr := ReadWith(bytes.NewReader(in), "fuzz", opts)
		want, wtorn, werr := streamReadWith(in, "fuzz", Options{AllowTorn: torn})
		if (gerr != nil) != (werr != nil) || gerr != nil && gerr.Error() != werr.Error() {
			t.Fatalf("chunks of %d on %d workers: error %v, one line at a time: %v", opts.ChunkSize, opts.Workers, gerr, werr)
		}
		if gerr != nil {
			return
		}
		if d := diff(got.History, want); d != "" {
			t.Fatalf("chunks of %d on %d workers: %s", opts.ChunkSize, opts.Workers, d)
		}
		if (got.Torn == nil) != (wtorn == nil) || got.Torn != nil && got.Torn.Error() != wtorn.Error() {
			t.Fatalf("chunks of %d on %d workers: torn %v, one line at a time: %v", opts.ChunkSize, opts.Workers, got.Torn, wtorn)
		}
	})
}
