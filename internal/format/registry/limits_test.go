package registry

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/format"
	"github.com/isoscope/isoscope/internal/format/native"
)

// The bounds every bad input of these tests must end within.
const (
	maxPeak    = 256 << 20
	maxElapsed = 10 * time.Second // generous: the machine is shared
)

// errOverread is what the generated inputs return once a reader has read
// more of them than the test allows: a reader without limits then fails
// the test at once instead of taking the machine's memory.
var errOverread = errors.New("test input: read on past the test's budget")

// genReader serves prefix, then n bytes of pattern repeated, then suffix;
// past budget bytes it fails with errOverread.
type genReader struct {
	prefix, pattern, suffix []byte
	n, budget, served       int64
}

func (g *genReader) Read(p []byte) (int, error) {
	if g.served >= g.budget {
		return 0, errOverread
	}
	p = p[:min(int64(len(p)), g.budget-g.served)]
	total := 0
	for len(p) > 0 {
		var src []byte
		switch off := g.served; {
		case off < int64(len(g.prefix)):
			src = g.prefix[off:]
		case off < int64(len(g.prefix))+g.n:
			k := off - int64(len(g.prefix))
			src = g.pattern[k%int64(len(g.pattern)):]
			src = src[:min(int64(len(src)), g.n-k)]
		case off < int64(len(g.prefix))+g.n+int64(len(g.suffix)):
			src = g.suffix[off-int64(len(g.prefix))-g.n:]
		default:
			if total == 0 {
				return 0, io.EOF
			}
			return total, nil
		}
		c := copy(p, src)
		p, total, g.served = p[c:], total+c, g.served+int64(c)
	}
	return total, nil
}

// repeat returns a pattern of at least 64 KiB of unit repeated (copies
// of a longer pattern are cheaper).
func repeat(unit string) []byte {
	return bytes.Repeat([]byte(unit), (64<<10)/len(unit)+1)[:(64<<10)/len(unit)*len(unit)]
}

// gzipBomb returns a gzip stream of n bytes of unit repeated: one member
// of 16 MiB of them, compressed once, served over and over (a gzip
// reader reads concatenated members as one stream), with a budget of
// budget compressed bytes.
func gzipBomb(t *testing.T, unit string, n, budget int64) *genReader {
	t.Helper()
	const member = 16 << 20
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	zw.Write(bytes.Repeat([]byte(unit), member/len(unit)))
	zw.Close()
	return &genReader{pattern: b.Bytes(), n: n / member * int64(b.Len()), budget: budget}
}

// mapped is the memory of the heap's objects, live or not yet swept: what
// was allocated and not yet collected.
func mapped() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// measure runs f and returns how long it took and the peak of the heap
// meanwhile above what it held before (sampled every millisecond: a big
// buffer lives for longer than that).
func measure(f func()) (time.Duration, uint64) {
	runtime.GC()
	base := mapped()
	var peak atomic.Uint64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			if m := mapped(); m > base && m-base > peak.Load() {
				peak.Store(m - base)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	start := time.Now()
	f()
	elapsed := time.Since(start)
	close(stop)
	<-done
	if m := mapped(); m > base && m-base > peak.Load() {
		peak.Store(m - base)
	}
	return elapsed, peak.Load()
}

// bounded opens in as standard input in format name and checks that it
// fails with a limit error of kind what, whose message holds want, fast
// and in little memory.
func bounded(t *testing.T, name string, in io.Reader, o Options, what, want string) {
	t.Helper()
	o.Stdin = in
	var err error
	elapsed, peak := measure(func() { _, err = OpenWith("-", name, o) })
	t.Logf("%s: %v in %v, peak %d MiB", name, err, elapsed.Round(time.Millisecond), peak>>20)
	var le *format.LimitError
	var fe *format.Error
	switch {
	case err == nil:
		t.Fatalf("%s: no error, want the %s limit", name, what)
	case !errors.As(err, &le) || le.What != what || !errors.As(err, &fe):
		t.Fatalf("%s: error %v, want a *format.Error of the %s limit", name, err, what)
	case !strings.Contains(err.Error(), want):
		t.Errorf("%s: error %q does not say %q", name, err, want)
	}
	if elapsed > maxElapsed {
		t.Errorf("%s: took %v, want under %v", name, elapsed, maxElapsed)
	}
	if peak > maxPeak {
		t.Errorf("%s: took %d MiB of memory, want under %d MiB", name, peak>>20, maxPeak>>20)
	}
}

// TestOpenLongLine: 1 GiB without a line end ends with the line limit's
// error naming the line, within seconds and 256 MiB, in every line
// format: as the first line, and (native) after good lines, where the
// parallel chunk reader meets it. The EDN formats stop sooner at a token
// (a string, number or symbol) over 16 MiB, or an operation of over 1 Mi
// values.
func TestOpenLongLine(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 64 MiB per case")
	}
	const gib = 1 << 30
	good := strings.Repeat(`{"id":1,"session":0,"ops":[["w","x",1]]}`+"\n", 1) +
		strings.Repeat(`{"id":2,"session":0,"ops":[["r","x",1]]}`+"\n", 1)
	var later strings.Builder
	for i := range 200000 { // 8 MiB: longer than a chunk
		fmt.Fprintf(&later, `{"id":%d,"session":%d,"ops":[["w","x",%d]]}`+"\n", i, i%7, i)
	}
	cases := []struct {
		format, prefix, unit, what, want string
	}{
		{"isoscope", `{"id":1,"session":0,"ops":[["r","`, "x", "line", "-:1: the line is longer than 64 MiB"},
		{"isoscope", good[:len(good)/2] + `{"id":5,`, " ", "line", "-:2: the line is longer than 64 MiB"},
		{"isoscope", later.String(), "\x00", "line", "-:200001: the line is longer than 64 MiB"},
		{"jepsen", `[{:type :invoke, :f :txn, :value [[:r `, "1", "token", "-:1: a string, number or symbol longer than 16 MiB"},
		{"jepsen", `[{:type :invoke, :f :txn, :value [[:r `, "1 ", "values", "-:1: a value that holds more than 1048576 values"},
		{"porcupine", `{:process 0, :type :invoke, :f :get, :key "`, "x", "token", "-:1: a string, number or symbol longer than 16 MiB"},
		{"porcupine", "", "\x00", "token", "-:1: a string, number or symbol longer than 16 MiB"},
		{"knossos", "", "\x00", "line", "-:1: the line is longer than 1 MiB"},
		{"plume", "w(1,5,1,10)\n", "x", "line", "-:2: the line is longer than 64 KiB"},
		{"viper", `{"value": [["r", 1, 0, false]]}` + "\n" + `{"value": [["r", 1, `, "1", "line", "-:2: the line is longer than 64 MiB"},
		{"awdit", "w 0 0\n", "7", "line", "-:2: the line is longer than 64 KiB"},
	}
	for _, c := range cases {
		in := &genReader{prefix: []byte(c.prefix), pattern: repeat(c.unit), n: gib, budget: 256 << 20}
		bounded(t, c.format, in, Options{}, c.what, c.want)
	}
}

// TestOpenWholeDocument: an endless input to a format read as one
// document is refused past the document limit: /dev/zero as dbcop, and an
// array of timekiller transactions that never closes. The limit is scaled
// down to 16 MiB here (the default, 256 MiB, would cost twice that while
// it is read). /dev/zero as timekiller is bad input at its first byte:
// the timekiller reader decodes as it reads.
func TestOpenWholeDocument(t *testing.T) {
	o := Options{Limits: format.Limits{MaxDocument: 16 << 20}}
	bounded(t, "dbcop", &genReader{pattern: repeat("\x00"), n: 1 << 30, budget: 64 << 20}, o, "document", "-: larger than 16 MiB")
	bounded(t, "timekiller", &genReader{prefix: []byte("[\n"), pattern: repeat(" \n"), n: 1 << 30, budget: 64 << 20}, o, "document", "-: larger than 16 MiB")
	o.Stdin = &genReader{pattern: repeat("\x00"), n: 1 << 30, budget: 1 << 20}
	var err error
	elapsed, peak := measure(func() { _, err = OpenWith("-", "timekiller", o) })
	if err == nil || !strings.Contains(err.Error(), "-:1: malformed JSON") || elapsed > time.Second || peak > 16<<20 {
		t.Errorf("/dev/zero as timekiller: %v in %v, peak %d MiB; want malformed JSON on line 1 at once", err, elapsed, peak>>20)
	}
}

// TestOpenGzipBomb: 20 GiB of blank lines (or of spaces) in 20 MiB of
// gzip end with the gzip limit's error within seconds and 256 MiB, read
// by the native reader (which gunzips itself) and by a format Open
// gunzips for.
func TestOpenGzipBomb(t *testing.T) {
	if testing.Short() {
		t.Skip("decompresses 64 MiB per case")
	}
	const n = 20 << 30
	bounded(t, "isoscope", gzipBomb(t, "\n", n, 4<<20), Options{}, "gzip", "expands more than 200 times")
	bounded(t, "jepsen", gzipBomb(t, "\n", n, 4<<20), Options{}, "gzip", "expands more than 200 times")
	// Spaces: the gzip limit or the line limit, whichever comes first.
	o := Options{Stdin: gzipBomb(t, " ", n, 4<<20)}
	var err error
	elapsed, peak := measure(func() { _, err = OpenWith("-", "isoscope", o) })
	if !format.IsLimit(err) || elapsed > maxElapsed || peak > maxPeak {
		t.Errorf("spaces: %v in %v, peak %d MiB; want a limit's error within %v and %d MiB", err, elapsed, peak>>20, maxElapsed, maxPeak>>20)
	}
	// A ratio the bomb stays under: it reads on (into the test's budget).
	o = Options{Stdin: gzipBomb(t, "\n", 128<<20, 1<<30), Limits: format.Limits{MaxGzipRatio: -1}}
	if res, err := OpenWith("-", "isoscope", o); err != nil || len(res.History.Txns) != 0 {
		t.Errorf("no gzip limit: error %v, want an empty history", err)
	}
}

// TestReadBlankLines: blank lines cost no memory: 512 MiB of them (the
// issue's 20 GiB scaled down for CI; the cost is linear) around a few
// transactions read in seconds and well under 256 MiB, through the
// parallel chunk reader.
func TestReadBlankLines(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 512 MiB")
	}
	in := &genReader{
		prefix:  []byte(`{"id":1,"session":0,"ops":[["w","x",1]]}` + "\n"),
		pattern: repeat("\n"), n: 512 << 20,
		suffix: []byte(`{"id":2,"session":0,"ops":[["r","x",1]]}`),
		budget: 1 << 30,
	}
	var res *native.Result
	var err error
	elapsed, peak := measure(func() { res, err = native.ReadWith(in, "blank", native.Options{}) })
	t.Logf("%v in %v, peak %d MiB", err, elapsed.Round(time.Millisecond), peak>>20)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(res.History.Txns); n != 2 || res.History.Txns[1].Line != 512<<20+2 {
		t.Errorf("read %d transactions (the last on line %d), want 2, the last on line %d", n, res.History.Txns[n-1].Line, 512<<20+2)
	}
	if elapsed > maxElapsed || peak > maxPeak {
		t.Errorf("took %v and %d MiB, want under %v and %d MiB", elapsed, peak>>20, maxElapsed, maxPeak>>20)
	}
}

// TestOpenContext: a read stops soon after its context's deadline, with
// an error errors.Is finds the deadline in: an endless stream of good
// transactions, in the native format and another.
func TestOpenContext(t *testing.T) {
	var lines strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&lines, `{"id":%d,"session":0,"ops":[["w","x",%d]]}`+"\n", i, i)
	}
	cases := []struct{ format, prefix, unit string }{
		{"isoscope", "", lines.String()},
		{"plume", "", "w(1,5,1,10)\n"},
	}
	for _, c := range cases {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		in := &genReader{pattern: repeat(c.unit), n: 1 << 40, budget: 1 << 40}
		if c.format == "isoscope" { // ids must not repeat: one pass, then blank lines
			in = &genReader{prefix: []byte(c.unit), pattern: repeat("\n"), n: 1 << 40, budget: 1 << 40}
		}
		start := time.Now()
		_, err := OpenWith("-", c.format, Options{Stdin: in, Context: ctx})
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: error %v, want the deadline's", c.format, err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("%s: stopped after %v, want soon after 200ms", c.format, d)
		}
	}
}

// TestOpenTorn: a native history whose last line is torn is read up to it
// with a warning naming the line under AllowTorn, and is bad input
// naming the line without; a bad line in the middle is bad input either
// way.
func TestOpenTorn(t *testing.T) {
	good := `{"id":1,"session":0,"ops":[["w","x",1]]}` + "\n" + `{"id":2,"session":0,"ops":[["r","x",1]]}` + "\n"
	torn := good + `{"id":3,"session":0,"ops":[["r","x`
	res, err := OpenWith("-", "auto", Options{Stdin: strings.NewReader(torn), AllowTorn: true})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(res.History.Txns); n != 2 || len(res.Warnings) != 1 {
		t.Fatalf("%d transactions, warnings %v; want 2 and one warning", n, res.Warnings)
	}
	var tw *format.Torn
	if !errors.As(res.Warnings[0], &tw) || tw.Line != 3 || !strings.Contains(tw.Error(), "-: line 3 is torn: the file ends inside it") {
		t.Errorf("warning %v, want line 3 torn", res.Warnings[0])
	}
	if _, err := OpenWith("-", "auto", Options{Stdin: strings.NewReader(torn)}); err == nil || !strings.Contains(err.Error(), "-:3:") {
		t.Errorf("without AllowTorn: error %v, want bad input at line 3", err)
	}
	middle := good[:20] + "\n" + good[20:]
	if _, err := OpenWith("-", "auto", Options{Stdin: strings.NewReader(middle), AllowTorn: true}); err == nil || !strings.Contains(err.Error(), "-:1:") {
		t.Errorf("a bad middle line: error %v, want bad input at line 1", err)
	}
	// Nothing whole before the torn line: bad input.
	only := `{"format":"isoscope-history","version":1}` + "\n" + `{"id":3,"session":0,"ops":[["r","x`
	if _, err := OpenWith("-", "auto", Options{Stdin: strings.NewReader(only), AllowTorn: true}); err == nil || !strings.Contains(err.Error(), "-:2:") {
		t.Errorf("a torn only transaction: error %v, want bad input at line 2", err)
	}
	// Torn and gzip-compressed.
	res, err = OpenWith("-", "auto", Options{Stdin: bytes.NewReader(gz(t, []byte(torn))), AllowTorn: true})
	if err != nil || len(res.Warnings) != 1 {
		t.Errorf("gzip: error %v, warnings %v; want one warning", err, res)
	}
}

// TestOpenViperLineLimit: a Viper log read as a stream honours a line
// limit above the default (its reader bounds its lines itself): a line of
// 70 MiB is bad input by default and read with --max-line-mb 80.
func TestOpenViperLineLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 70 MiB twice")
	}
	line := `{"value": [["w", 1, "` + strings.Repeat("x", 70<<20) + `", true]]}` + "\n"
	_, err := Read(strings.NewReader(line), "-", "viper", Options{})
	if !format.IsLimit(err) || !strings.Contains(err.Error(), "longer than 64 MiB") {
		t.Errorf("by default: %v, want the line limit", err)
	}
	o, err := Read(strings.NewReader(line), "-", "viper", Options{Limits: format.Limits{MaxLine: 80 << 20}})
	if err != nil {
		t.Fatalf("with an 80 MiB limit: %v", err)
	}
	if n := len(o.History.Txns); n != 1 {
		t.Errorf("with an 80 MiB limit: %d transactions, want 1", n)
	}
}
