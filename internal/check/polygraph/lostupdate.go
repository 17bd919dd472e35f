package polygraph

import (
	"slices"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/history"
)

// forbidsLostUpdate reports whether the level forbids read r's
// transaction to overwrite the key it read with another writer's version
// in between (Adya's G-cursor: one item anti-dependency and write
// dependencies, all on one key): at cursor stability and wherever a cycle
// of one item anti-dependency is forbidden.
func (p *Polygraph) forbidsLostUpdate(r Read) bool {
	return r.Writes && !r.Pred && (p.spec.cursor || p.singleAnti(r))
}

// knownLostUpdates returns the lost updates no version order avoids: two
// transactions that both took effect read the same version of a key —
// one certain writer, or the initial state — and both overwrote it.
// Whichever of their writes comes second, a version (the first one's)
// lies between the one it read and its own. Found in one pass over the
// reads, before any encoding: the pairwise lost-update clauses of a hot
// key's writers are what exhausts the solver's construction (a 10k
// causal-store history: 14 M pairs on one key).
func (p *Polygraph) knownLostUpdates() []anomaly.Anomaly {
	type source struct {
		k history.KeyID
		c history.TxnID
	}
	first := map[source]int{} // the first read of each source by a read-modify-write
	var out []anomaly.Anomaly
	reported := map[source]bool{}
	for i, r := range p.Reads {
		if len(r.Cands) != 1 || !p.forbidsLostUpdate(r) || !p.certain(r.R) || !p.certain(r.Cands[0]) {
			continue
		}
		s := source{r.Key, r.Cands[0]}
		j, ok := first[s]
		if !ok {
			first[s] = i
			continue
		}
		o := p.Reads[j]
		if o.R == r.R || reported[s] {
			continue
		}
		reported[s] = true
		out = append(out, p.lostUpdate(o, r))
	}
	slices.SortStableFunc(out, func(a, b anomaly.Anomaly) int { return int(a.Txns[0]) - int(b.Txns[0]) })
	return out
}

// lostUpdate is the G-cursor of reads a and b of the same version: a's
// transaction read it and overwrote b's write, which followed the same
// version (the other order is symmetric).
func (p *Polygraph) lostUpdate(a, b Read) anomaly.Anomaly {
	k := a.Key
	lu := anomaly.Anomaly{
		Kind: anomaly.LostUpdate, Phenomenon: anomaly.GCursor, Txns: []history.TxnID{a.R, b.R}, Key: k,
		Cycle: []anomaly.Step{{From: a.R, To: b.R, Dep: anomaly.RW, Key: k}, {From: b.R, To: a.R, Dep: anomaly.WW, Key: k}},
		Ops:   []history.OpRef{{Txn: a.R, Op: a.Op}, {Txn: b.R, Op: b.Op}},
	}
	if !p.spec.cursor {
		// Above cursor stability the cycle is named as any other.
		lu.Kind, lu.Phenomenon = anomaly.Classify(p.h, lu.Cycle)
	}
	return lu
}
