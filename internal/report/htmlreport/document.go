package htmlreport

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/report"
)

// ReadDocuments reads the JSON result of `isoscope check --json`: one
// document per line (several when several histories were checked).
// Numbers keep their precision: transaction ids and keys stay exact.
func ReadDocuments(r io.Reader) ([]*report.Document, error) {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	var out []*report.Document
	for {
		d := new(report.Document)
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

// FromDocument resolves a saved result against its history: transaction
// ids and keys as in the input ("init" is the initial state) map back to
// the history's transactions and keys. The operations at issue of
// non-cycle anomalies are not in the JSON; the page highlights the
// reads and writes of their key instead.
func FromDocument(file string, h *history.History, d *report.Document) (Section, error) {
	// Resolve only the ids the result names, in one pass over the history.
	want := map[history.Value]history.TxnID{}
	for _, f := range d.Anomalies {
		for _, t := range f.Transactions {
			if v, err := scalarValue(t); err == nil {
				want[v] = -2
			}
		}
		for _, e := range f.Cycle {
			for _, t := range []any{e.From, e.To} {
				if v, err := scalarValue(t); err == nil {
					want[v] = -2
				}
			}
		}
	}
	for i := range h.Txns {
		if t, ok := want[h.Txns[i].ID]; ok && t == -2 {
			want[h.Txns[i].ID] = history.TxnID(i)
		}
	}
	txn := func(x any) (history.TxnID, error) {
		if s, ok := x.(string); ok && s == "init" {
			return history.Init, nil
		}
		v, err := scalarValue(x)
		if err != nil {
			return 0, err
		}
		if t := want[v]; t >= 0 {
			return t, nil
		}
		return 0, fmt.Errorf("transaction %s is not in the history", v)
	}
	key := func(x any) (history.KeyID, error) {
		if x == nil {
			return history.NoKey, nil
		}
		v, err := scalarValue(x)
		if err != nil {
			return 0, err
		}
		if k, ok := h.LookupKey(v); ok {
			return k, nil
		}
		return 0, fmt.Errorf("key %s is not in the history", v)
	}
	s := Section{File: file, History: h, Doc: d, Anomalies: make([]anomaly.Anomaly, len(d.Anomalies))}
	for i, f := range d.Anomalies {
		a := &s.Anomalies[i]
		wrap := func(err error) error { return fmt.Errorf("result: anomaly %d (%s): %w", i+1, f.Kind, err) }
		var ok bool
		if a.Kind, ok = anomaly.ParseKind(f.Kind); !ok {
			return Section{}, wrap(errors.New("unknown kind (a result of a newer isoscope?)"))
		}
		if f.Phenomenon != "" {
			if a.Phenomenon, ok = anomaly.ParsePhenomenon(f.Phenomenon); !ok {
				return Section{}, wrap(fmt.Errorf("unknown phenomenon %q", f.Phenomenon))
			}
		}
		a.BestFound, a.Minimal = f.BestFound, f.Minimal
		for _, x := range f.Core {
			t, err := txn(x)
			if err != nil {
				return Section{}, wrap(err)
			}
			a.Core = append(a.Core, t)
		}
		for _, x := range f.Transactions {
			t, err := txn(x)
			if err != nil {
				return Section{}, wrap(err)
			}
			a.Txns = append(a.Txns, t)
		}
		for _, e := range f.Cycle {
			var st anomaly.Step
			var err error
			if st.From, err = txn(e.From); err == nil {
				st.To, err = txn(e.To)
			}
			if err == nil {
				st.Key, err = key(e.Key)
			}
			if err != nil {
				return Section{}, wrap(err)
			}
			if st.Dep, ok = anomaly.ParseDep(e.Dep); !ok {
				return Section{}, wrap(fmt.Errorf("unknown dependency %q", e.Dep))
			}
			a.Cycle = append(a.Cycle, st)
		}
		var err error
		if a.Key, err = key(f.Key); err != nil {
			return Section{}, wrap(err)
		}
		if len(f.Value) > 0 {
			if a.Value, err = rawValue(f.Value); err != nil {
				return Section{}, wrap(err)
			}
		}
	}
	return s, nil
}

// scalarValue converts a JSON scalar decoded with UseNumber (or as a
// float64 that holds an integer), or a scalar of a document built in
// memory (report.NewDocument), to a history value.
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
