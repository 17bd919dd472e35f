package gen

import (
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/workload"
)

// Timestamped is one generated history with start and commit timestamps,
// named for messages; Serial says the simulated database was serial, so
// the history satisfies serializability by its timestamps too (snapshot
// isolation always).
type Timestamped struct {
	Name   string
	H      *history.History
	Serial bool
}

// TimestampedSet generates, from the serial and the snapshot-isolation
// simulators, a mini-transaction history (6 sessions, 20 zipfian keys, a
// fifth read-only, 5% aborts) and a mixed BlindW history (6 sessions, 30
// uniform keys, 6 operations) of txns transactions each, with timestamps:
// the histories the timestamp checkers' differential tests start from.
func TimestampedSet(txns int, seed uint64) ([]Timestamped, error) {
	var out []Timestamped
	for _, m := range []Mode{Serial, SnapshotIsolation} {
		h, _, err := Generate(Config{Txns: txns, Sessions: 6, Keys: 20, Dist: workload.Zipfian, Mode: m,
			ReadOnlyRatio: 0.2, AbortRatio: 0.05, Seed: seed, Timestamps: true})
		if err != nil {
			return nil, err
		}
		out = append(out, Timestamped{"mt/" + m.String(), h, m == Serial})
		h, err = GenerateRange(RangeConfig{Workload: BlindW, BlindWMixed: true, Mode: m, Txns: txns,
			Sessions: 6, Keys: 30, Dist: workload.Uniform, Seed: seed, Timestamps: true, Ops: 6})
		if err != nil {
			return nil, err
		}
		out = append(out, Timestamped{"blindw/" + m.String(), h, m == Serial})
	}
	return out, nil
}
