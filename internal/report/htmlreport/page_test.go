package htmlreport

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/golden"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
	"github.com/isoscope/isoscope/internal/report"
)

func page(t testing.TB, o Options, secs ...Section) string {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, secs, o); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestEveryKindDraws: for every kind of the catalogue (and the predicate
// edges no checker reports yet) the page draws each cycle with its edge
// labels, highlights the operations of each edge on both sides, and draws
// the timeline with the anomaly's transactions marked. The structure is
// also kept as a golden skeleton per kind.
func TestEveryKindDraws(t *testing.T) {
	names, secs := allCases(t)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			s := secs[name]
			h := s.History
			p := page(t, Options{}, s)
			cycles := 0
			for i := range s.Anomalies {
				a := &s.Anomalies[i]
				if !strings.Contains(p, `<li class="anomaly" id="f0-a`) {
					t.Fatal("no anomaly in the list")
				}
				for _, t0 := range involved(h, a) {
					if !strings.Contains(p, `class="bar `+h.Txns[t0].Status.String()+` hl" id="f0-t`) {
						t.Errorf("%s not marked on the timeline", txnLabel(h, t0))
					}
				}
				if !a.IsCycle() {
					if !strings.Contains(p, `class="op hl bad"`) {
						t.Errorf("%s: no operation at issue highlighted", a.Kind)
					}
					continue
				}
				cycles++
				for _, st := range a.Cycle {
					lbl := edgeLabel(h, st)
					if !strings.Contains(p, `<g class="edge dep-`+st.Dep.String()+`">`) || !strings.Contains(p, `>`+lbl+`</text>`) {
						t.Errorf("edge %s not drawn", lbl)
					}
					cls := `<span class="tag dep-` + st.Dep.String() + `">`
					out := cls + lbl + " → " + txnLabel(h, st.To) + "</span>"
					in := cls + lbl + " ← " + txnLabel(h, st.From) + "</span>"
					if !strings.Contains(p, out) || !strings.Contains(p, in) {
						t.Errorf("edge %s: highlights missing on one side (want %q and %q)", lbl, out, in)
					}
					if st.Key != history.NoKey && !strings.Contains(p, `class="op hl dep-`+st.Dep.String()+`"`) {
						t.Errorf("edge %s: no operation highlighted", lbl)
					}
				}
			}
			if got := strings.Count(p, `<svg class="cycle"`); got != cycles {
				t.Errorf("%d cycle pictures for %d cycles", got, cycles)
			}
			if got := strings.Count(p, `<svg class="timeline"`); got != 1 {
				t.Errorf("%d timelines, want 1", got)
			}
			if got := strings.Count(p, `<rect class="bar `); got != len(h.Txns) {
				t.Errorf("%d bars for %d transactions", got, len(h.Txns))
			}
			golden.Check(t, "testdata/page/"+name+".txt", []byte(skeleton(p)))
		})
	}
}

// TestPageGolden keeps one whole page byte for byte: the lost update.
func TestPageGolden(t *testing.T) {
	s := checkedSection(t, "init: x=0 | s1: @1-4: r x 0 w x 1 | s2: @2-5: r x 0 w x 2 | s1: @6-7: r x 2", level.SnapshotIsolation)
	golden.Check(t, "testdata/lost-update.html", []byte(page(t, Options{ResultHref: "result.json", DotHref: "cycles.dot"}, s)))
}

var external = regexp.MustCompile(`(?i)<script|<link|<img|<iframe|<object|<embed|\bsrc=|url\(|@import|https?://`)

// TestSelfContained: no page refers to anything outside itself (the SVG
// namespace is a name, not a fetch).
func TestSelfContained(t *testing.T) {
	names, secs := allCases(t)
	for _, name := range names {
		p := strings.ReplaceAll(page(t, Options{}, secs[name]), `xmlns="http://www.w3.org/2000/svg"`, "")
		if m := external.FindString(p); m != "" {
			t.Errorf("%s: page refers outside itself: %q", name, m)
		}
	}
}

// TestEscaping: keys and ids are text, never markup.
func TestEscaping(t *testing.T) {
	s := checkedSection(t, `init: <script>=0 | t<img>: r <script> 0 w <script> 1 | t"&': r <script> 0 w <script> 2`, level.Serializable)
	if len(s.Anomalies) == 0 {
		t.Fatal("no anomaly")
	}
	p := page(t, Options{}, s)
	for _, bad := range []string{"<script>", "<img>", `"&'`} {
		if strings.Contains(p, bad) {
			t.Errorf("page holds %q unescaped", bad)
		}
	}
	if !strings.Contains(p, "&lt;script&gt;") || !strings.Contains(p, "&lt;img&gt;") {
		t.Error("escaped names missing")
	}
	var b bytes.Buffer
	if err := WriteDOT(&b, []Section{s}, Options{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"a0_t1" [label="\"\\\"&'\""]`) {
		t.Errorf("DOT does not quote the id:\n%s", b.String())
	}
}

// TestPerKind: of thousands of anomalies of a kind, the page shows the
// first few and says how many more there are.
func TestPerKind(t *testing.T) {
	var b strings.Builder
	b.WriteString("init: x=0")
	for i := range 40 {
		b.WriteString(" | r x " + strings.Repeat("9", i+1))
	}
	s := checkedSection(t, b.String(), level.Serializable)
	if len(s.Anomalies) != 40 {
		t.Fatalf("%d anomalies", len(s.Anomalies))
	}
	p := page(t, Options{PerKind: 5}, s)
	if got := strings.Count(p, `<li class="anomaly"`); got != 5 {
		t.Errorf("%d anomalies shown, want 5", got)
	}
	for _, want := range []string{"… and 35 more thin-air-read anomalies", ">40</span>", "VIOLATED: 40 anomalies"} {
		if !strings.Contains(p, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// TestSections: several histories make one page with a section each and
// a table of contents; anchors do not collide.
func TestSections(t *testing.T) {
	a := checkedSection(t, "init: x=0 | r x 0 w x 1 | r x 0 w x 2", level.Serializable)
	b := checkedSection(t, "init: x=0 | r x 0 w x 1 | r x 1", level.Serializable)
	b.File = "other.jsonl"
	p := page(t, Options{}, a, b)
	for _, want := range []string{`<nav class="toc">`, `<section class="history" id="f0">`, `<section class="history" id="f1">`,
		`<div class="banner violation">`, `<div class="banner satisfied">`, "serializable holds", "other.jsonl"} {
		if !strings.Contains(p, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	ids := regexp.MustCompile(`\bid="([^"]+)"`).FindAllStringSubmatch(p, -1)
	seen := map[string]bool{}
	for _, m := range ids {
		if seen[m[1]] {
			t.Errorf("id %q twice", m[1])
		}
		seen[m[1]] = true
	}
	for _, m := range regexp.MustCompile(`href="#([^"]+)"`).FindAllStringSubmatch(p, -1) {
		if !seen[m[1]] {
			t.Errorf("link to missing anchor #%s", m[1])
		}
	}
}

// TestLongTransaction: a transaction with many operations shows the
// highlighted ones with context and counts the rest.
func TestLongTransaction(t *testing.T) {
	var b strings.Builder
	b.WriteString("init: x=0 | r x 0")
	for i := range 100 {
		b.WriteString(" r k" + strings.Repeat("z", i%7) + " _")
	}
	b.WriteString(" w x 1 | r x 0 w x 2")
	s := checkedSection(t, b.String(), level.Serializable)
	if len(s.Anomalies) != 1 || s.Anomalies[0].Kind != anomaly.LostUpdate {
		t.Fatalf("anomalies: %+v", s.Anomalies)
	}
	p := page(t, Options{}, s)
	if !strings.Contains(p, `<span class="gap">… 97 more …</span>`) {
		t.Errorf("no elision:\n%s", p[strings.Index(p, `class="ops"`):][:600])
	}
	if strings.Count(p, `class="op hl dep-rw"`) != 4 {
		t.Errorf("highlights: %d", strings.Count(p, `class="op hl dep-rw"`))
	}
}

// TestCatalogueArtifact writes one page with every kind of the catalogue
// to $ISOSCOPE_ARTIFACTS/catalogue.html, for people to look at.
func TestCatalogueArtifact(t *testing.T) {
	dir := os.Getenv("ISOSCOPE_ARTIFACTS")
	if dir == "" {
		t.Skip("set ISOSCOPE_ARTIFACTS to a directory to get catalogue.html")
	}
	names, secs := allCases(t)
	var all []Section
	for _, n := range names {
		s := secs[n]
		s.File = n
		all = append(all, s)
	}
	path := filepath.Join(dir, "catalogue.html")
	if err := os.WriteFile(path, []byte(page(t, Options{Title: "isoscope: the catalogue"}, all...)), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", path)
}

// TestUnknownVerdict: an undecided check shows an amber banner with its
// reason.
func TestUnknownVerdict(t *testing.T) {
	h := history.MustParse("init: x=0 | r x 0 w x 1")
	res := check.Result{Level: level.Get(level.Serializable), Outcome: check.Undecided, Checker: "sat", Stats: h.Stats(), Reason: "timed out before a verdict", Caveat: "may miss some cycles"}
	p := page(t, Options{}, FromChecked(&report.Checked{File: "h", History: h, Result: res}))
	for _, want := range []string{`<div class="banner unknown">`, "serializable UNKNOWN", "timed out before a verdict", "note: may miss some cycles"} {
		if !strings.Contains(p, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(p, "Anomalies</h2>") {
		t.Error("anomaly section without anomalies")
	}
}

// TestBestFoundShown: a cycle the solver met under a choice of the
// uncertain dependencies says so in plain words, lists the edges every
// choice has apart from those it chose, and shows the core's
// transactions, those off the cycle marked.
func TestBestFoundShown(t *testing.T) {
	s := checkedSection(t, "init: x=0 y=0 | s1: r x 1 r y 0 | s2: w x 1 w y 1 | s3: w x 1 w y 2 | s4: r y 2 w x 2", level.Serializable)
	if len(s.Anomalies) != 1 || !s.Anomalies[0].BestFound || len(s.Anomalies[0].Core) != 3 {
		t.Fatalf("anomalies: %+v", s.Anomalies)
	}
	p := page(t, Options{}, s)
	for _, want := range []string{`<p class="note best">The history leaves some dependencies open`, "Every choice has these edges",
		`<ul class="edges chosen"><li><code class="edge-name dep-wr">T3 --wr(x)--&gt; T1</code> T3 wrote x=1, which T1 read (as did T2: the solver chose T3&#39;s write)</li></ul>`,
		`<span class="tag core">in the core</span>`, "these 3 transactions alone violate the level"} {
		if !strings.Contains(p, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}
