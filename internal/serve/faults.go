package serve

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/wire"
)

// Fault is a fault record a batch carried (a nemesis's partition, kill,
// pause, restart, cut or clock skew, in the history format's fields),
// with the stream it came in and when the checker took its batch. Faults
// are not transactions: the service keeps and lists them (GET /v1/faults,
// /v1/state, isoscope_faults_total) and never gives them to the checker.
type Fault struct {
	Stream string `json:"stream,omitempty"`
	Kind   string `json:"fault"`
	Node   string `json:"node,omitempty"`
	Begin  int64  `json:"begin"`
	End    int64  `json:"end"`
	Offset int64  `json:"offset,omitempty"`
	Info   string `json:"info,omitempty"`
	// Received is when the checker took the batch that carried it.
	Received time.Time `json:"received"`
}

// faultsKept is how many of the last fault records the service keeps for
// GET /v1/faults; the count covers them all.
const faultsKept = 10000

// faultsShown is how many of the last fault records /v1/state lists.
const faultsShown = 10

// keepFaults takes a batch's fault records out of its history, so that
// the checker never sees them, and keeps them for the listings. Only the
// checker's goroutine calls it, once the checker took the batch.
func (s *Server) keepFaults(id wire.Identity, faults []history.Fault) {
	if len(faults) == 0 {
		return
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range faults {
		s.faults = append(s.faults, Fault{Stream: id.Stream, Kind: f.Kind, Node: f.Node, Begin: f.Begin, End: f.End,
			Offset: f.Offset, Info: f.Info, Received: now})
		s.faultCount++
		s.prom.faults.WithLabelValues(f.Kind).Inc()
	}
	if n := len(s.faults); n > faultsKept {
		s.faults = append(s.faults[:0], s.faults[n-faultsKept:]...)
	}
}

// lastFaults returns the last n fault records kept, oldest first. The
// caller holds s.mu.
func (s *Server) lastFaults(n int) []Fault {
	return append([]Fault(nil), s.faults[max(0, len(s.faults)-n):]...)
}

// listFaults serves the fault records kept (the last faultsKept), oldest
// first, as a JSON array.
func (s *Server) listFaults(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	out := s.lastFaults(faultsKept)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(out)
}
