package htmlreport

import (
	"bytes"
	"encoding/xml"
	"io"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/golden"
	"github.com/isoscope/isoscope/internal/history"
)

// wellFormed reports whether b is well-formed XML.
func wellFormed(b []byte) error {
	d := xml.NewDecoder(bytes.NewReader(b))
	for {
		_, err := d.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// TestPictures: every anomaly of the catalogue has a picture named by its
// kind and number, a standalone SVG (well-formed, with its title, and for
// a cycle every edge's label and evidence) and a DOT file; the page links
// both. The lost update's picture is kept as a golden file.
func TestPictures(t *testing.T) {
	names, secs := allCases(t)
	for _, name := range names {
		s := secs[name]
		pics := Pictures([]Section{s}, Options{})
		if len(pics) != len(s.Anomalies) {
			t.Fatalf("%s: %d pictures for %d anomalies", name, len(pics), len(s.Anomalies))
		}
		p := page(t, Options{Pictures: true}, s)
		for _, pic := range pics {
			if !strings.HasSuffix(pic.Name, "-1") {
				t.Errorf("%s: picture %s is not the first of its kind", name, pic.Name)
			}
			kind := strings.TrimSuffix(pic.Name, "-1")
			if _, ok := anomaly.ParseKind(kind); !ok {
				t.Errorf("%s: picture %s is not named by a kind", name, pic.Name)
			}
			if err := wellFormed(pic.SVG); err != nil {
				t.Errorf("%s: %s.svg is not well-formed: %v", name, pic.Name, err)
			}
			if !bytes.Contains(pic.SVG, []byte("<title>"+kind+" #1")) || !bytes.Contains(pic.DOT, []byte("digraph isoscope {")) {
				t.Errorf("%s: %s has no title or no digraph", name, pic.Name)
			}
			for _, f := range []string{pic.Name + ".svg", pic.Name + ".dot"} {
				if !strings.Contains(p, `href="`+f+`"`) {
					t.Errorf("%s: the page does not link %s", name, f)
				}
			}
		}
		for i := range s.Anomalies {
			a := &s.Anomalies[i]
			for _, st := range a.Cycle {
				if lbl := edgeLabel(s.History, st); !bytes.Contains(pics[0].SVG, []byte(">"+lbl+"</text>")) || !bytes.Contains(pics[0].DOT, []byte(`label="`+lbl+`"`)) {
					t.Errorf("%s: edge %s not drawn in the picture", name, lbl)
				}
			}
			if a.IsCycle() && !bytes.Contains(pics[0].SVG, []byte(" --"+a.Cycle[0].Dep.String())) {
				t.Errorf("%s: the picture does not give the edges' evidence", name)
			}
		}
	}
	lu := Pictures([]Section{secs["lost-update"]}, Options{})
	golden.Check(t, "testdata/lost-update-1.svg", lu[0].SVG)
	golden.Check(t, "testdata/lost-update-1.dot", lu[0].DOT)
	// Several histories: the names say which.
	two := Pictures([]Section{secs["lost-update"], secs["write-skew"]}, Options{})
	if len(two) != 2 || two[0].Name != "h1-lost-update-1" || two[1].Name != "h2-write-skew-1" {
		t.Errorf("names of two sections' pictures: %v, %v", two[0].Name, two[1].Name)
	}
}

// TestFindingBoxesShowTimestamps: the picture of a finding that is not a
// cycle gives each transaction's start_ts and commit_ts, which the
// timestamp checkers' explanations cite (a stale read: the reader's
// snapshot and the commit of the version it missed), and only those the
// transaction has.
func TestFindingBoxesShowTimestamps(t *testing.T) {
	h := history.MustParse("s0: ts=10-20: w x 1 | s1: ts=30-40: r x _ | s2: w y 1")
	a := anomaly.Anomaly{Kind: anomaly.StaleRead, Txns: []history.TxnID{1, 0}, Key: h.Txns[0].Ops[0].Key,
		Ops: []history.OpRef{{Txn: 1, Op: 0}}}
	svg := string(AnomalySVG(h, &a, "", "", nil))
	if err := wellFormed([]byte(svg)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{">start_ts 30 commit_ts 40<", ">start_ts 10 commit_ts 20<", ">▶ r x _<"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the picture lacks %q:\n%s", want, svg)
		}
	}
	b := anomaly.Anomaly{Kind: anomaly.AbortedRead, Txns: []history.TxnID{2}, Ops: []history.OpRef{{Txn: 2, Op: 0}}}
	if svg := string(AnomalySVG(h, &b, "", "", nil)); strings.Contains(svg, "_ts") {
		t.Errorf("timestamps for a transaction without them:\n%s", svg)
	}
}
