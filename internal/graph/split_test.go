package graph

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// splitGraph is a graph over n nodes with its edges as added, whose
// anti edges (label 3) mostly go backwards and the others forwards, so
// that a good part of the split graphs have no cycle.
func splitGraph(r *rand.Rand, n int) ([]Edge, *Graph) {
	b := NewBuilder(n, 0)
	var es []Edge
	for range r.IntN(3*n + 1) {
		u, v := r.Int32N(int32(n)), r.Int32N(int32(n))
		l := uint8(r.IntN(4))
		if (l == 3) != (u > v) && r.IntN(20) != 0 {
			u, v = v, u
		}
		e := Edge{From: u, To: v, Label: l, Data: r.Int32N(50) - 1}
		b.Add(e.From, e.To, e.Label, e.Data)
		es = append(es, e)
	}
	return es, b.Build()
}

// splitByDefinition builds the split encoding of edges over n nodes edge
// by edge, as the dependency graphs' builder does.
func splitByDefinition(n int, anti Mask, edges ...[]Edge) *Graph {
	b := NewBuilder(2*n, 0)
	for _, es := range edges {
		for _, e := range es {
			if anti.Has(e.Label) {
				b.Add(e.From+int32(n), e.To, e.Label, e.Data)
			} else {
				b.Add(e.From, e.To, e.Label, e.Data)
				b.Add(e.From, e.To+int32(n), e.Label, e.Data)
			}
		}
	}
	return b.Build()
}

// TestSplitMatchesDefinition: Split builds the same graph, edge for edge
// and in the same order, as adding each edge's split form one by one.
func TestSplitMatchesDefinition(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for range 500 {
		n := 1 + r.IntN(30)
		es, g := splitGraph(r, n)
		anti := MaskOf(3)
		if r.IntN(4) == 0 {
			anti = randMask(r)
		}
		got, want := g.Split(anti), splitByDefinition(n, anti, es)
		if got.n != want.n || !slices.Equal(got.off, want.off) || !slices.Equal(got.to, want.to) ||
			!slices.Equal(got.label, want.label) || !slices.Equal(got.data, want.data) {
			t.Fatalf("n=%d anti=%b edges %v: Split differs from the definition", n, anti, es)
		}
	}
}

// TestSplitTopoOrder: the order SplitTopoOrder finds without building the
// split graph is TopoOrder's on the built one (one graph), or a valid
// topological order of it with the same verdict (several).
func TestSplitTopoOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	acyclic := 0
	for i := range 3000 {
		n := 1 + r.IntN(40)
		anti, mask := MaskOf(3), AllLabels
		if r.IntN(3) == 0 {
			anti, mask = randMask(r), randMask(r)
		}
		es, g := splitGraph(r, n)
		if i%2 == 0 {
			got, gotOK := SplitTopoOrder(anti, mask, g)
			want, wantOK := g.Split(anti).TopoOrder(mask)
			if gotOK != wantOK || !slices.Equal(got, want) {
				t.Fatalf("n=%d anti=%b mask=%b edges %v: SplitTopoOrder %v %v, TopoOrder of Split %v %v", n, anti, mask, es, got, gotOK, want, wantOK)
			}
			if gotOK {
				acyclic++
			}
			continue
		}
		es2, g2 := splitGraph(r, n)
		union := splitByDefinition(n, anti, es, es2)
		got, gotOK := SplitTopoOrder(anti, mask, g, g2)
		_, wantOK := union.TopoOrder(mask)
		if gotOK != wantOK {
			t.Fatalf("n=%d: two graphs: SplitTopoOrder says acyclic %v, the union's split graph %v", n, gotOK, wantOK)
		}
		if !gotOK {
			continue
		}
		acyclic++
		pos := make([]int, 2*n)
		seen := make([]bool, 2*n)
		for i, v := range got {
			if seen[v] {
				t.Fatalf("node %d twice in %v", v, got)
			}
			seen[v] = true
			pos[v] = i
		}
		if len(got) != 2*n {
			t.Fatalf("order of %d nodes for %d", len(got), 2*n)
		}
		for v := range int32(2 * n) {
			for e := union.off[v]; e < union.off[v+1]; e++ {
				if mask.Has(union.label[e]) && pos[v] >= pos[union.to[e]] {
					t.Fatalf("edge %d->%d against the order %v", v, union.to[e], got)
				}
			}
		}
	}
	if acyclic < 300 || acyclic > 2700 {
		t.Fatalf("%d of 3000 split graphs acyclic: the test graphs do not exercise both verdicts", acyclic)
	}
}
