package viper

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/gen"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
	"github.com/isoscope/isoscope/internal/workload"
)

// viperMirror is where the mirror of github.com/Khoury-srg/Viper is
// (a git directory), unless VIPER_MIRROR names another.
const viperMirror = "/work/.mirror/Khoury-srg+Viper/repo"

// viperSource extracts Viper's parse/ and utils/ from the mirror into a
// temporary directory and returns its src/, or skips the test when
// python3, the mirror or what Viper's modules import is missing.
func viperSource(t *testing.T) (python, src string) {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3: Viper's parser cannot run")
	}
	mirror := os.Getenv("VIPER_MIRROR")
	if mirror == "" {
		mirror = viperMirror
	}
	if _, err := os.Stat(mirror); err != nil {
		t.Skipf("no mirror of Khoury-srg/Viper at %s (set VIPER_MIRROR): %v", mirror, err)
	}
	cmd := exec.Command("git", "-C", mirror, "archive", "HEAD", "src/parse", "src/utils")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, runErr := cmd.Output() // the mirror may lack other paths' objects
	dir := t.TempDir()
	tr := tar.NewReader(bytes.NewReader(out))
	for {
		hdr, err := tr.Next()
		if err != nil {
			break
		}
		path := filepath.Join(dir, filepath.FromSlash(hdr.Name))
		if hdr.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(path, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	src = filepath.Join(dir, "src")
	if _, err := os.Stat(filepath.Join(src, "parse", "wr_range_parse.py")); err != nil {
		t.Skipf("cannot extract Viper's parser from %s: %v %v %s", mirror, err, runErr, stderr.String())
	}
	if err := exec.Command(python, "-c", "import networkx").Run(); err != nil {
		t.Skip("python3 lacks networkx, which Viper's utils import")
	}
	return python, src
}

// viperOut is what scripts/viper-extract.py prints.
type viperOut struct {
	Reject   *string             `json:"reject"`
	Initial  [][]json.RawMessage `json:"initial"`
	Sessions []struct {
		File string `json:"file"`
		Txns []struct {
			Reads            [][]json.RawMessage `json:"reads"`
			Writes           [][]json.RawMessage `json:"writes"`
			Ranges           [][]json.RawMessage `json:"ranges"`
			FailedWritesOnly bool                `json:"failed_writes_only"`
		} `json:"txns"`
	} `json:"sessions"`
}

// runViper runs Viper's parser on dir.
func runViper(t *testing.T, python, src, dir string) viperOut {
	t.Helper()
	cmd := exec.Command(python, filepath.Join("..", "..", "..", "scripts", "viper-extract.py"), src, dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("Viper's parser on %s: %v\n%s", dir, err, stderr.String())
	}
	var v viperOut
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("Viper's parser's output: %v\n%s", err, out)
	}
	return v
}

// canon renders a value of Viper's output as the comparison sees it: 0
// and null alike (this reader makes Viper's 0 a null read), nil bounds
// and the extreme integers alike.
func canon(raw json.RawMessage) string {
	s := string(bytes.TrimSpace(raw))
	switch s {
	case "null", "0", `"nil"`, strconv.FormatInt(math.MinInt64, 10), strconv.FormatInt(math.MaxInt64, 10):
		return "0"
	}
	return s
}

func canonValue(v history.Value) string {
	switch {
	case v.IsNull(), v.Kind == history.Int && (v.N == 0 || v.N == math.MinInt64 || v.N == math.MaxInt64):
		return "0"
	case v.Kind == history.Int:
		return strconv.FormatInt(v.N, 10)
	}
	return strconv.Quote(v.S)
}

// extracted is one transaction as Viper's extraction sees it: its
// external reads and writes and its range queries, rendered.
type extracted struct{ reads, writes, ranges string }

func pairs(m map[string]string) string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

// ours extracts, from what this reader made of a transaction, what
// Viper's ext_reads_fn and ext_writes_fn extract from its operations: the
// first access of each key when it is a read (a range's rows are reads),
// and the last write of each key.
func ours(h *history.History, t *history.Txn) extracted {
	ignore := map[string]bool{}
	reads, writes := map[string]string{}, map[string]string{}
	var ranges []string
	for _, op := range t.Ops {
		switch op.Kind {
		case history.Read:
			k := canonValue(h.Keys[op.Key])
			if !ignore[k] {
				reads[k] = canonValue(op.Value)
				ignore[k] = true
			}
		case history.Write:
			k := canonValue(h.Keys[op.Key])
			writes[k] = canonValue(op.Value)
			ignore[k] = true
		case history.Scan:
			var ids []string
			for _, p := range op.Range.Pairs {
				k := canonValue(h.Keys[p.Key])
				ids = append(ids, k)
				if !ignore[k] {
					reads[k] = canonValue(p.Value)
					ignore[k] = true
				}
			}
			hi := "0"
			if !op.Range.HiOpen {
				hi = canonValue(history.IntValue(op.Range.Hi.N - 1))
			}
			ranges = append(ranges, canonValue(op.Range.Lo)+".."+hi+"["+strings.Join(ids, ",")+"]")
		}
	}
	return extracted{pairs(reads), pairs(writes), strings.Join(ranges, " ")}
}

func theirs(reads, writes, ranges [][]json.RawMessage) extracted {
	rm, wm := map[string]string{}, map[string]string{}
	for _, p := range reads {
		rm[canon(p[0])] = canon(p[1])
	}
	for _, p := range writes {
		wm[canon(p[0])] = canon(p[1])
	}
	var rs []string
	for _, r := range ranges {
		var ids []json.RawMessage
		_ = json.Unmarshal(r[2], &ids)
		var is []string
		for _, id := range ids {
			is = append(is, canon(id))
		}
		rs = append(rs, canon(r[0])+".."+canon(r[1])+"["+strings.Join(is, ",")+"]")
	}
	return extracted{pairs(rm), pairs(wm), strings.Join(rs, " ")}
}

// crossCheck reads dir with this reader and with Viper's parser and
// compares, file by file and transaction by transaction, what each
// extracts, and the initial state. It returns this reader's history, and
// Viper's rejection when its parser rejects the history (its check of
// each transaction's internal reads fails): then there is nothing to
// compare.
func crossCheck(t *testing.T, python, src, dir string) (*history.History, string) {
	t.Helper()
	h, err := ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	v := runViper(t, python, src, dir)
	if v.Reject != nil {
		return h, *v.Reject
	}
	byFile := map[string][]*history.Txn{}
	for i := range h.Txns {
		file, _, _ := strings.Cut(h.Txns[i].ID.S, ":")
		byFile[file] = append(byFile[file], &h.Txns[i])
	}
	compared := 0
	for _, s := range v.Sessions {
		ts := byFile[s.File]
		delete(byFile, s.File)
		j := 0
		for i, vt := range s.Txns {
			if vt.FailedWritesOnly {
				continue // an empty transaction: this reader leaves it out
			}
			if j >= len(ts) {
				t.Fatalf("%s: Viper reads transaction %d, this reader only %d", s.File, i+1, len(ts))
			}
			got, want := ours(h, ts[j]), theirs(vt.Reads, vt.Writes, vt.Ranges)
			if got != want {
				t.Errorf("%s transaction %d (%v): this reader extracts %+v, Viper %+v", s.File, i+1, ts[j].ID, got, want)
			}
			j++
			compared++
		}
		if j != len(ts) {
			t.Errorf("%s: this reader reads %d transactions, Viper %d", s.File, len(ts), j)
		}
	}
	for file := range byFile {
		t.Errorf("%s: this reader reads a session Viper does not", file)
	}
	if v.Initial != nil {
		want := map[string]string{}
		for _, p := range v.Initial {
			want[canon(p[0])] = canon(p[1])
		}
		got := map[string]string{}
		for k, val := range h.Header.Initial.Values {
			got[canonValue(h.Keys[k])] = canonValue(val)
		}
		if pairs(got) != pairs(want) {
			t.Errorf("initial state: this reader %s, Viper %s", pairs(got), pairs(want))
		}
	}
	if compared == 0 {
		t.Fatal("nothing compared")
	}
	return h, ""
}

// writeViper writes h as ViperBench's JsonLogger writes a run (KEY_TYPE 1,
// JSON 1, no timestamps): one J<session>.log per session of committed
// transactions (the logger drops aborted ones), each line {"value":
// [mops]}, and the initial transaction, a range query over every key
// (ViperBench's getInitialTransaction), alone in its own file. A value v
// >= 0 is written v+1, so that no transaction writes 0, the hash of
// nothing, which a null read is written as.
func writeViper(t testing.TB, dir string, h *history.History) {
	t.Helper()
	val := func(v history.Value) string {
		switch {
		case v.IsNull():
			return "0"
		case v.Kind != history.Int:
			t.Fatalf("value %v: ViperBench writes integer hashes", v)
		case v.N >= 0:
			return strconv.FormatInt(v.N+1, 10)
		}
		return strconv.FormatInt(v.N, 10)
	}
	key := func(k history.KeyID) string {
		kv := h.Keys[k]
		if kv.Kind != history.Int {
			t.Fatalf("key %v: ranges need integer keys", kv)
		}
		return strconv.FormatInt(kv.N, 10)
	}
	rows := func(ps []history.KV) string {
		var b strings.Builder
		b.WriteString("[")
		for i, p := range ps {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, `{"id": %s, "sk": %s, "val": %s}`, key(p.Key), key(p.Key), val(p.Value))
		}
		b.WriteString("]")
		return b.String()
	}
	files := map[int32]*strings.Builder{}
	for i := range h.Txns {
		tx := &h.Txns[i]
		if tx.Status != history.Committed {
			continue
		}
		var mops []string
		for _, op := range tx.Ops {
			switch op.Kind {
			case history.Read:
				mops = append(mops, fmt.Sprintf(`["r", %s, %s, false]`, key(op.Key), val(op.Value)))
			case history.Write:
				mops = append(mops, fmt.Sprintf(`["w", %s, %s, true]`, key(op.Key), val(op.Value)))
			case history.Scan:
				hi := `"nil"`
				if !op.Range.HiOpen {
					hi = strconv.FormatInt(op.Range.Hi.N-1, 10)
				}
				for _, p := range op.Range.Pairs {
					if p.Value.IsNull() {
						t.Fatalf("a tombstone in a scan: not ViperBench's")
					}
				}
				mops = append(mops, fmt.Sprintf(`["range", %d, %s, %s, []]`, op.Range.Lo.N, hi, rows(op.Range.Pairs)))
			default:
				t.Fatalf("operation %v: not one ViperBench writes as a register history", op.Kind)
			}
		}
		b := files[tx.Session]
		if b == nil {
			b = &strings.Builder{}
			files[tx.Session] = b
		}
		fmt.Fprintf(b, "{\"value\": [%s]}\n", strings.Join(mops, ", "))
	}
	var init []history.KV
	for k, v := range h.Header.Initial.Values {
		init = append(init, history.KV{Key: k, Value: v})
	}
	slices.SortFunc(init, func(a, b history.KV) int { return history.Compare(h.Keys[a.Key], h.Keys[b.Key]) })
	write(t, dir, "J1000000.log", fmt.Sprintf("{\"value\": [[\"range\", \"nil\", \"nil\", %s, []]], \"isInitial\": true, \"isFinal\": false}\n", rows(init)))
	for s, b := range files {
		write(t, dir, "J"+strconv.Itoa(int(h.Sessions[s].N))+".log", b.String())
	}
}

// TestViperCrossCheck runs Viper's own parser (scripts/viper-extract.py
// over the mirror of Khoury-srg/Viper) on the hand-made directories that
// Viper accepts, and compares each transaction's external reads, writes
// and range queries, and the initial state, with this reader's.
func TestViperCrossCheck(t *testing.T) {
	python, src := viperSource(t)
	for _, dir := range []string{"every", "init"} {
		t.Run(dir, func(t *testing.T) {
			if _, reject := crossCheck(t, python, src, filepath.Join("testdata", dir)); reject != "" {
				t.Fatalf("Viper rejects it: %s", reject)
			}
		})
	}
}

// TestViperGenerated writes isoscope's generated histories as ViperBench
// writes them, reads them back with this reader and with Viper's parser
// (the same transactions), and checks that the history read back has the
// verdicts of the history it came from at six levels: with each plantable
// anomaly (found again where the native history shows it), and from the
// range workloads with and without faults. Where Viper's parser rejects a
// history (a transaction's reads contradict its own earlier reads or
// writes), isoscope finds an anomaly of internal consistency in it at
// snapshot isolation, the level Viper checks.
func TestViperGenerated(t *testing.T) {
	python, src := viperSource(t)
	levels := []string{"serializable", "snapshot-isolation", "causal", "read-atomic", "rc-session", "read-committed"}
	type histCase struct {
		name   string
		h      *history.History
		plant  anomaly.Kind
		plants bool
	}
	var cases []histCase
	for _, k := range gen.PlantableKinds() {
		if k == anomaly.RealTimeViolation {
			continue // ViperBench's instants are milliseconds: not written
		}
		for _, mode := range []gen.Mode{gen.Serial, gen.SnapshotIsolation} {
			h, _, err := gen.Generate(gen.Config{Txns: 60, Sessions: 4, Keys: 8, Dist: workload.Uniform, Mode: mode,
				ReadOnlyRatio: 0.3, Seed: 7, Plant: []anomaly.Kind{k}})
			if err != nil {
				t.Fatal(err)
			}
			cases = append(cases, histCase{fmt.Sprintf("%v-%v", k, mode), h, k, true})
		}
	}
	for seed := range uint64(4) {
		for _, c := range []gen.RangeConfig{
			{Workload: gen.RandomRMWRange, Populate: 0.5},
			{Workload: gen.RandomRMWRange, Populate: 0.5, Fault: 0.05},
			{Workload: gen.BlindW},
			{Workload: gen.BlindW, Fault: 0.05},
		} {
			c.Mode, c.Txns, c.Sessions, c.Keys, c.Seed = []gen.Mode{gen.Serial, gen.SnapshotIsolation}[seed%2], 80, 5, 30, seed
			h, err := gen.GenerateRange(c)
			if err != nil {
				t.Fatal(err)
			}
			cases = append(cases, histCase{fmt.Sprintf("%v-%v-fault%v-%d", c.Workload, c.Mode, c.Fault, seed), h, 0, false})
		}
	}
	internal := []anomaly.Kind{anomaly.FutureRead, anomaly.NotMyLastWrite, anomaly.NotMyOwnWrite, anomaly.NonRepeatableRead}
	violated, rejected, compared := 0, 0, 0
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeViper(t, dir, c.h)
			back, reject := crossCheck(t, python, src, dir)
			if reject == "" {
				compared++
			} else {
				rejected++
			}
			for _, name := range levels {
				l, err := level.Lookup(name)
				if err != nil {
					t.Fatal(err)
				}
				want, err := check.Run(context.Background(), c.h, l, check.Options{})
				if err != nil {
					t.Fatal(err)
				}
				got, err := check.Run(context.Background(), back, l, check.Options{})
				if err != nil {
					t.Fatal(err)
				}
				if got.Outcome != want.Outcome {
					t.Errorf("%s: read back %v (%s), native %v (%s)", name, got.Outcome, kinds(got), want.Outcome, kinds(want))
					continue
				}
				if want.Outcome == check.Violated {
					violated++
				}
				// Viper checks snapshot isolation, which forbids what its
				// parser rejects; the weaker levels may allow it (a
				// non-repeatable read).
				if reject != "" && l.Name == "snapshot-isolation" && !slices.ContainsFunc(got.Anomalies, func(a anomaly.Anomaly) bool { return slices.Contains(internal, a.Kind) }) {
					t.Errorf("%s: Viper rejects the history (%s), isoscope finds no anomaly of internal consistency: %s", name, reject, kinds(got))
				}
				// The planted anomaly is found again where it was (an
				// aborted transaction is not in Viper's logs: a read of its
				// write is a read of a value nobody wrote).
				if c.plants {
					plant := c.plant
					has := func(r check.Result, k anomaly.Kind) bool {
						return slices.ContainsFunc(r.Anomalies, func(a anomaly.Anomaly) bool { return a.Kind == k })
					}
					wantHas := has(want, plant)
					if plant == anomaly.AbortedRead {
						plant = anomaly.ThinAirRead
					}
					if has(got, plant) != wantHas {
						t.Errorf("%s: %v found in the native history %v, in the one read back %v (%s)", name, c.plant, wantHas, has(got, plant), kinds(got))
					}
				}
			}
		})
	}
	t.Logf("%d histories (%d compared with Viper's parser, %d rejected by it), %d violated verdicts compared", len(cases), compared, rejected, violated)
	if violated == 0 {
		t.Error("no violation among the generated histories: the comparison shows nothing")
	}
}

// kinds renders the kinds of anomaly a result found, sorted, without
// repeats.
func kinds(r check.Result) string {
	var out []string
	for _, a := range r.Anomalies {
		if s := a.Kind.String(); !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}
