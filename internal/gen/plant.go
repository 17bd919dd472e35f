package gen

import (
	"cmp"
	"slices"
	"strings"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/history"
)

// patterns are the planted groups, in the notation of history.Parse (with
// the absent initial state, "_" reads null). Keys x and y become fresh
// keys and sessions A, B, … fresh sessions. Transactions without "@"
// instants all overlap in time, so that real time adds no edge inside the
// group; the real-time violation gives its own offsets.
var patterns = map[anomaly.Kind]string{
	anomaly.ThinAirRead:               "sA: r x 1",
	anomaly.AbortedRead:               "sA: aborted: r x _ w x 1 | sB: r x 1",
	anomaly.FutureRead:                "sA: r x 1 w x 1",
	anomaly.NotMyLastWrite:            "sA: r x _ w x 1 w x 2 r x 1",
	anomaly.NotMyOwnWrite:             "sA: r x _ w x 1 r x _",
	anomaly.IntermediateRead:          "sA: r x _ w x 1 w x 2 | sB: r x 1",
	anomaly.NonRepeatableRead:         "sA: r x _ w x 1 | sB: r x _ r x 1",
	anomaly.SessionGuaranteeViolation: "sA: r x _ w x 1 | sA: r x _",
	anomaly.NonMonotonicRead:          "sA: r x _ w x 1 | sB: r x 1 r y _ w x 2 w y 1 | sC: r y 1 r x 1",
	anomaly.FracturedRead:             "sA: r x _ r y _ w x 1 w y 1 | sB: r y _ r x 1",
	anomaly.CausalityViolation:        "sA: r x _ w x 1 | sB: r x 1 r y _ w y 1 | sC: r y 1 r x _",
	anomaly.LongFork:                  "sA: r x _ w x 1 | sB: r y _ w y 1 | sC: r x 1 r y _ | sD: r y 1 r x _",
	anomaly.LostUpdate:                "sA: r x _ w x 1 | sB: r x _ w x 2",
	anomaly.WriteSkew:                 "sA: r x _ r y _ w x 1 | sB: r x _ r y _ w y 1",
	anomaly.RealTimeViolation:         "sA: @0-10: r x _ w x 1 | sB: @20-30: r x _",
}

// pattern is a parsed planted group.
type pattern struct {
	kind           anomaly.Kind
	txns           []history.Txn
	keys, sessions int
	timed          bool
}

var parsed = func() map[anomaly.Kind]*pattern {
	m := make(map[anomaly.Kind]*pattern, len(patterns))
	for k, s := range patterns {
		h := history.MustParse(s)
		p := &pattern{kind: k, txns: h.Txns, keys: len(h.Keys), sessions: len(h.Sessions)}
		for _, t := range h.Txns {
			p.timed = p.timed || t.HasTime
		}
		m[k] = p
	}
	return m
}()

func patternOf(k anomaly.Kind) *pattern { return parsed[k] }

// CanPlant reports whether Generate can plant anomaly k as a group of
// transactions: every kind of anomaly.Kinds except Cycle, the list
// anomalies, and the timestamp anomalies (InjectTimestampFaults plants
// those).
func CanPlant(k anomaly.Kind) bool {
	_, ok := patterns[k]
	return ok
}

// PlantableKinds lists the kinds Generate can plant, in catalogue order.
func PlantableKinds() []anomaly.Kind {
	var out []anomaly.Kind
	for _, k := range anomaly.Kinds() {
		if CanPlant(k) {
			out = append(out, k)
		}
	}
	return out
}

// Pattern returns the group of transactions planted for k, in the notation
// of history.Parse over keys x, y and sessions A, B, … (which Generate
// replaces by fresh keys and sessions).
func Pattern(k anomaly.Kind) (string, bool) {
	s, ok := patterns[k]
	return s, ok
}

func plantableNames() string {
	var names []string
	for _, k := range PlantableKinds() {
		names = append(names, k.String())
	}
	return strings.Join(names, ", ")
}

// placed is one planted transaction waiting to be merged into the history.
type placed struct {
	txn        history.Txn
	group, idx int
}

// plant inserts one group per pattern at a random point of the workload:
// its instants fall right after the end of the transaction before that
// point (within the serial database's gap), its keys and sessions are
// fresh, and the history stays in end order.
func (s *sim) plant(groups []*pattern) []Planted {
	if len(groups) == 0 {
		return nil
	}
	n := len(s.txns)
	out := make([]Planted, len(groups))
	pos := make([]int, len(groups))
	keyBase := make([]int, len(groups))
	sessBase := make([]int, len(groups))
	for g, p := range groups {
		pos[g] = s.r.IntN(n + 1)
		keyBase[g], sessBase[g] = s.nextKey(), s.nextSession()
		s.plantKeys += p.keys
		s.plantSessions += p.sessions
		out[g] = Planted{Kind: p.kind, Txns: make([]history.TxnID, len(p.txns))}
	}
	order := make([]int, len(groups))
	for g := range order {
		order[g] = g
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(pos[a], pos[b]) })
	var extra []placed
	last := StartInstant
	for _, g := range order {
		p := groups[g]
		base := StartInstant
		if pos[g] > 0 {
			base = s.txns[pos[g]-1].End
		}
		base = max(base, last) + 1
		m := int64(len(p.txns))
		for j, pt := range p.txns {
			t := history.Txn{Session: int32(sessBase[g]) + pt.Session, Status: pt.Status, HasTime: true}
			if p.timed {
				t.Begin, t.End = base+pt.Begin, base+pt.End
			} else {
				// Begins at base+j, ends at base+m+j: every pair overlaps,
				// and ends follow the pattern's order.
				t.Begin, t.End = base+int64(j), base+m+int64(j)
			}
			t.Ops = s.ops(len(pt.Ops))
			copy(t.Ops, pt.Ops)
			for i := range t.Ops {
				t.Ops[i].Key += history.KeyID(keyBase[g])
			}
			last = max(last, t.End)
			extra = append(extra, placed{txn: t, group: g, idx: j})
		}
	}
	slices.SortStableFunc(extra, func(a, b placed) int { return cmp.Compare(a.txn.End, b.txn.End) })
	// Merge from the back: the workload is in end order, and a planted
	// transaction goes after workload transactions that end at its instant.
	s.txns = s.txns[:n+len(extra)]
	i, j := n-1, len(extra)-1
	for k := n + len(extra) - 1; j >= 0; k-- {
		if i >= 0 && s.txns[i].End > extra[j].txn.End {
			s.txns[k] = s.txns[i]
			i--
			continue
		}
		s.txns[k] = extra[j].txn
		out[extra[j].group].Txns[extra[j].idx] = history.TxnID(k)
		j--
	}
	return out
}
