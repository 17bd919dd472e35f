package viper

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/isoscope/isoscope/internal/format"
	"github.com/isoscope/isoscope/internal/history"
)

// logFile is one log of a directory.
type logFile struct {
	name string // base name
	path string
	tid  int64 // the thread id of J<tid>.log
	num  bool  // the name is J<integer>.log
}

// isLog reports whether Viper reads the file named name: its name starts
// with "J" or "history.edn" (utils.load_logs_json).
func isLog(name string) bool {
	return strings.HasPrefix(name, "J") || strings.HasPrefix(name, "history.edn")
}

// logFiles lists the logs of dir in session order: J<n>.log by n, then
// the others by name.
func logFiles(dir string) ([]logFile, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []logFile
	for _, e := range ents {
		if e.IsDir() || !isLog(e.Name()) {
			continue
		}
		f := logFile{name: e.Name(), path: filepath.Join(dir, e.Name())}
		f.tid, f.num = format.LogNumber(f.name, "J")
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b logFile) int {
		switch {
		case a.num != b.num:
			if a.num {
				return -1
			}
			return 1
		case a.num && a.tid != b.tid:
			if a.tid < b.tid {
				return -1
			}
			return 1
		}
		return strings.Compare(a.name, b.name)
	})
	return out, nil
}

// historyDir returns the directory of path that holds the logs: path, or
// its json/ folder when path has no logs and that folder has (ViperBench
// writes its JSON logs to <COBRA_FD>/json/).
func historyDir(path string) (string, []logFile, error) {
	logs, err := logFiles(path)
	if err != nil || len(logs) > 0 {
		return path, logs, err
	}
	sub := filepath.Join(path, "json")
	if st, err := os.Stat(sub); err == nil && st.IsDir() {
		if logs, err := logFiles(sub); err == nil && len(logs) > 0 {
			return sub, logs, nil
		}
	}
	return path, nil, nil
}

// ReadDir reads the Viper log directory path with the default limits.
func ReadDir(path string) (*history.History, error) {
	return ReadDirWith(path, format.Limits{})
}

// ReadDirWith reads the Viper log directory path (or the json/ folder in
// it): one session per log file. A line longer than lim.Line() is bad
// input. Bad input is a *format.Error naming the file, the line and the
// field.
func ReadDirWith(path string, lim format.Limits) (*history.History, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, &format.Error{File: path, Msg: "not a directory: a Viper history is a directory of J<thread>.log files"}
	}
	dir, logs, err := historyDir(path)
	if err != nil {
		return nil, err
	}
	if len(logs) == 0 {
		return nil, &format.Error{File: path, Msg: "no Viper logs (J<thread>.log files) in the directory or in its json/ folder"}
	}
	r := newReader(dir, lim)
	for _, l := range logs {
		f, err := os.Open(l.path)
		if err != nil {
			return nil, err
		}
		err = r.file(l, f)
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	return r.finish()
}

// Read reads one Viper log file from in: a history of one session. name
// names it in messages and labels the session (its thread id when it is
// J<n>.log).
func Read(in io.Reader, name string) (*history.History, error) {
	return ReadWith(in, name, format.Limits{})
}

// ReadWith is Read within the read limits: a line longer than lim.Line()
// is bad input.
func ReadWith(in io.Reader, name string, lim format.Limits) (*history.History, error) {
	r := newReader(name, lim)
	l := logFile{name: filepath.Base(name), path: name}
	l.tid, l.num = format.LogNumber(l.name, "J")
	if err := r.file(l, in); err != nil {
		return nil, err
	}
	return r.finish()
}

// readFiles reads a history from in-memory logs named names (for tests
// and fuzzing): ReadDir without the file system, in the order given.
func readFiles(source string, names []string, logs [][]byte) (*history.History, error) {
	r := newReader(source, format.Limits{})
	for i, data := range logs {
		l := logFile{name: names[i], path: names[i]}
		l.tid, l.num = format.LogNumber(l.name, "J")
		if err := r.file(l, bytes.NewReader(data)); err != nil {
			return nil, err
		}
	}
	return r.finish()
}

// opRef places an operation: a transaction and its operation.
type opRef struct{ txn, op int }

// kv is a key and a value.
type kv struct {
	k history.KeyID
	v history.Value
}

type reader struct {
	h        *history.History
	source   string
	maxLine  int64
	keyKind  history.ValueKind // Null until the first key
	ids      map[string]bool
	written  map[kv]bool    // the values written to each key, but integers
	wInt     map[kvInt]bool // the integer values written to each key
	intKeys  map[int64]history.KeyID
	zeroOps  []opRef // reads of 0, null unless 0 is written
	openLo   []opRef // ranges without a lower bound
	initFile string
	init     map[history.KeyID]history.Value
	hasInit  bool
	ps       []parsed // the operations of the line being read
	labels   map[history.Value]bool
}

func newReader(source string, lim format.Limits) *reader {
	h := history.New()
	h.Name = source
	h.Header.Present = true
	h.Header.Version = 1
	h.Header.Source = "converted from Viper logs " + source
	return &reader{h: h, source: source, maxLine: lim.Line(), ids: map[string]bool{}, written: map[kv]bool{}, wInt: map[kvInt]bool{}, intKeys: map[int64]history.KeyID{}, labels: map[history.Value]bool{}}
}

// line is one transaction line as decoded.
type line struct {
	Value        []json.RawMessage `json:"value"`
	IsInitial    *bool             `json:"isInitial"`
	IsFinal      *bool             `json:"isFinal"`
	PreBeginTS   *json.Number      `json:"preBeginTS"`
	PostBeginTS  *json.Number      `json:"postBeginTS"`
	PreCommitTS  *json.Number      `json:"preCommitTS"`
	PostCommitTS *json.Number      `json:"postCommitTS"`
}

// txnLine is a transaction line being read: where it is, for errors.
type txnLine struct {
	file string
	n    int
}

func (l txnLine) errf(field, format_ string, args ...any) error {
	return &format.Error{File: l.file, Line: l.n, Field: field, Msg: fmt.Sprintf(format_, args...)}
}

// file reads one log: one session, or the initial transaction.
func (r *reader) file(lf logFile, in io.Reader) error {
	br := bufio.NewReaderSize(in, 64<<10)
	var buf []byte
	isInit := false
	sess := int32(-1)
	lines := 0 // transactions read from the file
	for n := 1; ; n++ {
		b, err := readLine(br, &buf, r.maxLine)
		if err != nil {
			if errors.Is(err, errLong) {
				return format.LimitErr(lf.path, n, "line", r.maxLine)
			}
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		b = bytes.TrimSpace(b)
		if len(b) == 0 {
			continue
		}
		at := txnLine{file: lf.path, n: n}
		if isInit {
			return at.errf("", "a transaction after the initial transaction: Viper reads the initial transaction (isInitial) only when it is alone in its file, as ViperBench writes it")
		}
		ps, initial, fast := r.ps[:0], false, false
		if fastLines {
			ps, initial, fast = fastLine(b, ps)
		}
		var l *line
		if !fast {
			if l, err = decode(at, b); err != nil {
				return err
			}
			initial = l.IsInitial != nil && *l.IsInitial
			ps = ps[:0]
			for i, raw := range l.Value {
				p, err := parse(at, i, raw)
				if err != nil {
					return err
				}
				ps = append(ps, p)
			}
		}
		r.ps = ps
		if initial {
			if lines > 0 {
				return at.errf("isInitial", "the initial transaction follows other transactions in its file: Viper reads it only when it is alone in its file, as ViperBench writes it")
			}
			if r.hasInit {
				return at.errf("isInitial", "a second initial transaction (the first is in %s)", r.initFile)
			}
			isInit, r.hasInit, r.initFile = true, true, lf.path
			if err := r.initial(at, ps); err != nil {
				return err
			}
			continue
		}
		lines++
		id := lf.name + ":" + strconv.Itoa(n)
		if r.ids[id] {
			return at.errf("", "transaction %s appears twice (two logs with the same name)", id)
		}
		r.ids[id] = true
		t := history.Txn{ID: history.StringValue(id), Line: n}
		if l != nil {
			if err := r.instants(at, l, &t); err != nil {
				return err
			}
		}
		ti := len(r.h.Txns)
		ops := make([]history.Op, 0, len(ps)+len(ps)/2)
		for i := range ps {
			if ops, err = r.apply(at, ti, ops, i, &ps[i]); err != nil {
				return err
			}
		}
		if len(ops) == 0 {
			continue // it reads and writes nothing
		}
		if sess < 0 {
			sess = int32(len(r.h.Sessions))
			// The thread id labels the session, unless another file's
			// name gave it already (J7.log and J07.log).
			label := history.IntValue(lf.tid)
			if !lf.num || r.labels[label] {
				label = history.StringValue(lf.name)
			}
			r.labels[label] = true
			r.h.Sessions = append(r.h.Sessions, label)
		}
		t.Session = sess
		t.Ops = ops
		r.h.Txns = append(r.h.Txns, t)
	}
}

var errLong = errors.New("line too long")

// fastLines enables fastLine; off in a test, to compare.
var fastLines = true

// readLine returns the next line of br without its line end, at most max
// bytes; buf is reused for lines that cross the buffer.
func readLine(br *bufio.Reader, buf *[]byte, max int64) ([]byte, error) {
	b, err := br.ReadSlice('\n')
	if err == nil || (errors.Is(err, io.EOF) && len(b) > 0) {
		if int64(len(bytes.TrimRight(b, "\r\n"))) > max {
			return nil, errLong
		}
		return b, nil
	}
	if !errors.Is(err, bufio.ErrBufferFull) {
		return nil, err
	}
	*buf = append((*buf)[:0], b...)
	for {
		b, err = br.ReadSlice('\n')
		*buf = append(*buf, b...)
		if int64(len(bytes.TrimRight(*buf, "\r\n"))) > max {
			return nil, errLong
		}
		if err == nil || errors.Is(err, io.EOF) {
			return *buf, nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return nil, err
		}
	}
}

// decode decodes one transaction line.
func decode(at txnLine, b []byte) (*line, error) {
	if b[0] != '{' {
		return nil, at.errf("", "a transaction must be a JSON object {\"value\": [operations]}")
	}
	var l line
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&l); err != nil {
		return nil, at.errf(jsonField(err), "malformed: %s", jsonMsg(err))
	}
	if dec.More() {
		return nil, at.errf("", "malformed: more than one JSON value on the line")
	}
	if l.Value == nil {
		return nil, at.errf("value", "missing: a transaction is {\"value\": [operations]}")
	}
	return &l, nil
}

// instants sets t's begin and end from the timestamps of l, if any.
func (r *reader) instants(at txnLine, l *line, t *history.Txn) error {
	if l.PreBeginTS == nil && l.PostCommitTS == nil {
		return nil
	}
	if l.PreBeginTS == nil || l.PostCommitTS == nil {
		field := "preBeginTS"
		if l.PreBeginTS != nil {
			field = "postCommitTS"
		}
		return at.errf(field, "missing: a transaction with timestamps has preBeginTS and postCommitTS")
	}
	const perMs = int64(1e6)
	ms := func(field string, n *json.Number) (int64, error) {
		v, err := strconv.ParseInt(n.String(), 10, 64)
		if err != nil || v < 0 || v > math.MaxInt64/perMs {
			return 0, at.errf(field, "%s is not a wall-clock instant in milliseconds", n.String())
		}
		return v * perMs, nil
	}
	begin, err := ms("preBeginTS", l.PreBeginTS)
	if err != nil {
		return err
	}
	end, err := ms("postCommitTS", l.PostCommitTS)
	if err != nil {
		return err
	}
	if end < begin {
		return at.errf("postCommitTS", "%s is before preBeginTS %s", l.PostCommitTS.String(), l.PreBeginTS.String())
	}
	t.Begin, t.End, t.HasTime = begin, end, true
	return nil
}

// jsonField and jsonMsg render a decoding error.
func jsonField(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return te.Field
	}
	return ""
}

func jsonMsg(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("a JSON %s where the format wants %s", te.Value, kindName(te.Type.String()))
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%s (at byte %d)", se.Error(), se.Offset)
	}
	return err.Error()
}

func kindName(goType string) string {
	switch {
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	case goType == "*bool" || goType == "bool":
		return "true or false"
	case strings.Contains(goType, "Number"):
		return "a number"
	}
	return goType
}

// kvInt is a key and an integer value.
type kvInt struct {
	k history.KeyID
	n int64
}

func (r *reader) markWritten(k history.KeyID, v history.Value) {
	if v.Kind == history.Int {
		r.wInt[kvInt{k, v.N}] = true
	} else {
		r.written[kv{k, v}] = true
	}
}

func (r *reader) isWritten(k history.KeyID, v history.Value) bool {
	if v.Kind == history.Int {
		return r.wInt[kvInt{k, v.N}]
	}
	return r.written[kv{k, v}]
}

// key interns key k.
func (r *reader) key(k history.Value) history.KeyID {
	if k.Kind != history.Int {
		return r.h.Key(k)
	}
	if id, ok := r.intKeys[k.N]; ok {
		return id
	}
	id := r.h.Key(k)
	r.intKeys[k.N] = id
	return id
}

// finish resolves what needed every log: reads of 0, the lower bound of
// ranges without one, the initial state.
func (r *reader) finish() (*history.History, error) {
	h := r.h
	if len(h.Txns) == 0 {
		what := "no transactions in the logs"
		if r.hasInit {
			what += " (only the initial transaction)"
		}
		return nil, &format.Error{File: r.source, Msg: what}
	}
	for _, p := range r.zeroOps {
		op := &h.Txns[p.txn].Ops[p.op]
		if !r.isWritten(op.Key, zero) {
			op.Value = history.NullValue
		}
	}
	lo := history.IntValue(math.MinInt64)
	if r.keyKind == history.String {
		lo = history.StringValue("")
	}
	for _, p := range r.openLo {
		h.Txns[p.txn].Ops[p.op].Range.Lo = lo
	}
	init := r.init
	if !r.hasInit {
		// Viper reads a value no transaction wrote from the initial
		// transaction: the data loaded before the run.
		init = map[history.KeyID]history.Value{}
		see := func(k history.KeyID, v history.Value) {
			if v.IsNull() || r.isWritten(k, v) {
				return
			}
			if _, ok := init[k]; !ok {
				init[k] = v
			}
		}
		for i := range h.Txns {
			for _, op := range h.Txns[i].Ops {
				switch op.Kind {
				case history.Read:
					see(op.Key, op.Value)
				case history.Scan:
					for _, p := range op.Range.Pairs {
						see(p.Key, p.Value)
					}
				}
			}
		}
	}
	if len(init) > 0 {
		h.Header.Initial.Values = init
	}
	return h, nil
}
