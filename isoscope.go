// Package isoscope checks whether a history of database transactions
// satisfies an isolation level, for programs that embed the checker. It is a
// thin layer over the command's own machinery: read a history, check it at
// a level, and get the result in the shape of the CLI's JSON output.
//
//	h, err := isoscope.ReadHistory(file, "history.jsonl")
//	res, err := isoscope.Check(ctx, h, isoscope.Options{Level: "si"})
//	if res.Outcome == "violation" { … res.Anomalies[0].Explanation … }
package isoscope

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/format"
	"github.com/isoscope/isoscope/internal/format/native"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
	"github.com/isoscope/isoscope/internal/report"
)

// History is a history read by ReadHistory or ParseNotation.
type History struct {
	h *history.History
}

// Stats counts a history's transactions, sessions, operations and keys.
type Stats = history.Stats

// Stats counts what the history holds.
func (h *History) Stats() Stats { return h.h.Stats() }

// ReadHistory reads a history in the isoscope JSON Lines format (gzip
// allowed) from r; name is used in error messages. Bad input gives an error
// naming the line and the field.
func ReadHistory(r io.Reader, name string) (*History, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	prefix, _ := br.Peek(64 << 10)
	if f := format.Detect(prefix); f != "isoscope" {
		return nil, fmt.Errorf("%s: not an isoscope history", name)
	}
	h, err := native.Read(br, name)
	if err != nil {
		return nil, err
	}
	return &History{h: h}, nil
}

// ParseNotation builds a history from the one-line notation of isoscope's
// tests, e.g. "init: x=0 | s1: r x 0 w x 1 | s2: r x 0 w x 2".
func ParseNotation(s string) (*History, error) {
	h, err := history.Parse(s)
	if err != nil {
		return nil, err
	}
	return &History{h: h}, nil
}

// Options choose what to check.
type Options struct {
	// Level is an isolation level name or short form ("ser", "si",
	// "strict-serializable", "rc", …); empty means serializable.
	Level string
	// Checker is "auto" (or empty) or an algorithm's name ("mt", "lwt",
	// "dsg").
	Checker string
	// WeakerLevels asks, on a violation, which weaker levels still hold.
	WeakerLevels bool
}

// Result is the outcome of a check, in the shape of the CLI's JSON result:
// Outcome is "satisfied", "violation" or "unknown".
type Result = report.Document

// Anomaly is one finding of a Result.
type Anomaly = report.Finding

// Edge is one dependency of an anomaly's cycle.
type Edge = report.Edge

// Check checks h against the level in o. It returns an error for an
// unknown level or checker, or when no algorithm can decide this history
// at this level; a context that ends gives outcome "unknown".
func Check(ctx context.Context, h *History, o Options) (*Result, error) {
	name := o.Level
	if name == "" {
		name = "ser"
	}
	l, err := level.Lookup(name)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	res, err := check.Run(ctx, h.h, l, check.Options{Checker: o.Checker, Holds: o.WeakerLevels})
	if err != nil {
		return nil, err
	}
	return report.NewDocument(&report.Checked{History: h.h, Result: res, Elapsed: time.Since(start)}, false), nil
}
