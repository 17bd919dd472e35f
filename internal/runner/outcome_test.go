package runner

import (
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/db"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/txnend"
)

// TestClassifyAbort sorts the reasons the database adapters give
// (internal/db's dialects) into the classes the plots show.
func TestClassifyAbort(t *testing.T) {
	for _, tc := range []struct {
		class  db.ErrorClass
		reason string
		want   txnend.AbortClass
	}{
		{db.Aborted, "serialization failure (40001)", txnend.SerializationFailure},
		{db.Aborted, "transaction conflict (ErrConflict)", txnend.SerializationFailure},
		{db.Aborted, "record has changed since last read in table 't' (1020)", txnend.SerializationFailure},
		{db.Aborted, "write conflict (9007)", txnend.SerializationFailure},
		{db.Aborted, "deadlock (40P01)", txnend.Deadlock},
		{db.Aborted, "deadlock (1213)", txnend.Deadlock},
		{db.Aborted, "lock wait timeout (1205)", txnend.LockTimeout},
		{db.Aborted, "could not obtain lock on row in relation \"t\" (55P03)", txnend.LockTimeout},
		{db.Aborted, "database busy (SQLITE_BUSY)", txnend.LockTimeout},
		{db.Aborted, "table locked (SQLITE_LOCKED)", txnend.LockTimeout},
		{db.Aborted, "transaction rollback (40003)", txnend.OtherAbort},
		{db.Aborted, "statement timeout (57014)", txnend.OtherAbort},
		{db.Aborted, "statement timeout (1969)", txnend.OtherAbort},
		{db.Aborted, "injected abort", txnend.OtherAbort},
		{db.Disconnected, "connection lost: terminating connection due to administrator command (57P01)", txnend.ConnectionLost},
		{db.Disconnected, "connection lost", txnend.ConnectionLost},
		{db.Interrupted, "interrupted", txnend.Interrupted},
		{db.Failed, "relation \"t\" does not exist (42P01)", txnend.OtherAbort},
		{db.Failed, "serialization failure (40001)", txnend.OtherAbort},
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
		if (o.Status == history.Committed) != (o.Abort == txnend.NotAborted) || i > 0 && o.End < res.Outcomes[i-1].End || o.Begin < res.Start ||
			time.Duration(o.End-res.Start) > res.Summary.Elapsed+time.Second {
			t.Fatalf("outcome %d: %+v after %+v (start %d)", i, o, res.Outcomes[max(i-1, 0)], res.Start)
		}
	}
}
