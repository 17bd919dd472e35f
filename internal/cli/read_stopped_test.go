package cli

import (
	"context"
	"errors"
	"testing"
)

// TestReadStopped: a read stopped by its context says why: a signal
// (the context cancelled), a deadline, or the cause it was cancelled with
// (the memory bound); nothing while the context runs.
func TestReadStopped(t *testing.T) {
	live, stop := context.WithCancel(context.Background())
	defer stop()
	signalled, cancel := context.WithCancel(context.Background())
	cancel()
	late, cancelLate := context.WithTimeout(context.Background(), 0)
	defer cancelLate()
	bounded, cancelBounded := context.WithCancelCause(context.Background())
	cancelBounded(errors.New("memory: the check held 900 MB, more than --memory-mb 800"))
	for _, c := range []struct {
		ctx  context.Context
		want string
	}{
		{live, ""},
		{signalled, "interrupted while reading h.jsonl"},
		{late, "timed out while reading h.jsonl"},
		{bounded, "stopped while reading h.jsonl: memory: the check held 900 MB, more than --memory-mb 800"},
	} {
		if got := readStopped(c.ctx, "h.jsonl"); got != c.want {
			t.Errorf("%q, want %q", got, c.want)
		}
	}
}
