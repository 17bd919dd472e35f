package report

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/check/checker"
	"github.com/isoscope/isoscope/internal/evidence"
	"github.com/isoscope/isoscope/internal/format/registry"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// schemaFile is the JSON Schema of the JSON result, in the repository.
const schemaFile = "../../docs/result.schema.json"

// resultSchema compiles docs/result.schema.json.
func resultSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("result.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("result.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// validate validates each JSON document (one per line) of b.
func validate(t *testing.T, sch *jsonschema.Schema, name string, b []byte) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	for n := 1; ; n++ {
		var v any
		if err := dec.Decode(&v); err != nil {
			if errors.Is(err, io.EOF) {
				return
			}
			t.Fatalf("%s: document %d: %v", name, n, err)
		}
		if err := sch.Validate(v); err != nil {
			t.Errorf("%s: document %d does not follow %s:\n%v", name, n, schemaFile, err)
		}
	}
}

// TestGoldenJSONFollowsTheSchema: every golden JSON result (a history of
// every kind of the catalogue, every basis of evidence) follows the
// schema in docs/result.schema.json; so do the results of every format's
// example file, a file that could not be checked, and results with
// modules and an inferred read-your-own-writes policy. The schema is
// strict (no field it does not name): an undocumented field fails.
func TestGoldenJSONFollowsTheSchema(t *testing.T) {
	sch := resultSchema(t)
	files, err := filepath.Glob("testdata/evidence/*.json")
	if err != nil || len(files) < len(goldenCases) {
		t.Fatalf("%d golden files for %d cases: %v", len(files), len(goldenCases), err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		validate(t, sch, f, b)
	}
	// The schema refuses what it does not describe.
	b, err := os.ReadFile("testdata/evidence/lost-update.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, edit := range []func(m map[string]any){
		func(m map[string]any) { m["surprise"] = 1 },
		func(m map[string]any) { m["anomalies"].([]any)[0].(map[string]any)["kind"] = "no-such-kind" },
		func(m map[string]any) {
			e := m["anomalies"].([]any)[0].(map[string]any)["cycle"].([]any)[0].(map[string]any)
			e["evidence"].(map[string]any)["basis"] = "hunch"
		},
		func(m map[string]any) { m["anomalies"].([]any)[0].(map[string]any)["transactions"] = []any{1.5} },
	} {
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		edit(m)
		if sch.Validate(m) == nil {
			t.Errorf("the schema takes a wrong document: %v", m)
		}
	}
	var out bytes.Buffer
	JSON(&out, &Checked{File: "bad.jsonl", Result: check.Result{Level: level.Get(level.Serializable)}, Err: errors.New("bad.jsonl:3: not JSON")})
	h := history.MustParse("init: x=0 | s1: r x 0 w x 1 r x 1 | s2: r x 0 w x 2")
	res, err := check.Run(context.Background(), h, level.Get(level.SnapshotIsolation), check.Options{InferOwnReads: true, Holds: true,
		Modules: []checker.Module{check.Modules()["session-order"]}})
	if err != nil {
		t.Fatal(err)
	}
	JSON(&out, &Checked{File: "-", History: h, Result: res})
	validate(t, sch, "an error and modules", out.Bytes())
}

// TestFormatsKeepIDTypes: the JSON result of each format's example file
// follows the schema, and names every transaction with its id's own type
// (a number stays a number, a string a string), as the history has it.
func TestFormatsKeepIDTypes(t *testing.T) {
	sch := resultSchema(t)
	files, err := filepath.Glob("../../testdata/formats/*")
	if err != nil || len(files) == 0 {
		t.Fatalf("no format examples: %v", err)
	}
	for _, f := range files {
		o, err := registry.OpenWith(f, "auto", registry.Options{})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		h := o.History
		res, err := check.Run(context.Background(), h, level.Get(level.Serializable), check.Options{})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		var out bytes.Buffer
		if err := JSON(&out, &Checked{File: f, History: h, Result: res}); err != nil {
			t.Fatal(err)
		}
		validate(t, sch, f, out.Bytes())
		ids := map[string]history.ValueKind{}
		for _, tx := range h.Txns {
			ids[tx.ID.String()] = tx.ID.Kind
		}
		var doc struct {
			Anomalies []struct {
				Transactions []json.RawMessage
				Cycle        []struct{ From, To json.RawMessage }
			}
		}
		if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		check := func(raw json.RawMessage) {
			var s string
			if json.Unmarshal(raw, &s) == nil {
				if s != "init" && ids[history.StringValue(s).String()] != history.String {
					t.Errorf("%s: id %s is a string in the result, not in the history", f, raw)
				}
				return
			}
			if ids[string(raw)] != history.Int {
				t.Errorf("%s: id %s is a number in the result, not in the history", f, raw)
			}
		}
		for _, a := range doc.Anomalies {
			for _, x := range a.Transactions {
				check(x)
			}
			for _, e := range a.Cycle {
				check(e.From)
				check(e.To)
			}
		}
	}
}

// TestSchemaNamesTheCatalogue: the schema's enumerations are the
// catalogue's kinds, phenomena, dependencies, levels and bases of
// evidence, so that a new one cannot be written without the schema (and
// docs/json.md) saying what it is.
func TestSchemaNamesTheCatalogue(t *testing.T) {
	b, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Defs map[string]struct {
			Enum []string `json:"enum"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	var kinds, deps, bases, levels []string
	for _, k := range anomaly.Kinds() {
		kinds = append(kinds, k.String())
	}
	for d := anomaly.WW; d <= anomaly.PRW; d++ {
		deps = append(deps, d.String())
	}
	for _, x := range evidence.Bases() {
		if x != evidence.Missing {
			bases = append(bases, x.String())
		}
	}
	for _, l := range level.All() {
		levels = append(levels, l.Name)
	}
	var phenomena []string
	for p := anomaly.G0; p.String() != "" && !slices.Contains(phenomena, p.String()) && p < 64; p++ {
		if _, ok := anomaly.ParsePhenomenon(p.String()); !ok {
			break
		}
		phenomena = append(phenomena, p.String())
	}
	for name, want := range map[string][]string{"kind": kinds, "dep": deps, "basis": bases, "level": levels, "phenomenon": phenomena} {
		got := slices.Clone(s.Defs[name].Enum)
		slices.Sort(got)
		w := slices.Clone(want)
		slices.Sort(w)
		if !slices.Equal(got, w) {
			t.Errorf("the schema's %s enumeration is %v, the catalogue's %v", name, got, w)
		}
	}
}

// TestKeysFollowTheSchema: the result of a history of independent keys
// (a verdict per key) with operations its reader left out follows the
// schema, in text naming the key that fails.
func TestKeysFollowTheSchema(t *testing.T) {
	in := "{:type :info, :process :nemesis, :f :start}\n" +
		"{:type :invoke, :process 0, :f :write, :value [:a 1]}\n{:type :ok, :process 0, :f :write, :value [:a 1]}\n" +
		"{:type :invoke, :process 1, :f :read, :value [\"b\" nil]}\n{:type :ok, :process 1, :f :read, :value [\"b\" 2]}\n" +
		"{:type :invoke, :process 2, :f :read, :value [:a nil]}\n{:type :info, :process 2, :f :read, :value [:a nil]}\n"
	o, err := registry.Read(strings.NewReader(in), "keys.edn", "", registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := check.Run(context.Background(), o.History, level.Get(level.StrictSerializable), check.Options{Holds: true})
	if err != nil {
		t.Fatal(err)
	}
	c := &Checked{File: "keys.edn", History: o.History, Result: res}
	var out bytes.Buffer
	if err := JSON(&out, c); err != nil {
		t.Fatal(err)
	}
	validate(t, resultSchema(t), "independent keys", out.Bytes())
	for _, want := range []string{`"keys":[{"key":"a","outcome":"satisfied"`, `{"key":"b","outcome":"violation","checker":"lwt"`, `"skipped":{"of no effect`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("JSON lacks %s: %s", want, out.String())
		}
	}
	out.Reset()
	if err := Text(&out, c, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "independent keys: 2: 1 hold, 1 VIOLATED, 0 UNKNOWN\n  key b: VIOLATED (lwt; 1 transaction): thin-air-read 1\n") {
		t.Errorf("text:\n%s", out.String())
	}
}
