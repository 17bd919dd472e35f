package serve

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/isoscope/isoscope/internal/check/aion"
)

// Metrics: the Prometheus registry GET /metrics serves.

// collectorSet is the service's Prometheus registry and the collectors
// the service counts on; the others read the state under Server.mu.
type collectorSet struct {
	reg          *prometheus.Registry
	violations   *prometheus.CounterVec
	rejected     *prometheus.CounterVec
	rejectedTxns *prometheus.CounterVec
	suppressed   *prometheus.CounterVec
	duplicates   *prometheus.CounterVec
	batches      prometheus.Counter
	faults       *prometheus.CounterVec
}

// metrics registers the service's metrics.
func (s *Server) metrics() {
	s.prom.reg = prometheus.NewRegistry()
	s.prom.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	stat := func(f func(st *aion.Stats) float64) func() float64 {
		return func() float64 {
			s.mu.Lock()
			defer s.mu.Unlock()
			return f(&s.stats)
		}
	}
	s.prom.violations = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "isoscope_violations_total", Help: "Final violations, by anomaly kind."}, []string{"kind"})
	s.prom.rejected = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "isoscope_batches_rejected_total",
		Help: "Batches and requests refused, by reason (bad_input, duplicate_id, too_large, queue_full, memory_full, slow_body, shutting_down, checker_failed; unauthorized, too_many_connections, slow_header) and source (http, nats)."}, []string{"reason", "source"})
	s.prom.rejectedTxns = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "isoscope_transactions_rejected_total",
		Help: "Transactions in refused batches that parsed, by reason and source."}, []string{"reason", "source"})
	s.prom.suppressed = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "isoscope_findings_suppressed_total",
		Help: "Findings about reads not reported because their keyspace lost refused transactions, by anomaly kind."}, []string{"kind"})
	s.prom.duplicates = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "isoscope_transactions_duplicate_total",
		Help: "Transactions received again as they were accepted (a retry, a message delivered again), taken without effect, by source (http, nats)."}, []string{"source"})
	s.prom.batches = prometheus.NewCounter(prometheus.CounterOpts{Name: "isoscope_batches_accepted_total", Help: "Batches the checker took."})
	s.prom.faults = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "isoscope_faults_total",
		Help: "Fault records the batches carried (a nemesis's faults: kept and listed at /v1/faults, not checked), by kind."}, []string{"kind"})
	s.prom.reg.MustRegister(s.prom.violations, s.prom.rejected, s.prom.rejectedTxns, s.prom.suppressed, s.prom.duplicates, s.prom.batches, s.prom.faults,
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "isoscope_transactions_checked_total", Help: "Committed transactions checked."},
			stat(func(st *aion.Stats) float64 { return float64(st.Checked) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "isoscope_transactions_skipped_total", Help: "Aborted and unknown transactions set aside."},
			stat(func(st *aion.Stats) float64 { return float64(st.Skipped) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "isoscope_flip_flops_total", Help: "Changes of pending Ext verdicts."},
			stat(func(st *aion.Stats) float64 { return float64(st.FlipFlops) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "isoscope_pending_verdicts", Help: "Transactions whose Ext verdict is not final."},
			stat(func(st *aion.Stats) float64 { return float64(st.Pending) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "isoscope_memory_estimate_bytes", Help: "The checker's estimate of its in-memory state."},
			stat(func(st *aion.Stats) float64 { return float64(st.Memory) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "isoscope_transactions_in_memory", Help: "Transactions held in memory."},
			stat(func(st *aion.Stats) float64 { return float64(st.InMemory) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "isoscope_transactions_spilled", Help: "Transactions spilled to disk."},
			stat(func(st *aion.Stats) float64 { return float64(st.Spilled) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "isoscope_lag_seconds", Help: "From receiving the last batch checked to checking it."},
			func() float64 {
				s.mu.Lock()
				defer s.mu.Unlock()
				return s.lag.Seconds()
			}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "isoscope_queue_batches", Help: "Batches holding a place in the queue: being read, parsed, or waiting for the checker (at most --queue)."},
			func() float64 { return float64(s.slots.taken()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "isoscope_batch_memory_reserved_bytes", Help: "Memory reserved by the batches being read, parsed or waiting for the checker's verdict."},
			func() float64 { return float64(s.memory.taken()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "isoscope_connections_open", Help: "Open HTTP connections."},
			func() float64 { return float64(s.conns.Load()) }),
	)
}
