package workload

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestParseDistribution(t *testing.T) {
	for _, d := range Distributions() {
		got, err := ParseDistribution(d.String())
		if err != nil || got != d {
			t.Errorf("ParseDistribution(%q) = %v, %v", d.String(), got, err)
		}
	}
	if d, err := ParseDistribution(" Zipf "); err != nil || d != Zipfian {
		t.Errorf("zipf alias: %v, %v", d, err)
	}
	if _, err := ParseDistribution("pareto"); err == nil {
		t.Error("ParseDistribution(pareto) succeeded")
	}
	if s := Distribution(99).String(); s != "Distribution(99)" {
		t.Errorf("String of an unknown distribution: %q", s)
	}
}

func TestNewKeyChooserErrors(t *testing.T) {
	if _, err := NewKeyChooser(Uniform, 0); err == nil {
		t.Error("0 keys accepted")
	}
	if _, err := NewKeyChooser(Distribution(9), 10); err == nil {
		t.Error("unknown distribution accepted")
	}
	if _, err := NewZipfian(10, 1); err == nil {
		t.Error("θ = 1 accepted")
	}
	if _, err := NewExponential(10, 100, 0.5); err == nil {
		t.Error("percentile 100 accepted")
	}
}

// histogram draws n keys of d over keys keys.
func histogram(t *testing.T, d Distribution, keys, n int) []int {
	t.Helper()
	c, err := NewKeyChooser(d, keys)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	counts := make([]int, keys)
	for range n {
		k := c.Next(r)
		if k < 0 || k >= keys {
			t.Fatalf("%s: key %d out of [0, %d)", d, k, keys)
		}
		counts[k]++
	}
	return counts
}

func TestInRange(t *testing.T) {
	for _, d := range Distributions() {
		for _, keys := range []int{1, 2, 3, 5, 10, 1000} {
			histogram(t, d, keys, 20000)
		}
	}
}

func TestUniform(t *testing.T) {
	const keys, n = 10, 100000
	for k, c := range histogram(t, Uniform, keys, n) {
		if c < n/keys*9/10 || c > n/keys*11/10 {
			t.Errorf("key %d drawn %d times, want about %d", k, c, n/keys)
		}
	}
}

func TestZipfian(t *testing.T) {
	const keys, n = 1000, 200000
	counts := histogram(t, Zipfian, keys, n)
	if counts[0] < 50*counts[keys/2] {
		t.Errorf("key 0 drawn %d times, key %d %d times: want a zipfian skew", counts[0], keys/2, counts[keys/2])
	}
	// P(0) = 1/ζ(1000, 0.99) ≈ 0.13; P(1) ≈ P(0)/2^0.99.
	p0 := float64(counts[0]) / n
	want := 1 / zeta(keys, ZipfianTheta)
	if p0 < want*0.95 || p0 > want*1.05 {
		t.Errorf("share of key 0 = %.4f, want ≈ %.4f", p0, want)
	}
	if r := float64(counts[0]) / float64(counts[1]); r < 1.8 || r > 2.2 {
		t.Errorf("count(0)/count(1) = %.2f, want ≈ 2", r)
	}
	if counts[1] < counts[10] || counts[10] < counts[100] {
		t.Errorf("frequencies not decreasing: %d, %d, %d", counts[1], counts[10], counts[100])
	}
}

func TestHotspot(t *testing.T) {
	const keys, n = 1000, 100000
	counts := histogram(t, Hotspot, keys, n)
	hot := 0
	for _, c := range counts[:keys/5] {
		hot += c
	}
	if share := float64(hot) / n; share < 0.77 || share > 0.83 {
		t.Errorf("hot share = %.3f, want 0.80 ± 0.03", share)
	}
	// Custom parameters through the struct.
	c := HotspotChooser{Keys: 100, HotSetFraction: 0.1, HotOpnFraction: 0.5}
	r := rand.New(rand.NewPCG(3, 4))
	hot = 0
	for range n {
		if c.Next(r) < 10 {
			hot++
		}
	}
	if share := float64(hot) / n; share < 0.47 || share > 0.53 {
		t.Errorf("custom hot share = %.3f, want 0.50 ± 0.03", share)
	}
}

func TestExponential(t *testing.T) {
	const keys, n = 1000, 200000
	counts := histogram(t, Exponential, keys, n)
	// 95% of the unbounded draws fall below 857; conditioned on < 1000,
	// about 0.95/(1-0.05^(1000/857)) ≈ 0.98.
	low := 0
	for _, c := range counts[:857] {
		low += c
	}
	if share := float64(low) / n; share < 0.96 || share > 0.99 {
		t.Errorf("share below key 857 = %.3f, want ≈ 0.98", share)
	}
	if counts[0] < 2*counts[keys/2] {
		t.Errorf("key 0 drawn %d times, key %d %d times: want an exponential decay", counts[0], keys/2, counts[keys/2])
	}
}

func TestDeterministic(t *testing.T) {
	for _, d := range Distributions() {
		a, b := histogram(t, d, 100, 1000), histogram(t, d, 100, 1000)
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("%s: two runs with the same seed differ", d)
			}
		}
	}
}

func BenchmarkNext(b *testing.B) {
	for _, d := range Distributions() {
		b.Run(d.String(), func(b *testing.B) {
			c, err := NewKeyChooser(d, 10000)
			if err != nil {
				b.Fatal(err)
			}
			r := rand.New(rand.NewPCG(1, 2))
			b.ReportAllocs()
			sum := 0
			for b.Loop() {
				sum += c.Next(r)
			}
			_ = sum
		})
	}
}

// TestParetoChooser: AWDIT's Pareto keys stay in range, and the hottest
// fifth of the keys takes about four fifths of the accesses (the shape
// 1.16 is chosen for that), whatever the number of keys.
func TestParetoChooser(t *testing.T) {
	for _, keys := range []int{1, 8, 100, 10000} {
		r := rand.New(rand.NewPCG(uint64(keys), 3))
		p, err := NewPareto(keys, AWDITAlpha, r)
		if err != nil {
			t.Fatal(err)
		}
		counts := make([]int, keys)
		const n = 200000
		for range n {
			k := p.Next(r)
			if k < 0 || k >= keys {
				t.Fatalf("%d keys: drew %d", keys, k)
			}
			counts[k]++
		}
		if keys < 100 {
			continue
		}
		slices.Sort(counts)
		hot := 0
		for _, c := range counts[keys-keys/5:] {
			hot += c
		}
		if share := float64(hot) / n; share < 0.72 || share > 0.88 {
			t.Errorf("%d keys: the hottest fifth took %.3f of the accesses, want about 0.8", keys, share)
		}
	}
	if _, err := NewPareto(0, AWDITAlpha, rand.New(rand.NewPCG(1, 1))); err == nil {
		t.Error("no keys: no error")
	}
	if _, err := NewPareto(5, 0, rand.New(rand.NewPCG(1, 1))); err == nil {
		t.Error("shape 0: no error")
	}
}
