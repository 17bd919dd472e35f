package pipeline

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/db"
	"github.com/isoscope/isoscope/internal/level"
	"github.com/isoscope/isoscope/internal/report"
	"github.com/isoscope/isoscope/internal/textfmt"
)

// InnoDBVerdict is the verdict of a run's history under InnoDB's
// repeatable read (check --level rr --module innodb-rr), computed when a
// run at REPEATABLE READ on a MySQL-protocol database violated the level
// it was checked at: it says whether the database's REPEATABLE READ, as
// InnoDB defines it, allows what was found. The run's JSON result carries
// it as "innodb_rr".
type InnoDBVerdict struct {
	// Outcome is the check's outcome: satisfied (InnoDB's repeatable read
	// allows every anomaly found), violation, or unknown.
	Outcome string `json:"outcome"`
	// Anomalies counts what the check found under innodb-rr.
	Anomalies int `json:"anomalies"`
	// Reason says why the outcome is unknown.
	Reason string `json:"reason,omitempty"`
	// Command is the command that checks the history so.
	Command string `json:"command"`
	// Note says what the outcome means, in a sentence.
	Note string `json:"note"`
}

// InnoDBApplies reports whether a run's verdict calls for the InnoDB
// check: a MySQL-protocol database at REPEATABLE READ, the history
// checked at another model than innodb-rr, and a violation found.
func InnoDBApplies(kind db.Kind, iso db.Isolation, model check.Options, r *check.Result) bool {
	return kind == db.MySQL && iso == db.RepeatableRead && !model.InnoDBRR && r.Outcome == check.Violated
}

// CheckInnoDB checks the run's history at repeatable read with the
// innodb-rr module, under the run's other model flags and its time
// limit, and says what that means for the violation found at checked.
func CheckInnoDB(ctx context.Context, c *report.Checked, opts check.Options, product string, checked level.Level) *InnoDBVerdict {
	rr, err := level.Lookup("rr")
	v := &InnoDBVerdict{Command: "isoscope check --level rr --module " + check.InnoDBRRModule + " " + shellWord(c.File)}
	if err == nil {
		opts.InnoDBRR, opts.Holds = true, false
		var res check.Result
		if res, err = check.Run(ctx, c.History, rr, opts); err == nil {
			v.Outcome, v.Anomalies, v.Reason = res.Outcome.String(), len(res.Anomalies), res.Reason
		}
	}
	if err != nil {
		v.Outcome, v.Reason = check.Undecided.String(), err.Error()
	}
	switch v.Outcome {
	case check.Satisfied.String():
		v.Note = fmt.Sprintf("%s runs REPEATABLE READ as InnoDB does, weaker than %s: InnoDB's REPEATABLE READ allows exactly these anomalies (its reads see the transaction's first snapshot, its writes and locking reads the latest committed rows), and this history holds under it",
			product, checked.Name)
	case check.Violated.String():
		v.Note = fmt.Sprintf("this history violates even InnoDB's REPEATABLE READ, which %s says it runs: %s that InnoDB's own model does not allow either",
			product, textfmt.Count(v.Anomalies, "anomaly"))
	default:
		v.Note = "whether InnoDB's REPEATABLE READ allows these anomalies was not decided: " + v.Reason
	}
	return v
}

// printInnoDB writes the verdict under InnoDB's repeatable read after the
// text verdict.
func printInnoDB(w io.Writer, v *InnoDBVerdict) {
	fmt.Fprintf(w, "\nInnoDB's repeatable read: %s\n  %s\n  see: %s\n", map[string]string{
		check.Satisfied.String(): "holds", check.Violated.String(): "VIOLATED", check.Undecided.String(): "unknown",
	}[v.Outcome], v.Note, v.Command)
}

// Document is run's JSON result: check's, and the verdict under
// InnoDB's repeatable read when it was computed.
type Document struct {
	*report.Document
	InnoDBRR *InnoDBVerdict `json:"innodb_rr,omitempty"`
}

// shellWord quotes s for a POSIX shell when it needs quoting.
func shellWord(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=+,@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
