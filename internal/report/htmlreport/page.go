package htmlreport

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/evidence"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/report"
	"github.com/isoscope/isoscope/internal/textfmt"
)

// Section is one history's part of a report: the history, its result as
// the JSON document of the CLI contract (verdict, statistics,
// explanations), and the anomalies of that document resolved against the
// history, in the same order.
type Section struct {
	File    string
	History *history.History
	Doc     *report.Document
	// Anomalies parallel Doc.Anomalies.
	Anomalies []anomaly.Anomaly
	// Evidence parallels Anomalies: the evidence of each edge of a
	// cycle's (report.Checked.Evidence), nil for other anomalies.
	Evidence [][]evidence.Edge
}

// FromChecked returns the section of a checked history: one just checked,
// or one of a saved JSON result resolved against its history
// (report.ReadDocuments, report.Resolve). A history that could not be
// checked (Checked.Err) has its error document and no anomalies.
func FromChecked(c *report.Checked) Section {
	d := report.NewDocument(c)
	if c.Err != nil {
		d = report.ErrorDocument(c)
	}
	sec := Section{File: c.File, History: c.History, Doc: d, Anomalies: c.Result.Anomalies}
	if c.Err == nil {
		sec.Evidence = make([][]evidence.Edge, len(sec.Anomalies))
		for i := range sec.Anomalies {
			sec.Evidence[i] = c.Evidence(i)
		}
	}
	return sec
}

// evidenceOf returns the evidence of anomaly i's edges (nil when there is
// none).
func (s *Section) evidenceOf(i int) []evidence.Edge {
	if i < len(s.Evidence) {
		return s.Evidence[i]
	}
	return nil
}

// Options tune the page. The zero value gives the defaults.
type Options struct {
	// PerKind is how many anomalies of each kind the page shows (0: 25;
	// a negative number: all).
	PerKind int
	// CountsOnly shows each kind's count and none of its anomalies,
	// whatever PerKind says.
	CountsOnly bool
	// Neighbours is how many transactions before and after each of an
	// anomaly's transactions, in its session, the timeline draws (0: 50).
	Neighbours int
	// WholeTimeline is the size up to which a history's timeline shows
	// every transaction (0: 200).
	WholeTimeline int
	// MaxBars bounds the bars of a section's timelines (0: 10000).
	MaxBars int
	// Title is the page's title (default "isoscope report").
	Title string
	// ResultHref and DotHref link the machine-readable result and the
	// Graphviz file from the page when set.
	ResultHref, DotHref string
	// Run, when set, is the workload run the histories come from; the
	// page shows it after the histories' verdicts and anomalies, with its
	// plots.
	Run *Run
	// Pictures says each shown anomaly's picture is a file beside the
	// page (Pictures: NAME.svg and NAME.dot), which the page links.
	Pictures bool
	// multi says the page has several sections (set by Write).
	multi bool
}

// The defaults of Options.
const (
	DefaultPerKind       = 25
	DefaultNeighbours    = 50
	DefaultWholeTimeline = 200
	DefaultMaxBars       = 10000
)

func (o Options) withDefaults() Options {
	switch {
	case o.CountsOnly:
		o.PerKind = 0
	case o.PerKind == 0:
		o.PerKind = DefaultPerKind
	case o.PerKind < 0:
		o.PerKind = math.MaxInt
	}
	if o.Neighbours <= 0 {
		o.Neighbours = DefaultNeighbours
	}
	if o.WholeTimeline <= 0 {
		o.WholeTimeline = DefaultWholeTimeline
	}
	if o.MaxBars <= 0 {
		o.MaxBars = DefaultMaxBars
	}
	if o.Title == "" {
		o.Title = "isoscope report"
	}
	return o
}

// Write renders a self-contained HTML page for the sections: styles
// inline, pictures as inline SVG, no scripts and nothing fetched.
func Write(w io.Writer, secs []Section, o Options) error {
	o = o.withDefaults()
	p := pageView{Title: o.Title, Legend: LegendSVG(), ResultHref: o.ResultHref, DotHref: o.DotHref, Multi: len(secs) > 1}
	var err error
	if p.Run, err = buildRun(o.Run); err != nil {
		return err
	}
	o.multi = len(secs) > 1
	for i := range secs {
		sv, err := buildSection(&secs[i], i, &o)
		if err != nil {
			return err
		}
		p.Sections = append(p.Sections, sv)
	}
	return pageTemplate.Execute(w, p)
}

type pageView struct {
	Title               string
	Legend              template.HTML
	ResultHref, DotHref string
	Multi               bool
	Run                 *runView
	Sections            []sectionView
}

type sectionView struct {
	ID, File                string
	Verdict, Outcome        string
	Level, Checker, Elapsed string
	Holds                   []string
	Caveat, Reason          string
	Stats                   []statView
	Kinds                   []kindView
	Timelines               []timelineView
	NoTimeline              int
}

type statView struct{ Label, Value string }

type kindView struct {
	ID, Name, Phenomenon string
	Count, More          int
	Shown                []anomalyView
}

type anomalyView struct {
	ID, Title, Kind, Phenomenon string
	Explanation, Chain          string
	BestFound                   bool
	// Core is the note on the counterexample search's transactions.
	Core  string
	Cycle template.HTML
	// Edges are the evidence of the cycle's edges; for a best-found
	// cycle, Forced those every choice has and Chosen the solver's, with
	// BestNote saying what that means.
	Edges, Forced, Chosen []edgeView
	BestNote              string
	Txns                  []txnView
	TimelineHref          string
	// PictureSVG and PictureDOT link the anomaly's picture files.
	PictureSVG, PictureDOT string
}

// edgeView is one edge's evidence: the edge as a chain and the sentence.
type edgeView struct {
	Chain, Dep, Text string
}

type txnView struct {
	ID, Name, Href        string
	Session, Status, When string
	// Timestamps are the database's start_ts and commit_ts.
	Timestamps string
	Init       bool
	Tags       []tag
	Ops        []opView
}

type opView struct {
	Text, Class string
	Tags        []tag
	Gap         int // > 0: this many operations elided here
}

type timelineView struct {
	ID, Title string
	Links     []linkView
	SVG       template.HTML
	Timed     bool
}

type linkView struct{ Href, Text string }

func buildSection(s *Section, secIndex int, o *Options) (sectionView, error) {
	id := "f" + strconv.Itoa(secIndex)
	h, d := s.History, s.Doc
	if len(s.Anomalies) != len(d.Anomalies) {
		return sectionView{}, fmt.Errorf("htmlreport: %s: %d anomalies for %d findings", s.File, len(s.Anomalies), len(d.Anomalies))
	}
	sv := sectionView{
		ID: id, File: s.File, Outcome: d.Outcome, Level: d.Level, Checker: d.Checker,
		Holds: d.Holds, Caveat: d.Caveat, Reason: d.Reason,
		Elapsed: strconv.FormatFloat(d.ElapsedMS, 'f', 1, 64) + " ms",
	}
	switch d.Outcome {
	case "satisfied":
		sv.Verdict = d.Level + " holds"
	case "violation":
		sv.Verdict = fmt.Sprintf("%s VIOLATED: %s %s", d.Level, textfmt.Thousands(len(d.Anomalies)), plural(len(d.Anomalies), "anomaly", "anomalies"))
	default:
		sv.Verdict = d.Level + " UNKNOWN"
	}
	st := d.History
	sv.Stats = []statView{
		{"transactions", textfmt.Thousands(st.Transactions)}, {"committed", textfmt.Thousands(st.Committed)},
		{"aborted", textfmt.Thousands(st.Aborted)}, {"unknown", textfmt.Thousands(st.Unknown)},
		{"sessions", textfmt.Thousands(st.Sessions)}, {"operations", textfmt.Thousands(st.Operations)}, {"keys", textfmt.Thousands(st.Keys)},
	}
	groups := report.Group(s.Anomalies)
	var shown []int
	number := map[int]int{} // a shown anomaly's number in its kind
	for _, g := range groups {
		for n, i := range g.Indices[:min(len(g.Indices), o.PerKind)] {
			shown = append(shown, i)
			number[i] = n + 1
		}
	}
	slices.Sort(shown)
	anchor := func(i int) string { return id + "-a" + strconv.Itoa(i) }
	barID := func(t history.TxnID) string { return id + "-t" + strconv.Itoa(int(t)) }

	// Timelines first: the anomaly list links to their bars.
	windows, left := planTimelines(h, s.Anomalies, shown, o)
	sv.NoTimeline = len(left)
	inWindow := map[int]string{}
	drawn := map[history.TxnID]bool{}
	for n, w := range windows {
		tv := timelineView{ID: id + "-w" + strconv.Itoa(n)}
		marks := timelineMarks{first: w.lanes, href: map[history.TxnID]string{}, barID: barID}
		for _, i := range w.anomalies {
			inWindow[i] = tv.ID
			for _, t := range involved(h, &s.Anomalies[i]) {
				if _, ok := marks.href[t]; !ok {
					marks.href[t] = "#" + anchor(i)
				}
				drawn[t] = true
			}
			tv.Links = append(tv.Links, linkView{"#" + anchor(i), fmt.Sprintf("%s #%d", s.Anomalies[i].Kind, number[i])})
		}
		tv.Title = fmt.Sprintf("%s %s around", textfmt.Thousands(len(w.txns)), plural(len(w.txns), "transaction", "transactions"))
		if w.whole {
			tv.Title = fmt.Sprintf("The whole history: %s %s", textfmt.Thousands(len(w.txns)), plural(len(w.txns), "transaction", "transactions"))
		}
		tv.SVG, tv.Timed = timelineSVG(h, w.txns, marks)
		sv.Timelines = append(sv.Timelines, tv)
	}
	link := func(t history.TxnID) string {
		if drawn[t] {
			return "#" + barID(t)
		}
		return ""
	}
	for _, g := range groups {
		a0 := &s.Anomalies[g.Indices[0]]
		kv := kindView{ID: id + "-k-" + g.Kind.String(), Name: g.Kind.String(), Phenomenon: a0.Phenomenon.String(), Count: len(g.Indices)}
		for n, i := range g.Indices {
			if n == o.PerKind {
				kv.More = len(g.Indices) - n
				break
			}
			a := &s.Anomalies[i]
			av := anomalyView{
				ID: anchor(i), Title: fmt.Sprintf("%s #%d", g.Kind, n+1), Kind: g.Kind.String(), Phenomenon: a.Phenomenon.String(),
				Explanation: d.Anomalies[i].Explanation, BestFound: a.BestFound,
			}
			if len(a.Core) > 0 {
				av.Core = report.CoreNote(h, a)
			}
			es := s.evidenceOf(i)
			if a.IsCycle() {
				av.Chain = report.Chain(h, a.Cycle)
				av.Cycle = CycleSVG(h, a.Cycle, link)
				for j := range es {
					ev := edgeView{Chain: report.Chain(h, []anomaly.Step{es[j].Step}), Dep: es[j].Dep.String(), Text: report.EdgeText(h, &es[j])}
					switch {
					case !a.BestFound:
						av.Edges = append(av.Edges, ev)
					case es[j].Basis == evidence.Chosen:
						av.Chosen = append(av.Chosen, ev)
					default:
						av.Forced = append(av.Forced, ev)
					}
				}
				if a.BestFound && len(es) > 0 {
					av.BestNote = report.BestFoundNote(es)
				}
			}
			if w, ok := inWindow[i]; ok {
				av.TimelineHref = "#" + w
			}
			if o.Pictures {
				name := PictureName(secIndex, o.multi, g.Kind, n+1)
				av.PictureSVG, av.PictureDOT = name+".svg", name+".dot"
			}
			av.Txns = txnViews(h, a, es, anchor(i), link)
			kv.Shown = append(kv.Shown, av)
		}
		sv.Kinds = append(sv.Kinds, kv)
	}
	return sv, nil
}

// maxOps is how many operations a transaction shows in full; longer ones
// show their highlighted operations with a little context.
const maxOps = 30

// txnViews lists an anomaly's transactions with their operations, the
// ones that make its edges highlighted.
func txnViews(h *history.History, a *anomaly.Anomaly, es []evidence.Edge, id string, link func(history.TxnID) string) []txnView {
	hl := highlight(h, a, es)
	var order []history.TxnID
	if len(hl.init) > 0 {
		order = append(order, history.Init)
	}
	order = append(order, involved(h, a)...)
	// The core's other transactions: the sub-history that violates the
	// level on its own is shown whole.
	for _, t := range a.Core {
		if validTxn(h, t) && !slices.Contains(order, t) {
			order = append(order, t)
			hl.txns[t] = append(hl.txns[t], tag{"core", "in the core"})
		}
	}
	var out []txnView
	for _, t := range order {
		tv := txnView{ID: id + "-t" + strconv.Itoa(int(t)), Name: txnLabel(h, t), Href: link(t), Tags: hl.txns[t]}
		if t == history.Init {
			tv.Init, tv.Status = true, "initial state"
			keys := make([]history.KeyID, 0, len(hl.init))
			for k := range hl.init {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				tags := hl.init[k]
				tv.Ops = append(tv.Ops, opView{Text: h.KeyName(k) + " = " + h.InitialValue(k).String(), Class: "op hl " + tags[0].Class, Tags: tags})
			}
			out = append(out, tv)
			continue
		}
		tx := &h.Txns[t]
		tv.Session, tv.Status = sessionName(h, tx.Session), tx.Status.String()
		if tx.HasTime {
			tv.When = instants(tx)
		}
		tv.Timestamps = timestamps(tx)
		keep := func(int) bool { return true }
		if len(tx.Ops) > maxOps {
			keep = func(j int) bool {
				for d := -1; d <= 1; d++ {
					if len(hl.ops[history.OpRef{Txn: t, Op: int32(j + d)}]) > 0 {
						return true
					}
				}
				return j < 3
			}
		}
		gap := 0
		for j, op := range tx.Ops {
			if !keep(j) {
				gap++
				continue
			}
			if gap > 0 {
				tv.Ops = append(tv.Ops, opView{Gap: gap})
				gap = 0
			}
			ov := opView{Text: history.OpString(h, op), Class: "op"}
			if tags := hl.ops[history.OpRef{Txn: t, Op: int32(j)}]; len(tags) > 0 {
				ov.Class, ov.Tags = "op hl "+tags[0].Class, tags
			}
			tv.Ops = append(tv.Ops, ov)
		}
		if gap > 0 {
			tv.Ops = append(tv.Ops, opView{Gap: gap})
		}
		out = append(out, tv)
	}
	return out
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
