package workload

import "math/rand/v2"

// MTStep is a step of a mini-transaction's shape: a read or a write of the
// transaction's first (Slot 0) or second (Slot 1) key.
type MTStep struct {
	Write bool
	Slot  uint8
}

// MTShapes are the shapes of MTC's mini-transactions: the one catalogue
// that run's plans (NewPlan) and the simulator (internal/gen) draw from.
// Every write is preceded by a read of its key. DrawMT returns an index
// into it.
var MTShapes = [...][]MTStep{
	{{false, 0}},                                   // r x
	{{false, 0}, {false, 1}},                       // r x r y
	{{false, 0}, {true, 0}},                        // r x w x
	{{false, 0}, {false, 1}, {true, 0}, {true, 1}}, // r x r y w x w y
	{{false, 0}, {true, 0}, {false, 1}, {true, 1}}, // r x w x r y w y
	{{false, 0}, {false, 1}, {true, 0}},            // r x r y w x
	{{false, 0}, {false, 1}, {true, 1}},            // r x r y w y
}

// The places of the shapes in MTShapes: read-only over one and two keys,
// read-modify-write of one key, and the first of the numMTRMW2
// read-modify-writes of two keys.
const (
	mtRead1, mtRead2, mtRMW1, mtRMW2 = 0, 1, 2, 3
	numMTRMW2                        = 4
)

// DrawMT draws a mini-transaction from r: read-only with probability
// readRatio, over one or two distinct keys (with equal probability) that
// keys chooses among n. It returns the index of its shape in MTShapes and
// its keys (the second is 0 for a shape of one key). The order of the
// draws is part of the contract: the same r gives the same plans and
// simulated histories.
func DrawMT(r *rand.Rand, keys KeyChooser, n int, readRatio float64) (shape int, k [2]int) {
	two := n > 1 && r.Uint64()&1 == 0
	k[0] = keys.Next(r)
	if two {
		k[1] = otherKey(r, keys, n, k[0])
	}
	readOnly := r.Float64() < readRatio
	switch {
	case readOnly && two:
		shape = mtRead2
	case readOnly:
		shape = mtRead1
	case two:
		shape = mtRMW2 + r.IntN(numMTRMW2)
	default:
		shape = mtRMW1
	}
	return shape, k
}

// otherKey draws a key other than x (there are n ≥ 2 keys).
func otherKey(r *rand.Rand, keys KeyChooser, n, x int) int {
	for range 8 {
		if y := keys.Next(r); y != x {
			return y
		}
	}
	// A very skewed distribution: pick another key uniformly.
	return (x + 1 + r.IntN(n-1)) % n
}
