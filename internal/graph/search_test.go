package graph

import (
	"math/rand/v2"
	"testing"
)

func TestShortestCycleThroughAndPathRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 3000 {
		x := randGraph(r, 12)
		mask := randMask(r)
		inside, in := randInside(r, x.n)
		d := floyd(x, mask, in)
		for v := range int32(x.n) {
			want := inf // the shortest cycle through v: min over v->y of 1 + d[y][v]
			for _, e := range x.edges {
				if e.From == v && mask.Has(e.Label) && in[v] && in[e.To] {
					want = min(want, 1+d[e.To][v])
				}
			}
			cyc := x.g.ShortestCycleThrough(v, mask, inside)
			if want >= inf {
				if cyc != nil {
					t.Fatalf("cycle %v through %d, oracle says none", cyc, v)
				}
			} else {
				checkWalk(t, x.g, cyc, v, v, mask, in, want)
			}
			for w := range int32(x.n) {
				p := x.g.ShortestPath(v, w, mask, inside)
				switch {
				case v == w || d[v][w] >= inf:
					if p != nil {
						t.Fatalf("path %v from %d to %d, want nil", p, v, w)
					}
				default:
					checkWalk(t, x.g, p, v, w, mask, in, d[v][w])
				}
			}
		}
	}
}

// exactlyOneOracle enumerates all simple cycles and returns the length of
// the shortest one with exactly one special edge (inf if none).
func exactlyOneOracle(x tg, special, other Mask, in []bool) int {
	best := inf
	onPath := make([]bool, x.n)
	var dfs func(s, at int32, length, specials int)
	dfs = func(s, at int32, length, specials int) {
		for _, e := range x.edges {
			if e.From != at || !in[e.To] {
				continue
			}
			sp := specials
			switch {
			case special.Has(e.Label):
				sp++
			case !other.Has(e.Label):
				continue
			}
			if sp > 1 {
				continue
			}
			if e.To == s {
				if sp == 1 {
					best = min(best, length+1)
				}
			} else if !onPath[e.To] {
				onPath[e.To] = true
				dfs(s, e.To, length+1, sp)
				onPath[e.To] = false
			}
		}
	}
	for s := range int32(x.n) {
		if in[s] {
			onPath[s] = true
			dfs(s, s, 0, 0)
			onPath[s] = false
		}
	}
	return best
}

func TestShortestCycleWithExactlyOneRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for iter := range 4000 {
		x := randGraph(r, 7)
		if iter%4 == 3 { // sparser and larger: longer cycles compete
			x = randSparse(r, 10)
		}
		special := randMask(r)
		other := randMask(r)
		if iter%2 == 0 {
			other &^= special // callers pass disjoint masks; also test overlap
		}
		inside, in := randInside(r, x.n)
		want := exactlyOneOracle(x, special, other, in)
		cyc := x.g.ShortestCycleWithExactlyOne(special, other, inside, 0)
		if want >= inf {
			if cyc != nil {
				t.Fatalf("iter %d: got %v, oracle says none", iter, cyc)
			}
			continue
		}
		if cyc == nil {
			t.Fatalf("iter %d: got nil, want length %d; special %b other %b edges %v in %v", iter, want, special, other, x.edges, in)
		}
		start := x.g.From(cyc[0])
		checkWalk(t, x.g, cyc, start, start, special|other, in, want)
		if !special.Has(x.g.Label(cyc[0])) {
			t.Fatalf("cycle %v does not start with a special edge", cyc)
		}
		for _, e := range cyc[1:] {
			if special.Has(x.g.Label(e)) {
				t.Fatalf("cycle %v has two special edges", cyc)
			}
		}
		// With a limit the result is still a valid cycle, never shorter
		// than the optimum.
		lim := x.g.ShortestCycleWithExactlyOne(special, other, inside, 1+r.IntN(3))
		if lim != nil {
			s := x.g.From(lim[0])
			checkWalk(t, x.g, lim, s, s, special|other, in, -1)
			if len(lim) < want {
				t.Fatalf("limited search beat the optimum: %v", lim)
			}
		}
	}
}

// randSparse builds a random graph of 1..maxN nodes with at most 2n edges.
func randSparse(r *rand.Rand, maxN int) tg {
	n := 1 + r.IntN(maxN)
	b := NewBuilder(n, 0)
	var es []Edge
	for range r.IntN(2*n + 1) {
		e := Edge{From: r.Int32N(int32(n)), To: r.Int32N(int32(n)), Label: uint8(r.IntN(4)), Data: -1}
		b.Add(e.From, e.To, e.Label, e.Data)
		es = append(es, e)
	}
	return tg{b.Build(), n, es}
}

// TestExactlyOneDepthBound checks that a later special edge can still
// improve the best cycle by exactly one edge, and that the depth bound
// keeps later searches from exploring nodes that cannot help.
func TestExactlyOneDepthBound(t *testing.T) {
	const sp, ot = 1, 0
	b := NewBuilder(106, 0)
	b.Add(0, 1, sp, -1) // cycle 0->1->2->3->0, length 4, tried first
	b.Add(1, 2, ot, -1)
	b.Add(2, 3, ot, -1)
	b.Add(3, 0, ot, -1)
	b.Add(4, 5, sp, -1) // cycle 4->5->2->4, length 3: its w->u path has exactly the depth bound 2
	b.Add(5, 2, ot, -1)
	b.Add(2, 4, ot, -1)
	b.Add(104, 105, sp, -1) // no cycle back to 104; 105 fans out widely
	for v := int32(6); v < 104; v++ {
		b.Add(105, v, ot, -1)
		b.Add(v, 2, ot, -1)
	}
	g := b.Build()
	calls := 0
	inside := func(int32) bool { calls++; return true }
	cyc := g.ShortestCycleWithExactlyOne(MaskOf(sp), MaskOf(ot), inside, 0)
	checkWalk(t, g, cyc, 4, 4, MaskOf(sp, ot), all(106), 3)
	// With best = 3 the search from 105 may take one edge only, so it
	// must not ask about 105's 98 successors.
	if calls > 20 {
		t.Fatalf("inside called %d times; the depth bound does not prune", calls)
	}
}
