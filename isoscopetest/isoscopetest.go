// Package isoscopetest checks histories inside Go tests. RequireLevel
// fails a test whose history does not satisfy an isolation level, with
// the anomalies explained in the failure and an HTML report of them
// written to a directory the failure names:
//
//	rec, _ := isoscope.NewRecorder(isoscope.RecorderOptions{})
//	… run the program under test, recording its transactions …
//	h, err := rec.History()
//	if err != nil {
//		t.Fatal(err)
//	}
//	isoscopetest.RequireLevel(t, h, isoscope.SnapshotIsolation)
package isoscopetest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/isoscope/isoscope"
)

// TB is the part of testing.TB that RequireLevel uses.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// An Option changes how RequireLevel checks.
type Option func(*config)

type config struct {
	options isoscope.Options
	timeout time.Duration
	ctx     context.Context
}

// WithOptions checks with o (the checker, the modules, the
// read-your-own-writes policy, …); its Level is RequireLevel's.
func WithOptions(o isoscope.Options) Option { return func(c *config) { c.options = o } }

// WithTimeout bounds the check; one that runs out fails the test as
// undecided. The default is no bound beyond the context's.
func WithTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// WithContext checks under ctx (the default: context.Background).
func WithContext(ctx context.Context) Option { return func(c *config) { c.ctx = ctx } }

// RequireLevel checks h at level and returns the result when the history
// satisfies it. Otherwise it fails the test with t.Fatalf: for a
// violation, with the anomalies as `isoscope check` explains them and the
// path of an HTML report (index.html in a new temporary directory, left
// for the reader after the test); for a check that could not decide or
// failed, with why.
func RequireLevel(t TB, h *isoscope.History, level isoscope.Level, opts ...Option) *isoscope.Result {
	t.Helper()
	c := config{ctx: context.Background()}
	for _, o := range opts {
		o(&c)
	}
	c.options.Level = level
	ctx := c.ctx
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	res, err := isoscope.Check(ctx, h, c.options)
	if err != nil {
		t.Fatalf("isoscope: checking %v: %v", level, err)
		return nil
	}
	switch res.Outcome {
	case isoscope.Satisfied:
		return res
	case isoscope.Undecided:
		t.Fatalf("isoscope: %v undecided: %s", level, res.Reason)
		return nil
	}
	var text strings.Builder
	if err := res.WriteText(&text); err != nil {
		t.Fatalf("isoscope: the history violates %v; rendering the anomalies: %v", level, err)
		return nil
	}
	t.Fatalf("isoscope: the history violates %v\n%s%s", level, text.String(), report(res))
	return nil
}

// report writes res's HTML report into a new temporary directory and
// says where, or why it could not.
func report(res *isoscope.Result) string {
	dir, err := os.MkdirTemp("", "isoscope-report-")
	if err == nil {
		err = res.WriteReport(dir)
	}
	if err != nil {
		return "HTML report not written: " + err.Error() + "\n"
	}
	return "HTML report: " + filepath.Join(dir, "index.html") + "\n"
}
