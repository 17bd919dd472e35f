// Package report renders check results for people and programs: text with
// anomalies grouped by kind (the first few of each, with counts, as a
// compiler does), and the JSON result of the CLI contract. Explanations are
// rendered here from the anomalies' data.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/evidence"
	"github.com/isoscope/isoscope/internal/finding"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
	"github.com/isoscope/isoscope/internal/textfmt"
)

// Checked is one history's result with what the report needs around it.
type Checked struct {
	// File is the history's name ("-" for standard input).
	File    string
	History *history.History
	Result  check.Result
	Elapsed time.Duration
	// ImpliedBy names the input format whose histories ask for the level
	// checked (knossos and porcupine logs: strict serializability, their
	// linearizability), when that level was used because none was chosen.
	ImpliedBy string
	// Err, when not nil, says why the file could not be checked (bad
	// input, or no checker decides it); History and Result are then
	// empty, and Result.Level is the level that was asked for.
	Err error
	// evidence caches Evidence: one entry per anomaly.
	evidence [][]evidence.Edge
}

// TextOptions tune the text report.
type TextOptions struct {
	// PerKind is how many anomalies of each kind to show (0: 3; a
	// negative number: all).
	PerKind int
	// CountsOnly shows each kind's count and none of its anomalies,
	// whatever PerKind says.
	CountsOnly bool
	// ShowFile prefixes the verdict with the file name.
	ShowFile bool
	// PerCycle is how many edges of each cycle have their evidence shown
	// (0: 6).
	PerCycle int
}

// Text writes the verdict, then each kind of anomaly with its count and its
// first few instances: name, phenomenon, the cycle as a chain and a
// one-sentence explanation.
func Text(w io.Writer, c *Checked, o TextOptions) error {
	switch {
	case o.CountsOnly:
		o.PerKind = 0
	case o.PerKind == 0:
		o.PerKind = 3
	case o.PerKind < 0:
		o.PerKind = math.MaxInt
	}
	if o.PerCycle <= 0 {
		o.PerCycle = 6
	}
	r := &c.Result
	var b strings.Builder
	if o.ShowFile {
		fmt.Fprintf(&b, "%s: ", c.File)
	}
	if c.Err != nil {
		fmt.Fprintf(&b, "NOT CHECKED: %s\n", strings.TrimPrefix(c.Err.Error(), c.File+": "))
		_, err := io.WriteString(w, b.String())
		return err
	}
	st := r.Stats
	switch r.Outcome {
	case check.Satisfied:
		fmt.Fprintf(&b, "%s holds", r.Level.Name)
	case check.Violated:
		fmt.Fprintf(&b, "%s VIOLATED: %d %s", r.Level.Name, len(r.Anomalies), plural(len(r.Anomalies), "anomaly", "anomalies"))
	default:
		fmt.Fprintf(&b, "%s UNKNOWN: %s", r.Level.Name, r.Reason)
	}
	if r.Checker == "" && st.Transactions == 0 {
		// Nothing was read or no checker ran (a timeout while reading).
		fmt.Fprintf(&b, " (%s)\n", durationString(c.Elapsed))
	} else {
		fmt.Fprintf(&b, " (checker %s; %s, %d committed, %s, %s; %s)\n",
			r.Checker, textfmt.Count(st.Transactions, "transaction"), st.Committed, textfmt.Count(st.Sessions, "session"),
			textfmt.Count(st.Operations, "operation"), durationString(c.Elapsed))
	}
	if c.ImpliedBy != "" {
		fmt.Fprintf(&b, "level %s (implied by the %s format; pass --level to choose)\n", r.Level.Name, c.ImpliedBy)
	}
	if r.Note != "" {
		fmt.Fprintf(&b, "note: %s\n", r.Note)
	}
	if r.Caveat != "" {
		fmt.Fprintf(&b, "note: %s\n", r.Caveat)
	}
	if len(r.Modules) > 0 {
		fmt.Fprintf(&b, "modules: %s\n", strings.Join(r.Modules, ", "))
	}
	if e := r.OwnReadsEvidence; e != nil {
		fmt.Fprintf(&b, "read-your-own-writes policy inferred from the history: %s (of the reads after their transaction's write of the key, %d saw that write, %d did not)\n", r.OwnReads, e.Own, e.External)
	} else if r.OwnReads != history.MustReadOwn {
		fmt.Fprintf(&b, "read-your-own-writes policy: %s\n", r.OwnReads)
	}
	if c.History != nil && len(c.History.Skipped) > 0 {
		writeSkipped(&b, c.History.Skipped)
	}
	if len(r.Parts) > 0 {
		writeParts(&b, r.Parts)
	}
	if c.History != nil && len(c.History.Faults) > 0 {
		writeFaults(&b, c.History)
	}
	for _, g := range Group(r.Anomalies) {
		a0 := &r.Anomalies[g.Indices[0]]
		ph := ""
		if a0.Phenomenon != anomaly.None {
			ph = " [" + a0.Phenomenon.String() + "]"
		}
		fmt.Fprintf(&b, "\n%s%s: %d\n", g.Kind, ph, len(g.Indices))
		for n, i := range g.Indices {
			if n == o.PerKind {
				if n > 0 {
					fmt.Fprintf(&b, "  … and %d more\n", len(g.Indices)-n)
				}
				break
			}
			a := &r.Anomalies[i]
			if a.IsCycle() {
				fmt.Fprintf(&b, "  %s\n", Chain(c.History, a.Cycle))
				if a.Phenomenon != a0.Phenomenon && a.Phenomenon != anomaly.None {
					fmt.Fprintf(&b, "    [%s] ", a.Phenomenon)
				} else {
					b.WriteString("    ")
				}
			} else {
				b.WriteString("  ")
			}
			fmt.Fprintf(&b, "%s\n", Explain(c.History, a))
			if len(a.Core) > 0 {
				b.WriteString("    " + CoreNote(c.History, a) + "\n")
			}
			if a.IsCycle() {
				writeEdges(&b, c.History, a, c.Evidence(i), o.PerCycle)
			}
		}
	}
	if r.Outcome == check.Violated && len(r.Holds) > 0 {
		names := make([]string, len(r.Holds))
		said := map[level.ID]bool{}
		for i, l := range r.Holds {
			names[i] = l.Name
			said[l.ID] = true
		}
		// What they imply holds too; say so for the levels a weak level's
		// user asks about (the axiomatic ones, Adya's read committed).
		var implied []string
		for _, l := range r.Holds {
			for _, w := range l.WeakerLevels() {
				if !said[w.ID] && (w.Axiom != level.NoAxiom || w.ID == level.ReadCommitted) {
					said[w.ID] = true
					implied = append(implied, w.Name)
				}
			}
		}
		fmt.Fprintf(&b, "\nstill holds: %s", strings.Join(names, ", "))
		if len(implied) > 0 {
			fmt.Fprintf(&b, " (so do %s)", strings.Join(implied, ", "))
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeEdges writes the evidence of a cycle's edges, at most perCycle of
// them, one line each ("T1 --wr(x)--> T2: T1 wrote x=1, which T2 read").
// A best-found cycle says so first, and its edges the solver chose come
// apart from those every choice has.
func writeEdges(b *strings.Builder, h *history.History, a *anomaly.Anomaly, es []evidence.Edge, perCycle int) {
	shown := 0
	line := func(indent string, e *evidence.Edge) {
		if shown == perCycle {
			return
		}
		shown++
		fmt.Fprintf(b, "%s%s: %s\n", indent, Chain(h, []anomaly.Step{e.Step}), EdgeText(h, e))
	}
	if !a.BestFound {
		for i := range es {
			line("    ", &es[i])
		}
	} else {
		b.WriteString("    " + BestFoundNote(es) + "\n")
		forced, chosen := EvidenceCounts(es)
		for _, part := range []struct {
			title  string
			n      int
			chosen bool
		}{{"every choice has", forced, false}, {"the solver's choice", chosen, true}} {
			if part.n == 0 || shown == perCycle {
				continue
			}
			fmt.Fprintf(b, "    %s (%d):\n", part.title, part.n)
			for i := range es {
				if (es[i].Basis == evidence.Chosen) == part.chosen {
					line("      ", &es[i])
				}
			}
		}
	}
	if shown < len(es) {
		fmt.Fprintf(b, "    … and %d more %s (every edge's evidence is in the JSON result)\n", len(es)-shown, plural(len(es)-shown, "edge", "edges"))
	}
}

// KindGroup is the anomalies of one kind, by index into the result.
type KindGroup struct {
	Kind    anomaly.Kind
	Indices []int
}

// Group groups anomalies by kind, keeping their order within each kind:
// the named kinds in catalogue order, then the generic cycles (a cycle no
// named kind describes), however many there are of each.
func Group(as []anomaly.Anomaly) []KindGroup {
	by := map[anomaly.Kind][]int{}
	for i, a := range as {
		by[a.Kind] = append(by[a.Kind], i)
	}
	var out []KindGroup
	named := slices.DeleteFunc(anomaly.Kinds(), func(k anomaly.Kind) bool { return k == anomaly.Cycle })
	for _, k := range append(named, anomaly.Cycle) {
		if idx := by[k]; len(idx) > 0 {
			out = append(out, KindGroup{k, idx})
		}
	}
	return out
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func durationString(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/1e6)
	case d < time.Second:
		return fmt.Sprintf("%.1f ms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}

// Schema is the version of the JSON result's shape (Document.Schema):
// docs/json.md describes every field, and docs/result.schema.json is its
// JSON Schema. It grows only by adding fields; a result without the field
// was written before the shape was versioned.
const Schema = 1

// Document is the JSON result of the CLI contract for one history.
type Document struct {
	// Schema is the version of the document's shape (Schema).
	Schema int `json:"schema"`
	// File names the history checked ("-" for standard input).
	File      string            `json:"file,omitempty"`
	Level     string            `json:"level"`
	Outcome   string            `json:"outcome"`
	Checker   string            `json:"checker"`
	History   history.Stats     `json:"history"`
	Anomalies []finding.Finding `json:"anomalies"`
	Holds     []string          `json:"holds,omitempty"`
	Reason    string            `json:"reason,omitempty"`
	Caveat    string            `json:"caveat,omitempty"`
	ElapsedMS float64           `json:"elapsed_ms"`
	Counts    map[string]int    `json:"counts,omitempty"`
	// Modules names the modules the check ran (absent when none).
	Modules []string `json:"modules,omitempty"`
	// OwnReads is the read-your-own-writes policy the check followed,
	// when it is not the default or was inferred.
	OwnReads *OwnReads `json:"own_reads,omitempty"`
	// LevelImpliedBy names the input format that implied Level, when no
	// level was chosen and the format asks for one (knossos and porcupine
	// logs: strict-serializable).
	LevelImpliedBy string `json:"level_implied_by,omitempty"`
	// CheckedAt is the level the history was really checked at when it
	// is not Level, and Note why a violation found there is one of Level:
	// strict-serializable without begin and end instants is checked at
	// serializable.
	CheckedAt string `json:"checked_at,omitempty"`
	Note      string `json:"note,omitempty"`
	// Error says why the file could not be checked (outcome "error",
	// only among the results of several files): bad input, naming where
	// and what, or no checker that decides it.
	Error string `json:"error,omitempty"`
	// Keys is the verdict on each independent key of a history made of
	// independent histories (Jepsen's jepsen.independent), in the order
	// of the keys; outcome and anomalies above are theirs together.
	Keys []KeyVerdict `json:"keys,omitempty"`
	// Skipped counts, by kind, the input's operations its reader left out
	// by design (history.History.Skipped).
	Skipped map[string]int `json:"skipped,omitempty"`
}

// KeyVerdict is the verdict on one independent key (check.PartResult).
type KeyVerdict struct {
	// Key is the independent key, a number or a string.
	Key       json.RawMessage `json:"key"`
	Outcome   string          `json:"outcome"`
	Checker   string          `json:"checker,omitempty"`
	History   history.Stats   `json:"history"`
	Anomalies int             `json:"anomalies"`
	Counts    map[string]int  `json:"counts,omitempty"`
	Reason    string          `json:"reason,omitempty"`
}

// keyVerdicts are the documents of the parts' verdicts.
func keyVerdicts(parts []check.PartResult) []KeyVerdict {
	var out []KeyVerdict
	for _, p := range parts {
		v := KeyVerdict{Key: p.Key.AppendJSON(nil), Outcome: p.Outcome.String(), Checker: p.Checker,
			History: p.Stats, Anomalies: p.Anomalies, Reason: p.Reason}
		for k, n := range p.Kinds {
			if v.Counts == nil {
				v.Counts = map[string]int{}
			}
			v.Counts[k.String()] = n
		}
		out = append(out, v)
	}
	return out
}

// OutcomeError is a Document's outcome for a file that could not be
// checked (Document.Error says why). It appears only when several files
// are checked: with one, bad input prints no result at all.
const OutcomeError = "error"

// ErrorDocument is the JSON result for a file that could not be checked:
// the level asked for, outcome OutcomeError, and the error.
func ErrorDocument(c *Checked) *Document {
	return &Document{Schema: Schema, File: c.File, Level: c.Result.Level.Name, Outcome: OutcomeError, Anomalies: []finding.Finding{}, Error: c.Err.Error()}
}

// OwnReads is a Document's read-your-own-writes policy: its name (own,
// external, either) and, when it was inferred from the history, how many
// reads after their transaction's write of the key saw that write (Own)
// and how many did not (External).
type OwnReads struct {
	Policy   string `json:"policy"`
	Inferred bool   `json:"inferred"`
	Own      int    `json:"reads_own,omitempty"`
	External int    `json:"reads_external,omitempty"`
}

// NewDocument renders c as the contract's JSON result, naming its file:
// every finding with its operations and every edge of a cycle with its
// evidence (Evidence, EdgeText).
func NewDocument(c *Checked) *Document {
	r := &c.Result
	h := c.History
	out := &Document{
		Schema: Schema, File: c.File,
		Level: r.Level.Name, Outcome: r.Outcome.String(), Checker: r.Checker, History: r.Stats,
		Anomalies: []finding.Finding{}, Reason: r.Reason, Caveat: r.Caveat,
		ElapsedMS: float64(c.Elapsed.Microseconds()) / 1000,
	}
	out.LevelImpliedBy = c.ImpliedBy
	out.Keys = keyVerdicts(r.Parts)
	if h != nil && len(h.Skipped) > 0 {
		out.Skipped = h.Skipped
	}
	if r.CheckedAt != nil {
		out.CheckedAt = r.CheckedAt.Name
	}
	out.Note = r.Note
	out.Modules = r.Modules
	if e := r.OwnReadsEvidence; e != nil {
		out.OwnReads = &OwnReads{Policy: r.OwnReads.String(), Inferred: true, Own: e.Own, External: e.External}
	} else if r.OwnReads != history.MustReadOwn {
		out.OwnReads = &OwnReads{Policy: r.OwnReads.String()}
	}
	for _, l := range r.Holds {
		out.Holds = append(out.Holds, l.Name)
	}
	if len(r.Anomalies) > 0 {
		out.Counts = map[string]int{}
	}
	for i := range r.Anomalies {
		a := &r.Anomalies[i]
		out.Counts[a.Kind.String()]++
		f := NewFinding(h, a)
		es := c.Evidence(i)
		for j := range f.Cycle {
			if j < len(es) {
				f.Cycle[j].Evidence = finding.NewEvidence(h, &es[j], EdgeText(h, &es[j]))
			}
		}
		var notes []string
		if a.BestFound && len(es) > 0 {
			notes = append(notes, BestFoundNote(es))
		}
		if len(a.Core) > 0 {
			notes = append(notes, CoreNote(h, a))
		}
		f.Note = strings.Join(notes, " ")
		out.Anomalies = append(out.Anomalies, f)
	}
	return out
}

// NewFinding renders anomaly a of history h as a Finding of the JSON
// result, with the operations at issue (finding.Finding.Ops): Resolve reads it
// back without loss. The evidence of its edges, which depends on the
// check (its level, modules and read-your-own-writes policy), is
// NewDocument's to add.
func NewFinding(h *history.History, a *anomaly.Anomaly) finding.Finding {
	f := finding.New(h, a, Explain(h, a))
	f.Ops = finding.Ops(h, a.Ops)
	return f
}

// JSON writes the result as one JSON object on one line (for several
// histories, one line each), naming the file.
func JSON(w io.Writer, c *Checked) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if c.Err != nil {
		return enc.Encode(ErrorDocument(c))
	}
	return enc.Encode(NewDocument(c))
}

// SortAnomalies orders anomalies by kind (catalogue order), stably.
func SortAnomalies(as []anomaly.Anomaly) {
	slices.SortStableFunc(as, func(a, b anomaly.Anomaly) int { return int(a.Kind) - int(b.Kind) })
}

// CoreNote says what the counterexample search kept: the transactions that
// violate the level on their own, and whether that set is minimal.
func CoreNote(h *history.History, a *anomaly.Anomaly) string {
	names := make([]string, len(a.Core))
	for i, t := range a.Core {
		names[i] = txn(h, t)
	}
	if a.Minimal {
		return fmt.Sprintf("(these %d transactions alone violate the level, and without any one of them it holds: %s)", len(a.Core), strings.Join(names, " "))
	}
	return fmt.Sprintf("(the smallest set found in the time allowed, not shown minimal: these %d transactions alone violate the level: %s)", len(a.Core), strings.Join(names, " "))
}

// writeSkipped says how many operations of each kind the reader left out
// by design.
func writeSkipped(b *strings.Builder, skipped map[string]int) {
	kinds := slices.Sorted(maps.Keys(skipped))
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%d %s", skipped[k], k)
	}
	fmt.Fprintf(b, "operations the reader left out: %s\n", strings.Join(parts, "; "))
}

// maxKeysShown bounds the independent keys the text lists.
const maxKeysShown = 20

// writeParts gives the verdicts on the independent keys: how many hold,
// and each key that does not.
func writeParts(b *strings.Builder, parts []check.PartResult) {
	n := map[check.Outcome]int{}
	for _, p := range parts {
		n[p.Outcome]++
	}
	fmt.Fprintf(b, "independent keys: %d: %d hold, %d VIOLATED, %d UNKNOWN\n", len(parts), n[check.Satisfied], n[check.Violated], n[check.Undecided])
	shown := 0
	for _, p := range parts {
		if p.Outcome == check.Satisfied {
			continue
		}
		if shown == maxKeysShown {
			fmt.Fprintf(b, "  … and %d more\n", n[check.Violated]+n[check.Undecided]-shown)
			break
		}
		shown++
		if p.Outcome == check.Violated {
			kinds := slices.SortedFunc(maps.Keys(p.Kinds), func(a, b anomaly.Kind) int { return int(a) - int(b) })
			counts := make([]string, len(kinds))
			for i, k := range kinds {
				counts[i] = fmt.Sprintf("%s %d", k, p.Kinds[k])
			}
			fmt.Fprintf(b, "  key %s: VIOLATED (%s; %s): %s\n", p.Key, p.Checker, textfmt.Count(p.Stats.Transactions, "transaction"), strings.Join(counts, ", "))
		} else {
			fmt.Fprintf(b, "  key %s: UNKNOWN: %s\n", p.Key, p.Reason)
		}
	}
}

// maxFaultsShown bounds the faults the text lists.
const maxFaultsShown = 8

// writeFaults lists the faults recorded in h, their instants relative to
// the earliest begin of a transaction.
func writeFaults(b *strings.Builder, h *history.History) {
	var start int64
	for i := range h.Txns {
		if t := &h.Txns[i]; t.HasTime && (start == 0 || t.Begin < start) {
			start = t.Begin
		}
	}
	fmt.Fprintf(b, "faults recorded in the history: %d\n", len(h.Faults))
	for i, f := range h.Faults {
		if i == maxFaultsShown {
			fmt.Fprintf(b, "  … and %d more\n", len(h.Faults)-i)
			break
		}
		rel := func(ns int64) string { return time.Duration(ns - start).Round(10 * time.Millisecond).String() }
		when := rel(f.Begin)
		if f.End > f.Begin {
			when += " to " + rel(f.End)
		}
		line := "  " + f.Label() + ", " + when
		if f.Info != "" {
			line += ": " + f.Info
		}
		b.WriteString(line + "\n")
	}
}
