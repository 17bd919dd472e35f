package report

import (
	"fmt"
	"strings"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/history"
)

// Explain renders a one-sentence explanation of a for people. An anomaly
// that lacks what its kind's sentence names (one resolved from a result
// file that is not isoscope's, say) has "?" in its place.
func Explain(h *history.History, a *anomaly.Anomaly) string {
	if a.IsCycle() {
		return explainCycle(h, a)
	}
	t := func(i int) string {
		if i >= len(a.Txns) {
			return "?"
		}
		return txn(h, a.Txns[i])
	}
	kv := fmt.Sprintf("%s=%s", keyName(h, a.Key), a.Value)
	other := func(i int) string {
		if i < len(a.Ops) {
			if op, ok := opAt(h, a.Ops[i]); ok {
				return fmt.Sprintf("%s=%s", keyName(h, op.Key), op.Value)
			}
		}
		return "?"
	}
	switch a.Kind {
	case anomaly.ThinAirRead:
		return fmt.Sprintf("%s read %s, which no transaction wrote", t(0), kv)
	case anomaly.AbortedRead:
		return fmt.Sprintf("%s read %s, written by %s, which aborted", t(0), kv, t(1))
	case anomaly.FutureRead:
		return fmt.Sprintf("%s read %s before it wrote that value itself", t(0), kv)
	case anomaly.NotMyLastWrite:
		return fmt.Sprintf("%s read %s, its own earlier write, after it had overwritten it with %s", t(0), kv, other(2))
	case anomaly.NotMyOwnWrite:
		if len(a.Ops) > 0 {
			if op, ok := opAt(h, a.Ops[0]); ok && op.Kind == history.ReadList {
				return fmt.Sprintf("%s appended %s to %s and then read %s=%s, which lacks its own append at the end",
					t(0), a.Value, keyName(h, a.Key), keyName(h, a.Key), listString(op.List))
			}
		}
		return fmt.Sprintf("%s wrote %s and then read %s", t(0), other(1), kv)
	case anomaly.IntermediateRead:
		return fmt.Sprintf("%s read %s, an intermediate version: %s overwrote it with %s before committing", t(0), kv, t(1), other(2))
	case anomaly.IncompatibleOrder:
		return fmt.Sprintf("%s and %s read %s in orders that disagree (neither list is a prefix of the other): no order of its appends explains both",
			t(0), t(1), keyName(h, a.Key))
	case anomaly.DuplicateElements:
		return fmt.Sprintf("%s read %s with the element %s twice, though each element is appended once", t(0), keyName(h, a.Key), a.Value)
	case anomaly.StaleRead, anomaly.ReadBeyondSnapshot, anomaly.ConcurrentWrite, anomaly.LostUpdate,
		anomaly.SessionGuaranteeViolation, anomaly.CommitBeforeStart:
		if e := explainTimestamps(h, a); e != "" {
			return e
		}
	case anomaly.RealTimeViolation, anomaly.Cycle:
		// Not a cycle: the linearizability search's counterexample.
		return explainNoOrder(h, a)
	case anomaly.NonRepeatableRead:
		first, second := "?", a.Value.String()
		if len(a.Ops) > 0 {
			first = observed(h, a.Ops[0], a.Key)
		}
		if len(a.Ops) > 1 {
			second = observed(h, a.Ops[1], a.Key)
		}
		return fmt.Sprintf("%s read %s twice without writing it in between and got %s, then %s",
			t(0), keyName(h, a.Key), first, second)
	}
	return a.Kind.String()
}

// keyName renders a key inside a sentence: "x", or "key 17" for an
// integer key, which would read as a number.
func keyName(h *history.History, k history.KeyID) string {
	if k >= 0 && int(k) < len(h.Keys) && h.Keys[k].Kind == history.Int {
		return "key " + h.KeyName(k)
	}
	return h.KeyName(k)
}

// observed says what operation r saw at key k: a read's value, or what a
// scan or iterator returned for k (absence when it did not return k).
func observed(h *history.History, r history.OpRef, k history.KeyID) string {
	op, ok := opAt(h, r)
	if !ok {
		return "?"
	}
	if op.Kind == history.ReadList {
		return listString(op.List)
	}
	if !op.Kind.IsRange() || op.Range == nil {
		return op.Value.String()
	}
	for _, p := range op.Range.Pairs {
		if p.Key == k {
			if p.Value.IsNull() {
				return "a tombstone (a scan)"
			}
			return p.Value.String() + " (a scan)"
		}
	}
	return "nothing (a scan that did not return it)"
}

func txn(h *history.History, t history.TxnID) string {
	if t == history.Init {
		return "the initial state"
	}
	if int(t) < len(h.Txns) && h.Txns[t].ID.Kind == history.Int {
		return "T" + h.TxnName(t)
	}
	return h.TxnName(t)
}

func explainCycle(h *history.History, a *anomaly.Anomaly) string {
	c := a.Cycle
	key := func(s anomaly.Step) string { return keyName(h, s.Key) }
	switch a.Kind {
	case anomaly.LostUpdate:
		if len(c) == 2 && (c[0].Dep == anomaly.WW || c[1].Dep == anomaly.WW) {
			rw, ww := c[0], c[1]
			if rw.Dep == anomaly.WW {
				rw, ww = ww, rw
			}
			if ww.From == rw.To && ww.To == rw.From && h.ReadsFirst(ww.From, ww.Key) {
				return fmt.Sprintf("%s and %s both read %s and both overwrote it: whichever wrote second had not seen the other's write, so one update is lost",
					txn(h, rw.From), txn(h, rw.To), key(rw))
			}
			if ww.From == rw.To && ww.To == rw.From {
				// Only the reader read: the other wrote blind.
				return fmt.Sprintf("%s read %s, %s then wrote it, and %s overwrote that write without having seen it: %s's write is lost",
					txn(h, rw.From), key(rw), txn(h, rw.To), txn(h, rw.From), txn(h, rw.To))
			}
		}
		src := ""
		if len(a.Txns) == 3 {
			src = " from " + txn(h, a.Txns[0])
		}
		return fmt.Sprintf("%s and %s both read %s%s and both overwrote it: one update is lost",
			txn(h, c[0].From), txn(h, c[0].To), key(c[0]), src)
	case anomaly.WriteSkew:
		if len(c) < 2 {
			break
		}
		return fmt.Sprintf("%s and %s each read a version the other overwrote (%s and %s): neither saw the other's write, which no serial order allows",
			txn(h, c[0].From), txn(h, c[0].To), key(c[0]), key(c[1]))
	case anomaly.FracturedRead, anomaly.NonMonotonicRead:
		if len(c) < 2 {
			break
		}
		wr, rw := c[0], c[1]
		if wr.Dep.IsAnti() {
			wr, rw = rw, wr
		}
		if wr.Dep == anomaly.PWR || rw.Dep == anomaly.PRW {
			break // a scan's: said step by step, as a phantom, below
		}
		if a.Kind == anomaly.NonMonotonicRead && len(c) == 2 {
			return fmt.Sprintf("%s read %s from %s and then an older %s that %s had already overwritten",
				txn(h, wr.To), key(wr), txn(h, wr.From), key(rw), txn(h, rw.To))
		}
		if a.Kind == anomaly.NonMonotonicRead {
			// Across a session: the step into the reader is session order.
			for i, st := range c {
				if prev := c[(i+len(c)-1)%len(c)]; st.Dep.IsAnti() && prev.Dep == anomaly.SO {
					return fmt.Sprintf("%s read %s at a version older than %s's write, though %s, before it in the same session, had already seen %s's effects (%s)",
						txn(h, st.From), key(st), txn(h, st.To), txn(h, prev.From), txn(h, st.To), Chain(h, c))
				}
			}
		}
		if a.Kind == anomaly.FracturedRead {
			return fmt.Sprintf("%s saw %s's write to %s but not its write to %s: it saw only part of a transaction",
				txn(h, wr.To), txn(h, wr.From), key(wr), key(rw))
		}
	case anomaly.CausalityViolation:
		for _, st := range c {
			if st.Dep.IsAnti() {
				return fmt.Sprintf("%s saw effects that depend on %s but missed %s's own write to %s",
					txn(h, st.From), txn(h, st.To), txn(h, st.To), key(st))
			}
		}
	case anomaly.LongFork:
		for i, st := range c {
			if st.Dep == anomaly.WR {
				o := c[(i+2)%len(c)]
				return fmt.Sprintf("%s and %s saw the writes of %s and %s in opposite orders",
					txn(h, st.To), txn(h, o.To), txn(h, st.From), txn(h, o.From))
			}
		}
	case anomaly.SessionGuaranteeViolation:
		if rw, ok := onlySessionBefore(c); ok {
			return fmt.Sprintf("%s missed the effects of %s, which ran before it in the same session (%s)",
				txn(h, rw.From), txn(h, rw.To), Chain(h, c))
		}
		for _, s := range c {
			if s.Dep == anomaly.SO {
				return fmt.Sprintf("%s missed the effects of %s, which ran before it in the same session (%s)",
					txn(h, s.To), txn(h, s.From), Chain(h, c))
			}
		}
	case anomaly.RealTimeViolation:
		for _, s := range c {
			if s.Dep == anomaly.RT {
				return fmt.Sprintf("%s finished before %s began, yet the dependencies order %s first (%s)",
					txn(h, s.From), txn(h, s.To), txn(h, s.To), Chain(h, c))
			}
		}
	}
	for _, st := range c {
		if st.Dep == anomaly.PRW || st.Dep == anomaly.PWR {
			var steps []string
			for _, st := range c {
				steps = append(steps, stepWords(h, st))
			}
			return fmt.Sprintf("a phantom: %s; no order of %s explains what their scans saw (%s)", strings.Join(steps, "; "), names(h, c), describe(a.Phenomenon))
		}
	}
	return fmt.Sprintf("%s form a cycle of dependencies (%s): no order of them explains what they read and wrote", names(h, a.Cycle), describe(a.Phenomenon))
}

// onlySessionBefore returns the anti-dependency of a cycle whose other
// steps are all session order: its source read a version its own
// session's earlier transaction had overwritten.
func onlySessionBefore(c []anomaly.Step) (anomaly.Step, bool) {
	var rw anomaly.Step
	n := 0
	for _, st := range c {
		switch {
		case st.Dep.IsAnti():
			rw = st
			n++
		case st.Dep != anomaly.SO:
			return rw, false
		}
	}
	return rw, n == 1
}

// stepWords says what one dependency of a cycle means, in words.
func stepWords(h *history.History, s anomaly.Step) string {
	a, b, k := txn(h, s.From), txn(h, s.To), keyName(h, s.Key)
	switch s.Dep {
	case anomaly.WW:
		return fmt.Sprintf("%s overwrote %s after %s", b, k, a)
	case anomaly.WR:
		return fmt.Sprintf("%s read %s from %s", b, k, a)
	case anomaly.RW:
		return fmt.Sprintf("%s read %s before %s overwrote it", a, k, b)
	case anomaly.PWR:
		return fmt.Sprintf("a scan of %s saw %s as %s left it", b, k, a)
	case anomaly.PRW:
		return fmt.Sprintf("a scan of %s saw %s before %s changed it", a, k, b)
	case anomaly.SO:
		return fmt.Sprintf("%s ran before %s in one session", a, b)
	case anomaly.RT:
		return fmt.Sprintf("%s ended before %s began", a, b)
	}
	return fmt.Sprintf("%s --%s--> %s", a, s.Dep, b)
}

// names lists a cycle's transactions: "T1, T2 and T3".
func names(h *history.History, c []anomaly.Step) string {
	var out []string
	for _, s := range c {
		out = append(out, txn(h, s.From))
	}
	if len(out) == 1 {
		return out[0]
	}
	return strings.Join(out[:len(out)-1], ", ") + " and " + out[len(out)-1]
}

func describe(p anomaly.Phenomenon) string {
	switch p {
	case anomaly.G0:
		return "G0, a write cycle"
	case anomaly.G1c:
		return "G1c, circular information flow"
	case anomaly.GSingle:
		return "G-single, one anti-dependency"
	case anomaly.G2Item:
		return "G2-item, anti-dependencies"
	case anomaly.G2:
		return "G2, anti-dependencies with predicates"
	}
	return p.String()
}

// Chain renders a cycle as "T2 --rw(x)--> T3 --rw(x)--> T2".
func Chain(h *history.History, c []anomaly.Step) string {
	if len(c) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(txn(h, c[0].From))
	for _, s := range c {
		b.WriteString(" --")
		b.WriteString(s.Dep.String())
		if s.Key != history.NoKey {
			b.WriteString("(" + h.KeyName(s.Key) + ")")
		}
		b.WriteString("--> ")
		b.WriteString(txn(h, s.To))
	}
	return b.String()
}

// opAt returns the operation r names, if h holds it: a finding of the
// online checker may name an operation of a transaction whose operations
// it no longer has.
func opAt(h *history.History, r history.OpRef) (history.Op, bool) {
	if r.Txn < 0 || int(r.Txn) >= len(h.Txns) || r.Op < 0 || int(r.Op) >= len(h.Txns[r.Txn].Ops) {
		return history.Op{}, false
	}
	return h.Txns[r.Txn].Ops[r.Op], true
}

// explainNoOrder explains a register's failed search for an order (check
// package linear): no order of its operations that respects real time
// (a real-time-violation) or each session's order (a cycle) explains what
// they read. Txns are the operation that cannot be placed, then the
// longest prefix that can, in its order; Value what the prefix leaves;
// Ops[0] the blocked operation's read (or write).
func explainNoOrder(h *history.History, a *anomaly.Anomaly) string {
	k := keyName(h, a.Key)
	order, next := "real time", "the first of them to end"
	if a.Kind == anomaly.Cycle {
		order, next = "each session's order", "the first of those next in their sessions"
	}
	if len(a.Txns) == 0 {
		return fmt.Sprintf("no order of the operations on %s respects %s and explains what they read", k, order)
	}
	what := "?"
	if len(a.Ops) > 0 {
		if op, ok := opAt(h, a.Ops[0]); ok {
			switch {
			case op.Kind == history.Write:
				what = fmt.Sprintf("wrote %s=%s", k, op.Value)
			case len(h.Txns[a.Ops[0].Txn].Ops) > 1:
				what = fmt.Sprintf("expected %s=%s (a compare-and-set)", k, op.Value)
			default:
				what = fmt.Sprintf("read %s=%s", k, op.Value)
			}
		}
	}
	blocked := fmt.Sprintf("%s, %s, %s", txn(h, a.Txns[0]), next, what)
	prefix := a.Txns[1:]
	if len(prefix) == 0 {
		return fmt.Sprintf("no order of the operations on %s respects %s and explains what they read: with %s=%s none of them can come first (%s)",
			k, order, k, a.Value, blocked)
	}
	var names []string
	for i, t := range prefix {
		if len(prefix) > 8 && i == 3 {
			names = append(names, "…")
		}
		if len(prefix) <= 8 || i < 3 || i >= len(prefix)-4 {
			names = append(names, txn(h, t))
		}
	}
	return fmt.Sprintf("no order of the operations on %s respects %s and explains what they read: the longest prefix of one that does, %s (%d %s), leaves %s=%s, and none of the operations left can come next (%s)",
		k, order, strings.Join(names, ", "), len(prefix), plural(len(prefix), "operation", "operations"), k, a.Value, blocked)
}
