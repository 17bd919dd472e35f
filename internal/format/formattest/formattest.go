// Package formattest holds what the format readers' tests share: a
// history's golden rendering (compared with package golden's Check), and
// reading a fixture through a reader.
package formattest

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/format/native"
	"github.com/isoscope/isoscope/internal/history"
)

// Render is the golden rendering of a history: its notation, one
// transaction per line.
func Render(h *history.History) string {
	return strings.ReplaceAll(history.Notation(h), " | ", "\n") + "\n"
}

// ReadFile reads the history at path with read, failing the test on error.
func ReadFile(t testing.TB, path string, read func(io.Reader, string) (*history.History, error)) *history.History {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, err := read(f, path)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// JSONL is a history in the native format, as isoscope convert writes it:
// the golden rendering of the readers whose golden files are .jsonl.
func JSONL(t testing.TB, h *history.History) string {
	t.Helper()
	var b bytes.Buffer
	if err := native.Write(&b, h); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// Corpora is the shared corpora directory, relative to a reader's package.
const Corpora = "../../../../shared/corpora"

// Sniff checks a reader's Sniff on every input: whether it should claim it.
func Sniff(t testing.TB, sniff func([]byte) bool, claims map[string]bool) {
	t.Helper()
	for in, want := range claims {
		if got := sniff([]byte(in)); got != want {
			t.Errorf("Sniff(%q) = %v, want %v", in, got, want)
		}
	}
}
