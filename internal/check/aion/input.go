package aion

import (
	"fmt"

	"github.com/isoscope/isoscope/internal/history"
)

// What the checker takes: the input's rules (CheckInput), checked before
// anything of a batch is applied.

// InputError is Add's error for a batch refused as bad input: nothing of
// the batch was checked, and the checker goes on. Any other error from Add
// is the store's failure, which stops the checker.
type InputError struct {
	// Index is the refused transaction's index in the batch.
	Index int
	// Err says what is wrong with it, naming its id and input line.
	Err error
}

// Error says what is wrong with the transaction.
func (e *InputError) Error() string { return e.Err.Error() }

// Unwrap returns e.Err.
func (e *InputError) Unwrap() error { return e.Err }

// validate checks t before anything of its batch is applied: CheckInput,
// and an id not seen in the batch or among the transactions in memory.
func (c *Checker) validate(src *history.History, t *history.Txn) error {
	if err := CheckInput(src, t); err != nil || t.Status != history.Committed {
		return err
	}
	dup := c.byID.get(t.ID) != nil
	switch {
	case c.growing: // no id of the batch repeats another
	case t.ID.Kind == history.String:
		_, seen := c.seenStr[t.ID.S]
		dup = dup || seen
		c.seenStr[t.ID.S] = struct{}{}
	default:
		_, seen := c.seenInt[t.ID.N]
		dup = dup || seen
		c.seenInt[t.ID.N] = struct{}{}
	}
	if dup {
		return fmt.Errorf("%s: duplicate id %s", where(t), t.ID)
	}
	for j, o := range t.Ops {
		var kind uint8
		switch o.Kind {
		case history.Write, history.Delete:
			kind = kvKey
		case history.Append, history.ReadList:
			kind = listKey
		default:
			continue
		}
		id := c.srcKey(src, o.Key)
		was := c.kinds[id] | c.batchKinds[id]
		if was|kind == kvKey|listKey {
			return fmt.Errorf("%s: ops[%d] %s key %s, which other operations use as a %s: online checking takes each key as a value or as a list, not both",
				where(t), j, map[uint8]string{kvKey: "writes", listKey: "appends to or reads the list at"}[kind], c.keys[id], map[uint8]string{kvKey: "list", listKey: "value"}[kind])
		}
		if c.batchKinds[id]|kind != c.batchKinds[id] {
			c.batchKinds[id] |= kind
			c.batchKeys = append(c.batchKeys, id)
		}
	}
	return nil
}

// growing says whether the ids of txns' committed transactions are
// integers in increasing order.
func growing(txns []history.Txn) bool {
	var last int64
	first := true
	for i := range txns {
		t := &txns[i]
		if t.Status != history.Committed {
			continue
		}
		if t.ID.Kind != history.Int || !first && t.ID.N <= last {
			return false
		}
		last, first = t.ID.N, false
	}
	return true
}

// where names t for messages: its id and input line.
func where(t *history.Txn) string {
	s := "transaction " + t.ID.String()
	if t.Line > 0 {
		s += fmt.Sprintf(" (line %d)", t.Line)
	}
	return s
}

// CheckInput reports what makes t, of history src, unfit for online
// checking on its own: a committed transaction without both timestamps or
// an id, an integer id beyond ±2^60, an operation other than a read, write,
// delete, append or list read, a session or key outside src's tables. Aborted and unknown
// transactions pass (they are set aside). The error names t and its line.
func CheckInput(src *history.History, t *history.Txn) error {
	if t.Status != history.Committed {
		return nil
	}
	switch {
	case !t.HasStartTS:
		return fmt.Errorf("%s has no start_ts: online checking needs the database's start and commit timestamps on every committed transaction", where(t))
	case !t.HasCommitTS:
		return fmt.Errorf("%s has no commit_ts: online checking needs the database's start and commit timestamps on every committed transaction", where(t))
	case t.ID.IsNull():
		return fmt.Errorf("%s has no id", where(t))
	case t.ID.Kind == history.Int && (t.ID.N < -idLimit || t.ID.N >= idLimit):
		return fmt.Errorf("%s: online checking takes integer ids from -2^60 to 2^60-1", where(t))
	}
	if t.Session < 0 || int(t.Session) >= len(src.Sessions) {
		return fmt.Errorf("%s: session %d outside the history's session table", where(t), t.Session)
	}
	for j, op := range t.Ops {
		switch op.Kind {
		case history.Read, history.Write, history.Delete, history.Append, history.ReadList:
		default:
			return fmt.Errorf("%s: ops[%d] is %s operation; online checking takes reads, writes, deletes, appends and list reads", where(t), j, op.Kind.Noun())
		}
		if op.Key < 0 || int(op.Key) >= len(src.Keys) {
			return fmt.Errorf("%s: ops[%d] uses a key outside the history's key table", where(t), j)
		}
	}
	return nil
}
