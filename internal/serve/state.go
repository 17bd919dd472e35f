package serve

import (
	"encoding/json"
	"maps"
	"net/http"
	"runtime/metrics"
	"slices"
	"strconv"
	"time"
)

// The live page: GET / serves a self-contained page (inline styles and
// script, nothing fetched but the service's own /v1/state and
// /v1/violations) that shows the service's state and its violations as
// they arrive, polling twice a second. The page holds no data itself, so
// it is served without the bearer token; the data it fetches is not (it
// takes the token from the page address's #token=… or asks for it).

// State is the service's state as GET /v1/state serves it (JSON), what
// the live page shows.
type State struct {
	// Level is the level checked; Started when the service started, Now
	// when the state was taken.
	Level   string    `json:"level"`
	Started time.Time `json:"started"`
	Now     time.Time `json:"now"`
	// Checked counts committed transactions checked, Skipped aborted and
	// unknown ones set aside; Rate is the transactions checked per
	// second over the last RateWindow seconds.
	Checked    uint64  `json:"checked"`
	Skipped    uint64  `json:"skipped"`
	Rate       float64 `json:"rate"`
	RateWindow float64 `json:"rate_window_seconds"`
	// LagSeconds is how long the last batch checked waited from its
	// arrival to its check.
	LagSeconds float64 `json:"lag_seconds"`
	// Pending counts the transactions whose Ext verdict is not final;
	// FlipFlops the changes of pending verdicts.
	Pending   int    `json:"pending_verdicts"`
	FlipFlops uint64 `json:"flip_flops"`
	// Violations counts the final violations reported, LastSeq the
	// sequence number of the last one (the page asks for those after
	// the last it has), Suppressed the findings not reported because
	// their keyspace lost refused transactions.
	Violations uint64 `json:"violations"`
	LastSeq    uint64 `json:"last_seq"`
	Suppressed uint64 `json:"suppressed"`
	// Tainted names the keyspaces that lost refused transactions, whose
	// findings about reads are suppressed.
	Tainted []string `json:"tainted_keyspaces,omitempty"`
	// Duplicates counts the transactions received again as they were
	// accepted (a retry), taken without effect.
	Duplicates uint64 `json:"duplicates"`
	// Warnings says what may be missing from the verdict: findings
	// suppressed, and why (none when nothing is).
	Warnings []string `json:"warnings,omitempty"`
	// MemoryEstimate is the checker's estimate of its state, HeapBytes
	// the Go heap's live objects, in bytes; InMemory and Spilled the
	// transactions held in memory and spilled to disk.
	MemoryEstimate int64  `json:"memory_estimate_bytes"`
	HeapBytes      uint64 `json:"heap_bytes"`
	InMemory       int    `json:"transactions_in_memory"`
	Spilled        int    `json:"transactions_spilled"`
	// Queue is the batches holding a place in the queue, of QueueMax;
	// Connections the open connections.
	Queue       int64 `json:"queue_batches"`
	QueueMax    int   `json:"queue_max"`
	Connections int64 `json:"connections_open"`
	// Refused counts the refused batches and requests by reason.
	Refused map[string]uint64 `json:"refused"`
	// Faults counts the fault records the batches carried (not checked),
	// LastFaults lists the last few of them, oldest first (GET /v1/faults
	// lists more).
	Faults     uint64  `json:"faults"`
	LastFaults []Fault `json:"last_faults,omitempty"`
	// BlackBox is the black-box checker's state (serve --checker
	// blackbox): what it holds, forgot and warns of.
	BlackBox *BlackBoxState `json:"black_box,omitempty"`
}

// rateWindow is how far back State.Rate looks.
const rateWindow = 10 * time.Second

// sample is the count of checked transactions at an instant.
type sample struct {
	at      time.Time
	checked uint64
}

// note records the checked count for the rate, at most every 100 ms,
// keeping the samples of the last rateWindow (state reads the current
// count itself). The caller holds s.mu.
func (s *Server) note(now time.Time, checked uint64) {
	if n := len(s.samples); n > 0 && now.Sub(s.samples[n-1].at) < 100*time.Millisecond {
		return
	}
	s.samples = append(s.samples, sample{now, checked})
	i := 0
	for i < len(s.samples)-1 && now.Sub(s.samples[i+1].at) >= rateWindow {
		i++
	}
	s.samples = s.samples[i:]
}

// state takes the service's state.
func (s *Server) state() State {
	now := time.Now()
	heap := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(heap)
	s.mu.Lock()
	defer s.mu.Unlock()
	st := State{Level: s.level, Started: s.started, Now: now, Checked: s.stats.Checked, Skipped: s.stats.Skipped,
		LagSeconds: s.lag.Seconds(), Pending: s.stats.Pending, FlipFlops: s.stats.FlipFlops, Violations: s.finals, LastSeq: s.seq,
		Suppressed: s.suppressed, MemoryEstimate: s.stats.Memory, InMemory: s.stats.InMemory, Spilled: s.stats.Spilled,
		Queue: s.slots.taken(), QueueMax: s.cfg.Queue, Connections: s.conns.Load(), Refused: map[string]uint64{},
		Faults: s.faultCount, LastFaults: s.lastFaults(faultsShown), Duplicates: s.duplicates, Tainted: slices.Sorted(maps.Keys(s.tainted))}
	if w := SuppressionWarning(s.suppressed, st.Tainted); w != "" {
		st.Warnings = []string{w}
	}
	if s.bb != nil {
		st.BlackBox = s.bb
		st.Warnings = append(st.Warnings, s.bb.Warnings...)
	}
	if heap[0].Value.Kind() == metrics.KindUint64 {
		st.HeapBytes = heap[0].Value.Uint64()
	}
	for k, v := range s.rejected {
		st.Refused[k] = v
	}
	// The rate over the samples of the window, up to now: the checker's
	// count has not moved since its last sample.
	if len(s.samples) > 0 {
		first := s.samples[0]
		if d := now.Sub(first.at); d > 0 {
			st.Rate = float64(st.Checked-min(first.checked, st.Checked)) / d.Seconds()
			st.RateWindow = d.Seconds()
		}
	}
	return st
}

// serveState serves State as JSON.
func (s *Server) serveState(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(s.state())
}

// picturesKept is how many of the last violations keep their picture.
const picturesKept = 1000

// servePicture serves the picture of violation {seq} (Config.Picture), for
// the last picturesKept violations.
func (s *Server) servePicture(w http.ResponseWriter, r *http.Request) {
	seq, err := strconv.ParseUint(r.PathValue("seq"), 10, 64)
	if err != nil {
		http.Error(w, "not a sequence number: "+r.PathValue("seq"), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	var pic []byte
	for i := len(s.kept) - 1; i >= 0 && len(s.kept)-i <= picturesKept; i-- {
		if s.kept[i].seq == seq {
			pic = s.kept[i].picture
			break
		}
	}
	s.mu.Unlock()
	if pic == nil {
		http.Error(w, "no picture of violation "+strconv.FormatUint(seq, 10), http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Header().Set("Cache-Control", "private, max-age=3600")
	w.Write(pic)
}

// livePolicy is the live page's Content-Security-Policy: its inline
// style and script, requests to the service itself only.
const livePolicy = "default-src 'none'; connect-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"

// servePage serves the live page.
func (s *Server) servePage(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", livePolicy)
	w.Header().Set("Cache-Control", "no-store")
	w.Write([]byte(livePage))
}

// Progress returns the service's state, as /v1/state serves it.
func (s *Server) Progress() State { return s.state() }
