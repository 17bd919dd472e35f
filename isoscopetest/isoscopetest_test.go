package isoscopetest_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/isoscope/isoscope"
	"github.com/isoscope/isoscope/isoscopetest"
)

// writeSkew is two transactions that each read both x and y and write
// the other: allowed by snapshot isolation, not by serializability.
func writeSkew(t *testing.T) *isoscope.History {
	t.Helper()
	x, y := isoscope.Str("x"), isoscope.Str("y")
	h, err := isoscope.NewHistory([]isoscope.Txn{
		{Session: isoscope.Int(1), Ops: []isoscope.Op{isoscope.R(x, isoscope.Int(0)), isoscope.R(y, isoscope.Int(0)), isoscope.W(x, isoscope.Int(1))}},
		{Session: isoscope.Int(2), Ops: []isoscope.Op{isoscope.R(x, isoscope.Int(0)), isoscope.R(y, isoscope.Int(0)), isoscope.W(y, isoscope.Int(2))}},
	}, isoscope.KV{Key: x, Value: isoscope.Int(0)}, isoscope.KV{Key: y, Value: isoscope.Int(0)})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestRequireLevel: a history that satisfies the level passes and gives
// the result; one that violates it fails the test with the anomaly's
// explanation and the path of a report directory holding the page and the
// JSON result; a check that cannot run fails the test with its error, and
// one interrupted with why it is undecided.
func TestRequireLevel(t *testing.T) {
	h := writeSkew(t)
	f := &failure{}
	if res := isoscopetest.RequireLevel(f, h, isoscope.SnapshotIsolation); f.msg != "" || res == nil || res.Outcome != isoscope.Satisfied {
		t.Fatalf("snapshot isolation: failed with %q, result %+v", f.msg, res)
	}

	want, err := isoscope.Check(context.Background(), h, isoscope.Options{Level: isoscope.Serializable})
	if err != nil || want.Outcome != isoscope.Violated {
		t.Fatalf("%v %v", want, err)
	}
	if res := isoscopetest.RequireLevel(f, h, isoscope.Serializable); res != nil {
		t.Fatal("a violation gave a result")
	}
	if !strings.Contains(f.msg, "violates serializable") || !strings.Contains(f.msg, want.Anomalies[0].Explanation) {
		t.Fatalf("the failure does not explain the anomaly (%q):\n%s", want.Anomalies[0].Explanation, f.msg)
	}
	lines := strings.Split(strings.TrimSpace(f.msg), "\n")
	page, ok := strings.CutPrefix(lines[len(lines)-1], "HTML report: ")
	if !ok {
		t.Fatalf("the failure names no report:\n%s", f.msg)
	}
	dir := filepath.Dir(page)
	defer os.RemoveAll(dir)
	for _, name := range []string{"index.html", "result.json"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), string(want.Anomalies[0].Kind)) {
			t.Fatalf("%s does not name the anomaly %s", name, want.Anomalies[0].Kind)
		}
	}

	f = &failure{}
	isoscopetest.RequireLevel(f, h, isoscope.Level(200))
	if !strings.Contains(f.msg, "unknown level") {
		t.Fatalf("an unknown level: %q", f.msg)
	}

	f = &failure{}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	isoscopetest.RequireLevel(f, h, isoscope.Serializable, isoscopetest.WithContext(ctx), isoscopetest.WithOptions(isoscope.Options{Checker: isoscope.SAT}))
	if !strings.Contains(f.msg, "serializable undecided: interrupted") {
		t.Fatalf("a cancelled check: %q", f.msg)
	}
}
