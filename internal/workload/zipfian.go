package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// ZipfianTheta is YCSB's zipfian constant θ.
const ZipfianTheta = 0.99

// ZipfianChooser draws keys of [0, Keys) with probability of key i
// proportional to 1/(i+1)^θ, by the method of Gray et al., "Quickly
// Generating Billion-Record Synthetic Databases" (SIGMOD 1994), as YCSB's
// ZipfianGenerator implements it: one uniform draw and one power per key.
// Key 0 is the hottest (the keys are not scrambled).
type ZipfianChooser struct {
	Keys  int
	theta float64
	// zetan is ζ(Keys, θ) = Σ_{i=1..Keys} 1/i^θ; alpha = 1/(1-θ); eta and
	// half2theta (1 + 0.5^θ) are the constants of the inversion.
	zetan, alpha, eta, half2theta float64
}

// NewZipfian returns a zipfian sampler over keys keys with constant theta
// in (0, 1). Construction computes ζ(keys, θ) in O(keys) time.
func NewZipfian(keys int, theta float64) (*ZipfianChooser, error) {
	if keys < 1 {
		return nil, fmt.Errorf("zipfian distribution needs at least one key, got %d", keys)
	}
	if !(theta > 0 && theta < 1) {
		return nil, fmt.Errorf("zipfian constant θ = %v must be in (0, 1)", theta)
	}
	z := &ZipfianChooser{Keys: keys, theta: theta}
	z.zetan = zeta(keys, theta)
	z.alpha = 1 / (1 - theta)
	z.half2theta = 1 + math.Pow(0.5, theta)
	if keys > 2 {
		zeta2 := zeta(2, theta)
		z.eta = (1 - math.Pow(2/float64(keys), 1-theta)) / (1 - zeta2/z.zetan)
	}
	return z, nil
}

// zeta returns Σ_{i=1..n} 1/i^θ.
func zeta(n int, theta float64) float64 {
	sum := 0.0
	for i := 1; i <= n; i++ {
		sum += 1 / math.Pow(float64(i), theta)
	}
	return sum
}

// Theta returns the zipfian constant θ.
func (z *ZipfianChooser) Theta() float64 { return z.theta }

// Next returns a key of [0, Keys).
func (z *ZipfianChooser) Next(r *rand.Rand) int {
	if z.Keys == 1 {
		return 0
	}
	u := r.Float64()
	uz := u * z.zetan
	if uz < 1 {
		return 0
	}
	if uz < z.half2theta || z.Keys == 2 {
		return 1
	}
	k := int(float64(z.Keys) * math.Pow(z.eta*u-z.eta+1, z.alpha))
	return min(k, z.Keys-1)
}
