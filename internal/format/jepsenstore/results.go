package jepsenstore

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/isoscope/isoscope/internal/format/edn"
	"github.com/isoscope/isoscope/internal/level"
)

// Results is what results.edn says of a run's consistency.
type Results struct {
	// File is results.edn's path.
	File string
	// Valid is the top-level :valid?: "true", "false", "unknown" or, for
	// any other value, that value as written. It joins every checker of
	// the test, those of performance, clocks and crashes included.
	Valid string
	// Checkers are the results of the consistency checkers found in it,
	// in the order of the file.
	Checkers []Verdict
}

// Verdict is one consistency checker's result.
type Verdict struct {
	// Path is where in results.edn the result is: its keys from the top
	// (":workload", ":workload :linear"), "" for the whole map.
	Path string `json:"path"`
	// Checker says which checker wrote it, as its keys show: "elle",
	// "knossos", "independent" (jepsen.independent around either), or
	// "checker" (a map with :valid? under a key that names a consistency
	// checker, and nothing that tells which).
	Checker string `json:"checker"`
	// Valid is the checker's :valid?, as Results.Valid.
	Valid string `json:"valid"`
	// AnomalyTypes are Elle's :anomaly-types, without the colon.
	AnomalyTypes []string `json:"anomaly_types,omitempty"`
	// Not and AlsoNot are Elle's :not and :also-not: the consistency
	// models the anomalies found rule out (weakest first, and the
	// stronger ones).
	Not     []string `json:"not,omitempty"`
	AlsoNot []string `json:"also_not,omitempty"`
	// Keys are jepsen.independent's verdicts, one per key of :results.
	Keys []KeyVerdict `json:"keys,omitempty"`
}

// KeyVerdict is one key's verdict under jepsen.independent.
type KeyVerdict struct {
	// Key is the key as written in results.edn.
	Key          string   `json:"key"`
	Valid        string   `json:"valid"`
	AnomalyTypes []string `json:"anomaly_types,omitempty"`
}

// ReadResults reads the results.edn at path.
func ReadResults(path string) (*Results, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f, path)
}

// Read reads results.edn from r (name names it in errors): one EDN map.
func Read(r io.Reader, name string) (*Results, error) {
	d := edn.NewDecoder(r, name)
	top, err := d.Decode()
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: empty: no results", name)
	}
	if err != nil {
		return nil, err
	}
	if top.Kind != edn.Map {
		return nil, fmt.Errorf("%s:%d: results.edn is one map; this is %s", name, top.Line, top.Kind)
	}
	if _, err := d.Decode(); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%s:%d: a second value after the results map", name, d.Line())
	}
	v, ok := top.Get("valid?")
	if !ok {
		return nil, fmt.Errorf("%s:%d: the results map has no :valid?", name, top.Line)
	}
	res := &Results{File: name, Valid: validity(v)}
	res.Checkers = find(top, nil, 0)
	return res, nil
}

// validity renders a :valid? value.
func validity(v edn.Value) string {
	if v.Kind == edn.Keyword {
		return v.Text
	}
	return v.String()
}

// markers are keys only a consistency checker's result has: Elle's, or
// Knossos's (linear and wgl analyzers), or jepsen.independent's.
var (
	elleKeys    = []string{"anomaly-types", "anomalies", "not", "also-not"}
	knossosKeys = []string{"analyzer", "configs", "final-paths", "previous-ok", "last-op", "model"}
	// consistencyNames are keys under which Jepsen tests put a
	// consistency checker whose result has nothing but :valid? (Elle's
	// and Knossos's when they find nothing to say).
	consistencyNames = []string{"workload", "linear", "linearizable", "linearizability", "elle", "txn", "append",
		"list-append", "wr", "rw-register", "register", "cas-register", "cycle", "independent", "consistency", "serializable"}
)

// find collects the consistency verdicts in m, at the keys path, looking
// at most three maps deep.
func find(m edn.Value, path []string, depth int) []Verdict {
	if v, ok := verdictOf(m, path); ok {
		return []Verdict{v}
	}
	if depth == 3 {
		return nil
	}
	var out []Verdict
	for i := 0; i+1 < len(m.Items); i += 2 {
		k, sub := m.Items[i], m.Items[i+1]
		name, ok := k.Name()
		if !ok || sub.Kind != edn.Map {
			continue
		}
		out = append(out, find(sub, append(slices.Clone(path), ":"+name), depth+1)...)
	}
	return out
}

// verdictOf returns m as a consistency checker's verdict, when it is one.
func verdictOf(m edn.Value, path []string) (Verdict, bool) {
	valid, ok := m.Get("valid?")
	if !ok {
		return Verdict{}, false
	}
	v := Verdict{Path: strings.Join(path, " "), Valid: validity(valid)}
	results, hasResults := m.Get("results")
	switch {
	case hasResults && results.Kind == edn.Map && perKey(results):
		v.Checker = "independent"
		for i := 0; i+1 < len(results.Items); i += 2 {
			kv := KeyVerdict{Key: results.Items[i].String(), Valid: "unknown"}
			if sub := results.Items[i+1]; sub.Kind == edn.Map {
				if x, ok := sub.Get("valid?"); ok {
					kv.Valid = validity(x)
				}
				kv.AnomalyTypes = names(sub, "anomaly-types")
			}
			v.Keys = append(v.Keys, kv)
		}
		return v, true
	case hasAny(m, elleKeys):
		v.Checker = "elle"
	case hasAny(m, knossosKeys):
		v.Checker = "knossos"
	case len(path) > 0 && slices.Contains(consistencyNames, strings.TrimPrefix(path[len(path)-1], ":")) && len(m.Items) == 2:
		v.Checker = "checker"
	default:
		return Verdict{}, false
	}
	v.AnomalyTypes = names(m, "anomaly-types")
	v.Not = names(m, "not")
	v.AlsoNot = names(m, "also-not")
	return v, true
}

// perKey reports whether results is jepsen.independent's :results: a map
// of keys to results, each a map with :valid?.
func perKey(results edn.Value) bool {
	for i := 1; i < len(results.Items); i += 2 {
		if _, ok := results.Items[i].Get("valid?"); !ok || results.Items[i].Kind != edn.Map {
			return false
		}
	}
	return true
}

func hasAny(m edn.Value, keys []string) bool {
	for _, k := range keys {
		if _, ok := m.Get(k); ok {
			return true
		}
	}
	return false
}

// names returns the keywords (or strings) of the collection m holds under
// key, in order, or nil.
func names(m edn.Value, key string) []string {
	c, ok := m.Get(key)
	if !ok {
		return nil
	}
	var out []string
	for _, x := range c.Items {
		if n, ok := x.Name(); ok {
			out = append(out, n)
		}
	}
	return out
}

// Jepsen's verdicts, as Compare states them.
const (
	Valid   = "valid"
	Invalid = "invalid"
	Unknown = "unknown"
	// None: results.edn holds no consistency checker's verdict.
	None = "none"
)

// AtLevel is what r's consistency checkers say of level l: Invalid when
// one of them found the history invalid (for Elle, when the models it
// rules out include l or a level l implies; when they include none of
// those, Elle found nothing against l, which is Valid), Valid when every
// one found it valid, None when there is no verdict, else Unknown. why
// says how that was read.
func (r *Results) AtLevel(l level.Level) (verdict, why string) {
	if len(r.Checkers) == 0 {
		return None, fmt.Sprintf("no consistency checker's verdict in %s (its top-level :valid? is %s)", r.File, r.Valid)
	}
	verdict = Valid
	var whys []string
	for _, c := range r.Checkers {
		v, w := c.atLevel(l)
		whys = append(whys, w)
		switch {
		case v == Invalid:
			verdict = Invalid
		case v == Unknown && verdict == Valid:
			verdict = Unknown
		}
	}
	return verdict, strings.Join(whys, "; ")
}

// Name names the checker as people do: Elle, Knossos,
// jepsen.independent, or "the checker".
func (c Verdict) Name() string {
	return map[string]string{"elle": "Elle", "knossos": "Knossos", "independent": "jepsen.independent", "checker": "the checker"}[c.Checker]
}

// atLevel is AtLevel for one checker.
func (c Verdict) atLevel(l level.Level) (string, string) {
	where := c.Name()
	if c.Path != "" {
		where += " at " + c.Path
	}
	switch c.Valid {
	case "true":
		return Valid, where + " says valid"
	case "false":
	default:
		return Unknown, where + " says :valid? " + c.Valid
	}
	ruledOut := append(slices.Clone(c.Not), c.AlsoNot...)
	if len(ruledOut) == 0 {
		return Invalid, where + " says invalid"
	}
	known := false
	for _, m := range ruledOut {
		ml, err := level.Lookup(m)
		if err != nil {
			continue
		}
		known = true
		switch {
		case ml.ID == l.ID:
			return Invalid, fmt.Sprintf("%s says invalid and rules out %s", where, m)
		case l.Implies(ml.ID):
			return Invalid, fmt.Sprintf("%s says invalid and rules out %s, which %s implies", where, m, l.Name)
		}
	}
	if !known {
		return Invalid, fmt.Sprintf("%s says invalid (it rules out %s)", where, strings.Join(ruledOut, ", "))
	}
	return Valid, fmt.Sprintf("%s says invalid, but rules out only %s, not %s", where, strings.Join(ruledOut, ", "), l.Name)
}

// Comparison is Jepsen's verdict beside isoscope's.
type Comparison struct {
	// Results is results.edn's path.
	Results string `json:"results"`
	// Jepsen is Valid, Invalid, Unknown or None (AtLevel), at the level
	// isoscope checked; Why says how results.edn was read.
	Jepsen string `json:"jepsen"`
	Why    string `json:"why"`
	// Checkers are the consistency checkers' results found.
	Checkers []Verdict `json:"checkers"`
	// Agreement is "agree", "disagree", or "no comparison" when either
	// verdict is unknown or results.edn has none.
	Agreement string `json:"agreement"`
	// Note says what may explain a disagreement (NilReads).
	Note string `json:"note,omitempty"`
	// Keys compare, for a jepsen.independent history, each key's
	// verdict in results.edn with isoscope's on that key (PerKey).
	Keys []KeyComparison `json:"keys,omitempty"`
}

// KeyComparison is one independent key's verdicts side by side.
type KeyComparison struct {
	// Key is the key as results.edn writes it.
	Key string `json:"key"`
	// Jepsen is the key's :valid? in results.edn; Isoscope is Valid,
	// Invalid or Unknown for isoscope's verdict on the key's history, or
	// None when isoscope has no part under that key.
	Jepsen    string `json:"jepsen"`
	Isoscope  string `json:"isoscope"`
	Agreement string `json:"agreement"`
}

// PerKey compares results.edn's per-key verdicts (jepsen.independent)
// with isoscope's, given as each key's EDN form mapped to Valid, Invalid
// or Unknown; a key results.edn names that isoscope lacks, or the other
// way round, is "no comparison".
func (c *Comparison) PerKey(isoscope map[string]string) {
	seen := map[string]bool{}
	for _, v := range c.Checkers {
		for _, k := range v.Keys {
			if seen[k.Key] {
				continue
			}
			seen[k.Key] = true
			iso, ok := isoscope[k.Key]
			if !ok {
				iso = None
			}
			jepsen := map[string]string{"true": Valid, "false": Invalid}[k.Valid]
			if jepsen == "" {
				jepsen = Unknown
			}
			c.Keys = append(c.Keys, KeyComparison{Key: k.Key, Jepsen: jepsen, Isoscope: iso, Agreement: agreement(jepsen, iso)})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(isoscope)) {
		if !seen[k] {
			c.Keys = append(c.Keys, KeyComparison{Key: k, Jepsen: None, Isoscope: isoscope[k], Agreement: "no comparison"})
		}
	}
}

// agreement compares two verdicts, each Valid, Invalid, or anything else
// (no verdict).
func agreement(jepsen, isoscope string) string {
	switch {
	case (jepsen == Valid || jepsen == Invalid) && jepsen == isoscope:
		return "agree"
	case (jepsen == Valid || jepsen == Invalid) && (isoscope == Valid || isoscope == Invalid):
		return "disagree"
	}
	return "no comparison"
}

// NilReads notes, on a disagreement with Knossos where isoscope found a
// violation, that the history has n reads that returned nil: Knossos's
// register models take such a read as a read of any value, isoscope as
// a read of the initial, absent state.
func (c *Comparison) NilReads(n int) {
	if n == 0 || c.Agreement != "disagree" || c.Jepsen != Valid ||
		!slices.ContainsFunc(c.Checkers, func(v Verdict) bool { return v.Checker == "knossos" }) {
		return
	}
	c.Note = fmt.Sprintf("the history has %d read(s) that returned nil: Knossos's register models take such a read as a read of any value, isoscope as a read of the initial, absent state", n)
}

// Compare states r's verdict at l beside isoscope's: satisfied says
// isoscope found l to hold, violated that it found a violation (neither:
// undecided).
func Compare(r *Results, l level.Level, satisfied, violated bool) Comparison {
	c := Comparison{Results: r.File, Checkers: r.Checkers}
	c.Jepsen, c.Why = r.AtLevel(l)
	isoscope := Unknown
	switch {
	case satisfied:
		isoscope = Valid
	case violated:
		isoscope = Invalid
	}
	c.Agreement = agreement(c.Jepsen, isoscope)
	return c
}
