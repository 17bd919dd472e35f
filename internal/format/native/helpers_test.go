package native

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/isoscope/isoscope/internal/history"
)

// lines joins JSON lines into an input.
func lines(ls ...string) string { return strings.Join(ls, "\n") + "\n" }

// headerString renders what Notation leaves out of a header.
func headerString(h *history.History) string {
	hd := &h.Header
	var parts []string
	if hd.Present {
		parts = append(parts, fmt.Sprintf("v%d", hd.Version))
	}
	if hd.Deletes == history.TombstoneDeletes {
		parts = append(parts, "tombstone")
	}
	if hd.Source != "" {
		parts = append(parts, "source="+hd.Source)
	}
	var vo []string
	for k, ts := range hd.VersionOrder {
		names := make([]string, len(ts))
		for i, t := range ts {
			names[i] = h.TxnName(t)
		}
		vo = append(vo, h.KeyName(k)+":"+strings.Join(names, ","))
	}
	slices.Sort(vo)
	if len(vo) > 0 {
		parts = append(parts, "vo="+strings.Join(vo, ";"))
	}
	return strings.Join(parts, " ")
}

// diff compares two histories structurally (keys, sessions and
// transactions by their values, not their indexes) and says how they
// differ; "" when they are equal.
func diff(a, b *history.History) string {
	ha, hb := &a.Header, &b.Header
	if ha.Present != hb.Present || ha.Version != hb.Version || ha.UniqueValues != hb.UniqueValues ||
		ha.Deletes != hb.Deletes || ha.Source != hb.Source || ha.FenceKey != hb.FenceKey {
		return fmt.Sprintf("headers differ: %+v vs %+v", *ha, *hb)
	}
	if s, t := initialString(a), initialString(b); s != t {
		return fmt.Sprintf("initial values differ: %s vs %s", s, t)
	}
	if s, t := headerString(a), headerString(b); s != t {
		return fmt.Sprintf("headers differ: %s vs %s", s, t)
	}
	if len(a.Txns) != len(b.Txns) {
		return fmt.Sprintf("%d vs %d transactions", len(a.Txns), len(b.Txns))
	}
	for i := range a.Txns {
		ta, tb := &a.Txns[i], &b.Txns[i]
		if ta.ID != tb.ID || a.Sessions[ta.Session] != b.Sessions[tb.Session] || ta.Status != tb.Status ||
			ta.HasTime != tb.HasTime || ta.Begin != tb.Begin || ta.End != tb.End ||
			ta.HasStartTS != tb.HasStartTS || ta.StartTS != tb.StartTS ||
			ta.HasCommitTS != tb.HasCommitTS || ta.CommitTS != tb.CommitTS || len(ta.Ops) != len(tb.Ops) {
			return fmt.Sprintf("transaction %d differs: %+v vs %+v", i, *ta, *tb)
		}
		for j := range ta.Ops {
			if s, t := opString(a, ta.Ops[j]), opString(b, tb.Ops[j]); s != t {
				return fmt.Sprintf("transaction %d, op %d: %s vs %s", i, j, s, t)
			}
		}
	}
	return ""
}

func initialString(h *history.History) string {
	var out []string
	for k, v := range h.Header.Initial.Values {
		out = append(out, fmt.Sprintf("%#v=%#v", h.Keys[k], v))
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

// opString renders every detail of an operation, keys by value.
func opString(h *history.History, op history.Op) string {
	key := func(k history.KeyID) string {
		if k == history.NoKey {
			return "-"
		}
		return fmt.Sprintf("%#v", h.Keys[k])
	}
	s := fmt.Sprintf("%v lock=%v key=%s value=%#v list=%#v", op.Kind, op.Lock, key(op.Key), op.Value, op.List)
	if r := op.Range; r != nil {
		s += fmt.Sprintf(" lo=%#v hi=%#v open=%v", r.Lo, r.Hi, r.HiOpen)
		for _, p := range r.Pairs {
			s += fmt.Sprintf(" %s=%#v", key(p.Key), p.Value)
		}
	}
	return s
}

// roundTrip writes h and reads it back.
func roundTrip(h *history.History) (*history.History, []byte, error) {
	var buf bytes.Buffer
	if err := Write(&buf, h); err != nil {
		return nil, nil, err
	}
	again, err := Read(bytes.NewReader(buf.Bytes()), "again")
	return again, buf.Bytes(), err
}
