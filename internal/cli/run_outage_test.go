package cli

import (
	"context"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/pipeline"
	"github.com/isoscope/isoscope/internal/testservice"
)

// The outage tests put a proxy (testservice.Proxy, on a free loopback port)
// between `isoscope run` and the database and make it fail in the middle
// of the run: a stall (connections open, nothing forwarded) or a cut
// (connections closed, new ones refused). Figures are CI-sized: statements
// time out after 1 s (so a session gives up on an answer after 1.5 s), a
// stall lasts 3 s, a cut that is ridden through 2 s, and a cut that is not
// 6 s against --reconnect-for 3s.
const (
	outageStmtTimeout = "1s"
	outageStall       = 3 * time.Second
	outageCut         = 2 * time.Second
	outageLongCut     = 6 * time.Second
	outageBound       = 3 * time.Second
)

// outageRun is what runThroughOutage saw.
type outageRun struct {
	code      int
	out, errs string
	h         *history.History
	// faultAt is when the fault began, end when the run returned.
	faultAt, end time.Time
}

// runThroughOutage runs mini-transactions at SERIALIZABLE on the database
// at addr through a proxy, and calls fault on the proxy once 300
// transactions are recorded. The run is bounded: it is interrupted after
// 40 s if it has not ended by then.
func runThroughOutage(t *testing.T, addr string, fault func(*testservice.Proxy), args ...string) outageRun {
	t.Helper()
	proxy, via := testservice.NewProxy(t, addr)
	table := testservice.Table()
	dropAfter(t, addr, table)
	file := filepath.Join(t.TempDir(), "outage.jsonl")
	faulted := make(chan time.Time, 1)
	c := &runCommand{hooks: pipeline.Hooks{Recorded: func(n int) {
		if n == 300 {
			faulted <- time.Now()
			fault(proxy)
		}
	}}}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	args = append([]string{"--db", via, "--table", table, "--sessions", "6", "--keys", "100", "--txns", "1500",
		"--stmt-timeout", outageStmtTimeout, "-o", file}, args...)
	var r outageRun
	r.code, r.out, r.errs = runRunWith(t, ctx, c, args...)
	r.end = time.Now()
	// The server's backends of stalled connections hold their locks
	// until the proxy lets go of them: before the table is dropped.
	proxy.Cut()
	t.Logf("exit %d\n%s%s", r.code, r.errs, r.out)
	if ctx.Err() != nil {
		t.Fatalf("the run hung: interrupted after 40 s")
	}
	select {
	case r.faultAt = <-faulted:
	default:
		t.Fatalf("the run ended before the fault")
	}
	r.h = readHistoryFile(t, file)
	return r
}

// outageLine matches the summary's line for one outage.
var outageLine = regexp.MustCompile(`outage: (\S+) without an answer, \S+ to \S+ into the run, (\d+) sessions; (all|not all) reconnected`)

// outages returns the outages the summary shows: how long each lasted,
// and whether every session reconnected.
func outages(t *testing.T, errs string) (lasted []time.Duration, recovered []bool) {
	t.Helper()
	for _, m := range outageLine.FindAllStringSubmatch(errs, -1) {
		d, err := time.ParseDuration(m[1])
		if err != nil {
			t.Fatalf("outage line %q: %v", m[0], err)
		}
		if n, _ := strconv.Atoi(m[2]); n < 1 || n > 6 {
			t.Errorf("outage line %q: %d sessions", m[0], n)
		}
		lasted, recovered = append(lasted, d), append(recovered, m[3] == "all")
	}
	return lasted, recovered
}

// checkRodeThrough checks a run that rode through an outage of at least
// gap: it finished its plan, the history holds at SERIALIZABLE (unknown
// transactions included), the summary shows the outage and its length,
// and transactions committed after the outage ended.
func checkRodeThrough(t *testing.T, r outageRun, gap time.Duration) {
	t.Helper()
	if r.code != ExitHolds || !strings.Contains(r.out, "serializable holds") {
		t.Fatalf("exit %d, want %d with serializable holding\nstdout %s\nstderr %s", r.code, ExitHolds, r.out, r.errs)
	}
	if !strings.Contains(r.errs, "1500 transactions planned, 1500 done") || strings.Contains(r.errs, "stopped") {
		t.Errorf("the run did not finish its plan:\n%s", r.errs)
	}
	if !strings.Contains(r.errs, "lost the database: ") || !strings.Contains(r.errs, "the database answers again") {
		t.Errorf("the outage was not shown as it happened:\n%s", r.errs)
	}
	// One outage of at least gap, every session back after it. (A
	// statement slow enough on a loaded machine to get no answer in
	// 1.5 s would add a short outage of its own.)
	lasted, recovered := outages(t, r.errs)
	long := 0
	for i, d := range lasted {
		if !recovered[i] {
			t.Errorf("outage %d of %v: not every session reconnected", i, d)
		}
		// (An answer already through the proxy when the fault began
		// may reach the session a moment later.)
		if d >= gap-100*time.Millisecond {
			long++
			if d > gap+5*time.Second {
				t.Errorf("outage %d lasted %v, for a fault of %v", i, d, gap)
			}
		}
	}
	if long != 1 {
		t.Errorf("outages %v, want one of about %s or more:\n%s", lasted, gap, r.errs)
	}
	st := r.h.Stats()
	after := 0
	back := r.faultAt.Add(gap).UnixNano()
	for i := range r.h.Txns {
		if tx := &r.h.Txns[i]; tx.Status == history.Committed && tx.Begin > back {
			after++
		}
	}
	if after < 100 {
		t.Errorf("%d transactions committed after the outage", after)
	}
	t.Logf("%d committed (%d after the outage), %d aborted, %d unknown; %d sessions in the history", st.Committed, after, st.Aborted, st.Unknown, len(r.h.Sessions))
}

// TestRunRidesThroughPostgresStall stalls PostgreSQL for 3 s in the middle
// of a serializable run: statements get no answer, the sessions give up on
// them after 1.5 s (aborted, or unknown if they were COMMITs), reconnect
// once the database answers again, and finish the plan; the summary shows
// the outage, and the history — unknown transactions included — is
// serializable. Before timeouts, the run hung until interrupted.
func TestRunRidesThroughPostgresStall(t *testing.T) {
	r := runThroughOutage(t, testservice.Postgres(t), func(p *testservice.Proxy) { p.Stall(outageStall) })
	checkRodeThrough(t, r, outageStall)
	if !strings.Contains(r.errs, "no answer within 1.5s") {
		t.Errorf("no statement reported without an answer:\n%s", r.errs)
	}
}

// TestRunRidesThroughPostgresRestart cuts PostgreSQL off for 2 s (every
// connection closed, new ones refused) in the middle of a serializable
// run: the sessions reconnect with back-off until it is back and finish
// the plan. Before back-off, the run gave up after 1.3 s.
func TestRunRidesThroughPostgresRestart(t *testing.T) {
	r := runThroughOutage(t, testservice.Postgres(t), func(p *testservice.Proxy) { p.CutFor(outageCut) })
	checkRodeThrough(t, r, outageCut)
}

// TestRunRidesThroughMariaDBStall is TestRunRidesThroughPostgresStall on
// MariaDB (max_statement_time, go-sql-driver's timeouts).
func TestRunRidesThroughMariaDBStall(t *testing.T) {
	r := runThroughOutage(t, testservice.MySQL(t), func(p *testservice.Proxy) { p.Stall(outageStall) })
	checkRodeThrough(t, r, outageStall)
	if !strings.Contains(r.errs, "no answer within 1.5s") {
		t.Errorf("no statement reported without an answer:\n%s", r.errs)
	}
}

// TestRunRidesThroughMariaDBRestart is TestRunRidesThroughPostgresRestart
// on MariaDB.
func TestRunRidesThroughMariaDBRestart(t *testing.T) {
	r := runThroughOutage(t, testservice.MySQL(t), func(p *testservice.Proxy) { p.CutFor(outageCut) })
	checkRodeThrough(t, r, outageCut)
}

// TestRunStopsAfterReconnectFor cuts PostgreSQL off for 6 s with
// --reconnect-for 3s: the sessions seek it for 3 s, then the run stops
// with the reason on standard error, writes the history it has, checks it
// (serializable, unknown transactions included) and exits 3, undecided.
func TestRunStopsAfterReconnectFor(t *testing.T) {
	r := runThroughOutage(t, testservice.Postgres(t), func(p *testservice.Proxy) { p.CutFor(outageLongCut) },
		"--reconnect-for", outageBound.String())
	if r.code != ExitUnknown || !strings.Contains(r.out, "serializable holds") {
		t.Fatalf("exit %d, want %d with serializable holding in what was recorded\nstdout %s\nstderr %s", r.code, ExitUnknown, r.out, r.errs)
	}
	for _, want := range []string{
		"the run stopped: the database did not answer again within --reconnect-for 3s",
		"could not reconnect within 3s: ", "connection refused",
	} {
		if !strings.Contains(r.errs, want) {
			t.Errorf("standard error has no %q:\n%s", want, r.errs)
		}
	}
	// It sought the database for the bound, and no longer than the cut.
	if took := r.end.Sub(r.faultAt); took < outageBound || took > outageLongCut {
		t.Errorf("the run ended %v after the cut, want between %v and %v", took, outageBound, outageLongCut)
	}
	if lasted, recovered := outages(t, r.errs); len(lasted) == 0 || recovered[len(lasted)-1] || lasted[len(lasted)-1] < outageBound {
		t.Errorf("outages %v (recovered %v), want the last of at least %s, not recovered", lasted, recovered, outageBound)
	}
	if st := r.h.Stats(); len(r.h.Txns) < 300 || st.Committed == 0 || strings.Contains(r.errs, "1500 done") {
		t.Errorf("history %+v", st)
	}
}

// TestRunStopsOnPostgresStall stalls PostgreSQL for good with
// --reconnect-for 2s: the sessions give up on their statements after
// 1.5 s, seek the database for 2 s more (each connection attempt itself
// bounded), and the run stops with the reason, writes the history it has
// and checks it (serializable, unknown transactions included): exit 3.
// Before timeouts, the run hung until interrupted.
func TestRunStopsOnPostgresStall(t *testing.T) {
	const bound = 2 * time.Second
	r := runThroughOutage(t, testservice.Postgres(t), func(p *testservice.Proxy) { p.Stall(time.Hour) }, "--reconnect-for", bound.String())
	if r.code != ExitUnknown || !strings.Contains(r.out, "serializable holds") {
		t.Fatalf("exit %d, want %d with serializable holding in what was recorded\nstdout %s\nstderr %s", r.code, ExitUnknown, r.out, r.errs)
	}
	// A session whose statement timed out says so; another may first
	// meet its connection already broken ("driver: bad connection"), so
	// the timeout need not be the reason of the session that gave up.
	for _, want := range []string{
		"the run stopped: the database did not answer again within --reconnect-for 2s",
		"no answer within 1.5s", "could not reconnect within 2s: ",
	} {
		if !strings.Contains(r.errs, want) {
			t.Errorf("standard error has no %q:\n%s", want, r.errs)
		}
	}
	// 1.5 s to give up on the statements (sent up to a few hundred
	// milliseconds before the stall began), 2 s to seek the database, and
	// the last connection attempt bounded by 1.5 s.
	if took := r.end.Sub(r.faultAt); took < 3*time.Second || took > 7*time.Second {
		t.Errorf("the run ended %v after the stall began", took)
	}
	// The outage runs from the last answer to the first session that
	// gave up: at least the reconnection bound after the loss was seen.
	if lasted, recovered := outages(t, r.errs); len(lasted) == 0 || recovered[len(lasted)-1] || lasted[len(lasted)-1] < 3*time.Second {
		t.Errorf("outages %v (recovered %v), want the last of at least 3s, not recovered", lasted, recovered)
	}
	if len(r.h.Txns) < 300 || strings.Contains(r.errs, "1500 done") {
		t.Errorf("history %+v", r.h.Stats())
	}
}
