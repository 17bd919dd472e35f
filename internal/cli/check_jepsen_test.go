package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// casRegister is a knossos cas-register history of the model
// (cas-register 0): the register starts at 0, and a compare-and-set from
// 0 succeeds at once.
const casRegister = `[{:process 0, :type :invoke, :f :cas, :value [0 4]}
 {:process 0, :type :ok, :f :cas, :value [0 4]}
 {:process 1, :type :invoke, :f :read, :value nil}
 {:process 1, :type :ok, :f :read, :value 4}]`

// TestInitialValue: with --initial-value 0 the register starts at 0, and
// the history is linearizable; without, the compare-and-set reads 0 from
// thin air. The flag refuses a list-append history and a value that is no
// EDN value.
func TestInitialValue(t *testing.T) {
	dir := t.TempDir()
	reg := filepath.Join(dir, "cas.edn")
	if err := os.WriteFile(reg, []byte(casRegister), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := run(t, "", "check", reg); code != ExitViolation || !strings.Contains(out, "thin-air-read") {
		t.Errorf("without --initial-value: exit %d, %s%s; want 1 and a thin-air read", code, out, errs)
	}
	if code, out, errs := run(t, "", "check", "--initial-value", "0", reg); code != ExitHolds {
		t.Errorf("--initial-value 0: exit %d, %s%s; want 0", code, out, errs)
	}
	if code, out, _ := run(t, "", "check", "--initial-value", `"0"`, reg); code != ExitViolation {
		t.Errorf(`--initial-value "0" (a string, not the integer the history writes): exit %d, %s; want 1`, code, out)
	}
	list := filepath.Join(dir, "list.edn")
	if err := os.WriteFile(list, []byte("{:type :ok, :process 0, :value [[:append 1 1]]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ value, file, want string }{
		{"0", list, "list-append"},
		{`"0`, reg, "not an EDN value"},
		{"nil", reg, "registers start absent"},
	} {
		if code, _, errs := run(t, "", "check", "--initial-value", c.value, c.file); code != ExitBadInput || !strings.Contains(errs, c.want) {
			t.Errorf("--initial-value %s %s: exit %d, %s; want 2 and %q", c.value, filepath.Base(c.file), code, errs, c.want)
		}
	}
}

// independentRegisters is a jepsen.independent register history after a
// nemesis's operation: key 2 reads a value nobody wrote, keys 1 and 3 are
// linearizable.
const independentRegisters = `{:type :info, :process :nemesis, :f :start}
{:type :info, :process :nemesis, :f :start, :value :partitioned}
{:type :invoke, :process 0, :f :write, :value [1 3]}
{:type :ok, :process 0, :f :write, :value [1 3]}
{:type :invoke, :process 1, :f :read, :value [2 nil]}
{:type :ok, :process 1, :f :read, :value [2 9]}
{:type :invoke, :process 2, :f :cas, :value [3 [nil 1]]}
{:type :ok, :process 2, :f :cas, :value [3 [nil 1]]}
{:type :invoke, :process 3, :f :read, :value [1 nil]}
{:type :info, :process 3, :f :read, :value [1 nil]}
`

// TestIndependentOutput: a verdict per key and one together, in text and
// JSON, and the operations the reader left out.
func TestIndependentOutput(t *testing.T) {
	path := filepath.Join(t.TempDir(), "independent.edn")
	if err := os.WriteFile(path, []byte(independentRegisters), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "", "check", path)
	for _, want := range []string{
		"strict-serializable VIOLATED: 1 anomaly",
		"operations the reader left out: 1 of no effect (a read not completed, a compare-and-set failed)",
		"independent keys: 3: 2 hold, 1 VIOLATED, 0 UNKNOWN",
		"  key 2: VIOLATED (lwt; 1 transaction): thin-air-read 1",
		"faults recorded in the history: 1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s%s", want, out, errs)
		}
	}
	if code != ExitViolation {
		t.Errorf("exit %d, want 1", code)
	}
	_, out, _ = run(t, "", "check", "--json", path)
	var doc struct {
		Outcome string `json:"outcome"`
		Keys    []struct {
			Key       json.RawMessage `json:"key"`
			Outcome   string          `json:"outcome"`
			Anomalies int             `json:"anomalies"`
		} `json:"keys"`
		Skipped map[string]int `json:"skipped"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var got []string
	for _, k := range doc.Keys {
		got = append(got, string(k.Key)+" "+k.Outcome)
	}
	if doc.Outcome != "violation" || strings.Join(got, ", ") != "1 satisfied, 2 violation, 3 satisfied" || len(doc.Skipped) != 1 {
		t.Errorf("JSON: outcome %s, keys %v, skipped %v", doc.Outcome, got, doc.Skipped)
	}
}

// TestKnossosNilReads: --knossos-nil-reads takes a register read of nil
// as Knossos does, a read of any value; it refuses a history that is not
// a knossos register history.
func TestKnossosNilReads(t *testing.T) {
	dir := t.TempDir()
	reg := filepath.Join(dir, "stale.edn")
	stale := `[{:process 0, :type :invoke, :f :write, :value 1}
 {:process 0, :type :ok, :f :write, :value 1}
 {:process 1, :type :invoke, :f :read, :value nil}
 {:process 1, :type :ok, :f :read, :value nil}]`
	if err := os.WriteFile(reg, []byte(stale), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := run(t, "", "check", reg); code != ExitViolation {
		t.Errorf("a read of nil after a completed write: exit %d, %s; want 1", code, out)
	}
	if code, out, errs := run(t, "", "check", "--knossos-nil-reads", reg); code != ExitHolds ||
		!strings.Contains(out, "operations the reader left out: 1 reads of nil taken as Knossos takes them, as reads of any value") {
		t.Errorf("--knossos-nil-reads: exit %d, %s%s; want 0 and the read counted", code, out, errs)
	}
	txn := filepath.Join(dir, "txn.edn")
	if err := os.WriteFile(txn, []byte("{:type :ok, :process 0, :value [[:r 1 nil]]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := run(t, "", "check", "--knossos-nil-reads", txn); code != ExitBadInput || !strings.Contains(errs, "not a knossos register history") {
		t.Errorf("--knossos-nil-reads on transactions: exit %d, %s; want 2", code, errs)
	}
}

// TestConvertRefusesIndependent: no output format records a history's
// independent keys, so convert refuses it rather than change its verdict.
func TestConvertRefusesIndependent(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "independent.edn")
	if err := os.WriteFile(in, []byte(independentRegisters), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := run(t, "", "convert", in, filepath.Join(dir, "out.jsonl"))
	if code != ExitBadInput || !strings.Contains(errs, "a history of 3 independent keys (jepsen.independent)") {
		t.Errorf("exit %d, %s; want 2", code, errs)
	}
}
