package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/isoscope/isoscope/internal/level"
	"github.com/isoscope/isoscope/internal/report"
	"github.com/isoscope/isoscope/internal/serve"
	"github.com/isoscope/isoscope/internal/textfmt"
)

// Online is run --online: the history is checked as the run goes by the
// online black-box checker of an isoscope serve started in this process
// on a loopback port (the run its collector), each violation said on
// standard error as it is found, the verdict the checker's once the run
// ends. The run keeps no transaction in memory (runner.Config.Forget),
// the checker as much as MemoryBytes and the fences let it, so that a
// run of a day holds memory flat. The history file is still written.
type Online struct {
	// Level is the level checked (ser, si or rc).
	Level level.Level
	// MemoryBytes bounds the checker's state (0: no bound).
	MemoryBytes int64
	// HeapTarget, when set, is the live heap the process is to stay
	// under: the checker lowers its bound while the heap is above it
	// (serve.BlackBoxConfig.HeapTarget).
	HeapTarget func() int64
	// Findings, when set, also receives each violation's JSON line, as
	// isoscope serve writes it, as it is found.
	Findings io.Writer
}

// onlineChecker is the service a run --online feeds.
type onlineChecker struct {
	srv    *serve.Server
	url    string
	cancel context.CancelFunc
	done   chan onlineDone
	lines  *findingLines
}

type onlineDone struct {
	sum serve.Summary
	err error
}

// startOnline starts the black-box service on a loopback port.
func (r *run) startOnline() (*onlineChecker, error) {
	fence := ""
	pc := r.Plan.Config
	if r.Endless != nil {
		pc = r.Endless.Plan.Config
	}
	if pc.FenceEvery > 0 {
		fence = strconv.FormatInt(pc.FenceKey(), 10)
	}
	lines := &findingLines{w: r.io.Stderr, json: r.Online.Findings, kinds: map[string]int{}}
	srv, err := serve.New(serve.Config{
		BlackBox: &serve.BlackBoxConfig{Level: r.Online.Level, MemoryBytes: r.Online.MemoryBytes, FenceKey: fence, HeapTarget: r.Online.HeapTarget},
		Out:      lines, Explain: report.Explain,
		// The run is the only client, on loopback: a batch waits for the
		// checker as long as a round takes (a refused batch would leave
		// the check incomplete).
		ReadTimeout: 24 * time.Hour, BodyTimeout: time.Hour,
	})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	oc := &onlineChecker{srv: srv, url: "http://" + ln.Addr().String(), cancel: cancel, done: make(chan onlineDone, 1), lines: lines}
	go func() {
		sum, err := srv.Serve(ctx, ln)
		oc.done <- onlineDone{sum, err}
	}()
	return oc, nil
}

// stop ends the service: it checks what was queued and gives the final
// verdict (Drain), each violation it settles said as the others were.
func (oc *onlineChecker) stop() (serve.Summary, error) {
	oc.cancel()
	d := <-oc.done
	return d.sum, d.err
}

// findingLines takes the service's violation lines: each is said on w as
// it comes (time, kind, transactions, explanation), copied to json when
// set, and counted by kind.
type findingLines struct {
	mu      sync.Mutex
	w, json io.Writer
	partial []byte
	kinds   map[string]int
	first   time.Time
}

func (f *findingLines) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.json != nil {
		if _, err := f.json.Write(p); err != nil {
			return 0, err
		}
	}
	buf := append(f.partial, p...)
	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			break
		}
		f.say(buf[:i])
		buf = buf[i+1:]
	}
	f.partial = append([]byte(nil), buf...)
	return len(p), nil
}

// say writes one violation's line for people.
func (f *findingLines) say(line []byte) {
	var v struct {
		At           time.Time `json:"at"`
		Kind         string    `json:"kind"`
		Transactions []any     `json:"transactions"`
		Explanation  string    `json:"explanation"`
	}
	if json.Unmarshal(line, &v) != nil {
		return
	}
	if f.first.IsZero() {
		f.first = v.At
	}
	f.kinds[v.Kind]++
	ids := make([]string, len(v.Transactions))
	for i, t := range v.Transactions {
		ids[i] = fmt.Sprint(t)
	}
	fmt.Fprintf(f.w, "%s online: %s (transactions %s): %s\n", v.At.Format("15:04:05.0"), v.Kind, strings.Join(ids, ", "), v.Explanation)
}

// counts says the violations by kind, most first.
func (f *findingLines) counts() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	kinds := slices.SortedFunc(maps.Keys(f.kinds), func(a, b string) int {
		if f.kinds[a] != f.kinds[b] {
			return f.kinds[b] - f.kinds[a]
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s %d", k, f.kinds[k])
	}
	return strings.Join(parts, ", ")
}

// onlineVerdict says the online checker's verdict on standard output and
// the checker's summary on standard error, and returns the run's
// status: violated when it found a violation, undecided when the run was
// cut short or a batch was refused or lost (incomplete: the check is then
// incomplete, and a finding may be about a missing transaction).
func (r *run) onlineVerdict(sum serve.Summary, err error, cut, incomplete bool) (Result, error) {
	if err != nil {
		return Result{}, fmt.Errorf("the online checker: %v", err)
	}
	lv := r.Online.Level.Name
	var unjudged []string
	if bb := sum.BlackBox; bb != nil {
		unjudged = bb.Unjudged
		fmt.Fprintf(r.io.Stderr, "online: %s checked, %s set aside; %s held at the end, %s forgotten, %d garbage-collection rounds, about %.1f MiB held\n",
			textfmt.Count(int(sum.Checked), "committed transaction"), textfmt.Count(int(sum.Skipped), "other"),
			textfmt.Count(int(bb.Held), "transaction"), textfmt.Count(int(bb.Forgotten), "transaction"), bb.Rounds, float64(bb.Bytes)/(1<<20))
		if bb.DroppedKeys > 0 {
			fmt.Fprintf(r.io.Stderr, "online: the settled state of %s no transaction touched lately was dropped to keep the memory bound\n", textfmt.Count(int(bb.DroppedKeys), "key"))
		}
		for _, w := range bb.Warnings {
			fmt.Fprintf(r.io.Stderr, "online: WARNING: %s\n", w)
		}
		for _, u := range bb.Unjudged {
			fmt.Fprintf(r.io.Stderr, "online: not every transaction could be judged: %s\n", u)
		}
	}
	var refused uint64
	for _, n := range sum.Rejected {
		refused += n
	}
	switch {
	case refused > 0 || incomplete:
		// Transactions are missing: a finding may be about a read of
		// one of them (a thin-air read), and a cycle through one is
		// missed. Undecided, whatever was found.
		what := fmt.Sprintf("batches were refused (%d transactions lost to the checker)", sum.RejectedTxns)
		if refused == 0 {
			what = fmt.Sprintf("%d transactions did not reach the checker (the collector's count)", r.lost)
		}
		fmt.Fprintf(r.io.Stdout, "%s undecided online: %s; %s found, which the missing transactions may explain (%s)\n",
			lv, what, textfmt.Count(int(sum.Violations), "violation"), r.onlineCounts())
		return Result{Status: Undecided}, nil
	case sum.Violations > 0 && len(unjudged) > 0:
		fmt.Fprintf(r.io.Stdout, "%s violated, found online: %s (%s); others may be missing: not every transaction could be judged (%s)\n",
			lv, textfmt.Count(int(sum.Violations), "violation"), r.onlineCounts(), strings.Join(unjudged, "; "))
		return Result{Status: Violated}, nil
	case sum.Violations > 0:
		fmt.Fprintf(r.io.Stdout, "%s violated, found online: %s (%s)\n", lv, textfmt.Count(int(sum.Violations), "violation"), r.onlineCounts())
		return Result{Status: Violated}, nil
	case len(unjudged) > 0:
		fmt.Fprintf(r.io.Stdout, "%s undecided online: not every transaction could be judged (%s)\n", lv, strings.Join(unjudged, "; "))
		return Result{Status: Undecided}, nil
	case cut:
		fmt.Fprintf(r.io.Stdout, "%s holds online for what ran, but the run was cut short\n", lv)
		return Result{Status: Undecided}, nil
	}
	fmt.Fprintf(r.io.Stdout, "%s holds, checked online (%s)\n", lv, textfmt.Count(int(sum.Checked), "committed transaction"))
	return Result{Status: Holds}, nil
}

func (r *run) onlineCounts() string {
	if r.online == nil {
		return ""
	}
	return r.online.lines.counts()
}

// memoryBound says a bound in bytes for people ("none" for 0).
func memoryBound(b int64) string {
	if b <= 0 {
		return "none"
	}
	return fmt.Sprintf("%d MiB", b>>20)
}
