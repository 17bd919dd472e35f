// Package workload holds the key-access distributions of isoscope's
// synthetic workloads (MTC's uniform, zipfian, hotspot and exponential,
// after YCSB) as data, and samplers for them, and the plans `isoscope run`
// executes: MTC's mini-transactions, Cobra's general workload, Elle's
// list-append, lightweight transactions, range (deletes, scans and
// iterators), and Boomslang's RandomBench, RandomRange, RandomRMWRange and
// BlindW. It is the one workload catalogue: the simulator behind
// `isoscope gen` (internal/gen) takes its mini-transaction shapes
// (MTShapes, DrawMT), the mixes of RandomBench and RandomRange (Mix), and
// the paper workloads' names from here.
//
// The package is pure: every sampler takes its randomness as a *rand.Rand
// argument and holds no mutable state, so a seeded generator reproduces the
// same key sequence.
package workload
