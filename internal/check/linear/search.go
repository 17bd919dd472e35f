package linear

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/isoscope/isoscope/internal/check/checker"
)

// limits bound one register's search: the bytes its memo and stacks may
// keep, and the configurations it may visit (0: no bound).
type limits struct {
	memory, work int64
}

// search is the Wing–Gong–Lowe search of one register: a depth-first
// search over configurations — which operations are placed, the
// register's value, and whether the last one placed was optional — in
// which an operation may be placed once every required operation that
// ended before it began is placed (at strict serializability), or once its
// session's earlier operations are (at serializability).
type search struct {
	k   *keyPlan
	ops []op
	rt  bool
	lim limits

	placed      []bool
	state       int32
	mustRead    bool // the last operation placed was optional: the next must read its value
	done, total int  // required operations placed, and in all

	// At strict serializability: req are the required operations in
	// begin order (indices into ops), reqAt an operation's position in req
	// (-1 for optional ones), reqBegin their begin instants; byEnd are the
	// required operations by end. lowReq is the first position of req not
	// placed, endAt the first of byEnd; reqBits marks the positions of
	// req placed.
	req      []int32
	reqAt    []int32
	reqBegin []int64
	byEnd    []int32
	lowReq   int32
	endAt    int32
	reqBits  []uint64
	// Optional operations fall in classes of the same precondition and
	// effect. Two of a class that have both begun are interchangeable, so
	// only the first not placed is ever placed: members are a class's
	// operations in begin order, used how many of them are placed (a
	// prefix).
	classOf []int32
	members [][]int32
	used    []int32
	// reqClass is, at strict serializability, a required operation's
	// class (its precondition and effect); rseen and rchoice mark, per
	// class, that the node being expanded offers one of it, and where
	// among the choices.
	reqClass       []int32
	rseen, rchoice []int32
	// At serializability: head is, per session, the position of its first
	// operation not placed.
	head []int32

	// remW counts, per value, the operations not placed that write it;
	// needR the required ones not placed that read it. A value some of
	// them still read that none can write and the register no longer
	// holds dooms the configuration.
	remW, needR []int32

	memo    memo
	key     []uint64
	frames  []frame
	choices []int32
	// wanted marks, per value, that a candidate of the node being
	// expanded reads it (wanted[v] == gen); seen marks the classes of
	// optional candidates already offered.
	wanted, seen []int32
	gen          int32
	opts         []int32 // the optional candidates of the node being expanded
	nodes        int64

	// The deepest configuration reached (most required operations placed,
	// not right after an optional one): its path, the number placed and
	// the register's value. common is how much of the current path is
	// known to equal best.
	best      []int32
	bestDone  int
	bestState int32
	common    int
}

// frame is one node of the search: the operation placed to reach it (-1
// at the root), what placing it changed, and its choices
// (choices[lo:hi], next the next to try).
type frame struct {
	op            int32
	state         int32
	mustRead      bool
	lowReq, endAt int32
	lo, hi, next  int32
}

func newSearch(p *plan, k *keyPlan, lim limits) *search {
	s := &search{k: k, ops: k.ops, rt: p.realTime, lim: lim, state: k.init, bestDone: -1}
	n := len(k.ops)
	s.placed = make([]bool, n)
	s.remW = make([]int32, len(k.values))
	s.needR = make([]int32, len(k.values))
	s.wanted = make([]int32, len(k.values))
	s.classOf = make([]int32, n)
	type class struct{ pre, post int32 }
	classes := map[class]int32{}
	for i, o := range k.ops {
		if o.post != none {
			s.remW[o.post]++
		}
		s.classOf[i] = -1
		if !o.optional {
			s.total++
			if o.pre != none {
				s.needR[o.pre]++
			}
			continue
		}
		c := class{o.pre, o.post}
		id, ok := classes[c]
		if !ok {
			id = int32(len(s.members))
			classes[c] = id
			s.members = append(s.members, nil)
		}
		s.classOf[i] = id
		s.members[id] = append(s.members[id], int32(i))
	}
	s.used = make([]int32, len(s.members))
	s.seen = make([]int32, len(s.members))
	if s.rt {
		s.reqAt = make([]int32, n)
		for i, o := range k.ops {
			s.reqAt[i] = -1
			if !o.optional {
				s.reqAt[i] = int32(len(s.req))
				s.req = append(s.req, int32(i))
				s.reqBegin = append(s.reqBegin, o.begin)
			}
		}
		s.reqClass = make([]int32, n)
		rclasses := map[class]int32{}
		for i, o := range k.ops {
			if o.optional {
				continue
			}
			c := class{o.pre, o.post}
			id, ok := rclasses[c]
			if !ok {
				id = int32(len(rclasses))
				rclasses[c] = id
			}
			s.reqClass[i] = id
		}
		s.rseen, s.rchoice = make([]int32, len(rclasses)), make([]int32, len(rclasses))
		s.byEnd = slices.Clone(s.req)
		slices.SortStableFunc(s.byEnd, func(a, b int32) int {
			ea, eb := k.ops[a].end, k.ops[b].end
			switch {
			case ea < eb:
				return -1
			case ea > eb:
				return 1
			}
			return 0
		})
		s.reqBits = make([]uint64, (len(s.req)+63)/64)
		s.memo.width = (len(s.members) + 1) / 2
	} else {
		s.head = make([]int32, len(k.sessions))
	}
	return s
}

// run searches for a linearization. It returns false when there is none
// (s.best then holds the deepest prefix found), an error wrapping
// checker.ErrUndecided when a bound stops it, and ctx's error when ctx
// ends.
func (s *search) run(ctx context.Context) (bool, error) {
	if s.total == 0 {
		return true, nil
	}
	for v := range s.needR {
		if s.needR[v] > 0 && s.remW[v] == 0 && int32(v) != s.state {
			s.record()
			return false, nil // a value read that nothing writes: found before the search
		}
	}
	s.memo.add(s.configKey())
	s.push(-1, frame{})
	for len(s.frames) > 0 {
		f := &s.frames[len(s.frames)-1]
		if f.next == f.hi {
			s.pop()
			continue
		}
		c := s.choices[f.next]
		f.next++
		s.nodes++
		if s.nodes&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return false, err
			}
			if s.lim.work > 0 && s.nodes > s.lim.work {
				return false, fmt.Errorf("%w: the linearizability search visited more than %d configurations (the work limit)", checker.ErrUndecided, s.lim.work)
			}
			if b := s.bytes(); s.lim.memory > 0 && b > s.lim.memory {
				return false, fmt.Errorf("%w: the linearizability search needs more than %d MB", checker.ErrUndecided, s.lim.memory>>20)
			}
		}
		u := s.place(c)
		if s.doomed(u.state) || !s.memo.add(s.configKey()) {
			s.unplace(c, u)
			continue
		}
		if s.done == s.total {
			return true, nil
		}
		s.push(c, u)
	}
	return false, nil
}

// bytes is what the search keeps.
func (s *search) bytes() int64 {
	return s.memo.bytes() + int64(cap(s.frames))*40 + int64(cap(s.choices))*4 + int64(cap(s.best))*4 + int64(cap(s.key))*8
}

// place places operation c and returns what it changed, for unplace.
func (s *search) place(c int32) frame {
	o := &s.ops[c]
	u := frame{state: s.state, mustRead: s.mustRead, lowReq: s.lowReq, endAt: s.endAt}
	s.placed[c] = true
	if o.post != none {
		s.remW[o.post]--
		s.state = o.post
	}
	s.mustRead = o.optional
	if o.optional {
		if s.rt {
			s.used[s.classOf[c]]++
		}
	} else {
		s.done++
		if o.pre != none {
			s.needR[o.pre]--
		}
		if s.rt {
			at := s.reqAt[c]
			s.reqBits[at>>6] |= 1 << (at & 63)
			for int(s.lowReq) < len(s.req) && s.placed[s.req[s.lowReq]] {
				s.lowReq++
			}
			for int(s.endAt) < len(s.byEnd) && s.placed[s.byEnd[s.endAt]] {
				s.endAt++
			}
		}
	}
	if !s.rt {
		s.head[o.session]++
	}
	return u
}

// unplace undoes place(c), which returned u.
func (s *search) unplace(c int32, u frame) {
	o := &s.ops[c]
	s.placed[c] = false
	if o.post != none {
		s.remW[o.post]++
	}
	s.state, s.mustRead = u.state, u.mustRead
	if o.optional {
		if s.rt {
			s.used[s.classOf[c]]--
		}
	} else {
		s.done--
		if o.pre != none {
			s.needR[o.pre]++
		}
		if s.rt {
			at := s.reqAt[c]
			s.reqBits[at>>6] &^= 1 << (at & 63)
			s.lowReq, s.endAt = u.lowReq, u.endAt
		}
	}
	if !s.rt {
		s.head[o.session]--
	}
}

// doomed reports whether the configuration just reached, whose value
// before the last step was prev, can never be completed: prev is gone,
// some required operation still reads it, and nothing left writes it.
func (s *search) doomed(prev int32) bool {
	return s.state != prev && s.needR[prev] > 0 && s.remW[prev] == 0
}

// minEnd is the earliest end of a required operation not placed: every
// operation that began after it must wait.
func (s *search) minEnd() int64 {
	if int(s.endAt) < len(s.byEnd) {
		return s.ops[s.byEnd[s.endAt]].end
	}
	return math.MaxInt64
}

// configKey encodes the current configuration: its key — the value,
// whether the next operation must read it, and which required operations
// are placed (at strict serializability the first one not placed and which
// of those after it are: only those that began before minEnd can be; at
// serializability each session's position) — and the count vector of the
// optional operations placed, per class (at serializability they are
// counted in their sessions' positions: the vector is empty).
func (s *search) configKey() (key, vec []uint64) {
	key = s.key[:0]
	w := uint64(uint32(s.state)) << 33
	if s.mustRead {
		w |= 1 << 32
	}
	if s.rt {
		key = append(key, w|uint64(uint32(s.lowReq)))
		end := len(s.req)
		if m := s.minEnd(); m != math.MaxInt64 {
			end, _ = slices.BinarySearch(s.reqBegin, m+1)
		}
		if lo := int(s.lowReq) >> 6; int(s.lowReq) < end {
			key = append(key, s.reqBits[lo:(end+63)>>6]...)
		}
		n := len(key)
		key = packCounts(key, s.used)
		key, vec = key[:n], key[n:]
	} else {
		key = append(key, w)
		key = packCounts(key, s.head)
	}
	s.key = key[:cap(key)]
	return key, vec
}

// packCounts appends counts to key, two to a word.
func packCounts(key []uint64, counts []int32) []uint64 {
	for i := 0; i < len(counts); i += 2 {
		w := uint64(uint32(counts[i]))
		if i+1 < len(counts) {
			w |= uint64(uint32(counts[i+1])) << 32
		}
		key = append(key, w)
	}
	return key
}

// push enters the configuration reached by placing c (-1: the root),
// which changed u, and lists its choices.
func (s *search) push(c int32, u frame) {
	u.op = c
	u.lo = int32(len(s.choices))
	s.common = min(s.common, max(len(s.frames)-1, 0)) // the path's new element may differ from best's
	s.frames = append(s.frames, u)
	if !s.mustRead && s.done > s.bestDone {
		s.record()
	}
	s.expand()
	f := &s.frames[len(s.frames)-1]
	f.next, f.hi = f.lo, int32(len(s.choices))
}

// pop leaves the current configuration, undoing the step into it.
func (s *search) pop() {
	f := s.frames[len(s.frames)-1]
	s.frames = s.frames[:len(s.frames)-1]
	s.choices = s.choices[:f.lo]
	if f.op >= 0 {
		s.unplace(f.op, f)
	}
	s.common = min(s.common, max(len(s.frames)-1, 0))
}

// record keeps the current path as the deepest found.
func (s *search) record() {
	n := len(s.frames) - 1 // the root placed nothing
	if n < 0 {
		n = 0
	}
	if len(s.best) < n {
		s.best = append(s.best, make([]int32, n-len(s.best))...)
	}
	for i := min(s.common, n); i < n; i++ {
		s.best[i] = s.frames[i+1].op
	}
	s.best = s.best[:n]
	s.common = n
	s.bestDone, s.bestState = s.done, s.state
}

// allowed reports whether o may be placed next: it reads the current
// value or reads nothing — and, right after an optional operation, it
// reads that one's value.
func (s *search) allowed(o *op) bool {
	if s.mustRead {
		return o.pre == s.state
	}
	return o.pre == none || o.pre == s.state
}

// expand appends the current configuration's choices to s.choices: a
// required operation that reads the current value and leaves it unchanged
// when there is one (its place is forced: placing it now loses nothing);
// else every required candidate that may be placed, in begin order, then
// the first candidate of each class of optional ones that may be placed
// and whose value a candidate reads (an optional operation that nobody
// reads next could as well not have taken effect).
func (s *search) expand() {
	s.gen++
	if s.gen == math.MaxInt32 { // about to wrap: clear the marks
		clear(s.wanted)
		clear(s.seen)
		clear(s.rseen)
		s.gen = 1
	}
	lo := len(s.choices)
	s.opts = s.opts[:0]
	forced := int32(-1)
	if s.rt {
		m := s.minEnd()
		for i := int(s.lowReq); i < len(s.req) && forced < 0; i++ {
			c := s.req[i]
			if s.ops[c].begin > m {
				break
			}
			if !s.placed[c] {
				forced = s.consider(c)
			}
		}
		if forced < 0 {
			for cl, ms := range s.members {
				if u := s.used[cl]; int(u) < len(ms) && s.ops[ms[u]].begin <= m {
					s.consider(ms[u])
				}
			}
		}
	} else {
		for sess, ops := range s.k.sessions {
			if h := s.head[sess]; int(h) < len(ops) {
				if forced = s.consider(ops[h]); forced >= 0 {
					break
				}
			}
		}
	}
	if forced >= 0 {
		s.choices = append(s.choices[:lo], forced)
		return
	}
	if !s.rt {
		// Earliest begun first: a history that is nearly linearizable
		// is serializable in nearly its real-time order.
		byBegin(s.ops, s.choices[lo:])
	}
	for _, c := range s.opts {
		o := &s.ops[c]
		cl := s.classOf[c]
		if s.seen[cl] == s.gen {
			continue // an interchangeable one was offered
		}
		s.seen[cl] = s.gen
		if o.post != s.state && s.wanted[o.post] == s.gen && s.allowed(o) {
			s.choices = append(s.choices, c)
		}
	}
}

// consider takes candidate c into the node being expanded: it marks the
// value c reads as wanted, keeps an optional c aside in s.opts, and
// appends a required c that may be placed to the choices. It returns c
// when c's place is forced (it reads the current value and leaves it),
// else -1.
func (s *search) consider(c int32) int32 {
	o := &s.ops[c]
	if o.pre != none {
		s.wanted[o.pre] = s.gen
	}
	switch {
	case o.optional:
		s.opts = append(s.opts, c)
	case o.pre == s.state && (o.post == none || o.post == s.state):
		return c
	case !s.allowed(o):
	case !s.rt:
		s.choices = append(s.choices, c)
	default:
		// Of required candidates alike (same precondition and effect),
		// only the first to end: placing it before the others loses
		// nothing (an exchange argument: any order that places another
		// of them now stays valid with the two swapped).
		cl := s.reqClass[c]
		if s.rseen[cl] == s.gen {
			if at := s.rchoice[cl]; o.end < s.ops[s.choices[at]].end {
				s.choices[at] = c
			}
			return -1
		}
		s.rseen[cl], s.rchoice[cl] = s.gen, int32(len(s.choices))
		s.choices = append(s.choices, c)
	}
	return -1
}

// byBegin sorts a few choices by their operations' begin instants
// (insertion sort: a node has a handful).
func byBegin(ops []op, cs []int32) {
	for i := 1; i < len(cs); i++ {
		for j := i; j > 0 && ops[cs[j]].begin < ops[cs[j-1]].begin; j-- {
			cs[j], cs[j-1] = cs[j-1], cs[j]
		}
	}
}
