package jepsenstore

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/format"
	"github.com/isoscope/isoscope/internal/format/registry"
	"github.com/isoscope/isoscope/internal/history"
)

// writeRun makes a run directory with the named files.
func writeRun(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

const registerEDN = `{:type :invoke, :f :write, :value 1, :process 0, :time 1, :index 0}
{:type :ok, :f :write, :value 1, :process 0, :time 2, :index 1}
{:type :invoke, :f :read, :value nil, :process 1, :time 3, :index 2}
{:type :ok, :f :read, :value 1, :process 1, :time 4, :index 3}
`

func TestFind(t *testing.T) {
	root := t.TempDir()
	test := filepath.Join(root, "store", "etcd")
	run1 := filepath.Join(test, "20261207T101010.000Z")
	run2 := filepath.Join(test, "20261207T111111.000Z")
	writeRun(t, run1, map[string]string{"history.edn": registerEDN, "history.txt": "x", "results.edn": "{:valid? true}"})

	// A run: history.edn preferred to history.txt, results.edn beside.
	r, ok, err := Find(run1)
	if err != nil || !ok || r.History != filepath.Join(run1, "history.edn") || r.Text || r.Results != filepath.Join(run1, "results.edn") || r.Via != "" {
		t.Fatalf("run: %+v %v %v", r, ok, err)
	}
	// A test directory with one run: that run.
	if r, ok, err := Find(test); err != nil || !ok || r.Dir != run1 || !strings.Contains(r.Via, "one run") {
		t.Fatalf("test directory with one run: %+v %v %v", r, ok, err)
	}
	// Two runs and no latest: refused, naming both.
	writeRun(t, run2, map[string]string{"history.txt": "0\t:invoke\t:read\tnil\n"})
	if _, _, err := Find(test); err == nil || !strings.Contains(err.Error(), "20261207T101010.000Z") || !strings.Contains(err.Error(), "20261207T111111.000Z") {
		t.Fatalf("two runs, no latest: err %v", err)
	}
	// latest (a symbolic link) picks one; history.txt alone is read as text.
	if err := os.Symlink("20261207T111111.000Z", filepath.Join(test, "latest")); err != nil {
		t.Fatal(err)
	}
	r, ok, err = Find(test)
	if err != nil || !ok || r.History != filepath.Join(test, "latest", "history.txt") || !r.Text || r.Results != "" || !strings.HasPrefix(r.Via, "latest") {
		t.Fatalf("latest: %+v %v %v", r, ok, err)
	}
	// The store itself, through its latest link.
	if err := os.Symlink(filepath.Join("etcd", "20261207T101010.000Z"), filepath.Join(root, "store", "latest")); err != nil {
		t.Fatal(err)
	}
	if r, ok, err := Find(filepath.Join(root, "store")); err != nil || !ok || r.History != filepath.Join(root, "store", "latest", "history.edn") {
		t.Fatalf("store latest: %+v %v %v", r, ok, err)
	}
	// A directory of something else: not a store, no error.
	other := filepath.Join(root, "cobra")
	writeRun(t, other, map[string]string{"T1.log": "x"})
	if _, ok, err := Find(other); ok || err != nil {
		t.Fatalf("other directory: %v %v", ok, err)
	}
	// A latest that is no run is an error.
	broken := filepath.Join(root, "broken")
	writeRun(t, filepath.Join(broken, "latest"), map[string]string{"notes": "x"})
	if _, _, err := Find(broken); err == nil {
		t.Fatal("a latest without a history: want an error")
	}
}

func TestTextReader(t *testing.T) {
	text := "0\t:invoke\t:write\t1\n0\t:ok\t:write\t1\n\n:nemesis\t:info\t:start\tnil\n1\t:invoke\t:read\tnil\n1\t:info\t:read\tnil\tindeterminate: \"timed out\"\\x\n"
	got, err := io.ReadAll(TextReader(strings.NewReader(text), "history.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want := `{:process 0, :type :invoke, :f :write, :value 1}
{:process 0, :type :ok, :f :write, :value 1}

{:process :nemesis, :type :info, :f :start, :value nil}
{:process 1, :type :invoke, :f :read, :value nil}
{:process 1, :type :info, :f :read, :value nil, :error "indeterminate: \"timed out\"\\x"}
`
	if string(got) != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	// A line without its four fields is an error naming it.
	_, err = io.ReadAll(TextReader(strings.NewReader("0\t:invoke\t:write\t1\n0 :ok :write 1\n"), "h.txt"))
	if err == nil || !strings.Contains(err.Error(), "h.txt:2") {
		t.Fatalf("bad line: err %v", err)
	}
	// Read one byte at a time, the same text.
	var b bytes.Buffer
	r := TextReader(strings.NewReader(text), "history.txt")
	one := make([]byte, 1)
	for {
		n, err := r.Read(one)
		b.Write(one[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if b.String() != want {
		t.Fatalf("byte by byte: got\n%s", b.String())
	}
}

// TestOpenText: a run with history.txt alone (and gzip-compressed) is
// read as its operations, and a bad line is reported at its line of the
// text.
func TestOpenText(t *testing.T) {
	dir := t.TempDir()
	text := "0\t:invoke\t:write\t1\n0\t:ok\t:write\t1\n1\t:invoke\t:read\tnil\n1\t:ok\t:read\t1\n"
	writeRun(t, dir, map[string]string{"history.txt": text})
	r, ok, err := Find(dir)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	o, err := Open(r, "", registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(o.History.Txns); n != 2 {
		t.Fatalf("%d transactions, want 2:\n%s", n, history.Notation(o.History))
	}
	// A line longer than the limit is refused, naming it.
	writeRun(t, dir, map[string]string{"history.txt": text + "1\t:invoke\t:read\t[" + strings.Repeat("1 ", 100) + "]\n"})
	if _, err := Open(r, "", registry.Options{Limits: format.Limits{MaxLine: 64}}); !format.IsLimit(err) || !strings.Contains(err.Error(), "history.txt:5") {
		t.Fatalf("long line 5: err %v", err)
	}
	writeRun(t, dir, map[string]string{"history.txt": text + "1\t:invoke\t:read\n"})
	if _, err := Open(r, "", registry.Options{}); err == nil || !strings.Contains(err.Error(), "history.txt:5") {
		t.Fatalf("bad line 5: err %v", err)
	}
}

// FuzzTextReader: any text converts without panic, line for line.
func FuzzTextReader(f *testing.F) {
	f.Add("0\t:invoke\t:write\t1\n0\t:ok\t:write\t1\n")
	f.Add(":nemesis\t:info\t:start\tnil\terr\"or\n\n")
	f.Add("0 :invoke")
	f.Fuzz(func(t *testing.T, text string) {
		out, err := io.ReadAll(TextReader(strings.NewReader(text), "h.txt"))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "h.txt:") {
				t.Fatalf("error names no line: %v", err)
			}
			return
		}
		if in, got := strings.Count(strings.TrimSuffix(text, "\n"), "\n"), strings.Count(strings.TrimSuffix(string(out), "\n"), "\n"); in != got && len(text) > 0 {
			t.Fatalf("%d lines in, %d out:\n%q\n%q", in+1, got+1, text, out)
		}
	})
}
