package htmlreport

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"

	"github.com/isoscope/isoscope/internal/report"
)

// FuzzReadDocuments feeds `isoscope report` arbitrary result JSON: reading
// it (report.ReadDocuments), resolving each document against a history
// (report.Resolve), and drawing the page and the DOT file of the result
// (FromChecked) must give a page or an error, never panic.
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
	f.Add([]byte(`{"level":"serializable","outcome":"violation","anomalies":[{"kind":"thin-air-read","transactions":[1],"key":"x","value":5,"ops":[{"transaction":1,"index":0},{"transaction":"init","index":-1}]}]}`), uint8(0))
	f.Add([]byte(`{"level":"serializable","outcome":"error","error":"x"}`), uint8(2))
	f.Fuzz(func(t *testing.T, raw []byte, pick uint8) {
		docs, err := report.ReadDocuments(bytes.NewReader(raw))
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
			c, err := report.Resolve("fuzz", s.History, d)
			if err != nil {
				continue
			}
			out = append(out, FromChecked(c))
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
