package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/finding"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// ReadDocuments reads the JSON result of `isoscope check --json`: one
// document per line (several when several histories were checked).
// Numbers keep their precision: transaction ids and keys stay exact.
func ReadDocuments(r io.Reader) ([]*Document, error) {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	var out []*Document
	for {
		d := new(Document)
		err := dec.Decode(d)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("result: %w", err)
		}
		if d.Level == "" || d.Outcome == "" {
			return nil, fmt.Errorf("result: document %d is not an isoscope result (no level or outcome)", len(out)+1)
		}
		out = append(out, d)
	}
	if len(out) == 0 {
		return nil, errors.New("result: empty")
	}
	return out, nil
}

// Resolve turns document d of a saved JSON result back into the checked
// result NewDocument rendered it from, against h, the history it is about,
// named file: transaction ids, keys and operations as in the input map
// back to the history's transactions, keys and operation positions
// ("init" is the initial state), and the names of levels, outcomes,
// kinds, phenomena and dependencies to their values. NewDocument of the
// result gives d again, so that what is rendered from it (the HTML
// report) is what was rendered at check time. What the JSON does not
// hold is not restored: the key and value of a cycle anomaly apart from
// its edges' (nothing renders them), and, from a result written before
// findings carried their operations ("ops"), the operations at issue (its
// explanations then name fewer of them). A document of outcome "error"
// gives a Checked whose Err is its error (with h, which a page of it
// shows nothing of).
func Resolve(file string, h *history.History, d *Document) (*Checked, error) {
	l, err := level.Lookup(d.Level)
	if err != nil {
		return nil, fmt.Errorf("result: %w", err)
	}
	c := &Checked{File: file, History: h, Result: check.Result{Level: l}}
	if d.Outcome == OutcomeError {
		msg := d.Error
		if msg == "" {
			msg = "not checked"
		}
		c.Err = errors.New(msg)
		return c, nil
	}
	r := &c.Result
	var ok bool
	if r.Outcome, ok = check.ParseOutcome(d.Outcome); !ok {
		return nil, fmt.Errorf("result: unknown outcome %q", d.Outcome)
	}
	r.Checker, r.Stats, r.Reason, r.Caveat, r.Note, r.Modules = d.Checker, d.History, d.Reason, d.Caveat, d.Note, d.Modules
	c.ImpliedBy = d.LevelImpliedBy
	if ms := d.ElapsedMS; ms > 0 && ms < float64(math.MaxInt64/int64(time.Millisecond)) {
		c.Elapsed = time.Duration(math.Round(ms*1000)) * time.Microsecond
	}
	for _, name := range d.Holds {
		hl, err := level.Lookup(name)
		if err != nil {
			return nil, fmt.Errorf("result: holds: %w", err)
		}
		r.Holds = append(r.Holds, hl)
	}
	if d.CheckedAt != "" {
		at, err := level.Lookup(d.CheckedAt)
		if err != nil {
			return nil, fmt.Errorf("result: checked_at: %w", err)
		}
		r.CheckedAt = &at
	}
	if o := d.OwnReads; o != nil {
		if r.OwnReads, ok = history.ParseOwnReads(o.Policy); !ok {
			return nil, fmt.Errorf("result: unknown read-your-own-writes policy %q", o.Policy)
		}
		if o.Inferred {
			r.OwnReadsEvidence = &history.OwnReadsEvidence{Own: o.Own, External: o.External}
		}
	}
	rs := newResolver(h, d)
	r.Anomalies = make([]anomaly.Anomaly, len(d.Anomalies))
	for i := range d.Anomalies {
		if err := rs.anomaly(&r.Anomalies[i], &d.Anomalies[i]); err != nil {
			return nil, fmt.Errorf("result: anomaly %d (%s): %w", i+1, d.Anomalies[i].Kind, err)
		}
	}
	return c, nil
}

// resolver maps the ids and keys of a document's findings to a history's.
type resolver struct {
	h *history.History
	// txns are the transactions of the ids the findings name, each the
	// first in file order with its id (-1: none has it).
	txns map[history.Value]history.TxnID
}

// newResolver resolves only the ids d names, in one pass over h.
func newResolver(h *history.History, d *Document) *resolver {
	rs := &resolver{h: h, txns: map[history.Value]history.TxnID{}}
	want := func(x any) {
		if v, err := scalarValue(x); err == nil {
			rs.txns[v] = -1
		}
	}
	for i := range d.Anomalies {
		f := &d.Anomalies[i]
		for _, x := range f.Transactions {
			want(x)
		}
		for _, x := range f.Core {
			want(x)
		}
		for _, e := range f.Cycle {
			want(e.From)
			want(e.To)
		}
		for _, o := range f.Ops {
			want(o.Transaction)
		}
	}
	for i := range h.Txns {
		if t, ok := rs.txns[h.Txns[i].ID]; ok && t == -1 {
			rs.txns[h.Txns[i].ID] = history.TxnID(i)
		}
	}
	return rs
}

func (rs *resolver) txn(x any) (history.TxnID, error) {
	if s, ok := x.(string); ok && s == "init" {
		return history.Init, nil
	}
	v, err := scalarValue(x)
	if err != nil {
		return 0, err
	}
	if t, ok := rs.txns[v]; ok && t >= 0 {
		return t, nil
	}
	return 0, fmt.Errorf("transaction %s is not in the history", v)
}

func (rs *resolver) key(x any) (history.KeyID, error) {
	if x == nil {
		return history.NoKey, nil
	}
	v, err := scalarValue(x)
	if err != nil {
		return 0, err
	}
	if k, ok := rs.h.LookupKey(v); ok {
		return k, nil
	}
	return 0, fmt.Errorf("key %s is not in the history", v)
}

func (rs *resolver) txnList(xs []any) ([]history.TxnID, error) {
	var out []history.TxnID
	for _, x := range xs {
		t, err := rs.txn(x)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// anomaly resolves finding f into a.
func (rs *resolver) anomaly(a *anomaly.Anomaly, f *finding.Finding) error {
	var ok bool
	if a.Kind, ok = anomaly.ParseKind(f.Kind); !ok {
		return errors.New("unknown kind (a result of a newer isoscope?)")
	}
	if f.Phenomenon != "" {
		if a.Phenomenon, ok = anomaly.ParsePhenomenon(f.Phenomenon); !ok {
			return fmt.Errorf("unknown phenomenon %q", f.Phenomenon)
		}
	}
	a.BestFound, a.Minimal = f.BestFound, f.Minimal
	var err error
	if a.Core, err = rs.txnList(f.Core); err != nil {
		return err
	}
	if a.Txns, err = rs.txnList(f.Transactions); err != nil {
		return err
	}
	for _, e := range f.Cycle {
		var st anomaly.Step
		if st.From, err = rs.txn(e.From); err == nil {
			st.To, err = rs.txn(e.To)
		}
		if err == nil {
			st.Key, err = rs.key(e.Key)
		}
		if err != nil {
			return err
		}
		if st.Dep, ok = anomaly.ParseDep(e.Dep); !ok {
			return fmt.Errorf("unknown dependency %q", e.Dep)
		}
		a.Cycle = append(a.Cycle, st)
	}
	for _, o := range f.Ops {
		t, err := rs.txn(o.Transaction)
		if err != nil {
			return err
		}
		if t == history.Init || o.Index < 0 || o.Index >= len(rs.h.Txns[t].Ops) {
			return fmt.Errorf("operation %d of transaction %s is not in the history", o.Index, rs.h.TxnName(t))
		}
		a.Ops = append(a.Ops, history.OpRef{Txn: t, Op: int32(o.Index)})
	}
	if a.Key, err = rs.key(f.Key); err != nil {
		return err
	}
	if len(f.Value) > 0 {
		if a.Value, err = rawValue(f.Value); err != nil {
			return err
		}
	}
	return nil
}

// scalarValue converts a JSON scalar decoded with UseNumber (or as a
// float64 that holds an integer), or a scalar of a document built in
// memory (NewDocument), to a history value.
func scalarValue(x any) (history.Value, error) {
	switch v := x.(type) {
	case string:
		return history.StringValue(v), nil
	case json.Number:
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			return history.Value{}, fmt.Errorf("%s is not an integer id or key", v)
		}
		return history.IntValue(n), nil
	case int64:
		return history.IntValue(v), nil
	case int:
		return history.IntValue(int64(v)), nil
	case float64:
		if v == float64(int64(v)) {
			return history.IntValue(int64(v)), nil
		}
	case nil:
		return history.NullValue, nil
	}
	return history.Value{}, fmt.Errorf("%v is not a scalar id or key", x)
}

func rawValue(raw json.RawMessage) (history.Value, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return history.Value{}, err
	}
	return scalarValue(x)
}
