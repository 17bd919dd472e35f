package online

import (
	"fmt"
	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"hash/maphash"

	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// op is one operation of a held transaction, its key by name. stale marks
// a list read older than its key's settled prefix: the window leaves it
// out (its edges all lead to forgotten transactions), and it is judged on
// its own (stale.go).
type op struct {
	kind  history.OpKind
	stale bool
	key   history.Value
	val   history.Value
	// list is a list read's result past its key's settled prefix.
	list []history.Value
	// full is the list read's length before the settled prefix was cut.
	full int
}

// rec is a held transaction.
type rec struct {
	id     history.Value
	sess   *session
	status history.Status
	line   int
	ops    []op
	// seq numbers the transactions in arrival order, from 1.
	seq uint64
	// fenceVis is the longest fence-key list read by a fence of the
	// transaction's session up to it (itself included): every fence at a
	// position below it precedes the transaction in every serial order
	// the history allows; -1 before the session's first fence.
	fenceVis int
	fence    bool
	// nextFence is the session's first fence after the transaction (nil
	// until it arrives).
	nextFence *rec
	gone      bool
	// after are the arrival numbers of forgotten transactions whose
	// unseen appends became ghosts of a key this one appended to unseen,
	// and which precede it in every order the history allows (see
	// forget).
	after []uint64
}

// session is what the checker knows of one session.
type session struct {
	label history.Value
	// idx is the session's place in state.order: sessions are numbered
	// as they first arrive.
	idx int
	// fenceVis is the session's rec.fenceVis so far.
	fenceVis int
	// waiting are the session's held transactions still without a next
	// fence.
	waiting []*rec
}

// elem is one element of a key's settled prefix: its value, its
// appender's arrival number and id, and the position in the fence list of
// the appender's session's next fence (-1 at read committed, where no
// fence is needed).
type elem struct {
	val    history.Value
	app    uint64
	appID  history.Value
	bfence int
	// last says the element is its appender's last append to the key.
	last bool
	// sessions is how many sessions had arrived when the element was
	// settled: a session numbered from there on arrived after it, and
	// no fence of its was asked to read past it.
	sessions int
}

// keyState is a list key's settled prefix: the elements every held and
// future read must begin with, whose appenders are all forgotten.
type keyState struct {
	settled []elem
	index   map[history.Value]int
	// reader is the id of a forgotten transaction whose read showed the
	// whole settled prefix.
	reader history.Value
	// ghosts are the elements of forgotten appenders that no read had
	// shown when they were forgotten (at SER and SI only, past fences
	// every session read): every later read by a transaction those fences
	// precede must show them all next after the settled prefix, in an
	// order that agrees with reach.
	ghosts []elem
	// reach holds the pairs (i, j) of ghosts whose appenders were joined
	// by a path from i's to j's when they were forgotten: j before i in
	// the list would close a cycle.
	reach map[[2]int]bool
	// touched is the arrival number of the last transaction that touched
	// the key.
	touched uint64
	// aborted maps the elements of forgotten aborted transactions to
	// their ids: a later read that shows one is an aborted read (G1a).
	aborted map[history.Value]history.Value
}

// state is everything the checker holds.
type state struct {
	cfg   Config
	ser   bool // SER or SI: anti-dependencies and session order count
	fkey  *history.Value
	held  []*rec
	sess  map[history.Value]*session
	order []*session
	keys  map[history.Value]*keyState

	// registers says some transaction read or wrote a register: the
	// checker then keeps every transaction (see the package doc).
	registers bool

	findings []Finding
	reported map[history.Value]bool
	stale    []*staleRead
	// unjudged are the transactions of unknown outcome with a list read
	// (aborted or unknown) that ended inside or departed from a settled
	// prefix: whether they count depends on what was forgotten.
	unjudged []*rec
	// unresolved counts stale reads whose reader was forgotten while no
	// path from the forgotten appender to it was certain; lateGone those
	// of them by a session that first arrived after the element it
	// missed was settled.
	unresolved, lateGone int
	// misplaced counts committed reads that showed a ghost element after
	// elements appended since it was forgotten.
	misplaced int
	// bound is the bound the estimate is kept under: Config.MemoryBytes,
	// or lower once SetBound lowered it (0: none).
	bound int64
	// recsB is the estimate of the held transactions' bytes.
	recsB int64
	// keyElems counts the settled and ghost elements of all keys.
	keyElems int
	// goneInts is the exact set of the integer keys whose settled state
	// was dropped under the memory bound, goneIntsB its size in bytes
	// after the last drop, and gone a Bloom filter of the other keys
	// dropped (each nil before the first); droppedKeys counts them,
	// droppedTouch the transactions that touched one after.
	goneInts     *roaring64.Bitmap
	goneIntsB    int64
	gone         []uint64
	goneSeed     maphash.Seed
	droppedKeys  uint64
	droppedTouch int

	arrived, forgot, rounds uint64
	nextRound               int
	// roundMin is the fewest held transactions a round runs at
	// (minRound; tests lower it).
	roundMin int
	headerOK bool
	unique   bool
	// dropHook, for tests only, forgets one more transaction than the
	// rule allows each round (a planted garbage-collection bug).
	dropHook bool
}

func (s *state) init(cfg Config) {
	s.cfg = cfg
	s.bound = cfg.MemoryBytes
	s.ser = cfg.Level.ID != level.ReadCommitted
	s.fkey = cfg.FenceKey
	s.sess = map[history.Value]*session{}
	s.keys = map[history.Value]*keyState{}
	s.reported = map[history.Value]bool{}
	s.roundMin = minRound
	s.nextRound = minRound
}

// minRound is the fewest held transactions a garbage-collection round
// runs at; a round runs when the held transactions reach four times the
// last round's survivors, so each transaction is checked a bounded
// number of times on average (about 4/3).
const minRound = 4096

// where names t for messages: its id and input line.
func where(t *history.Txn) string {
	s := "transaction " + t.ID.String()
	if t.Line > 0 {
		s += fmt.Sprintf(" (line %d)", t.Line)
	}
	return s
}

// validate says what makes t, of src, unfit: no id, a session or key
// outside src's tables, an operation other than a read, write, append or
// list read.
func validate(src *history.History, t *history.Txn) error {
	if t.ID.IsNull() {
		return fmt.Errorf("%s has no id: online checking names transactions by their ids", where(t))
	}
	if t.Session < 0 || int(t.Session) >= len(src.Sessions) {
		return fmt.Errorf("%s: session %d outside the history's session table", where(t), t.Session)
	}
	for j := range t.Ops {
		o := &t.Ops[j]
		switch o.Kind {
		case history.Read, history.Write, history.Append, history.ReadList:
		default:
			return fmt.Errorf("%s: ops[%d] is %s: online checking takes reads, writes, appends and list reads", where(t), j, o.Kind.Noun())
		}
		if o.Key < 0 || int(o.Key) >= len(src.Keys) {
			return fmt.Errorf("%s: ops[%d] key %d outside the history's key table", where(t), j, o.Key)
		}
	}
	return nil
}

// isFence says whether t's operations are exactly a fence's: a read of
// the fence key, then a write of it or an append to it.
func (s *state) isFence(src *history.History, t *history.Txn) bool {
	if s.fkey == nil || len(t.Ops) != 2 {
		return false
	}
	a, b := t.Ops[0], t.Ops[1]
	if src.Keys[a.Key] != *s.fkey || src.Keys[b.Key] != *s.fkey {
		return false
	}
	return a.Kind == history.ReadList && b.Kind == history.Append || a.Kind == history.Read && b.Kind == history.Write
}
