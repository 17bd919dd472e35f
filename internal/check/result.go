package check

import (
	"fmt"
	"strconv"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// Outcome is a verdict.
type Outcome uint8

// The outcomes of the CLI contract, named as the public package names
// its Outcome's values.
const (
	// Satisfied: the history satisfies the level.
	Satisfied Outcome = iota
	// Violated: at least one anomaly the level proscribes was found.
	Violated
	// Undecided: no verdict (timeout or resource limit), no violation so
	// far.
	Undecided
)

// String is the outcome's name in the JSON result.
func (o Outcome) String() string {
	switch o {
	case Satisfied:
		return "satisfied"
	case Violated:
		return "violation"
	case Undecided:
		return "unknown"
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}

// ParseOutcome returns the outcome named s, as String names it.
func ParseOutcome(s string) (Outcome, bool) {
	for _, o := range []Outcome{Satisfied, Violated, Undecided} {
		if o.String() == s {
			return o, true
		}
	}
	return 0, false
}

// Result is what a check found.
type Result struct {
	Level   level.Level
	Outcome Outcome
	// Checker is the name of the algorithm that decided.
	Checker string
	Stats   history.Stats
	// Anomalies are every anomaly found that the level proscribes: all of
	// the shared checks' findings, and one cycle per violating strongly
	// connected component.
	Anomalies []anomaly.Anomaly
	// Holds lists weaker levels the history was also checked against and
	// satisfies, strongest first, when the level is violated.
	Holds []level.Level
	// Reason says why the outcome is Unknown.
	Reason string
	// Caveat says, when the checker could not be complete for this
	// history, what it may have missed.
	Caveat string
	// OwnReads is the read-your-own-writes policy the check followed, and
	// OwnReadsEvidence, when the policy was inferred from the history,
	// what the history showed.
	OwnReads         history.OwnReads
	OwnReadsEvidence *history.OwnReadsEvidence
	// Modules names the modules the check ran, in order (InnoDBModule for
	// the InnoDB repeatable-read model).
	Modules []string
	// CheckedAt is the level the history was really checked at when that
	// is not Level (nil otherwise), and Note says why a violation found
	// there is one of Level (an Unknown outcome's Reason says why Level
	// could not be decided). Strict
	// serializability of a history whose transactions lack begin and end
	// instants is checked at serializability: a violation of it is a
	// violation of strict serializability; if it holds, the outcome is
	// Unknown.
	CheckedAt *level.Level
	Note      string
	// Parts is the verdict on each independent history of a history made
	// of several (history.History.Parts), in their order; the outcome and
	// the anomalies above are theirs together. Nil for one history.
	Parts []PartResult
	// Index is the index the check read the history through (with
	// OwnReads), for what is derived from the result afterwards (the
	// evidence of each edge); nil when the check stopped before it was
	// built.
	Index *history.Index
}

// UnsupportedError says that no checker, or not the named one, can decide
// a history at a level.
type UnsupportedError struct {
	Checker string
	Level   level.Level
	Why     []string
}

func (e *UnsupportedError) Error() string {
	if e.Checker != "" && len(e.Why) == 1 {
		return fmt.Sprintf("checker %s cannot decide %s for this history: %s", e.Checker, e.Level.Name, e.Why[0])
	}
	msg := fmt.Sprintf("no checker can decide %s for this history yet", e.Level.Name)
	for _, w := range e.Why {
		msg += "\n  " + w
	}
	return msg
}
