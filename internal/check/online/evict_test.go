package online

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/isoscope/isoscope/internal/history"
)

// TestDroppedIntKeysExact drops the settled state of a million integer
// keys, retired in runs as workloads retire them and scattered at random,
// and requires that exactly those keys are remembered as dropped (no key
// never dropped is taken for one, which a filter would do now and then
// and which would leave a long run's verdict undecided) in little memory;
// string keys go through the filter, which never forgets one.
func TestDroppedIntKeysExact(t *testing.T) {
	s := &state{cfg: Config{MemoryBytes: 128 << 20}}
	rng := rand.New(rand.NewPCG(7, 9))
	dropped := map[int64]bool{}
	// Runs of consecutive keys, dropped a little out of order, as an
	// eviction of the least recently touched keys retires them.
	for base := int64(0); base < 1_000_000; base += 1000 {
		perm := rng.Perm(1000)
		for _, i := range perm[:900] {
			k := base + int64(i)
			s.markDropped(history.IntValue(k))
			dropped[k] = true
		}
	}
	// Scattered keys, negative ones included.
	for range 5_000 {
		k := rng.Int64N(1<<40) - 1<<39
		s.markDropped(history.IntValue(k))
		dropped[k] = true
	}
	s.goneInts.RunOptimize()
	for k := range dropped {
		if !s.dropped(history.IntValue(k)) {
			t.Fatalf("key %d was dropped and is not remembered", k)
		}
	}
	for range 300_000 {
		k := rng.Int64N(1<<41) - 1<<40
		if s.dropped(history.IntValue(k)) != dropped[k] {
			t.Fatalf("key %d: dropped %v, remembered %v", k, dropped[k], !dropped[k])
		}
	}
	for k := int64(0); k < 1_000_000; k++ {
		if s.dropped(history.IntValue(k)) != dropped[k] {
			t.Fatalf("key %d: dropped %v, remembered %v", k, dropped[k], !dropped[k])
		}
	}
	if b := s.goneInts.GetSizeInBytes(); b > 1<<20 {
		t.Errorf("%d integer keys dropped take %d bytes, want at most 1 MiB", len(dropped), b)
	}
	for i := range 10_000 {
		s.markDropped(history.StringValue(fmt.Sprint("k", i)))
	}
	for i := range 10_000 {
		if !s.dropped(history.StringValue(fmt.Sprint("k", i))) {
			t.Fatalf("string key k%d was dropped and is not remembered", i)
		}
	}
	if s.dropped(history.IntValue(4_000_000_000)) {
		t.Error("dropping string keys made an integer key look dropped")
	}
}
