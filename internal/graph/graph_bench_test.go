package graph

import (
	"math/rand/v2"
	"testing"
)

const (
	benchNodes = 1_000_000
	benchEdges = 5_000_000
)

// randomEdges returns m random edges over n nodes, with labels 0..3.
func randomEdges(n, m int) (from, to []int32, label []uint8) {
	r := rand.New(rand.NewPCG(42, 43))
	from, to, label = make([]int32, m), make([]int32, m), make([]uint8, m)
	for i := range m {
		from[i], to[i], label[i] = r.Int32N(int32(n)), r.Int32N(int32(n)), uint8(r.IntN(4))
	}
	return from, to, label
}

func buildRandom(n int, from, to []int32, label []uint8) *Graph {
	b := NewBuilder(n, len(from))
	for i := range from {
		b.Add(from[i], to[i], label[i], int32(i))
	}
	return b.Build()
}

// randomGraph returns the 1M-node, 5M-edge random benchmark graph.
func randomGraph() *Graph {
	from, to, label := randomEdges(benchNodes, benchEdges)
	return buildRandom(benchNodes, from, to, label)
}

// BenchmarkBuild builds a graph of 1M nodes and 5M random edges.
func BenchmarkBuild(b *testing.B) {
	from, to, label := randomEdges(benchNodes, benchEdges)
	b.ReportAllocs()
	for b.Loop() {
		buildRandom(benchNodes, from, to, label)
	}
}

// BenchmarkSCC runs SCC on the 1M/5M random graph, once over all labels
// (one giant component) and once over a single label (about 1.25M edges,
// mostly trivial components).
func BenchmarkSCC(b *testing.B) {
	g := randomGraph()
	for _, bc := range []struct {
		name string
		mask Mask
	}{{"all", AllLabels}, {"one", MaskOf(0)}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, c := g.SCC(bc.mask); c == 0 {
					b.Fatal("no components")
				}
			}
		})
	}
}

// BenchmarkBuildSCC builds the 1M/5M random graph and runs SCC on it.
func BenchmarkBuildSCC(b *testing.B) {
	from, to, label := randomEdges(benchNodes, benchEdges)
	b.ReportAllocs()
	for b.Loop() {
		buildRandom(benchNodes, from, to, label).SCC(AllLabels)
	}
}

// BenchmarkShortestCycleThrough searches big strongly connected graphs.
// random: the 1M/5M random graph, where cycles are short but the BFS
// explores a large part of the graph. ring: a 1M-node ring with 4M
// forward chords, with labels chosen so that the ring edges alone form the
// only cycles the mask allows, so the search explores the whole ring.
func BenchmarkShortestCycleThrough(b *testing.B) {
	random := randomGraph()
	rb := NewBuilder(benchNodes, benchEdges)
	r := rand.New(rand.NewPCG(7, 7))
	for v := range int32(benchNodes) {
		rb.Add(v, (v+1)%benchNodes, 0, -1)
		for range 4 {
			rb.Add(v, r.Int32N(benchNodes), 1, -1)
		}
	}
	ring := rb.Build()
	for _, bc := range []struct {
		name string
		g    *Graph
		mask Mask
		want int
	}{{"random", random, AllLabels, 0}, {"ring", ring, MaskOf(0), benchNodes}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			v := int32(0)
			for b.Loop() {
				cyc := bc.g.ShortestCycleThrough(v, bc.mask, nil)
				if cyc == nil || (bc.want > 0 && len(cyc) != bc.want) {
					b.Fatalf("cycle of length %d", len(cyc))
				}
				v = (v + 7919) % benchNodes
			}
		})
	}
}
