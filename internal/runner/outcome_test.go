package runner

import (
	"slices"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/db"
	"github.com/isoscope/isoscope/internal/history"
)

// TestClassifyAbort sorts the reasons the database adapters give
// (internal/db's dialects) into the classes the plots show.
func TestClassifyAbort(t *testing.T) {
	for _, tc := range []struct {
		class  db.ErrorClass
		reason string
		want   AbortClass
	}{
		{db.Aborted, "serialization failure (40001)", SerializationFailure},
		{db.Aborted, "transaction conflict (ErrConflict)", SerializationFailure},
		{db.Aborted, "record has changed since last read in table 't' (1020)", SerializationFailure},
		{db.Aborted, "deadlock (40P01)", Deadlock},
		{db.Aborted, "deadlock (1213)", Deadlock},
		{db.Aborted, "lock wait timeout (1205)", LockTimeout},
		{db.Aborted, "could not obtain lock on row in relation \"t\" (55P03)", LockTimeout},
		{db.Aborted, "database busy (SQLITE_BUSY)", LockTimeout},
		{db.Aborted, "table locked (SQLITE_LOCKED)", LockTimeout},
		{db.Aborted, "transaction rollback (40003)", OtherAbort},
		{db.Aborted, "statement timeout (57014)", OtherAbort},
		{db.Aborted, "statement timeout (1969)", OtherAbort},
		{db.Aborted, "injected abort", OtherAbort},
		{db.Disconnected, "connection lost: terminating connection due to administrator command (57P01)", ConnectionLost},
		{db.Disconnected, "connection lost", ConnectionLost},
		{db.Interrupted, "interrupted", Interrupted},
		{db.Failed, "relation \"t\" does not exist (42P01)", OtherAbort},
		{db.Failed, "serialization failure (40001)", OtherAbort},
	} {
		if got := ClassifyAbort(tc.class, tc.reason); got != tc.want {
			t.Errorf("ClassifyAbort(%s, %q) = %s, want %s", tc.class, tc.reason, got, tc.want)
		}
	}
	var names []string
	for _, c := range AbortClasses {
		names = append(names, c.String())
	}
	if want := []string{"serialization failure", "deadlock", "lock timeout", "connection lost", "no answer", "interrupted", "other"}; !slices.Equal(names, want) {
		t.Errorf("classes %q", names)
	}
}

// checkOutcomes checks that a run's outcomes are its history's
// transactions with the same instants and statuses, in the order they
// ended, and that PlotData hands them on relative to the start.
func checkOutcomes(t *testing.T, res *Result, h *history.History) {
	t.Helper()
	if len(res.Outcomes) != len(h.Txns) {
		t.Fatalf("%d outcomes, %d transactions", len(res.Outcomes), len(h.Txns))
	}
	type key struct {
		begin, end int64
		status     history.Status
	}
	want := map[key]int{}
	for i := range h.Txns {
		want[key{h.Txns[i].Begin, h.Txns[i].End, h.Txns[i].Status}]++
	}
	for i, o := range res.Outcomes {
		if want[key{o.Begin, o.End, o.Status}]--; want[key{o.Begin, o.End, o.Status}] < 0 {
			t.Fatalf("outcome %d %+v is no transaction of the history", i, o)
		}
		if (o.Status == history.Committed) != (o.Abort == NotAborted) || i > 0 && o.End < res.Outcomes[i-1].End || o.Begin < res.Start {
			t.Fatalf("outcome %d: %+v after %+v (start %d)", i, o, res.Outcomes[max(i-1, 0)], res.Start)
		}
	}
	pd := res.PlotData("label")
	if pd.Label != "label" || pd.Elapsed != res.Summary.Elapsed || len(pd.Txns) != len(res.Outcomes) || len(pd.Reasons) != len(AbortClasses) {
		t.Fatalf("plot data %+v", pd)
	}
	for i, pt := range pd.Txns {
		o := res.Outcomes[i]
		if pt.Begin != time.Duration(o.Begin-res.Start) || pt.End > pd.Elapsed+time.Second || pt.Status != o.Status ||
			(o.Status == history.Committed) != (pt.Reason == "") || o.Status != history.Committed && pt.Reason != o.Abort.String() {
			t.Fatalf("plot transaction %d: %+v from %+v", i, pt, o)
		}
	}
}
