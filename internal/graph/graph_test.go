package graph

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

const inf = math.MaxInt32 / 4

// tg is a random test graph, with its edges as they were added.
type tg struct {
	g     *Graph
	n     int
	edges []Edge
}

// randGraph builds a random graph of 1..maxN nodes with labels 0..3. It
// adds some of the nodes with AddNode, and adds edges in random order
// (self-loops and duplicates included).
func randGraph(r *rand.Rand, maxN int) tg {
	n := 1 + r.IntN(maxN)
	pre := n - r.IntN(n/2+1)
	b := NewBuilder(pre, r.IntN(8))
	for b.n < n {
		if got := b.AddNode(); int(got) != b.n-1 {
			panic("AddNode id")
		}
	}
	m := r.IntN(3*n + 1)
	var es []Edge
	for range m {
		e := Edge{From: r.Int32N(int32(n)), To: r.Int32N(int32(n)), Label: uint8(r.IntN(4)), Data: r.Int32N(100) - 1}
		b.Add(e.From, e.To, e.Label, e.Data)
		es = append(es, e)
	}
	return tg{b.Build(), n, es}
}

func randMask(r *rand.Rand) Mask { return Mask(r.IntN(16)) }

// randInside returns nil or a random node predicate with its table.
func randInside(r *rand.Rand, n int) (func(int32) bool, []bool) {
	in := make([]bool, n)
	for i := range in {
		in[i] = r.IntN(5) != 0
	}
	if r.IntN(3) == 0 {
		for i := range in {
			in[i] = true
		}
		return nil, in
	}
	return func(v int32) bool { return in[v] }, in
}

// floyd returns all-pairs shortest path lengths (in edges) over the edges
// in mask between nodes in in. dist[v][v] = 0.
func floyd(t tg, mask Mask, in []bool) [][]int {
	d := make([][]int, t.n)
	for i := range d {
		d[i] = make([]int, t.n)
		for j := range d[i] {
			d[i][j] = inf
		}
		d[i][i] = 0
	}
	for _, e := range t.edges {
		if mask.Has(e.Label) && in[e.From] && in[e.To] && e.From != e.To {
			d[e.From][e.To] = 1
		}
	}
	for k := range t.n {
		for i := range t.n {
			for j := range t.n {
				d[i][j] = min(d[i][j], d[i][k]+d[k][j])
			}
		}
	}
	return d
}

func all(n int) []bool {
	in := make([]bool, n)
	for i := range in {
		in[i] = true
	}
	return in
}

// checkWalk fails unless p is a chain of edges, each with a label in mask
// and with both ends in in. The chain must start at from, end at to, and
// have length want (want < 0 = any length).
func checkWalk(t *testing.T, g *Graph, p []int32, from, to int32, mask Mask, in []bool, want int) {
	t.Helper()
	if len(p) == 0 || (want >= 0 && len(p) != want) {
		t.Fatalf("walk %v: length %d, want %d", p, len(p), want)
	}
	at := from
	for _, i := range p {
		e := g.Edge(i)
		if e.From != at || !mask.Has(e.Label) || !in[e.From] || !in[e.To] {
			t.Fatalf("walk %v: bad edge %d = %+v at node %d (mask %b)", p, i, e, at, mask)
		}
		at = e.To
	}
	if at != to {
		t.Fatalf("walk %v ends at %d, want %d", p, at, to)
	}
}

func TestMask(t *testing.T) {
	m := MaskOf(0, 3, 31, 32, 200)
	if m != 1|8|1<<31 {
		t.Fatalf("MaskOf = %b", m)
	}
	for l := range 256 {
		want := l == 0 || l == 3 || l == 31
		if m.Has(uint8(l)) != want {
			t.Fatalf("Has(%d) = %v", l, !want)
		}
	}
	if MaskOf() != 0 || AllLabels.Has(32) || !AllLabels.Has(17) {
		t.Fatal("empty or full mask")
	}
}

func TestBuildCSR(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		x := randGraph(r, 30)
		g := x.g
		if g.Nodes() != x.n || g.Edges() != len(x.edges) {
			t.Fatalf("Nodes/Edges = %d/%d, want %d/%d", g.Nodes(), g.Edges(), x.n, len(x.edges))
		}
		next := int32(0)
		for v := range int32(x.n) {
			lo, hi := g.Out(v)
			if lo != next || hi < lo {
				t.Fatalf("Out(%d) = %d,%d after %d", v, lo, hi, next)
			}
			next = hi
			var want []Edge
			for _, e := range x.edges {
				if e.From == v {
					want = append(want, e)
				}
			}
			var got []Edge
			for i := lo; i < hi; i++ {
				e := g.Edge(i)
				if e.To != g.To(i) || e.Label != g.Label(i) || e.Data != g.Data(i) || e.From != g.From(i) {
					t.Fatalf("accessors disagree with Edge(%d)", i)
				}
				got = append(got, e)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("out-edges of %d = %v, want %v (insertion order)", v, got, want)
			}
		}
		if int(next) != len(x.edges) {
			t.Fatalf("offsets end at %d, want %d", next, len(x.edges))
		}
	}
}

func TestBuilderPanics(t *testing.T) {
	for name, f := range map[string]func(b *Builder){
		"label":    func(b *Builder) { b.Add(0, 1, 32, 0) },
		"from":     func(b *Builder) { b.Add(-1, 1, 0, 0) },
		"to":       func(b *Builder) { b.Add(0, 2, 0, 0) },
		"edgeFrom": func(b *Builder) { b.Build().Edge(0) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f(NewBuilder(2, 0))
		}()
	}
}

func TestSCCRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for iter := range 4000 {
		x := randGraph(r, 12+iter%3*10)
		mask := randMask(r)
		d := floyd(x, mask, all(x.n))
		comp, count := x.g.SCC(mask)
		if len(comp) != x.n {
			t.Fatalf("len(comp) = %d", len(comp))
		}
		// Oracle: u ~ v iff each reaches the other.
		reps := 0
		for u := range x.n {
			if comp[u] < 0 || int(comp[u]) >= count {
				t.Fatalf("comp[%d] = %d, count %d", u, comp[u], count)
			}
			first := true
			for v := range x.n {
				same := d[u][v] < inf && d[v][u] < inf
				if same != (comp[u] == comp[v]) {
					t.Fatalf("iter %d mask %b: nodes %d,%d: same=%v comp %d,%d; edges %v", iter, mask, u, v, same, comp[u], comp[v], x.edges)
				}
				if same && v < u {
					first = false
				}
			}
			if first {
				reps++
			}
		}
		if reps != count {
			t.Fatalf("count = %d, want %d", count, reps)
		}
		selfLoop := make([]bool, x.n)
		for _, e := range x.edges {
			if !mask.Has(e.Label) {
				continue
			}
			if comp[e.From] != comp[e.To] && comp[e.From] < comp[e.To] {
				t.Fatalf("edge %v goes up from comp %d to %d", e, comp[e.From], comp[e.To])
			}
			if e.From == e.To {
				selfLoop[e.From] = true
			}
		}
		// NontrivialSCCs against the oracle.
		var want [][]int32
		for c := range int32(count) {
			var nodes []int32
			for v := range x.n {
				if comp[v] == c {
					nodes = append(nodes, int32(v))
				}
			}
			if len(nodes) > 1 || selfLoop[nodes[0]] {
				want = append(want, nodes)
			}
		}
		got := x.g.NontrivialSCCs(mask)
		if len(got) != len(want) {
			t.Fatalf("NontrivialSCCs = %v, want %v", got, want)
		}
		for i := range got {
			if !slices.Equal(got[i], want[i]) {
				t.Fatalf("NontrivialSCCs = %v, want %v", got, want)
			}
		}
	}
}

func TestTopoOrderRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for iter := range 2000 {
		x := randGraph(r, 12)
		if iter%2 == 0 { // make it a DAG under a random relabelling of nodes
			perm := r.Perm(x.n)
			b := NewBuilder(x.n, 0)
			x.edges = slices.DeleteFunc(x.edges, func(e Edge) bool { return perm[e.From] >= perm[e.To] })
			for _, e := range x.edges {
				b.Add(e.From, e.To, e.Label, e.Data)
			}
			x.g = b.Build()
		}
		mask := randMask(r)
		d := floyd(x, mask, all(x.n))
		acyclic := true
		for _, e := range x.edges {
			if mask.Has(e.Label) && d[e.To][e.From] < inf {
				acyclic = false
			}
		}
		order, ok := x.g.TopoOrder(mask)
		if ok != acyclic {
			t.Fatalf("TopoOrder ok = %v, want %v", ok, acyclic)
		}
		if !ok {
			if order != nil {
				t.Fatal("order on a cyclic graph")
			}
			continue
		}
		pos := make([]int, x.n)
		for i := range pos {
			pos[i] = -1
		}
		for i, v := range order {
			if pos[v] >= 0 {
				t.Fatalf("node %d twice in %v", v, order)
			}
			pos[v] = i
		}
		for _, e := range x.edges {
			if mask.Has(e.Label) && (pos[e.From] < 0 || pos[e.From] >= pos[e.To]) {
				t.Fatalf("edge %v against order %v", e, order)
			}
		}
	}
}

func TestEpochWrap(t *testing.T) {
	b := NewBuilder(3, 0)
	b.Add(0, 1, 0, -1)
	b.Add(1, 2, 0, -1)
	b.Add(2, 0, 0, -1)
	g := b.Build()
	for i := range 5 {
		if i == 2 {
			g.epoch = math.MaxUint32 - 1 // the next searches wrap around
		}
		for v := range int32(3) {
			checkWalk(t, g, g.ShortestCycleThrough(v, 1, nil), v, v, 1, all(3), 3)
		}
	}
}

func TestMillionNodeCycle(t *testing.T) {
	const n = 1_000_000
	b := NewBuilder(n, n)
	for v := range int32(n - 1) {
		b.Add(v, v+1, 0, v)
	}
	b.Add(n-1, 0, 1, -1)
	g := b.Build()
	if _, count := g.SCC(MaskOf(0, 1)); count != 1 {
		t.Fatalf("SCC count = %d, want 1", count)
	}
	if comp, count := g.SCC(MaskOf(0)); count != n || comp[0] != n-1 || comp[n-1] != 0 {
		t.Fatalf("path: count %d, comp[0] %d, comp[n-1] %d", count, comp[0], comp[n-1])
	}
	if c := g.NontrivialSCCs(MaskOf(0, 1)); len(c) != 1 || len(c[0]) != n {
		t.Fatalf("NontrivialSCCs: %d lists", len(c))
	}
	cyc := g.ShortestCycleThrough(n/2, MaskOf(0, 1), nil)
	if len(cyc) != n || g.From(cyc[0]) != n/2 {
		t.Fatalf("cycle of length %d", len(cyc))
	}
	if cyc := g.ShortestCycleWithExactlyOne(MaskOf(1), MaskOf(0), nil, 0); len(cyc) != n || g.Label(cyc[0]) != 1 {
		t.Fatalf("exactly-one cycle of length %d", len(cyc))
	}
	if _, ok := g.TopoOrder(MaskOf(0)); !ok {
		t.Fatal("path is not acyclic")
	}
}
