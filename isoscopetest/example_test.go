package isoscopetest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/isoscope/isoscope"
	"github.com/isoscope/isoscope/isoscopetest"
)

// failure stands for a test's *testing.T: it prints what Fatalf says.
type failure struct{ msg string }

func (*failure) Helper() {}

func (f *failure) Fatalf(format string, args ...any) { f.msg = fmt.Sprintf(format, args...) }

// A test records two transactions that both read a counter at 0 and both
// write 1: a lost update. RequireLevel passes at read committed and fails
// the test at snapshot isolation, explaining the anomaly and naming the
// HTML report it wrote.
func ExampleRequireLevel() {
	rec, err := isoscope.NewRecorder(isoscope.RecorderOptions{Initial: []isoscope.KV{{Key: isoscope.Str("counter"), Value: isoscope.Int(0)}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	a, b := rec.Begin(isoscope.Str("a")), rec.Begin(isoscope.Str("b"))
	a.Read(isoscope.Str("counter"), isoscope.Int(0))
	b.Read(isoscope.Str("counter"), isoscope.Int(0))
	a.Write(isoscope.Str("counter"), isoscope.Int(1))
	b.Write(isoscope.Str("counter"), isoscope.Int(1))
	if err := a.Commit(); err != nil {
		fmt.Println(err)
	}
	if err := b.Commit(); err != nil {
		fmt.Println(err)
	}
	h, err := rec.History()
	if err != nil {
		fmt.Println(err)
		return
	}

	t := &failure{}
	isoscopetest.RequireLevel(t, h, isoscope.ReadCommitted)
	fmt.Printf("read committed: failed=%v\n", t.msg != "")

	isoscopetest.RequireLevel(t, h, isoscope.SnapshotIsolation)
	lines := strings.Split(strings.TrimSpace(t.msg), "\n")
	fmt.Println(lines[0])
	fmt.Println(lines[1])
	fmt.Println(lines[3])
	page, _ := strings.CutPrefix(lines[len(lines)-1], "HTML report: ")
	_, err = os.Stat(page)
	fmt.Println(filepath.Base(page), err == nil)
	_ = os.RemoveAll(filepath.Dir(page))
	// Output:
	// read committed: failed=false
	// isoscope: the history violates snapshot-isolation
	// snapshot-isolation VIOLATED: 1 anomaly (checker sat; 2 transactions, 2 committed, 2 sessions, 4 operations; 0.00 ms)
	// lost-update [G-single]: 1
	// index.html true
}
