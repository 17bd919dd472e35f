package reference

import (
	"fmt"

	"github.com/isoscope/isoscope/internal/level"
)

// axiomatic decides the levels a commit-order axiom defines (rc-session,
// read atomic, causal consistency, prefix consistency) for one choice of
// effective transactions (indices into h.Txns, in file order), straight
// from the definition of Biswas and Enea ("On the Complexity of Checking
// Transactional Consistency", OOPSLA 2019, §2): the history satisfies the
// level iff some assignment of every external observation to a writer —
// the initial state, or another effective transaction whose final write
// of the key left what was observed (wr) — and some strict total order co
// of the effective transactions exist such that
//
//   - co extends session order (so: earlier in the same session) and wr;
//   - for every observation α of a key x by t3 assigned to t1, and every
//     other effective transaction t2 ≠ t1 that writes x: when the axiom's
//     premise holds of t2 and t3, t2 precedes t1 in co (and t1 is not the
//     initial state, which precedes every transaction).
//
// The premises: Read Committed, t3 made an observation assigned to t2
// earlier in program order than α (observations of one scan are not
// ordered among themselves); Read Atomic, t2 so t3 or t2 wr t3; Causal,
// t2 (so ∪ wr)+ t3; Prefix, t2 co* t4 and t4 (so ∪ wr) t3 for some t4.
//
// Every transaction must be internally consistent. Total orders are built
// one transaction at a time, each placed only after its so and wr
// predecessors; for the first three axioms, whose premises do not mention
// co, a transaction is placed only after every t2 the axiom puts before
// it, and prefix consistency is checked on each complete order. At most
// MaxTxns transactions take effect.
func (c *checker) axiomatic(ax level.Axiom, eff []int) (bool, error) {
	n := len(eff)
	if ok, err := c.enumerable(eff); !ok || err != nil {
		return false, err
	}
	var all []observation
	for q, i := range eff {
		for _, r := range c.txns[i].ext {
			o := observation{reader: q, key: int(r.key), op: r.op}
			if r.matches(c.init[r.key]) {
				o.cands = append(o.cands, -1)
			}
			for p, j := range eff {
				if v, ok := c.txns[j].finalValue(r.key); ok && p != q && r.matches(v) {
					o.cands = append(o.cands, p)
				}
			}
			if len(o.cands) == 0 {
				return false, nil // nothing that took effect explains it
			}
			all = append(all, o)
		}
	}
	writes := make([][]bool, n) // writes[q][key]
	for q, i := range eff {
		writes[q] = make([]bool, len(c.h.Keys))
		for _, w := range c.txns[i].final {
			writes[q][w.key] = true
		}
	}
	var so [MaxTxns]uint32 // so[p] has q when p precedes q in a session
	for p, i := range eff {
		for q, j := range eff {
			if p < q && c.txns[i].session == c.txns[j].session {
				so[p] |= 1 << q
			}
		}
	}
	pick := make([]int, len(all))
	var wr, hb [MaxTxns]uint32
	var before [MaxTxns]uint32 // before[q]: what must precede q in co
	// premise reports whether the axiom's premise holds of t2 and the
	// reader of observation x (for Prefix, given the positions pos).
	premise := func(t2 int, x int, pos []int) bool {
		t3 := all[x].reader
		switch ax {
		case level.AxiomRC:
			for y, o := range all {
				if o.reader == t3 && o.op < all[x].op && o.cands[pick[y]] == t2 {
					return true
				}
			}
			return false
		case level.AxiomRA:
			return (so[t2]|wr[t2])&(1<<t3) != 0
		case level.AxiomCC:
			return hb[t2]&(1<<t3) != 0
		}
		for t4 := range n { // AxiomPrefix
			if (t4 == t2 || pos[t2] < pos[t4]) && (so[t4]|wr[t4])&(1<<t3) != 0 {
				return true
			}
		}
		return false
	}
	// holds checks one assignment (pick) by searching the total orders.
	holds := func() bool {
		wr = [MaxTxns]uint32{}
		for x, o := range all {
			if p := o.cands[pick[x]]; p >= 0 {
				wr[p] |= 1 << o.reader
			}
		}
		var step [MaxTxns]uint32
		for p := range n {
			step[p] = so[p] | wr[p]
		}
		copy(hb[:n], closure(step[:n]))
		before = [MaxTxns]uint32{}
		for p := range n {
			for q := range n {
				if step[p]&(1<<q) != 0 {
					before[q] |= 1 << p
				}
			}
		}
		if ax != level.AxiomPrefix {
			for x, o := range all {
				t1 := o.cands[pick[x]]
				for t2 := range n {
					if t2 == t1 || !writes[t2][o.key] || !premise(t2, x, nil) {
						continue
					}
					if t1 < 0 {
						return false // t2 would precede the initial state
					}
					before[t1] |= 1 << t2
				}
			}
		}
		pos := make([]int, n)
		var search func(k int, placed uint32) bool
		search = func(k int, placed uint32) bool {
			if k == n {
				return ax != level.AxiomPrefix || prefixHolds(n, all, pick, writes, pos, premise)
			}
			for q := range n {
				if placed&(1<<q) != 0 || before[q]&^placed != 0 {
					continue
				}
				pos[q] = k
				if search(k+1, placed|1<<q) {
					return true
				}
			}
			return false
		}
		return search(0, 0)
	}
	var assign func(x int) bool
	assign = func(x int) bool {
		if x == len(all) {
			return holds()
		}
		for pick[x] = range all[x].cands {
			if assign(x + 1) {
				return true
			}
		}
		return false
	}
	return assign(0), nil
}

// observation is an external observation of the axiomatic enumeration:
// its reader and the candidate writers (-1 the initial state, else a
// position in the effective transactions), its key and its operation's
// position in the reader.
type observation struct {
	reader, key, op int
	cands           []int
}

// prefixHolds checks the Prefix axiom on a complete commit order (pos:
// each transaction's position): for every observation of x assigned to t1
// and every other writer t2 of x whose premise holds, t2 precedes t1.
func prefixHolds(n int, all []observation, pick []int, writes [][]bool, pos []int, premise func(t2, x int, pos []int) bool) bool {
	for x, o := range all {
		t1 := o.cands[pick[x]]
		for t2 := range n {
			if t2 == t1 || !writes[t2][o.key] || !premise(t2, x, pos) {
				continue
			}
			if t1 < 0 || pos[t2] > pos[t1] {
				return false
			}
		}
	}
	return true
}

// enumerable reports whether the axiomatic enumeration may go on with
// eff: an error when it has more than MaxTxns transactions, false when
// one of them is not internally consistent (no order can help it).
func (c *checker) enumerable(eff []int) (bool, error) {
	if len(eff) > MaxTxns {
		return false, fmt.Errorf("reference: %d effective transactions, more than the %d the axiomatic enumeration takes", len(eff), MaxTxns)
	}
	for _, i := range eff {
		if !c.txns[i].intOK {
			return false, nil
		}
	}
	return true, nil
}
