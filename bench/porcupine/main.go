// Command porcupine-race checks register and key-value logs for
// linearizability with porcupine's checker, so that bench/race.sh can run
// it and isoscope on the same inputs. It is a module of its own: the main
// module never builds it, and only this directory depends on porcupine.
//
//	porcupine-race [-timeout D] FILE…
//
// It reads three formats, recognised by their first bytes:
//
//   - Jepsen/knossos text logs (porcupine's test_data/jepsen/etcd_*.log):
//     a register with :read, :write and :cas;
//   - knossos EDN histories of the cas-register model (a vector of maps
//     with :process, :type, :f :read|:write|:cas and :value);
//   - porcupine key-value logs (test_data/kv/*.txt: :get, :put and
//     :append on string keys).
//
// The register model is the one porcupine's own etcd test checks: a
// compare-and-set that failed saw another value; an operation whose outcome
// is unknown (:info, a read that timed out, an invocation never completed)
// may have done anything; a read or write that failed did nothing. The
// key-value model is partitioned by key. For each file it prints the file
// name and "linearizable", "NOT linearizable" or "unknown" (the timeout
// passed); the exit status is 1 when a file is not linearizable, 2 when one
// cannot be read.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"hash/fnv"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/anishathalye/porcupine"
)

func main() {
	timeout := flag.Duration("timeout", 0, "give up on a file after this long (0: never)")
	flag.Parse()
	status := 0
	for _, file := range flag.Args() {
		model, events, err := load(file)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", file, err)
			status = max(status, 2)
			continue
		}
		switch porcupine.CheckEventsTimeout(model, events, *timeout) {
		case porcupine.Ok:
			fmt.Printf("%s: linearizable\n", file)
		case porcupine.Illegal:
			fmt.Printf("%s: NOT linearizable\n", file)
			status = 1
		default:
			fmt.Printf("%s: unknown\n", file)
		}
	}
	os.Exit(status)
}

// load reads a log in any of the three formats.
func load(file string) (porcupine.Model, []porcupine.Event, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return porcupine.Model{}, nil, err
	}
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	switch {
	case bytes.HasPrefix(trimmed, []byte("INFO")):
		events, err := knossosLog(data)
		return registerModel, events, err
	case bytes.Contains(firstLine(trimmed), []byte(":key")):
		events, err := kvLog(data)
		return kvModel, events, err
	default:
		events, err := knossosEDN(data)
		return registerModel, events, err
	}
}

func firstLine(p []byte) []byte {
	line, _, _ := bytes.Cut(p, []byte("\n"))
	return line
}

// regInput is a register operation: a read, a write of a, or a
// compare-and-set from a to b.
type regInput struct {
	op   byte // 'r', 'w' or 'c'
	a, b int64
}

// regOutput is what the client saw: a read's value (absent when !exists),
// whether a compare-and-set succeeded, or nothing known.
type regOutput struct {
	exists, ok, unknown bool
	value               int64
}

// registerModel is a register that starts absent, with reads, writes and
// compare-and-set.
var registerModel = porcupine.Model{
	Init: func() any { return regState{} },
	Step: func(state, input, output any) (bool, any) {
		st, in, out := state.(regState), input.(regInput), output.(regOutput)
		switch in.op {
		case 'r':
			return out.unknown || out.exists == st.set && (!st.set || out.value == st.v), st
		case 'w':
			return true, regState{set: true, v: in.a}
		}
		match := st.set && st.v == in.a
		next := st
		if match {
			next = regState{set: true, v: in.b}
		}
		return out.unknown || out.ok == match, next
	},
}

// regState is the register: absent, or holding v.
type regState struct {
	set bool
	v   int64
}

// events builds porcupine's events from invocations and completions.
type events struct {
	list []porcupine.Event
	open map[int64]int // process → id of its open invocation
	// late are the operations whose outcome is unknown (:info): they may
	// take effect at any time after their invocation, so they return at
	// the end of the history.
	late []porcupine.Event
	next int
}

func newEvents() *events { return &events{open: map[int64]int{}} }

func (e *events) invoke(proc int64, in any) error {
	if _, busy := e.open[proc]; busy {
		return fmt.Errorf("process %d invokes again before its operation completed", proc)
	}
	e.open[proc] = e.next
	e.list = append(e.list, porcupine.Event{ClientId: int(proc), Kind: porcupine.CallEvent, Value: in, Id: e.next})
	e.next++
	return nil
}

// complete closes proc's open operation with out; drop removes the
// operation instead (it failed, so it did nothing).
func (e *events) complete(proc int64, out any, drop bool) error {
	id, ok := e.open[proc]
	if !ok {
		return fmt.Errorf("process %d completes an operation it did not invoke", proc)
	}
	delete(e.open, proc)
	if drop {
		for i := len(e.list) - 1; i >= 0; i-- {
			if e.list[i].Id == id && e.list[i].Kind == porcupine.CallEvent {
				e.list = append(e.list[:i], e.list[i+1:]...)
				break
			}
		}
		return nil
	}
	e.list = append(e.list, porcupine.Event{ClientId: int(proc), Kind: porcupine.ReturnEvent, Value: out, Id: id})
	return nil
}

// unknown closes proc's open operation with an unknown outcome: it may
// take effect at any time after its invocation, so its return comes at the
// end of the history.
func (e *events) unknown(proc int64, out any) error {
	id, ok := e.open[proc]
	if !ok {
		return fmt.Errorf("process %d completes an operation it did not invoke", proc)
	}
	delete(e.open, proc)
	e.late = append(e.late, porcupine.Event{ClientId: int(proc), Kind: porcupine.ReturnEvent, Value: out, Id: id})
	return nil
}

// finish completes every operation of unknown outcome at the end of the
// history: those completed :info first, then those never completed, in
// the order of the processes' numbers.
func (e *events) finish(unknown any) []porcupine.Event {
	e.list = append(e.list, e.late...)
	procs := make([]int64, 0, len(e.open))
	for p := range e.open {
		procs = append(procs, p)
	}
	sort.Slice(procs, func(i, j int) bool { return procs[i] < procs[j] })
	for _, p := range procs {
		e.list = append(e.list, porcupine.Event{ClientId: int(p), Kind: porcupine.ReturnEvent, Value: unknown, Id: e.open[p]})
	}
	return e.list
}

// registerEvent records one event of a register history: typ is invoke,
// ok, fail or info, f read, write or cas, value the rest of the event.
func (e *events) registerEvent(proc int64, typ, f, value string) error {
	if typ == "invoke" {
		var in regInput
		switch f {
		case "read":
			in.op = 'r'
		case "write":
			v, err := strconv.ParseInt(value, 10, 64)
			if err != nil {
				return fmt.Errorf("write of %q", value)
			}
			in = regInput{op: 'w', a: v}
		case "cas":
			var err1, err2 error
			from, to, _ := strings.Cut(strings.Trim(value, "[]"), " ")
			in.op = 'c'
			in.a, err1 = strconv.ParseInt(strings.TrimSpace(from), 10, 64)
			in.b, err2 = strconv.ParseInt(strings.TrimSpace(to), 10, 64)
			if err1 != nil || err2 != nil {
				return fmt.Errorf("cas of %q", value)
			}
		default:
			return fmt.Errorf("unknown function %q", f)
		}
		return e.invoke(proc, in)
	}
	switch {
	case typ == "info":
		return e.unknown(proc, regOutput{unknown: true})
	case typ == "fail" && f == "read" && value == ":timed-out":
		// A read has no effect: whatever it returned, it returned now.
		return e.complete(proc, regOutput{unknown: true}, false)
	case typ == "fail" && f == "cas":
		return e.complete(proc, regOutput{ok: false}, false)
	case typ == "fail":
		return e.complete(proc, nil, true)
	case typ != "ok":
		return fmt.Errorf("unknown type %q", typ)
	case f == "read" && value == "nil":
		return e.complete(proc, regOutput{}, false)
	case f == "read":
		v, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return fmt.Errorf("read of %q", value)
		}
		return e.complete(proc, regOutput{exists: true, value: v}, false)
	}
	return e.complete(proc, regOutput{ok: true}, false)
}

// knossosLog reads a Jepsen/knossos text log:
// "INFO  jepsen.util - <process> :<type> :<f> <value>".
func knossosLog(data []byte) ([]porcupine.Event, error) {
	e := newEvents()
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) < 7 || f[0] != "INFO" {
			return nil, fmt.Errorf("line %d: not a knossos log line", n)
		}
		proc, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: process %q", n, f[3])
		}
		value := strings.Join(f[6:], " ")
		if err := e.registerEvent(proc, strings.TrimPrefix(f[4], ":"), strings.TrimPrefix(f[5], ":"), value); err != nil {
			return nil, fmt.Errorf("line %d: %v", n, err)
		}
	}
	return e.finish(regOutput{unknown: true}), sc.Err()
}

var (
	ednProcess = regexp.MustCompile(`:process\s+(-?\d+|:[\w-]+)`)
	ednType    = regexp.MustCompile(`:type\s+:(\w+)`)
	ednF       = regexp.MustCompile(`:f\s+:([\w-]+)`)
	ednValue   = regexp.MustCompile(`:value\s+(nil|-?\d+|\[\s*-?\d+\s+-?\d+\s*\]|"(?:[^"\\]|\\.)*")`)
	ednKey     = regexp.MustCompile(`:key\s+"((?:[^"\\]|\\.)*)"`)
)

// maps returns the text of every top-level map of an EDN document: the
// maps of a vector, or maps one after another, with comments left out.
func maps(data []byte) []string {
	var out []string
	depth, start := 0, -1
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case ';':
			for i < len(data) && data[i] != '\n' {
				i++
			}
		case '"':
			for i++; i < len(data) && data[i] != '"'; i++ {
				if data[i] == '\\' {
					i++
				}
			}
		case '{':
			if depth == 0 {
				start = i
			}
			depth++
		case '}':
			depth--
			if depth == 0 && start >= 0 {
				out = append(out, string(data[start:i+1]))
			}
		}
	}
	return out
}

// field returns the first group re matches in m.
func field(re *regexp.Regexp, m string) (string, bool) {
	g := re.FindStringSubmatch(m)
	if g == nil {
		return "", false
	}
	return g[1], true
}

// knossosEDN reads a knossos EDN history of the cas-register model; the
// operations of processes that are not integers (the nemesis) are left
// out.
func knossosEDN(data []byte) ([]porcupine.Event, error) {
	e := newEvents()
	for i, m := range maps(data) {
		p, ok := field(ednProcess, m)
		proc, err := strconv.ParseInt(p, 10, 64)
		if !ok || err != nil {
			continue
		}
		typ, ok1 := field(ednType, m)
		f, ok2 := field(ednF, m)
		value, _ := field(ednValue, m)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("operation %d: no :type or :f", i+1)
		}
		if err := e.registerEvent(proc, typ, f, value); err != nil {
			return nil, fmt.Errorf("operation %d: %v", i+1, err)
		}
	}
	return e.finish(regOutput{unknown: true}), nil
}

// kvInput is a key-value operation: get, put or append of value at key.
type kvInput struct {
	op         byte // 'g', 'p' or 'a'
	key, value string
}

// kvOutput is what a get returned, or nothing known.
type kvOutput struct {
	value   string
	unknown bool
}

// kvModel is a store of string keys, each starting as "", partitioned by
// key: its state is one key's value.
var kvModel = porcupine.Model{
	PartitionEvent: func(history []porcupine.Event) [][]porcupine.Event {
		by := map[string][]porcupine.Event{}
		keyOf := map[int]string{}
		var keys []string
		for _, ev := range history {
			k, ok := keyOf[ev.Id]
			if ev.Kind == porcupine.CallEvent {
				k = ev.Value.(kvInput).key
				keyOf[ev.Id], ok = k, true
			}
			if !ok {
				continue
			}
			if _, seen := by[k]; !seen {
				keys = append(keys, k)
			}
			by[k] = append(by[k], ev)
		}
		sort.Strings(keys)
		out := make([][]porcupine.Event, len(keys))
		for i, k := range keys {
			out[i] = by[k]
		}
		return out
	},
	Init: func() any { return "" },
	Step: func(state, input, output any) (bool, any) {
		st, in, out := state.(string), input.(kvInput), output.(kvOutput)
		switch in.op {
		case 'g':
			return out.unknown || out.value == st, st
		case 'p':
			return true, in.value
		}
		return true, st + in.value
	},
	Hash: func(state any) uint64 {
		h := fnv.New64a()
		h.Write([]byte(state.(string)))
		return h.Sum64()
	},
}

// kvLog reads a porcupine key-value log: one EDN map an event, with
// :process, :type, :f :get|:put|:append, :key and :value.
func kvLog(data []byte) ([]porcupine.Event, error) {
	e := newEvents()
	for i, m := range maps(data) {
		p, _ := field(ednProcess, m)
		proc, err := strconv.ParseInt(p, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("event %d: process %q", i+1, p)
		}
		typ, _ := field(ednType, m)
		f, _ := field(ednF, m)
		key, ok := field(ednKey, m)
		if !ok {
			return nil, fmt.Errorf("event %d: no :key", i+1)
		}
		value, _ := field(ednValue, m)
		value = strings.Trim(value, `"`)
		if typ == "invoke" {
			in := kvInput{key: key, value: value}
			switch f {
			case "get":
				in.op = 'g'
			case "put":
				in.op = 'p'
			case "append":
				in.op = 'a'
			default:
				return nil, fmt.Errorf("event %d: unknown function %q", i+1, f)
			}
			err = e.invoke(proc, in)
		} else {
			switch typ {
			case "ok":
				err = e.complete(proc, kvOutput{value: value}, false)
			case "info":
				err = e.unknown(proc, kvOutput{unknown: true})
			case "fail":
				err = e.complete(proc, nil, true)
			default:
				err = fmt.Errorf("unknown type %q", typ)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("event %d: %v", i+1, err)
		}
	}
	return e.finish(kvOutput{unknown: true}), nil
}
