package native

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/format"
	"github.com/isoscope/isoscope/internal/history"
)

// withChunks makes Read cut its input into chunks of size bytes parsed by
// workers workers, until the test ends.
func withChunks(t *testing.T, size, workers int) {
	t.Helper()
	oldSize, oldWorkers := chunkSize, readWorkers
	chunkSize, readWorkers = size, func() int { return workers }
	t.Cleanup(func() { chunkSize, readWorkers = oldSize, oldWorkers })
}

// streamRead reads in with the streaming Reader, one line at a time, and
// does what Read does at the end: the sequential reference for Read.
func streamRead(in []byte, name string) (*history.History, error) {
	h, _, err := streamReadWith(in, name, Options{})
	return h, err
}

// streamReadWith is streamRead with options, returning the torn line too.
func streamReadWith(in []byte, name string, opts Options) (*history.History, *format.Torn, error) {
	rd, err := NewReaderWith(bytes.NewReader(in), name, opts)
	if err != nil {
		return nil, nil, err
	}
	h := rd.History()
	for {
		t, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, err
		}
		h.Txns = append(h.Txns, *t)
	}
	resolveListNulls(h, rd.lists)
	if h.Header.UniqueValues {
		if err := checkUnique(h); err != nil {
			return nil, nil, err
		}
	}
	return h, rd.Torn(), nil
}

// genLines generates n transaction lines of a random history: integer or
// string keys, ids and sessions, every status, scans, iterators, list
// reads and appends, blank lines and CRLF line ends.
func genLines(rng *rand.Rand, n int, strKeys bool) []string {
	key := func() string {
		k := rng.IntN(40)
		if strKeys {
			return fmt.Sprintf(`"k%02d"`, k)
		}
		return fmt.Sprint(k)
	}
	var out []string
	for i := range n {
		var b strings.Builder
		id := fmt.Sprint(i)
		if rng.IntN(3) == 0 {
			id = fmt.Sprintf(`"t%d"`, i)
		}
		session := fmt.Sprint(rng.IntN(5) * 1000)
		if rng.IntN(4) == 0 {
			session = fmt.Sprintf(`"s%d"`, rng.IntN(5))
		}
		fmt.Fprintf(&b, `{"id":%s,"session":%s`, id, session)
		switch rng.IntN(6) {
		case 0:
			b.WriteString(`,"status":"aborted"`)
		case 1:
			b.WriteString(`,"status":"unknown"`)
		}
		if rng.IntN(2) == 0 {
			fmt.Fprintf(&b, `,"begin":%d,"end":%d,"start_ts":%d,"commit_ts":%d`, 10*i, 10*i+5, 2*i, 2*i+1)
		}
		b.WriteString(`,"ops":[`)
		for j := range 1 + rng.IntN(6) {
			if j > 0 {
				b.WriteString(",")
			}
			switch rng.IntN(7) {
			case 0:
				lo, hi := key(), key()
				if lo > hi {
					lo, hi = hi, lo
				}
				fmt.Fprintf(&b, `["scan",%s,%s,[]]`, lo, hi)
			case 1:
				fmt.Fprintf(&b, `["r",%s,[%d,"x",null]]`, key(), i)
			case 2:
				fmt.Fprintf(&b, `["append",%s,%d]`, key(), 1000*i+j)
			case 3:
				fmt.Fprintf(&b, `["r",%s,null]`, key())
			case 4:
				fmt.Fprintf(&b, `["d",%s]`, key())
			default:
				fmt.Fprintf(&b, `["w",%s,%d,{"lock":true}]`, key(), 1000*i+j)
			}
		}
		b.WriteString("]}")
		out = append(out, b.String())
		switch rng.IntN(20) {
		case 0:
			out = append(out, "")
		case 1:
			out = append(out, "  \t")
		case 2:
			out[len(out)-1] += "\r"
		}
	}
	return out
}

// genHistory is a generated input, with or without a header.
func genHistory(seed uint64, n int, strKeys, header bool) []string {
	rng := rand.New(rand.NewPCG(seed, 7))
	ls := genLines(rng, n, strKeys)
	if header {
		init, vo := `{"1":5,"7":null}`, `{"3":[1,2]}`
		if strKeys {
			init, vo = `{"k01":5,"zz":"a"}`, `{"k03":[1,2]}`
		}
		h := `{"format":"isoscope-history","version":1,"initial":` + init + `,"version_order":` + vo + `,"source":"test"}`
		ls = append([]string{h}, ls...)
	}
	return ls
}

func join(ls []string) []byte { return []byte(strings.Join(ls, "\n") + "\n") }

// sameRead checks that Read with small chunks on several workers gives
// what the streaming reader gives: the same history, or the same error.
func sameRead(t *testing.T, in []byte) {
	t.Helper()
	want, wantErr := streamRead(in, "h.jsonl")
	for _, size := range []int{1, 100, 1000, 1 << 20} {
		for _, workers := range []int{1, 2, 3} {
			withChunks(t, size, workers)
			got, err := Read(bytes.NewReader(in), "h.jsonl")
			if fmt.Sprint(err) != fmt.Sprint(wantErr) {
				t.Fatalf("chunks of %d bytes, %d workers: error %v, want %v", size, workers, err, wantErr)
			}
			if wantErr == nil && len(got.Txns) == 0 && len(want.Txns) == 0 {
				got.Txns = want.Txns // Read gives an empty slice, Next none
			}
			if wantErr == nil && diff(got, want) != "" {
				t.Fatalf("chunks of %d bytes, %d workers: %s", size, workers, diff(got, want))
			}
			if wantErr == nil && !reflect.DeepEqual(got, want) {
				t.Fatalf("chunks of %d bytes, %d workers: histories differ:\n%#v\n%#v", size, workers, got, want)
			}
		}
	}
}

// TestReadParallel: Read in chunks on several workers gives the history the
// streaming reader gives, key ids, session indices, transaction order and
// lines included.
func TestReadParallel(t *testing.T) {
	for seed := range uint64(4) {
		for _, strKeys := range []bool{false, true} {
			for _, header := range []bool{false, true} {
				t.Run(fmt.Sprintf("seed%d/str%v/header%v", seed, strKeys, header), func(t *testing.T) {
					sameRead(t, join(genHistory(seed, 300, strKeys, header)))
				})
			}
		}
	}
}

// TestReadParallelCases: the good and bad inputs of the other tests give
// the same history or error in chunks.
func TestReadParallelCases(t *testing.T) {
	for _, c := range goodCases {
		sameRead(t, []byte(c.in))
	}
	for _, c := range badCases {
		sameRead(t, []byte(c.in))
	}
}

// TestReadParallelErrors: with bad lines in several chunks, Read reports
// the one of the earliest, whichever worker finishes first.
func TestReadParallelErrors(t *testing.T) {
	base := genHistory(9, 400, false, true)
	bad := map[string]string{
		"syntax":         `{"id":1,`,
		"duplicate id":   base[1],
		"string key":     `{"id":"new","session":0,"ops":[["r","x",1]]}`,
		"bad session":    `{"id":"new2","session":null,"ops":[["r",1,1]]}`,
		"format field":   `{"format":"isoscope-history","version":1}`,
		"unknown status": `{"id":"new3","session":0,"status":"lost","ops":[["r",1,1]]}`,
	}
	names := []string{"syntax", "duplicate id", "string key", "bad session", "format field", "unknown status"}
	for i, first := range names {
		second := names[(i+1)%len(names)]
		for _, at := range [][2]int{{10, 300}, {150, 151}, {399, 400}, {2, 3}} {
			ls := append([]string(nil), base...)
			ls[at[1]] = bad[second]
			ls[at[0]] = bad[first]
			in := join(ls)
			_, want := streamRead(in, "h.jsonl")
			if want == nil || !strings.Contains(want.Error(), fmt.Sprintf(":%d:", at[0]+1)) {
				t.Fatalf("%s at %d: the streaming reader says %v", first, at[0]+1, want)
			}
			sameRead(t, in)
		}
	}
}

// TestReadParallelKinds: the history's kind of key, fixed by its first key,
// and the header's initial keys, resolved then, whichever chunk holds it.
func TestReadParallelKinds(t *testing.T) {
	hdr := `{"format":"isoscope-history","version":1,"initial":{"x":1}}`
	var ls []string
	ls = append(ls, hdr)
	for i := range 50 {
		ls = append(ls, fmt.Sprintf(`{"id":%d,"session":0,"status":"aborted","ops":[]}`, i))
	}
	ls = append(ls, `{"id":100,"session":0,"ops":[["r",1,1]]}`) // "x" is no integer key
	sameRead(t, join(ls))
	ls[len(ls)-1] = `{"id":100,"session":0,"ops":[["scan",1,5,[]]]}` // nor here, with no key
	sameRead(t, join(ls))
	ls[len(ls)-1] = `{"id":100,"session":0,"ops":[["iter","a",null,[]]]}`
	ls = append(ls, `{"id":101,"session":0,"ops":[["r",1,1]]}`) // the kind is string
	sameRead(t, join(ls))
	ls = ls[:len(ls)-1]
	ls[len(ls)-1] = `{"id":100,"session":0,"ops":[["r","y",1]]}`
	ls = append(ls, `{"id":5,"session":0,"ops":[["r","y",1]]}`) // a duplicate id
	sameRead(t, join(ls))
	ls[len(ls)-1] = `{"id":101,"session":0,"ops":[["r",1,1]]}` // an integer key
	sameRead(t, join(ls))
	ls = append(ls[:len(ls)-1], `{"id":101,"session":0,"ops":[["r","z",1]]}`)
	sameRead(t, join(ls))
}

// TestReadParallelGzip: a gzip input read in chunks, whole and cut short.
func TestReadParallelGzip(t *testing.T) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(join(genHistory(3, 500, false, true)))
	zw.Close()
	sameRead(t, buf.Bytes())
	sameRead(t, buf.Bytes()[:buf.Len()-10])
	sameRead(t, buf.Bytes()[:buf.Len()/2])
}

// TestReadParallelUnterminated: the last line without a line end, and a
// last line cut short, in the last chunk.
func TestReadParallelUnterminated(t *testing.T) {
	in := join(genHistory(5, 200, true, false))
	sameRead(t, in[:len(in)-1])
	sameRead(t, in[:len(in)-20])
}

// errReader returns its data, then err.
type errReader struct {
	data []byte
	err  error
}

func (r *errReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

// TestReadParallelReadError: a read error ends the input at the line
// after the last whole one, unless a bad line comes before.
func TestReadParallelReadError(t *testing.T) {
	in := join(genHistory(6, 300, false, false))
	cut := len(in) * 2 / 3
	fail := errors.New("disk on fire")
	want := fmt.Sprintf("h.jsonl: line %d: disk on fire", bytes.Count(in[:cut], []byte{'\n'})+1)
	for _, size := range []int{1, 100, 1000, 1 << 20} {
		withChunks(t, size, 2)
		_, err := Read(&errReader{data: in[:cut], err: fail}, "h.jsonl")
		if !errors.Is(err, fail) || err.Error() != want {
			t.Errorf("chunks of %d bytes: got %v, want %s", size, err, want)
		}
	}
}

// TestWritesUniqueParallel: the parallel decision agrees with the
// sequential one on a large history, with and without duplicates.
func TestWritesUniqueParallel(t *testing.T) {
	h := miniHistory(parallelUnique+100, 8, 500, true)
	if !writesUnique(h) || !writesUniqueOf(h) {
		t.Fatal("a history of unique writes is not unique")
	}
	w := &h.Txns[parallelUnique+50].Ops[2]
	saved := *w
	*w = h.Txns[7].Ops[3] // a duplicate of an early write, late
	if writesUnique(h) || writesUniqueOf(h) {
		t.Fatal("a duplicate write is not found")
	}
	*w = saved
	h.Header.Initial.Values = map[history.KeyID]history.Value{w.Key: w.Value}
	if writesUnique(h) || writesUniqueOf(h) {
		t.Fatal("a write of the initial value is not found")
	}
	h.Header.Initial.Values = nil
	w.Value = history.StringValue("s")
	if got, want := writesUnique(h), writesUniqueOf(h); got != want || !got {
		t.Fatalf("with a string value: %v, want %v", got, want)
	}
	h.Txns[3].Ops[2].Value = history.StringValue("s")
	h.Txns[3].Ops[2].Key = w.Key
	if got, want := writesUnique(h), writesUniqueOf(h); got != want || got {
		t.Fatalf("with a duplicate string value: %v, want %v", got, want)
	}
}
