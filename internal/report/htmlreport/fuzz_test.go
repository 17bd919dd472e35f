package htmlreport

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"
)

// FuzzReadDocuments feeds `isoscope report` arbitrary result JSON: reading
// it, resolving each document against the history it names, and drawing
// the page and the DOT file must give a page or an error, never panic.
// The seeds are the catalogue's results, as check --json writes them.
func FuzzReadDocuments(f *testing.F) {
	names, secs := allCases(f)
	for _, name := range names {
		var b bytes.Buffer
		if err := json.NewEncoder(&b).Encode(secs[name].Doc); err != nil {
			f.Fatal(err)
		}
		f.Add(b.Bytes(), uint8(len(f.Name())))
	}
	f.Add([]byte(`{"level":"serializable","outcome":"violation","anomalies":[{"kind":"cycle","transactions":["init",1e999,-0],"cycle":[{"from":"x","to":{},"dep":"zz","key":[1]}]}]}`), uint8(0))
	f.Add([]byte(`{"level":"x","outcome":"y"}{"level":"x"}`), uint8(1))
	f.Fuzz(func(t *testing.T, raw []byte, pick uint8) {
		docs, err := ReadDocuments(bytes.NewReader(raw))
		if err != nil {
			if len(err.Error()) == 0 {
				t.Fatal("an empty error")
			}
			return
		}
		// Against a history of the catalogue, chosen by pick.
		s := secs[names[int(pick)%len(names)]]
		var out []Section
		for _, d := range docs {
			sec, err := FromDocument("fuzz", s.History, d)
			if err != nil {
				continue
			}
			out = append(out, sec)
		}
		if len(out) == 0 {
			return
		}
		if err := Write(io.Discard, out, Options{}); err != nil {
			t.Fatalf("Write: %v", err)
		}
		if err := WriteDOT(io.Discard, out, Options{}); err != nil {
			t.Fatalf("WriteDOT: %v", err)
		}
	})
}
