package report

import (
	"fmt"
	"strings"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/evidence"
	"github.com/isoscope/isoscope/internal/history"
)

// Evidence returns the evidence of every edge of anomaly i's cycle, in
// the cycle's order (nil when it is not a cycle): the operations that make
// each edge and why it holds (package evidence). It is derived from the
// history on first use, for every anomaly at once, through the check's
// index (a resolved result's is built again) with its level and modules.
func (c *Checked) Evidence(i int) []evidence.Edge {
	as := c.Result.Anomalies
	if i < 0 || i >= len(as) || !as[i].IsCycle() || c.History == nil {
		return nil
	}
	if len(c.evidence) != len(as) {
		r := &c.Result
		l := r.Level
		if r.CheckedAt != nil {
			l = *r.CheckedAt
		}
		ix := r.Index
		if ix == nil || ix.History() != c.History || ix.OwnReads() != r.OwnReads {
			ix = history.NewIndexWith(c.History, r.OwnReads) // a resolved result
		}
		f := evidence.New(ix, l, r.Modules)
		f.Prepare(as)
		c.evidence = make([][]evidence.Edge, len(as))
		for j := range as {
			c.evidence[j] = f.Cycle(&as[j])
		}
	}
	return c.evidence[i]
}

// EdgeText says in a sentence what makes one edge of a cycle, naming its
// operations with their keys and values, as Elle does: "T1 wrote x=3,
// which T2 read"; "T2 read x=3 from T1, and T3 overwrote it with 4 (T3
// read x=3 before writing it: a read-modify-write)".
func EdgeText(h *history.History, e *evidence.Edge) string {
	a, b := txn(h, e.From), txn(h, e.To)
	switch e.Dep {
	case anomaly.SO:
		if e.Basis == evidence.Session {
			return fmt.Sprintf("%s ran before %s in session %s", a, b, sessionLabel(h, e.From))
		}
	case anomaly.RT:
		switch e.Basis {
		case evidence.RealTime:
			return fmt.Sprintf("%s ended (at %d) before %s began (at %d)", a, h.Txns[e.From].End, b, h.Txns[e.To].Begin)
		case evidence.Timestamps:
			return fmt.Sprintf("%s committed (commit_ts %d) before %s started (start_ts %d)", a, h.Txns[e.From].CommitTS, b, h.Txns[e.To].StartTS)
		}
	case anomaly.WR, anomaly.PWR:
		if len(e.Ops) < 2 {
			break
		}
		if e.From == e.To {
			return fmt.Sprintf("%s %s, which it wrote itself (operation %d)", a, readWhat(h, e.Ops[1]), e.Ops[0].Ref.Op)
		}
		s := fmt.Sprintf("%s %s, which %s", a, wrote(h, e.Ops[0]), readBy(h, e.Ops[1]))
		switch e.Basis {
		case evidence.Chosen:
			s += fmt.Sprintf(" (as did %s: the solver chose %s's write)", others(h, e.Writers, e.From), a)
		case evidence.Inferred:
			s += fmt.Sprintf(" (as did %s, which the known dependencies rule out)", others(h, e.Writers, e.From))
		}
		return s
	case anomaly.WW:
		if len(e.Ops) < 2 {
			break
		}
		if e.From == history.Init {
			return fmt.Sprintf("%s overwrote the initial state of %s with %s", b, keyName(h, e.Key), installed(h, e.Ops[1]))
		}
		return fmt.Sprintf("%s %s, and %s %s%s", a, wrote(h, e.Ops[0]), b, overwrote(h, e.Ops[1]), orderWhy(h, e))
	case anomaly.RW, anomaly.PRW:
		if len(e.Ops) < 2 || !e.HasReadFrom {
			break
		}
		var from string
		switch {
		case len(e.Writers) == 2:
			from = fmt.Sprintf(" (which %s both installed)", txnList(h, e.Writers))
		case len(e.Writers) > 2:
			from = fmt.Sprintf(" (which %s all installed)", txnList(h, e.Writers))
		case e.ReadFrom.IsInitial():
			from = ", the initial state"
		default:
			from = " from " + txn(h, e.ReadFrom.Ref.Txn)
		}
		why := orderWhy(h, e)
		if len(e.Writers) > 1 {
			switch e.Basis {
			case evidence.Chosen:
				why = " (the solver chose which of them it read)"
			case evidence.Inferred:
				why = fmt.Sprintf(" (the checker inferred which of them it read, one that %s's write follows: the others would close a cycle of known dependencies)", b)
			}
		}
		return fmt.Sprintf("%s %s%s, and %s %s%s", a, readWhat(h, e.Ops[0]), from, b, overwrote(h, e.Ops[1]), why)
	}
	return fmt.Sprintf("%s --%s--> %s: no evidence found", a, e.Dep, b)
}

// txnList lists transactions: "T1, T2 and the
// initial state".
func txnList(h *history.History, ts []history.TxnID) string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = txn(h, t)
	}
	if len(out) == 1 {
		return out[0]
	}
	return strings.Join(out[:len(out)-1], ", ") + " and " + out[len(out)-1]
}

// orderWhy says, in parentheses, why the version a ww, rw or prw edge
// overwrites comes before the overwriting write.
func orderWhy(h *history.History, e *evidence.Edge) string {
	switch e.Basis {
	case evidence.Initial:
		return " (every write of " + keyName(h, e.Key) + " follows its initial state)"
	case evidence.Chosen:
		return " (no operation shows the order of the two writes: the solver chose it)"
	case evidence.EitherOrder:
		return " (both read the same version of " + keyName(h, e.Key) + " before writing it: in the other order of the two writes the other update is lost the same way)"
	case evidence.Inferred:
		if len(e.Path) == 0 {
			return " (the checker inferred the order of the two writes: the other one closes a cycle of known dependencies)"
		}
		return " (the other order of the two writes would close a cycle of known dependencies: " + pathText(h, e.Path) + ")"
	}
	if len(e.Order) == 0 {
		return ""
	}
	parts := make([]string, len(e.Order))
	for i := range e.Order {
		parts[i] = linkText(h, e.Key, &e.Order[i])
	}
	if len(parts) == 1 {
		return " (" + parts[0] + ")"
	}
	return " (the versions of " + keyName(h, e.Key) + " in order: " + strings.Join(parts, "; ") + ")"
}

// linkText says why one known order of two writers holds.
func linkText(h *history.History, k history.KeyID, l *evidence.Link) string {
	a, b := txn(h, l.From), txn(h, l.To)
	switch l.Basis {
	case evidence.ReadModifyWrite:
		if l.HasShown {
			return fmt.Sprintf("%s read %s, %s's, before writing it: a read-modify-write", b, readValue(h, evidence.Op{Ref: l.Shown, Key: k}), a)
		}
	case evidence.ListOrder:
		if l.HasShown {
			list := readValue(h, evidence.Op{Ref: l.Shown, Key: k})
			if l.Unobserved {
				return fmt.Sprintf("no read shows %s's element of %s, so it comes after %s's, the last of the longest read, %s's %s", b, keyName(h, k), a, txn(h, l.Shown.Txn), list)
			}
			return fmt.Sprintf("%s's read %s shows %s's element before %s's", txn(h, l.Shown.Txn), list, a, b)
		}
	case evidence.VersionOrder:
		return fmt.Sprintf("the history's version order of %s puts %s before %s", keyName(h, k), a, b)
	case evidence.CommitOrder:
		return fmt.Sprintf("commit order: %s committed at commit_ts %d, %s at %d", a, h.Txns[l.From].CommitTS, b, h.Txns[l.To].CommitTS)
	}
	return fmt.Sprintf("%s before %s", a, b)
}

// pathText renders a path of known dependencies as a chain; a last wr
// step from the path's start's rival is said in words.
func pathText(h *history.History, p []anomaly.Step) string {
	if len(p) == 0 {
		return ""
	}
	tail := ""
	if n := len(p); n > 1 && p[n-1].Dep == anomaly.WR && p[n-1].To == p[n-2].To {
		last := p[n-1]
		p = p[:n-1]
		tail = fmt.Sprintf(", which read %s's %s", txn(h, last.From), keyName(h, last.Key))
	}
	return Chain(h, p) + tail
}

// EvidenceCounts counts the edges of a cycle's evidence that the solver
// chose and those every choice of the uncertain dependencies has.
func EvidenceCounts(es []evidence.Edge) (forced, chosen int) {
	for i := range es {
		if es[i].Basis == evidence.Chosen {
			chosen++
		} else {
			forced++
		}
	}
	return forced, chosen
}

// BestFoundNote says in plain words what a best-found cycle is: one under
// a choice of the history's uncertain dependencies, with how many of its
// edges that choice made.
func BestFoundNote(es []evidence.Edge) string {
	_, chosen := EvidenceCounts(es)
	if chosen == 0 {
		// The solver met it, but nothing in it is the solver's choice.
		return "The solver found this cycle among the history's open dependencies (which write a read saw, or the order of two writes no operation shows), and each of its edges holds whichever way they are settled: the cycle itself is certain."
	}
	s := "The history leaves some dependencies open (which write a read saw, or the order of two writes no operation shows). Every way of settling them closes a cycle the level forbids, so the verdict is certain; this cycle is the one the solver met"
	switch chosen {
	case 1:
		return s + ": one of its edges is the solver's choice, the others hold whatever the choice."
	}
	return s + fmt.Sprintf(": %d of its %d edges are the solver's choice, the others hold whatever the choice.", chosen, len(es))
}

func sessionLabel(h *history.History, t history.TxnID) string {
	s := h.Txns[t].Session
	if s < 0 || int(s) >= len(h.Sessions) {
		return "?"
	}
	return h.Sessions[s].String()
}

// others names the writers ws but t: "T4 and T7".
func others(h *history.History, ws []history.TxnID, t history.TxnID) string {
	var out []string
	for _, w := range ws {
		if w != t {
			out = append(out, txn(h, w))
		}
	}
	switch len(out) {
	case 0:
		return "no other transaction"
	case 1:
		return out[0]
	}
	return strings.Join(out[:len(out)-1], ", ") + " and " + out[len(out)-1]
}

// opOf returns the operation o names, if the history holds it.
func opOf(h *history.History, o evidence.Op) (history.Op, bool) {
	if o.IsInitial() {
		return history.Op{}, false
	}
	return opAt(h, o.Ref)
}

// installed renders what a write, delete or append put at its key:
// "4", "a tombstone", "nothing (a delete)", "element 4".
func installed(h *history.History, o evidence.Op) string {
	if o.IsInitial() {
		return stateString(h.InitialValue(o.Key))
	}
	op, ok := opOf(h, o)
	if !ok {
		return "?"
	}
	switch op.Kind {
	case history.Delete:
		return "a delete"
	case history.Append:
		return "element " + op.Value.String()
	}
	return stateString(op.Value)
}

// wrote says what a write did: "wrote x=3", "deleted x", "appended 3 to
// x"; for the initial state, "held x=0 initially".
func wrote(h *history.History, o evidence.Op) string {
	k := keyName(h, o.Key)
	if o.IsInitial() {
		return fmt.Sprintf("held %s=%s initially", k, stateString(h.InitialValue(o.Key)))
	}
	op, ok := opOf(h, o)
	if !ok {
		return "wrote " + k + "=?"
	}
	switch op.Kind {
	case history.Delete:
		return "deleted " + k
	case history.Append:
		return fmt.Sprintf("appended %s to %s", op.Value, k)
	}
	return fmt.Sprintf("wrote %s=%s", k, stateString(op.Value))
}

// overwrote says what an overwriting write did: "overwrote it with 4",
// "deleted it", "appended 4 after it".
func overwrote(h *history.History, o evidence.Op) string {
	op, ok := opOf(h, o)
	if !ok {
		return "overwrote it"
	}
	switch op.Kind {
	case history.Delete:
		return "deleted it"
	case history.Append:
		return fmt.Sprintf("appended %s after it", op.Value)
	}
	return "overwrote it with " + stateString(op.Value)
}

// readWhat says what a read, list read, scan or iterator saw of its key:
// "read x=3", "read x as [1 2]", "scanned [0, 10) and got key 5=3".
func readWhat(h *history.History, o evidence.Op) string {
	op, ok := opOf(h, o)
	if !ok {
		return "read " + keyName(h, o.Key)
	}
	if op.Kind.IsRange() {
		return fmt.Sprintf("%s %s and %s", scanVerb(op), rangeText(op), scanSaw(h, op, o.Key))
	}
	return "read " + readValue(h, o)
}

// readBy says who read a write and how: "T2 read", "T2 read in
// x=[1 2]", "T3's scan of [0, 10) returned", "T3's scan of [0, 10) did
// not return" (a delete).
func readBy(h *history.History, o evidence.Op) string {
	t := txn(h, o.Ref.Txn)
	op, ok := opOf(h, o)
	if !ok {
		return t + " read"
	}
	switch {
	case op.Kind.IsRange():
		s := fmt.Sprintf("%s's %s of %s ", t, op.Kind, rangeText(op))
		if saw := scanSaw(h, op, o.Key); strings.HasPrefix(saw, "did not") {
			return s + "did not return"
		}
		return s + "returned"
	case op.Kind == history.ReadList:
		return fmt.Sprintf("%s read in %s", t, readValue(h, o))
	}
	return t + " read"
}

// readValue renders a plain or list read: "x=3", "x=[1 2]", "x absent".
func readValue(h *history.History, o evidence.Op) string {
	op, ok := opOf(h, o)
	if !ok {
		return keyName(h, o.Key) + "=?"
	}
	k := keyName(h, o.Key)
	if op.Kind.IsRange() {
		return rangeText(op) + " " + scanSaw(h, op, o.Key)
	}
	if op.Kind == history.ReadList {
		return k + "=" + listString(op.List)
	}
	if op.Value.IsNull() {
		return k + " absent"
	}
	return k + "=" + op.Value.String()
}

func scanVerb(op history.Op) string {
	if op.Kind == history.Iter {
		return "iterated over"
	}
	return "scanned"
}

// rangeText renders a range operation's bounds: "[0, 10)", "[a, …)".
func rangeText(op history.Op) string {
	if op.Range == nil {
		return "[?)"
	}
	hi := "…"
	if !op.Range.HiOpen {
		hi = op.Range.Hi.String()
	}
	return "[" + op.Range.Lo.String() + ", " + hi + ")"
}

// scanSaw says what a range operation returned for key k.
func scanSaw(h *history.History, op history.Op, k history.KeyID) string {
	if op.Range != nil {
		for _, p := range op.Range.Pairs {
			if p.Key == k {
				if p.Value.IsNull() {
					return "got " + keyName(h, k) + " as a tombstone"
				}
				return fmt.Sprintf("got %s=%s", keyName(h, k), p.Value)
			}
		}
	}
	return "did not get " + keyName(h, k)
}
