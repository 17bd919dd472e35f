package jepsen

import (
	"github.com/isoscope/isoscope/internal/format/edn"
	"github.com/isoscope/isoscope/internal/history"
)

// Faults makes the fault records (history.Fault) of a history's
// non-client operations: those whose :process is not a client's number
// but a name, the nemesis's (:process :nemesis, :f :start, :stop, :kill,
// …, usually :type :info). Jepsen records each as an invocation and a
// completion of the same :process and :f: the first opens a fault, the
// next closes it, so a fault lasts from the one to the other; its kind is
// the :f, its info the completion's :value (or the invocation's). One
// never closed lasts to the end of the history. The zero Faults is ready
// for use.
type Faults struct {
	open  map[string]int // a process and function to its fault in out
	out   []history.Fault
	ended []bool
}

// maxInfo bounds the length of a fault's info.
const maxInfo = 200

// Add takes the non-client operation op of process proc, at instant at,
// on line.
func (fs *Faults) Add(op, proc edn.Value, at int64, line int) {
	kind := "nemesis"
	if f, ok := op.Get("f"); ok && f.Kind != edn.Nil {
		if n, ok := f.Name(); ok {
			kind = n
		} else {
			kind = f.Canonical()
		}
	}
	info := ""
	if v, ok := op.Get("value"); ok && v.Kind != edn.Nil {
		info = v.Canonical()
		if len(info) > maxInfo {
			info = info[:maxInfo] + "…"
		}
	}
	id := proc.Canonical() + " " + kind
	if i, ok := fs.open[id]; ok {
		delete(fs.open, id)
		f := &fs.out[i]
		f.End = max(at, f.Begin)
		if info != "" {
			f.Info = info
		}
		fs.ended[i] = true
		return
	}
	if fs.open == nil {
		fs.open = map[string]int{}
	}
	fs.open[id] = len(fs.out)
	fs.out = append(fs.out, history.Fault{Kind: kind, Begin: max(at, 0), End: max(at, 0), Info: info, Line: line})
	fs.ended = append(fs.ended, false)
}

// Len is the number of faults.
func (fs *Faults) Len() int { return len(fs.out) }

// Finish returns the faults, those never closed lasting to instant end.
func (fs *Faults) Finish(end int64) []history.Fault {
	for i := range fs.out {
		if !fs.ended[i] {
			fs.out[i].End = max(end, fs.out[i].Begin)
		}
	}
	return fs.out
}
