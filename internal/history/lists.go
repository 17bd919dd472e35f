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
		have = append(have, ext[len(have):]...)
		l.longest[key] = have
	}
	if len(list) <= len(have) && slices.Equal(list, have[:len(list)]) {
		return have[:len(list):len(list)]
	}
	c := slices.Clone(list)
	return c[:len(c):len(c)]
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
