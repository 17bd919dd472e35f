package history

import "slices"

// Lists shares the storage of the lists a history's reads return. In a
// list-append history each read of a key returns a prefix of the key's
// one order of appends (when the database keeps it), so a read's list
// can be a slice of that order instead of a copy: a 30,000-transaction
// history whose reads return 93 million elements in all holds the few
// hundred thousand its keys' orders have. A read that is not a prefix of
// what its key's other reads returned (an anomaly, or a key whose order is
// not known yet) keeps a copy of its own.
//
// The lists Share returns are capped at their length, so that an append
// to one copies it; none may be changed in place. The zero Lists is ready
// to use; it is not safe for concurrent use.
type Lists struct {
	longest map[Value][]Value
	// old holds the arrays each key's longest list outgrew (by the address
	// of their first element), for Rebase.
	old map[*Value]Value
}

// Share returns a list equal to list, the result of a read of key,
// sharing its storage with the other reads of key where it is a prefix
// of the longest list shared so far. The read's list extends that longest
// list when it continues it, but for its last own elements: a transaction
// that did not commit and read its own appends at the end of the list
// (own of them) must not make them the key's, or every later read would
// part from it. list itself is not kept: a reader may parse every list
// into the same scratch slice.
func (l *Lists) Share(key Value, list []Value, own int) []Value {
	if len(list) == 0 {
		return nil
	}
	if l.longest == nil {
		l.longest = map[Value][]Value{}
	}
	have := l.longest[key]
	if ext := list[:len(list)-min(max(own, 0), len(list))]; len(ext) > len(have) && slices.Equal(ext[:len(have)], have) {
		if len(have) > 0 && cap(have) < len(ext) {
			// The append below moves the list to a larger array; the
			// lists shared so far stay in this one until Rebase.
			if l.old == nil {
				l.old = map[*Value]Value{}
			}
			l.old[&have[0]] = key
		}
		have = append(have, ext[len(have):]...)
		l.longest[key] = have
	}
	if len(list) <= len(have) && slices.Equal(list, have[:len(list)]) {
		return have[:len(list):len(list)]
	}
	c := slices.Clone(list)
	return c[:len(c):len(c)]
}

// Rebase returns list, a list Share returned for a read of key, in the
// array of key's longest list when it was shared in an array that list
// has since outgrown: the same elements, in the one array, so that the
// arrays outgrown can be freed once every list Share returned from them
// is rebased. Any other list is returned as it is. Rebased lists share
// their storage with the key's other reads as Share's do: each is a
// prefix of the key's longest list. Forget ends a round of rebasing.
func (l *Lists) Rebase(key Value, list []Value) []Value {
	if len(list) == 0 || l.old == nil {
		return list
	}
	if k, ok := l.old[&list[0]]; ok && k == key {
		if have := l.longest[key]; len(list) <= len(have) {
			return have[:len(list):len(list)]
		}
	}
	return list
}

// Forget forgets the arrays the keys' longest lists outgrew, once every
// list shared from them is rebased (or will not be).
func (l *Lists) Forget() { l.old = nil }

// ListArray names the array a list read's elements are stored in (the
// address of its first element), with the key read: the reads that share
// one (Lists) are prefixes of one another.
type ListArray struct {
	Key   KeyID
	First *Value
}

// ArrayOf returns the array of list, a non-empty read of key.
func ArrayOf(key KeyID, list []Value) ListArray { return ListArray{key, &list[0]} }

// Looked remembers how far a check has looked into each array of list
// elements, for a check whose findings depend on the elements alone: it
// looks at an array's elements once, however many reads share it.
type Looked map[ListArray]int

// From returns where a look at list, a read of key, starts — past what
// earlier looks at its array saw, so len(list) when they saw all of it —
// and records the array as looked at through list's end.
func (l Looked) From(key KeyID, list []Value) int {
	if len(list) == 0 {
		return 0
	}
	a := ArrayOf(key, list)
	from := l[a]
	l[a] = max(from, len(list))
	return min(from, len(list))
}

// OwnTail counts the elements at the end of list, a read of key, that ops
// (the reading transaction's operations before the read) appended to key:
// the own argument of Share for a transaction that did not commit. Past
// 256 operations it does not look (0): the count only spares memory.
func OwnTail(ops []Op, key KeyID, list []Value) int {
	if len(ops) > 256 {
		return 0
	}
	n := 0
	for n < len(list) && slices.ContainsFunc(ops, func(o Op) bool {
		return o.Kind == Append && o.Key == key && o.Value == list[len(list)-1-n]
	}) {
		n++
	}
	return n
}

// Repeats finds the first element of a list read that repeats an earlier
// one of the same list. For lists whose storage other reads share (Lists)
// it remembers, from an array's second read on, how far it has looked
// into the array and what it saw, and each read looks only past that: the
// reads of a key cost what its longest list costs. Lists of an array read
// once cost what they always did, and nothing is kept of them but the
// array's address. The zero Repeats is ready to use; it keeps every array
// it met alive, so it is for one check of a whole history.
type Repeats struct {
	once   map[*Value]struct{}
	arrays map[*Value]*repeatState
}

// repeatState is what Repeats knows of an array's first checked elements:
// those it saw (seen, kept once they are more than smallList; until then
// the array's own first elements are scanned), and the index of the first
// that repeats one (-1: none).
type repeatState struct {
	seen    map[Value]struct{}
	checked int
	at      int
}

// smallList is the length up to which a list is searched for a repeat by
// comparing each element with those before it, without a set: for short
// lists that costs less time than a set and no memory.
const smallList = 128

// First returns the first element of list that repeats an earlier one.
func (r *Repeats) First(list []Value) (Value, bool) {
	if len(list) < 2 {
		return Value{}, false
	}
	p := &list[0]
	st := r.arrays[p]
	if st == nil {
		if _, again := r.once[p]; !again {
			if r.once == nil {
				r.once = map[*Value]struct{}{}
			}
			r.once[p] = struct{}{}
			return firstRepeat(list)
		}
		if r.arrays == nil {
			r.arrays = map[*Value]*repeatState{}
		}
		st = &repeatState{at: -1}
		r.arrays[p] = st
	}
	for ; st.checked < len(list); st.checked++ {
		e := list[st.checked]
		if st.seen == nil && st.checked >= smallList {
			st.seen = make(map[Value]struct{}, 2*smallList)
			for _, f := range list[:st.checked] {
				st.seen[f] = struct{}{}
			}
		}
		var dup bool
		if st.seen == nil {
			dup = slices.Contains(list[:st.checked], e)
		} else {
			_, dup = st.seen[e]
			st.seen[e] = struct{}{}
		}
		if dup && st.at < 0 {
			st.at = st.checked
		}
	}
	if st.at >= 0 && st.at < len(list) {
		return list[st.at], true
	}
	return Value{}, false
}

// firstRepeat is Repeats.First without memory.
func firstRepeat(list []Value) (Value, bool) {
	if len(list) <= smallList {
		for i := 1; i < len(list); i++ {
			if slices.Contains(list[:i], list[i]) {
				return list[i], true
			}
		}
		return Value{}, false
	}
	seen := make(map[Value]struct{}, len(list))
	for _, e := range list {
		if _, dup := seen[e]; dup {
			return e, true
		}
		seen[e] = struct{}{}
	}
	return Value{}, false
}
