package reference

import (
	"fmt"
	"math/bits"

	"github.com/isoscope/isoscope/internal/level"
)

// MaxAdyaTxns bounds the effective transactions of a history checked at a
// level decided by adya: it enumerates every total order of them.
const MaxAdyaTxns = 7

// adyaLevel reports whether level id is decided by adya: cursor stability,
// PL-2+, PL-FCV, and repeatable read on histories with predicate reads.
func (c *checker) adyaLevel(id level.ID) bool {
	switch id {
	case level.CursorStability, level.PL2Plus, level.PLFCV:
		return true
	case level.RepeatableRead:
		return c.ranges
	}
	return false
}

// adya decides the levels that forbid only some cycles through
// anti-dependencies, straight from Adya's definitions: there must be an
// assignment of every external observation to the initial state or to the
// final write of its key by another effective transaction (no G1a, G1b)
// and a version order per key such that the dependency graph — ww in
// version order, wr and pwr to the observers, rw and prw from each
// observer to every writer after the version it observed — has no
// forbidden cycle:
//
//   - every level: no cycle of ww/wr/pwr edges alone (G0, G1c);
//   - cursor stability: no lost update (G-cursor): no transaction that
//     read a key by an item read and writes it with another writer's
//     version between the one it read and its own;
//   - PL-2+ and PL-FCV (a black-box history allows every transaction to
//     start before any commits, leaving no start dependency): no cycle
//     with exactly one anti-dependency (G-single);
//   - repeatable read: no cycle through an item anti-dependency (G2-item);
//     cycles whose anti-dependencies are all predicate ones are allowed.
//
// Every version order without write cycles is the restriction of a total
// order of the transactions, so enumerating total orders enumerates them.
func (c *checker) adya(id level.ID, eff []int) (bool, error) {
	n := len(eff)
	if n > MaxAdyaTxns {
		return false, fmt.Errorf("reference: %d effective transactions, more than the %d the Adya enumeration takes", n, MaxAdyaTxns)
	}
	// The candidate sources of every observation: -1 for the initial
	// state, else an index into eff.
	type obs struct {
		reader int
		key    int
		pred   bool
		cands  []int
		list   string // a list read's external part (listEncoding)
	}
	var all []obs
	for q, i := range eff {
		for _, r := range c.txns[i].ext {
			o := obs{reader: q, key: int(r.key), pred: r.exact}
			if c.lists {
				// Its source is the version the order gives the list it
				// read (try).
				o.list = r.value.S
				all = append(all, o)
				continue
			}
			if r.matches(c.init[r.key]) {
				o.cands = append(o.cands, -1)
			}
			for p, j := range eff {
				if v, ok := c.txns[j].finalValue(r.key); ok && p != q && r.matches(v) {
					o.cands = append(o.cands, p)
				}
			}
			if len(o.cands) == 0 {
				return false, nil // nothing committed explains it (thin air, G1a, G1b)
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
		for _, a := range c.txns[i].appends {
			writes[q][a.key] = true
		}
	}
	order := make([]int, n)
	for q := range order {
		order[q] = q
	}
	pos := make([]int, n)
	pick := make([]int, len(all))
	var dep, anyEdge [MaxAdyaTxns]uint32
	type anti struct {
		from, to int
		item     bool
	}
	var antis []anti
	// holds checks one version order (pos) and one assignment (pick).
	holds := func() bool {
		dep, anyEdge = [MaxAdyaTxns]uint32{}, [MaxAdyaTxns]uint32{}
		antis = antis[:0]
		edge := func(u, v int) { dep[u] |= 1 << v; anyEdge[u] |= 1 << v }
		for k := range c.h.Keys {
			for a := range n {
				for b := range n {
					if writes[a][k] && writes[b][k] && pos[a] < pos[b] {
						edge(a, b)
					}
				}
			}
		}
		for x, o := range all {
			src := o.cands[pick[x]]
			if src >= 0 {
				edge(src, o.reader)
			}
			for w := range n {
				if w == o.reader || !writes[w][o.key] || (src >= 0 && pos[w] <= pos[src]) {
					continue
				}
				if id == level.CursorStability {
					// G-cursor: w's version between the read one and the
					// reader's own.
					if !o.pred && writes[o.reader][o.key] && pos[w] < pos[o.reader] {
						return false
					}
					continue
				}
				antis = append(antis, anti{o.reader, w, !o.pred})
				anyEdge[o.reader] |= 1 << w
			}
		}
		depReach, anyReach := closure(dep[:n]), closure(anyEdge[:n])
		for v := range n {
			if depReach[v]&(1<<v) != 0 {
				return false // G0, G1c
			}
		}
		for _, a := range antis {
			switch {
			case id == level.RepeatableRead:
				if a.item && (a.to == a.from || anyReach[a.to]&(1<<a.from) != 0) {
					return false // G2-item
				}
			case depReach[a.to]&(1<<a.from) != 0:
				return false // G-single
			}
		}
		return true
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
	// Every permutation of order (Heap's algorithm, iteratively).
	try := func() bool {
		for p, q := range order {
			pos[q] = p
		}
		if c.lists {
			// The order is every key's version order: a list read reads
			// from the appender whose version is the list it returned.
			version := make([]map[int]string, n)
			state := map[int]string{}
			for _, q := range order {
				version[q] = map[int]string{}
				for _, a := range c.txns[eff[q]].appends {
					state[int(a.key)] += a.value.S
					version[q][int(a.key)] = state[int(a.key)]
				}
			}
			for x := range all {
				o := &all[x]
				o.cands = o.cands[:0]
				if o.list == "" {
					o.cands = append(o.cands, -1)
				}
				for p := range n {
					if v, ok := version[p][o.key]; ok && p != o.reader && v == o.list {
						o.cands = append(o.cands, p)
					}
				}
				if len(o.cands) == 0 {
					return false // no version is the list it read
				}
			}
		}
		return assign(0)
	}
	if try() {
		return true, nil
	}
	cnt := make([]int, n)
	for i := 0; i < n; {
		if cnt[i] < i {
			if i%2 == 0 {
				order[0], order[i] = order[i], order[0]
			} else {
				order[cnt[i]], order[i] = order[i], order[cnt[i]]
			}
			if try() {
				return true, nil
			}
			cnt[i]++
			i = 0
			continue
		}
		cnt[i] = 0
		i++
	}
	return false, nil
}

// closure returns, per node, the set of nodes it reaches by a non-empty
// path over the adjacency sets adj.
func closure(adj []uint32) []uint32 {
	r := append([]uint32(nil), adj...)
	for changed := true; changed; {
		changed = false
		for v := range r {
			next := r[v]
			for m := r[v]; m != 0; m &= m - 1 {
				next |= r[bits.TrailingZeros32(m)]
			}
			if next != r[v] {
				r[v], changed = next, true
			}
		}
	}
	return r
}
