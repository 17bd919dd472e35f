package anomaly

import (
	"strconv"

	"github.com/isoscope/isoscope/internal/history"
)

// Dep is a kind of dependency edge between transactions.
type Dep uint8

// The dependency kinds. Their values are the edge labels of internal/graph.
const (
	// WW: the target overwrote the source's version (version order).
	WW Dep = iota
	// WR: the target read a version the source wrote.
	WR
	// RW: anti-dependency: the source read a version the target overwrote.
	RW
	// SO: session order: the source ran earlier in the same session.
	SO
	// RT: real time: the source ended before the target began.
	RT
	// PWR: predicate read dependency (scans and iterators).
	PWR
	// PRW: predicate anti-dependency (scans and iterators).
	PRW
	numDeps
)

var depNames = [numDeps]string{"ww", "wr", "rw", "so", "rt", "pwr", "prw"}

// String is the dependency's name in the JSON result ("ww", "rw", …).
func (d Dep) String() string {
	if d < numDeps {
		return depNames[d]
	}
	return "Dep(" + strconv.Itoa(int(d)) + ")"
}

// ParseDep returns the dependency named s.
func ParseDep(s string) (Dep, bool) {
	for i, n := range depNames {
		if n == s {
			return Dep(i), true
		}
	}
	return 0, false
}

// DepSet is a set of dependency kinds, a bitmask by Dep.
type DepSet uint32

// Deps returns the set of the given kinds.
func Deps(ds ...Dep) DepSet {
	var s DepSet
	for _, d := range ds {
		s |= 1 << d
	}
	return s
}

// Has reports whether d is in s.
func (s DepSet) Has(d Dep) bool { return s&(1<<d) != 0 }

// IsAnti reports whether d is an anti-dependency, item or predicate.
func (d Dep) IsAnti() bool { return d == RW || d == PRW }

// Step is one edge of a cycle: From depends on To by Dep, on Key where the
// dependency has one (history.NoKey otherwise).
type Step struct {
	From, To history.TxnID
	Dep      Dep
	Key      history.KeyID
}

// Anomaly is one finding: its kind, the Adya phenomenon where one applies,
// the transactions involved, and for cycle anomalies the cycle. It is data;
// internal/report renders explanations from it.
type Anomaly struct {
	Kind       Kind
	Phenomenon Phenomenon
	// Txns are the transactions involved, in the order the explanation
	// names them.
	Txns []history.TxnID
	// Cycle is one concrete cycle, for cycle anomalies.
	Cycle []Step
	// Key and Value are the key and value at issue for anomalies about a
	// single read (thin-air, aborted, intermediate, intra-transaction reads).
	Key   history.KeyID
	Value history.Value
	// Ops are the operations at issue, for explanations and highlighting:
	// the offending read first, then the writes it concerns.
	Ops []history.OpRef
	// BestFound says the cycle is one the search found under some choice
	// of the history's uncertain dependencies, not one every choice has:
	// the verdict is exact, the counterexample illustrates it.
	BestFound bool
	// Core, when set, are the transactions of a violating sub-history the
	// solver's counterexample search kept: the level is violated by them
	// alone (reads of writes outside them left out). Minimal says it is
	// 1-minimal: without any one of them, the rest satisfies the level.
	Core    []history.TxnID
	Minimal bool
}

// IsCycle reports whether the anomaly is a dependency cycle.
func (a *Anomaly) IsCycle() bool { return len(a.Cycle) > 0 }
