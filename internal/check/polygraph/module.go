package polygraph

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check/checker"
	"github.com/isoscope/isoscope/internal/history"
)

// asg is the abstract semantic graph modules read and extend
// (checker.ASG), over a polygraph under construction.
type asg struct{ p *Polygraph }

func (a *asg) History() *history.History { return a.p.h }

func (a *asg) Index() *history.Index { return a.p.ix }

func (a *asg) TakesPart(t history.TxnID) bool {
	return t >= 0 && int(t) < len(a.p.h.Txns) && a.p.certain(t)
}

func (a *asg) Keys() []history.KeyID { return slices.Clone(a.p.keys) }

func (a *asg) Writers(k history.KeyID) []history.TxnID {
	var out []history.TxnID
	for _, w := range a.p.writers[k] {
		if a.p.certain(w) {
			out = append(out, w)
		}
	}
	return out
}

func (a *asg) Before(from, to history.TxnID, d anomaly.Dep, k history.KeyID) error {
	if !a.TakesPart(from) || !a.TakesPart(to) || from == to {
		return fmt.Errorf("an edge %s → %s between transactions that do not both take part", a.p.h.TxnName(from), a.p.h.TxnName(to))
	}
	a.p.Known = append(a.p.Known, Edge{From: from, To: to, Dep: d, Key: k})
	return nil
}

func (a *asg) Either(alts ...[]Edge) error {
	if len(alts) == 0 {
		return fmt.Errorf("a superposition of no alternatives")
	}
	for _, alt := range alts {
		for _, e := range alt {
			if !a.TakesPart(e.From) || !a.TakesPart(e.To) || e.From == e.To {
				return fmt.Errorf("an edge %s → %s between transactions that do not both take part", a.p.h.TxnName(e.From), a.p.h.TxnName(e.To))
			}
		}
	}
	a.p.Choices = append(a.p.Choices, slices.Clone(alts))
	return nil
}

// HeaderVersionOrder is the built-in module of a white-box history: the
// header's version_order, as ww edges between consecutive writers that
// took effect.
type HeaderVersionOrder struct{}

// Name returns "version-order".
func (HeaderVersionOrder) Name() string { return "version-order" }

// Extend adds the header's version order.
func (HeaderVersionOrder) Extend(a checker.ASG) error {
	h := a.History()
	keys := make([]history.KeyID, 0, len(h.Header.VersionOrder))
	for k := range h.Header.VersionOrder {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		prev := history.TxnID(-1)
		for _, t := range h.Header.VersionOrder[k] {
			if t < 0 || int(t) >= len(h.Txns) || !a.TakesPart(t) {
				continue
			}
			if prev >= 0 {
				if err := a.Before(prev, t, anomaly.WW, k); err != nil {
					return err
				}
			}
			prev = t
		}
	}
	return nil
}

// CommitOrder is a built-in module for databases whose version order is
// their commit order (a white-box fact about the database, so it is opt
// in): the writers of each key are ordered by commit_ts. A writer without
// commit_ts, or two with the same one, is an error.
type CommitOrder struct{}

// Name returns "commit-order".
func (CommitOrder) Name() string { return "commit-order" }

// Extend orders every key's writers by commit timestamp.
func (CommitOrder) Extend(a checker.ASG) error {
	h := a.History()
	for _, k := range a.Keys() {
		ws := a.Writers(k)
		for _, w := range ws {
			if !h.Txns[w].HasCommitTS {
				return fmt.Errorf("commit-order: transaction %s (line %d) writes %s but has no commit_ts", h.TxnName(w), h.Txns[w].Line, h.KeyName(k))
			}
		}
		slices.SortStableFunc(ws, func(x, y history.TxnID) int { return cmp.Compare(h.Txns[x].CommitTS, h.Txns[y].CommitTS) })
		for i := 1; i < len(ws); i++ {
			if h.Txns[ws[i]].CommitTS == h.Txns[ws[i-1]].CommitTS {
				return fmt.Errorf("commit-order: transactions %s and %s both write %s with commit_ts %d", h.TxnName(ws[i-1]), h.TxnName(ws[i]), h.KeyName(k), h.Txns[ws[i]].CommitTS)
			}
			if err := a.Before(ws[i-1], ws[i], anomaly.WW, k); err != nil {
				return err
			}
		}
	}
	return nil
}

// Modules returns the built-in modules by name, for the command line.
func Modules() map[string]checker.Module {
	return map[string]checker.Module{"commit-order": CommitOrder{}, "start-order": StartOrder{},
		"real-time": RealTime{}, "session-order": SessionOrder{}}
}
