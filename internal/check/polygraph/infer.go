package polygraph

import (
	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// The commit-order edges read committed's and read atomic's axiom infers,
// and which of them the known graph takes.

// inference is a commit-order edge an axiom infers: From (t2) precedes To
// (t1, Init for the initial state) because transaction R =
// Reads[Alpha].R read Key from To (candidate A of read Alpha) while t2
// also wrote Key and R read from t2 earlier in program order (read
// committed) or at all (read atomic) — candidate B of read Beta — or, with
// Beta < 0, t2 precedes R in its session (read atomic). Alpha, Beta, A
// and B index Reads and their candidates, which nothing narrows at the
// levels that infer.
type inference struct {
	From, To    history.TxnID
	Key         history.KeyID
	Alpha, Beta int32
	A, B        int32
}

// infer lists the commit-order edges read committed's or read atomic's
// axiom infers (Biswas and Enea's saturation): for every read Alpha of key
// x by R and each of its candidate writers t1, an edge to t1 from every
// other writer t2 of x that R read from earlier in program order (read
// committed) or at all (read atomic), or (read atomic) that precedes R in
// its session: the last such writer that took effect for sure, and every
// optional one after it (earlier ones precede that one in session order,
// which the commit order extends). The inferences whose every choice is
// certain join the known graph. It reports false when the construction
// must stop (p.g.err says why).
func (p *Polygraph) infer() bool {
	h := p.h
	writes := map[pairKey]bool{}
	for _, k := range p.keys {
		for _, w := range p.writers[k] {
			writes[pairKey{w, 0, k}] = true
		}
	}
	readsOf := map[history.TxnID][]int32{}
	for i, r := range p.Reads {
		readsOf[r.R] = append(readsOf[r.R], int32(i))
	}
	add := func(f inference) bool {
		if p.g.grow(inferenceBytes, "the edges the axiom infers") {
			return false
		}
		p.inferred = append(p.inferred, f)
		return true
	}
	for _, t3 := range p.readers() {
		rs := readsOf[t3]
		for _, a := range rs {
			ra := &p.Reads[a]
			for _, b := range rs {
				rb := &p.Reads[b]
				if a == b || p.spec.infer == level.AxiomRC && rb.Op >= ra.Op {
					continue
				}
				for bi, t2 := range rb.Cands {
					if t2 == history.Init || !writes[pairKey{t2, 0, ra.Key}] {
						continue
					}
					for ai, t1 := range ra.Cands {
						if t1 != t2 && !add(inference{From: t2, To: t1, Key: ra.Key, Alpha: a, Beta: b, A: int32(ai), B: int32(bi)}) {
							return false
						}
					}
				}
			}
		}
	}
	if p.spec.infer == level.AxiomRA {
		for _, txns := range p.presentBySession() {
			last := map[history.KeyID]history.TxnID{}    // the last certain writer so far
			later := map[history.KeyID][]history.TxnID{} // optional writers after it
			for _, t3 := range txns {
				for _, a := range readsOf[t3] {
					ra := &p.Reads[a]
					srcs := later[ra.Key]
					if w, ok := last[ra.Key]; ok {
						srcs = append([]history.TxnID{w}, srcs...)
					}
					for _, t2 := range srcs {
						for ai, t1 := range ra.Cands {
							if t1 != t2 && !add(inference{From: t2, To: t1, Key: ra.Key, Alpha: a, Beta: -1, A: int32(ai)}) {
								return false
							}
						}
					}
				}
				for _, op := range h.Txns[t3].Ops {
					if op.Kind != history.Write && op.Kind != history.Delete {
						continue
					}
					if p.certain(t3) {
						last[op.Key], later[op.Key] = t3, nil
					} else if l := later[op.Key]; len(l) == 0 || l[len(l)-1] != t3 {
						later[op.Key] = append(l, t3)
					}
				}
			}
		}
	}
	first := map[history.TxnID]bool{}
	for _, f := range p.inferred {
		if f.To == history.Init && !first[f.From] {
			first[f.From] = true
			p.initFirst = append(p.initFirst, f.From)
		}
		if p.inferenceKnown(f) {
			p.Known = append(p.Known, Edge{From: f.From, To: f.To, Dep: anomaly.WW, Key: f.Key})
		}
	}
	return p.g.check() == nil
}

// inferenceBytes is what one inference keeps.
const inferenceBytes = 32

// inferenceKnown reports whether f holds in every choice: its reads have
// one candidate each and every transaction involved takes part for sure.
func (p *Polygraph) inferenceKnown(f inference) bool {
	ra := p.Reads[f.Alpha]
	if len(ra.Cands) != 1 || !p.certain(ra.R) || !p.certain(f.From) || !p.certain(f.To) {
		return false
	}
	return f.Beta < 0 || len(p.Reads[f.Beta].Cands) == 1
}

// readers returns the transactions with reads, in the order of Reads.
func (p *Polygraph) readers() []history.TxnID {
	var out []history.TxnID
	for i, r := range p.Reads {
		if i == 0 || p.Reads[i-1].R != r.R {
			out = append(out, r.R)
		}
	}
	return out
}

// presentBySession returns, for each session, its transactions that take
// part, in session order.
func (p *Polygraph) presentBySession() [][]history.TxnID {
	by := make([][]history.TxnID, len(p.h.Sessions))
	for i := range p.h.Txns {
		if t := history.TxnID(i); p.Present(t) {
			by[p.h.Txns[i].Session] = append(by[p.h.Txns[i].Session], t)
		}
	}
	return by
}
