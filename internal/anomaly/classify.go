package anomaly

import "github.com/isoscope/isoscope/internal/history"

// PhenomenonOf names the Adya phenomenon of a cycle by the kinds of its
// edges: only ww is G0; no anti-dependency is G1c; exactly one is
// G-single; more is G2-item when one of them is an item anti-dependency
// (rw), else G2 (predicate anti-dependencies only).
func PhenomenonOf(cycle []Step) Phenomenon {
	anti, pred, onlyWW := 0, true, true
	for _, s := range cycle {
		if s.Dep.IsAnti() {
			anti++
		}
		if s.Dep == RW {
			pred = false
		}
		if s.Dep != WW {
			onlyWW = false
		}
	}
	switch {
	case onlyWW:
		return G0
	case anti == 0:
		return G1c
	case anti == 1:
		return GSingle
	case pred:
		return G2
	}
	return G2Item
}

// Classify names a cycle: its catalogue kind (MTC Figure 5) and phenomenon.
// The shapes it recognises:
//
//   - any rt edge: real-time-violation (the cycle needs real time);
//   - so + rw between two transactions, or a cycle without anti-dependency
//     that needs session order: session-guarantee-violation;
//   - one rw and a path of so and wr back to its source, whose last step
//     into the reader is so, with some wr: non-monotonic-read (across a
//     session: the session had seen the write, then missed it); with so
//     alone: session-guarantee-violation;
//   - ww(k)+rw(k) or rw(k)+rw(k) between two transactions: lost-update;
//   - rw(x)+rw(y) between two transactions, x≠y: write-skew;
//   - wr(x)+rw(y) between two transactions, x≠y (either may be a
//     predicate dependency, pwr or prw): the reader saw part of
//     the writer's effects. When it read x (the newer state) before y (the
//     older) in program order, its reads went back in time:
//     non-monotonic-read (Biswas and Enea, Fig. 3a); otherwise
//     fractured-read (Cerone et al.);
//   - wr(k)+rw(k) between two transactions: the reader read k from the
//     writer and an older version of it as well: non-monotonic-read;
//   - any other one rw and a path of so and wr (wr, wr, …, rw):
//     causality-violation;
//   - wr, rw, wr, rw over four transactions: long-fork;
//   - anything else: cycle.
func Classify(h *history.History, cycle []Step) (Kind, Phenomenon) {
	ph := PhenomenonOf(cycle)
	var n [numDeps]int
	for _, s := range cycle {
		n[s.Dep]++
	}
	anti := n[RW] + n[PRW]
	switch {
	case n[RT] > 0:
		return RealTimeViolation, ph
	case anti == 0 && n[SO] > 0:
		return SessionGuaranteeViolation, ph
	case anti == 0:
		return Cycle, ph
	}
	if len(cycle) == 2 {
		a, b := cycle[0], cycle[1]
		if b.Dep.IsAnti() && !a.Dep.IsAnti() {
			a, b = b, a // a is an anti-dependency
		}
		switch {
		case b.Dep == SO:
			return SessionGuaranteeViolation, ph
		case (b.Dep == WW || b.Dep == RW) && a.Dep == RW && a.Key == b.Key:
			return LostUpdate, ph
		case b.Dep == RW && a.Dep == RW:
			return WriteSkew, ph
		case (b.Dep == WR || b.Dep == PWR) && a.Dep.IsAnti() && a.Key != b.Key:
			// b: writer -wr(k1)-> reader; a: reader -rw(k2)-> writer.
			if readsBefore(h, b.To, b.Key, a.Key) {
				return NonMonotonicRead, ph
			}
			return FracturedRead, ph
		case (b.Dep == WR || b.Dep == PWR) && a.Dep.IsAnti():
			// The reader read k from the writer and an older version of k
			// too.
			return NonMonotonicRead, ph
		}
		return Cycle, ph
	}
	if anti == 1 {
		if n[SO]+n[WR]+n[PWR] != len(cycle)-1 {
			return Cycle, ph
		}
		// One anti-dependency, the rest a path of session order and
		// write-read from its target back to its source: the reader missed
		// a write it depends on.
		var into Step // the step into the anti-dependency's source
		for i, st := range cycle {
			if st.Dep.IsAnti() {
				into = cycle[(i+len(cycle)-1)%len(cycle)]
			}
		}
		switch {
		case n[WR]+n[PWR] == 0:
			return SessionGuaranteeViolation, ph // its own session's write
		case into.Dep == SO:
			return NonMonotonicRead, ph // its session had seen the write
		}
		return CausalityViolation, ph
	}
	if len(cycle) == 4 && n[WR] == 2 && n[RW] == 2 {
		alternating := true
		for i, s := range cycle {
			if s.Dep == cycle[(i+1)%4].Dep {
				alternating = false
			}
		}
		if alternating {
			return LongFork, ph
		}
	}
	return Cycle, ph
}

// readsBefore reports whether transaction t's first read of k1 comes before
// its first read of k2 in program order.
func readsBefore(h *history.History, t history.TxnID, k1, k2 history.KeyID) bool {
	if t < 0 || int(t) >= len(h.Txns) {
		return false
	}
	for _, op := range h.Txns[t].Ops {
		if op.Kind != history.Read {
			continue
		}
		switch op.Key {
		case k1:
			return true
		case k2:
			return false
		}
	}
	return false
}
