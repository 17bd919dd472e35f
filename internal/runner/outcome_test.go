package runner

import (
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/db"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/outcome"
)

// TestClassifyAbort sorts the reasons the database adapters give
// (internal/db's dialects) into the classes the plots show.
func TestClassifyAbort(t *testing.T) {
	for _, tc := range []struct {
		class  db.ErrorClass
		reason string
		want   outcome.AbortClass
	}{
		{db.Aborted, "serialization failure (40001)", outcome.SerializationFailure},
		{db.Aborted, "transaction conflict (ErrConflict)", outcome.SerializationFailure},
		{db.Aborted, "record has changed since last read in table 't' (1020)", outcome.SerializationFailure},
		{db.Aborted, "write conflict (9007)", outcome.SerializationFailure},
		{db.Aborted, "deadlock (40P01)", outcome.Deadlock},
		{db.Aborted, "deadlock (1213)", outcome.Deadlock},
		{db.Aborted, "lock wait timeout (1205)", outcome.LockTimeout},
		{db.Aborted, "could not obtain lock on row in relation \"t\" (55P03)", outcome.LockTimeout},
		{db.Aborted, "database busy (SQLITE_BUSY)", outcome.LockTimeout},
		{db.Aborted, "table locked (SQLITE_LOCKED)", outcome.LockTimeout},
		{db.Aborted, "transaction rollback (40003)", outcome.OtherAbort},
		{db.Aborted, "statement timeout (57014)", outcome.OtherAbort},
		{db.Aborted, "statement timeout (1969)", outcome.OtherAbort},
		{db.Aborted, "injected abort", outcome.OtherAbort},
		{db.Disconnected, "connection lost: terminating connection due to administrator command (57P01)", outcome.ConnectionLost},
		{db.Disconnected, "connection lost", outcome.ConnectionLost},
		{db.Interrupted, "interrupted", outcome.Interrupted},
		{db.Failed, "relation \"t\" does not exist (42P01)", outcome.OtherAbort},
		{db.Failed, "serialization failure (40001)", outcome.OtherAbort},
	} {
		if got := ClassifyAbort(tc.class, tc.reason); got != tc.want {
			t.Errorf("ClassifyAbort(%s, %q) = %s, want %s", tc.class, tc.reason, got, tc.want)
		}
	}
}

// checkOutcomes checks that a run's outcomes are its history's
// transactions with the same instants and statuses, in the order they
// ended, none of them ending more than a second after the run's elapsed
// time (the plots' time axis).
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
		if (o.Status == history.Committed) != (o.Abort == outcome.NotAborted) || i > 0 && o.End < res.Outcomes[i-1].End || o.Begin < res.Start ||
			time.Duration(o.End-res.Start) > res.Summary.Elapsed+time.Second {
			t.Fatalf("outcome %d: %+v after %+v (start %d)", i, o, res.Outcomes[max(i-1, 0)], res.Start)
		}
	}
}
