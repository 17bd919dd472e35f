package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/format/jepsenstore"
	"github.com/isoscope/isoscope/internal/format/registry"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/report"
)

// storeRun resolves a directory argument that is a Jepsen store (a run,
// a test directory with its latest link or one run, or the store with
// its latest link) to the run's history; any other argument, or any
// argument when formatName names a directory format (Cobra, Viper), is
// returned as it is, with a nil run.
func storeRun(name, formatName string) (string, *jepsenstore.Run, error) {
	if name == "-" {
		return name, nil, nil
	}
	if f, err := registry.Lookup(formatName); err == nil && f.ReadDir != nil {
		return name, nil, nil
	}
	st, err := os.Stat(name)
	if err != nil || !st.IsDir() {
		return name, nil, nil
	}
	run, ok, err := jepsenstore.Find(name)
	if err != nil {
		return "", nil, err
	}
	if !ok {
		return name, nil, nil
	}
	return run.History, &run, nil
}

// readRun reads a Jepsen run's history (jepsenstore.Open) in the format
// named or detected, within the reading limits, until ctx is done.
func (c *checkCommand) readRun(ctx context.Context, run *jepsenstore.Run) (*history.History, error) {
	wrap := func(r io.Reader, size int64) (io.Reader, func()) {
		return withProgress(c.io, c.Progress, r, size, "reading "+run.History)
	}
	o, err := jepsenstore.Open(*run, c.Format, registry.Options{Wrap: wrap, Context: ctx, AllowTorn: true, Limits: c.readLimits()})
	if err != nil {
		return nil, err
	}
	for _, w := range o.Warnings {
		fmt.Fprintf(c.io.Stderr, "isoscope: warning: %v\n", w)
	}
	return o.History, nil
}

// secondOpinion reads the results.edn of the run (or, for a history
// file, the one beside it) and states Jepsen's verdict beside isoscope's
// result on h. It is an error when there is none.
func secondOpinion(file string, run *jepsenstore.Run, h *history.History, res check.Result) (*jepsenstore.Comparison, error) {
	var path string
	switch {
	case file == "-":
		return nil, fmt.Errorf("--compare-results reads the results.edn beside a history: a file or a Jepsen store, not standard input")
	case run != nil:
		if path = run.Results; path == "" {
			return nil, fmt.Errorf("%s: --compare-results: no results.edn in the run %s", file, run.Dir)
		}
	default:
		path = filepath.Join(filepath.Dir(file), "results.edn")
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("%s: --compare-results: no results.edn beside the history (%v)", file, err)
		}
	}
	r, err := jepsenstore.ReadResults(path)
	if err != nil {
		return nil, err
	}
	cmp := jepsenstore.Compare(r, res.Level, res.Outcome == check.Satisfied, res.Outcome == check.Violated)
	cmp.NilReads(nilReads(h))
	if len(res.Parts) > 0 {
		keys := map[string]string{}
		for _, p := range res.Parts {
			keys[p.Key.String()] = jepsenstore.Unknown
			switch p.Outcome {
			case check.Satisfied:
				keys[p.Key.String()] = jepsenstore.Valid
			case check.Violated:
				keys[p.Key.String()] = jepsenstore.Invalid
			}
		}
		cmp.PerKey(keys)
	}
	return &cmp, nil
}

// nilReads counts the reads of committed transactions that returned null.
func nilReads(h *history.History) int {
	n := 0
	for i := range h.Txns {
		if h.Txns[i].Status != history.Committed {
			continue
		}
		for _, op := range h.Txns[i].Ops {
			if op.Kind == history.Read && op.Value.IsNull() {
				n++
			}
		}
	}
	return n
}

// writeSecondOpinion renders a comparison as text after the result.
func writeSecondOpinion(w io.Writer, c *jepsenstore.Comparison, res check.Result) {
	fmt.Fprintf(w, "Jepsen's verdict (%s): %s at %s: %s.\n", c.Results, c.Jepsen, res.Level.Name, c.Why)
	for _, v := range c.Checkers {
		if len(v.AnomalyTypes) > 0 {
			fmt.Fprintf(w, "  %s's anomaly types: :%s\n", v.Name(), strings.Join(v.AnomalyTypes, " :"))
		}
		if len(v.Keys) > 0 {
			var bad []string
			for _, k := range v.Keys {
				if k.Valid != "true" {
					bad = append(bad, k.Key+" ("+k.Valid+")")
				}
			}
			fmt.Fprintf(w, "  jepsen.independent: %d keys, not valid: %d", len(v.Keys), len(bad))
			if len(bad) > 0 {
				fmt.Fprintf(w, " (%s)", strings.Join(bad, ", "))
			}
			fmt.Fprintln(w)
		}
	}
	isoscope := map[check.Outcome]string{check.Satisfied: "holds", check.Violated: "is violated", check.Undecided: "is undecided"}[res.Outcome]
	switch c.Agreement {
	case "agree":
		fmt.Fprintf(w, "isoscope agrees: %s %s.\n", res.Level.Name, isoscope)
	case "disagree":
		fmt.Fprintf(w, "isoscope DISAGREES: %s %s for isoscope, Jepsen's checkers say %s.\n", res.Level.Name, isoscope, c.Jepsen)
	default:
		fmt.Fprintf(w, "no comparison: Jepsen's verdict is %s and %s %s for isoscope.\n", c.Jepsen, res.Level.Name, isoscope)
	}
	if c.Note != "" {
		fmt.Fprintf(w, "  (%s)\n", c.Note)
	}
	if len(c.Keys) > 0 {
		counts := map[string]int{}
		var differ []string
		for _, k := range c.Keys {
			counts[k.Agreement]++
			if k.Agreement == "disagree" {
				differ = append(differ, fmt.Sprintf("key %s: Jepsen %s, isoscope %s", k.Key, k.Jepsen, k.Isoscope))
			}
		}
		fmt.Fprintf(w, "per key: %d agree, %d disagree, %d without a comparison\n", counts["agree"], counts["disagree"], counts["no comparison"])
		for _, d := range differ {
			fmt.Fprintf(w, "  DISAGREES on %s\n", d)
		}
	}
}

// storeDocument is the JSON result with the fields a store adds: the run
// read, and the comparison with results.edn.
type storeDocument struct {
	*report.Document
	// Store is the run's directory, when the argument was a Jepsen store.
	Store string `json:"jepsen_store,omitempty"`
	// StoreVia says how the run was found from the argument ("latest",
	// the one run of a test directory).
	StoreVia string `json:"jepsen_store_via,omitempty"`
	// SecondOpinion is Jepsen's verdict from results.edn beside
	// isoscope's (--compare-results).
	SecondOpinion *jepsenstore.Comparison `json:"second_opinion,omitempty"`
}

// writeStoreJSON writes checked's JSON document with the store's fields.
func writeStoreJSON(w io.Writer, checked *report.Checked, run *jepsenstore.Run, cmp *jepsenstore.Comparison) error {
	doc := storeDocument{Document: report.NewDocument(checked), SecondOpinion: cmp}
	if run != nil {
		doc.Store, doc.StoreVia = run.Dir, run.Via
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(doc)
}

// storeExtra is what a check of a Jepsen store adds to a result: the run
// read, and Jepsen's verdict beside isoscope's.
type storeExtra struct {
	run     *jepsenstore.Run
	opinion *jepsenstore.Comparison
}

// noteStore records what checked adds as a store's run or with
// --compare-results.
func (c *checkCommand) noteStore(checked *report.Checked, run *jepsenstore.Run) error {
	if run == nil && !c.CompareResults {
		return nil
	}
	x := &storeExtra{run: run}
	if c.CompareResults {
		cmp, err := secondOpinion(checked.File, run, checked.History, checked.Result)
		if err != nil {
			return err
		}
		x.opinion = cmp
	}
	if c.stores == nil {
		c.stores = map[*report.Checked]*storeExtra{}
	}
	c.stores[checked] = x
	return nil
}

// writeResult writes checked's result as JSON or text, with what a store
// adds.
func (c *checkCommand) writeResult(w io.Writer, checked *report.Checked, opts report.TextOptions) error {
	x := c.stores[checked]
	if c.JSON {
		if x == nil || checked.Err != nil {
			return report.JSON(w, checked)
		}
		return writeStoreJSON(w, checked, x.run, x.opinion)
	}
	if err := report.Text(w, checked, opts); err != nil {
		return err
	}
	if x != nil && checked.Err == nil {
		if x.run != nil && x.run.Via != "" {
			fmt.Fprintf(w, "Jepsen run: %s (%s).\n", x.run.Dir, x.run.Via)
		}
		if x.opinion != nil {
			writeSecondOpinion(w, x.opinion, checked.Result)
		}
	}
	return nil
}
