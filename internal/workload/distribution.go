package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Distribution names how a workload chooses the key each operation accesses.
type Distribution uint8

// The key distributions of MTC's workload generator.
const (
	// Uniform picks every key with the same probability.
	Uniform Distribution = iota
	// Zipfian picks key i with probability proportional to 1/(i+1)^θ,
	// θ = ZipfianTheta (YCSB's Gray et al. generator, unscrambled: key 0
	// is the hottest).
	Zipfian
	// Hotspot sends 80% of the accesses to the first 20% of the keys,
	// uniformly within each part (YCSB's hotspot generator).
	Hotspot
	// Exponential picks key i with probability decreasing exponentially in
	// i (YCSB's exponential generator: 95% of the accesses fall in the
	// first 6/7 of the keys).
	Exponential
	numDistributions
)

var distributionNames = [numDistributions]string{"uniform", "zipfian", "hotspot", "exponential"}

// String is the distribution's name ("uniform", "zipfian", "hotspot",
// "exponential").
func (d Distribution) String() string {
	if d < numDistributions {
		return distributionNames[d]
	}
	return "Distribution(" + strconv.Itoa(int(d)) + ")"
}

// Distributions lists every distribution.
func Distributions() []Distribution {
	out := make([]Distribution, numDistributions)
	for i := range out {
		out[i] = Distribution(i)
	}
	return out
}

// ParseDistribution returns the distribution named s (case-insensitive;
// "zipf" is accepted for zipfian).
func ParseDistribution(s string) (Distribution, error) {
	name := strings.ToLower(strings.TrimSpace(s))
	if name == "zipf" {
		return Zipfian, nil
	}
	for i, n := range distributionNames {
		if n == name {
			return Distribution(i), nil
		}
	}
	return 0, fmt.Errorf("unknown key distribution %q (uniform, zipfian, hotspot or exponential)", s)
}

// KeyChooser draws keys in [0, keys) from a distribution. Implementations
// hold no mutable state: all randomness comes from r.
type KeyChooser interface {
	// Next returns the next key, in [0, keys).
	Next(r *rand.Rand) int
}

// NewKeyChooser returns a sampler of d over keys keys, with the default
// parameters (θ = 0.99 for zipfian; 80% of accesses to 20% of the keys for
// hotspot; YCSB's 95th percentile at 6/7 of the keys for exponential).
func NewKeyChooser(d Distribution, keys int) (KeyChooser, error) {
	if keys < 1 {
		return nil, fmt.Errorf("key distribution %s needs at least one key, got %d", d, keys)
	}
	switch d {
	case Uniform:
		return UniformChooser{Keys: keys}, nil
	case Zipfian:
		return NewZipfian(keys, ZipfianTheta)
	case Hotspot:
		return HotspotChooser{Keys: keys, HotSetFraction: DefaultHotSetFraction, HotOpnFraction: DefaultHotOpnFraction}, nil
	case Exponential:
		return NewExponential(keys, DefaultExponentialPercentile, DefaultExponentialFraction)
	}
	return nil, fmt.Errorf("unknown key distribution %s", d)
}

// UniformChooser picks each of Keys keys with equal probability.
type UniformChooser struct {
	Keys int
}

// Next returns a key drawn uniformly from [0, Keys).
func (u UniformChooser) Next(r *rand.Rand) int { return r.IntN(u.Keys) }

// The hotspot defaults: YCSB's hotspot generator with 80% of the operations
// on 20% of the keys.
const (
	DefaultHotSetFraction = 0.2
	DefaultHotOpnFraction = 0.8
)

// HotspotChooser sends a share HotOpnFraction of the accesses to the hot
// set, the first HotSetFraction of the keys (at least one key), and the
// rest to the other keys, uniformly within each set.
type HotspotChooser struct {
	Keys int
	// HotSetFraction is the share of the keys that are hot.
	HotSetFraction float64
	// HotOpnFraction is the share of the accesses that go to the hot set.
	HotOpnFraction float64
}

// Next returns a key of [0, Keys): hot with probability HotOpnFraction.
func (h HotspotChooser) Next(r *rand.Rand) int {
	hot := int(float64(h.Keys) * h.HotSetFraction)
	hot = max(1, min(hot, h.Keys))
	if hot == h.Keys {
		return r.IntN(h.Keys)
	}
	if r.Float64() < h.HotOpnFraction {
		return r.IntN(hot)
	}
	return hot + r.IntN(h.Keys-hot)
}

// The exponential defaults, YCSB's: 95% of the accesses fall in the first
// 0.8571428571 (6/7) of the keys.
const (
	DefaultExponentialPercentile = 95
	DefaultExponentialFraction   = 0.8571428571
)

// ExponentialChooser picks key i with probability proportional to
// exp(-γ·i), γ chosen so that Percentile percent of the draws fall in the
// first Fraction of the keys (YCSB's ExponentialGenerator; draws beyond
// the last key are redrawn). Key 0 is the hottest.
type ExponentialChooser struct {
	Keys  int
	gamma float64
}

// NewExponential returns an exponential sampler over keys keys with
// percentile percent of the draws in the first fraction of the keys.
func NewExponential(keys int, percentile, fraction float64) (*ExponentialChooser, error) {
	if keys < 1 {
		return nil, fmt.Errorf("exponential distribution needs at least one key, got %d", keys)
	}
	if !(percentile > 0 && percentile < 100) || !(fraction > 0) {
		return nil, fmt.Errorf("exponential distribution: percentile %v must be in (0, 100) and fraction %v positive", percentile, fraction)
	}
	return &ExponentialChooser{Keys: keys, gamma: -math.Log(1-percentile/100) / (float64(keys) * fraction)}, nil
}

// Next returns a key of [0, Keys).
func (e *ExponentialChooser) Next(r *rand.Rand) int {
	for range 64 {
		// 1-Float64 is in (0, 1]: the logarithm is finite.
		x := -math.Log(1-r.Float64()) / e.gamma
		if x < float64(e.Keys) {
			return int(x)
		}
	}
	return r.IntN(e.Keys)
}

// AWDITAlpha is the shape of the Pareto distribution AWDIT's history
// generator draws keys from (`awdit generate --alpha`, default 1.16: the
// "80/20" shape, a fifth of the keys taking about four fifths of the
// accesses).
const AWDITAlpha = 1.16

// ParetoChooser draws keys the way AWDIT's history generator does: a
// Pareto variate x with shape Alpha and scale MinX, k = round(x − MinX);
// key Perm[k] when k < len(Perm), else a key drawn uniformly. MinX is
// chosen so that the first fifth of the ranks takes the share of the
// accesses that a Pareto of that shape gives it (80% at α = 1.16), and
// Perm is a random permutation of the keys, so that the hot keys are not
// the low ones.
type ParetoChooser struct {
	Alpha, MinX float64
	Perm        []int32
}

// NewPareto returns AWDIT's Pareto chooser over keys keys with shape
// alpha (> 0), its permutation drawn from r.
func NewPareto(keys int, alpha float64, r *rand.Rand) (*ParetoChooser, error) {
	if keys < 1 || keys > math.MaxInt32 {
		return nil, fmt.Errorf("pareto key distribution: need 1 to %d keys, got %d", math.MaxInt32, keys)
	}
	if !(alpha > 0) || math.IsInf(alpha, 0) {
		return nil, fmt.Errorf("pareto key distribution: shape must be positive and finite, got %g", alpha)
	}
	q := math.Pow(0.2, 1/alpha)
	p := &ParetoChooser{Alpha: alpha, MinX: q * (float64(keys) / 5) / (1 - q), Perm: make([]int32, keys)}
	for i := range p.Perm {
		p.Perm[i] = int32(i)
	}
	r.Shuffle(keys, func(i, j int) { p.Perm[i], p.Perm[j] = p.Perm[j], p.Perm[i] })
	return p, nil
}

// Next returns a key drawn from the Pareto distribution.
func (p *ParetoChooser) Next(r *rand.Rand) int {
	u := 1 - r.Float64() // (0, 1]
	x := p.MinX / math.Pow(u, 1/p.Alpha)
	if k := math.Round(x - p.MinX); k < float64(len(p.Perm)) {
		return int(p.Perm[int(k)])
	}
	return r.IntN(len(p.Perm))
}
