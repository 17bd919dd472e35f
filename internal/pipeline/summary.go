package pipeline

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/runner"
	"github.com/isoscope/isoscope/internal/textfmt"
)

// summarize prints what the run did to standard error, and reports
// whether it was cut short.
func (r *run) summarize(res *runner.Result, version string) bool {
	s := &res.Summary
	w := r.io.Stderr
	plan := r.Plan
	planned := textfmt.Count(s.Planned, "transaction") + " planned"
	switch {
	case r.Endless != nil:
		planned = "for " + r.Duration.String()
	case r.Duration > 0:
		planned += " or " + r.Duration.String()
	}
	r.described = fmt.Sprintf("%s on %s at %s: %s, %s, %d done in %s",
		plan.Config.Workload, version, r.Isolation, textfmt.Count(len(plan.Sessions), "session"), planned, s.Done, s.Elapsed.Round(time.Millisecond))
	r.label = fmt.Sprintf("%s on %s at %s, %s", plan.Config.Workload, version, r.Isolation, textfmt.Count(len(plan.Sessions), "session"))
	fmt.Fprintf(w, "ran %s\n", r.described)
	fmt.Fprintf(w, "  %d committed (%.0f/s), %d aborted (%.1f%%), %d unknown", s.Committed, s.Throughput(), s.Aborted, 100*s.AbortRate(), s.Unknown)
	if s.GaveUp > 0 {
		fmt.Fprintf(w, ", %d given up after %d retries", s.GaveUp, r.Retries)
	}
	if s.Reconnects > 0 {
		fmt.Fprintf(w, ", %s", textfmt.Count(s.Reconnects, "reconnection"))
	}
	fmt.Fprintln(w)
	reasons := make([]string, 0, len(s.Reasons))
	for why := range s.Reasons {
		reasons = append(reasons, why)
	}
	slices.SortFunc(reasons, func(a, b string) int { return s.Reasons[b] - s.Reasons[a] })
	for _, why := range reasons {
		fmt.Fprintf(w, "  %6d %s\n", s.Reasons[why], why)
	}
	for i, o := range s.Outages {
		if i == 5 {
			fmt.Fprintf(w, "  … and %d more %s\n", len(s.Outages)-i, map[bool]string{true: "outage", false: "outages"}[len(s.Outages)-i == 1])
			break
		}
		end := "all reconnected"
		if !o.Recovered {
			end = "not all reconnected"
		}
		fmt.Fprintf(w, "  outage: %s without an answer, %s to %s into the run, %s; %s\n",
			o.Duration().Round(10*time.Millisecond), o.Start.Round(10*time.Millisecond), o.End.Round(10*time.Millisecond), textfmt.Count(o.Sessions, "session"), end)
	}
	printFaults(w, res.Faults, res.Start)
	if res.History != nil {
		faults := ""
		if n := len(res.History.Faults); n > 0 {
			faults = ", " + textfmt.Count(n, "fault")
		}
		n := res.Recorded // forgotten as they went with --online
		if n == 0 {
			n = len(res.History.Txns)
		}
		fmt.Fprintf(w, "history: %s (%s%s)\n", r.Out, textfmt.Count(n, "transaction"), faults)
	}
	if f := s.Foreign; f.Reads > 0 {
		fmt.Fprintf(w, "warning: something outside this run wrote to table %s: %s in %s returned values that none of this run's transactions wrote (first: %s). Another run on the same table, or another program, changed it under this one; the verdict below may blame the database for it. Run alone on a table of its own (--table NAME)\n",
			r.Table, textfmt.Count(f.Reads, "read"), textfmt.Count(f.Txns, "transaction"), f.First)
	}
	cut := s.Interrupted || len(s.Errors) > 0
	switch {
	case s.Interrupted:
		fmt.Fprintf(w, "the run was interrupted: in-flight transactions whose COMMIT was sent are recorded unknown, the others aborted\n")
	case len(s.Errors) > 0:
		var lost *runner.LostError
		for _, err := range s.Errors {
			if errors.As(err, &lost) {
				fmt.Fprintf(w, "the run stopped: the database did not answer again within --reconnect-for %s; the history holds every transaction until then (those whose COMMIT was in flight unknown, the others in flight aborted)\n", r.ReconnectFor)
				break
			}
		}
		fmt.Fprintf(w, "the run stopped early:\n")
		for i, err := range s.Errors {
			if i == 3 {
				fmt.Fprintf(w, "  … and %d more\n", len(s.Errors)-i)
				break
			}
			fmt.Fprintf(w, "  %v\n", err)
		}
	}
	return cut
}

// printFaults lists the faults of a run, with their instants relative to
// its start.
func printFaults(w io.Writer, faults []history.Fault, start int64) {
	if len(faults) == 0 {
		return
	}
	fmt.Fprintf(w, "  %s:\n", textfmt.Count(len(faults), "fault"))
	for _, f := range faults {
		fmt.Fprintf(w, "    %s\n", faultLine(f, start))
	}
}

// faultLine is one fault in words: kind, node, when (relative to start)
// and what the nemesis said of it.
func faultLine(f history.Fault, start int64) string {
	rel := func(ns int64) string { return time.Duration(ns - start).Round(10 * time.Millisecond).String() }
	when := rel(f.Begin) + " into the run"
	if f.End > f.Begin {
		when = fmt.Sprintf("%s to %s into the run", rel(f.Begin), rel(f.End))
	}
	s := f.Label() + ", " + when
	if f.Info != "" {
		s += ": " + f.Info
	}
	return s
}
