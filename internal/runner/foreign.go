package runner

import (
	"fmt"

	"github.com/isoscope/isoscope/internal/history"
)

// Foreign counts the reads of a history that returned a value none of its
// transactions wrote — committed, aborted or unknown — and the initial
// state does not hold: a run's table starts empty, so such a value came
// from outside the run (another run on the table, or a program). A
// workload whose written values repeat (randombench's value domain) can
// hide some of them; every one counted is certain.
type Foreign struct {
	// Reads counts the reads (a list read or a range result counts once
	// per value it returned that nobody wrote), Txns the transactions
	// that made them.
	Reads, Txns int
	// First describes the first such read in file order ("transaction 12
	// read key 16 = 775").
	First string
}

// ForeignReads finds the reads of h whose values no transaction of h
// wrote (see Foreign).
func ForeignReads(h *history.History) Foreign {
	type kv struct {
		k history.KeyID
		v history.Value
	}
	written := map[kv]bool{}
	for k, v := range h.Header.Initial.Values {
		written[kv{k, v}] = true
	}
	for i := range h.Txns {
		for _, op := range h.Txns[i].Ops {
			if op.Kind == history.Write || op.Kind == history.Append {
				written[kv{op.Key, op.Value}] = true
			}
		}
	}
	var f Foreign
	for i := range h.Txns {
		t := &h.Txns[i]
		before := f.Reads
		seen := func(k history.KeyID, v history.Value) {
			if v.IsNull() || written[kv{k, v}] {
				return
			}
			if f.Reads == 0 {
				f.First = fmt.Sprintf("transaction %s read key %s = %s", t.ID, h.KeyName(k), v)
			}
			f.Reads++
		}
		for _, op := range t.Ops {
			switch op.Kind {
			case history.Read:
				seen(op.Key, op.Value)
			case history.ReadList:
				for _, e := range op.List {
					seen(op.Key, e)
				}
			case history.Scan, history.Iter:
				if op.Range != nil {
					for _, p := range op.Range.Pairs {
						seen(p.Key, p.Value)
					}
				}
			}
		}
		if f.Reads > before {
			f.Txns++
		}
	}
	return f
}
