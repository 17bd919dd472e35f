// Package workload holds the key-access distributions of isoscope's
// synthetic workloads (MTC's uniform, zipfian, hotspot and exponential,
// after YCSB) as data, and samplers for them.
//
// The package is pure: every sampler takes its randomness as a *rand.Rand
// argument and holds no mutable state, so a seeded generator reproduces the
// same key sequence.
package workload
