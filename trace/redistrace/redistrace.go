// Package redistrace records the history of a program that uses Redis
// through github.com/redis/go-redis/v9, for isoscope to check. Client
// wraps a *redis.Client and offers the commands whose effect a history can
// state, with go-redis's names, arguments and results; each call is
// recorded in an isoscope.Recorder as it runs:
//
//	c, err := redistrace.New(client, rec) // client: MaxRetries -1
//	err = c.Watch(ctx, func(tx *redistrace.Tx) error {
//		n, err := tx.Get(ctx, "x").Int()
//		…
//		_, err = tx.TxPipelined(ctx, func(p *redistrace.Pipe) error {
//			p.Set(ctx, "x", n+1, 0)
//			p.RPush(ctx, "log", n+1)
//			return nil
//		})
//		return err
//	}, "x")
//
// # What is recorded
//
// A transaction is what Watch runs: WATCH of its keys (Tx.Watch may add
// more), reads (Tx.Get, Tx.LRange), then at most one MULTI/EXEC
// (Tx.TxPipelined) of the commands a Pipe queues: Set, RPush, Get and
// LRange. Its history transaction has the reads in the order their
// answers came, then the queued commands in their order. A single command
// outside Watch (Client.Get, Set, RPush, LRange) is a transaction of one
// operation.
//
//   - GET records a read: of the value, or of null when the key is absent
//     (redis.Nil).
//   - SET records a write. Its value must be a string, a []byte or an
//     integer, and its expiration 0: a key that expires would vanish from
//     the database and not from the history.
//   - RPUSH records the append of each element, in order; elements are
//     values as SET's are.
//   - LRANGE key 0 -1 records a read of the whole list. Other bounds read
//     part of a list, which the history format cannot state: refused.
//
// Keys are strings (isoscope.Bytes: itself when valid UTF-8). A value, as
// Redis stores it, is recorded as an integer when it is an integer's
// canonical decimal form ("42", "-7"; not "007" or "+1"), else as a string
// (isoscope.Bytes): so SET x 5 and a GET that answers "5" record the same
// value.
//
// # What is refused
//
// A call the history could not state is refused: it returns an error
// without sending anything, and nothing is recorded. Refused: SET with an
// expiration or a value of another type, RPUSH of such an element, LRANGE
// with bounds other than 0 -1, a command through a Tx after its EXEC (the
// transaction ended there), a second TxPipelined, and New of a client
// that retries (Options.MaxRetries other than -1: a command retried after
// its answer was lost may have run twice, an RPUSH appended twice, which
// the history could not show). Other commands are not offered: what a
// program sends through the *redis.Client itself (Client.Redis) is not
// recorded.
//
// # Outcomes
//
// A Watch transaction whose EXEC succeeded is committed, with the queued
// commands that succeeded (a command that fails inside EXEC, WRONGTYPE
// say, has no effect and is left out; Redis runs the others). EXEC's nil
// answer (redis.TxFailedErr: a watched key changed) and EXECABORT abort
// it. An EXEC whose answer was lost (a broken connection, a timeout) ends
// it unknown, with its writes and appends. A Watch whose function
// returns without EXEC ends committed when the function returned nil
// (the program accepted its reads; Redis did not check them, so reads of
// keys that changed meanwhile are reads of different moments, as they
// were) and aborted when it returned an error (nothing was written).
//
// A single command that succeeds is committed; one that Redis answered
// with an error is aborted; one whose answer was lost is unknown when it
// writes, and left out when it reads. Reads whose answer was lost are
// never recorded.
//
// # Using it
//
// Keys that hold values before the program starts belong in the
// Recorder's initial state (isoscope.RecorderOptions.Initial); a test is
// simplest on keys of a prefix of its own, absent at first. isoscope's
// checkers decide histories of registers (GET, SET) or of lists (RPUSH,
// LRANGE), not both in one: record the two kinds of keys in two
// Recorders, through two Clients. A call through a Session's Client
// inside a Watch of the same session is a second transaction begun in a
// busy session, which the Recorder reports (isoscope.Recorder.Err).
//
// The wrapper is a type rather than a redis.Hook: a hook sees each
// command, but not which WATCH … EXEC it belongs to when transactions
// run concurrently, and cannot keep a program from sending a command the
// history could not state.
package redistrace

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/isoscope/isoscope"
)

// Client is a *redis.Client whose commands are recorded. It is safe for
// many goroutines, as the client is; a Client returned by Session belongs
// to one goroutine at a time.
type Client struct {
	c   *redis.Client
	rec *isoscope.Recorder
	// session names the session of every call; null: each call is a
	// session of its own, named by a negative integer.
	session  isoscope.Value
	sessions *atomic.Int64
}

// ErrRefused is the error of a call the history could not state; nothing
// was sent. The error returned wraps it with the reason.
var ErrRefused = errors.New("redistrace: refused")

// New returns c recording its commands in rec, each call in a session of
// its own. c must not retry commands (redis.Options.MaxRetries -1): a
// command retried after its answer was lost may have run twice.
func New(c *redis.Client, rec *isoscope.Recorder) (*Client, error) {
	if n := c.Options().MaxRetries; n != 0 { // NewClient made -1 0, and 0 3
		return nil, fmt.Errorf("%w: the client retries commands (up to %d times): a command retried after its answer was lost may run twice, which the history cannot show; set redis.Options.MaxRetries to -1", ErrRefused, n)
	}
	return &Client{c: c, rec: rec, sessions: new(atomic.Int64)}, nil
}

// Session returns the Client whose calls are the session named name (not
// null, and not a negative integer): a goroutine that makes its calls,
// and runs its transactions, one after another.
func (c *Client) Session(name isoscope.Value) *Client {
	return &Client{c: c.c, rec: c.rec, session: name, sessions: c.sessions}
}

// Redis returns the underlying client; what is done through it is not
// recorded.
func (c *Client) Redis() *redis.Client { return c.c }

func (c *Client) begin() *isoscope.Tx {
	s := c.session
	if s.IsNull() {
		s = isoscope.Int(-c.sessions.Add(1))
	}
	return c.rec.Begin(s)
}

// Get runs GET key, as redis.Client.Get does, and records the read.
func (c *Client) Get(ctx context.Context, key string) *redis.StringCmd {
	tx := c.begin()
	cmd := c.c.Get(ctx, key)
	if recordGet(tx, key, cmd) {
		_ = tx.Commit()
	} else {
		_ = tx.Abort() // nothing recorded: left out
	}
	return cmd
}

// LRange runs LRANGE key start stop, as redis.Client.LRange does, and
// records the read of the list; only start 0 and stop -1 (the whole list)
// are offered.
func (c *Client) LRange(ctx context.Context, key string, start, stop int64) *redis.StringSliceCmd {
	if err := wholeList(key, start, stop); err != nil {
		return refusedSlice(ctx, err)
	}
	tx := c.begin()
	cmd := c.c.LRange(ctx, key, start, stop)
	if recordLRange(tx, key, cmd) {
		_ = tx.Commit()
	} else {
		_ = tx.Abort()
	}
	return cmd
}

// Set runs SET key value, as redis.Client.Set does, and records the
// write. value is a string, a []byte or an integer; expiration must be 0.
func (c *Client) Set(ctx context.Context, key string, value any, expiration time.Duration) *redis.StatusCmd {
	v, err := setArgs(key, value, expiration)
	if err != nil {
		cmd := redis.NewStatusCmd(ctx, "set", key)
		cmd.SetErr(err)
		return cmd
	}
	tx := c.begin()
	cmd := c.c.Set(ctx, key, v, 0)
	tx.Write(isoscope.Bytes([]byte(key)), value2(v))
	end(tx, cmd.Err())
	return cmd
}

// RPush runs RPUSH key values…, as redis.Client.RPush does, and records
// the append of each element. Each is a string, a []byte or an integer.
func (c *Client) RPush(ctx context.Context, key string, values ...any) *redis.IntCmd {
	vs, err := pushArgs(key, values)
	if err != nil {
		cmd := redis.NewIntCmd(ctx, "rpush", key)
		cmd.SetErr(err)
		return cmd
	}
	tx := c.begin()
	cmd := c.c.RPush(ctx, key, vs...)
	for _, v := range vs {
		tx.Append(isoscope.Bytes([]byte(key)), value2(v.(string)))
	}
	end(tx, cmd.Err())
	return cmd
}

// end ends tx, a write that answered err: committed, aborted on Redis's
// error answer, unknown when the answer was lost.
func end(tx *isoscope.Tx, err error) {
	switch {
	case err == nil:
		_ = tx.Commit()
	case answered(err):
		_ = tx.Abort()
	default:
		_ = tx.Unknown()
	}
}

// answered reports whether err is Redis's answer (an error reply), after
// which the command took no effect; not a lost connection, a timeout or
// a cancelled context.
func answered(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var re redis.Error
	return errors.As(err, &re) && !errors.Is(err, redis.ErrClosed)
}

// Watch runs fn in a transaction, as redis.Client.Watch does: keys are
// WATCHed first, fn reads through tx and ends with at most one
// tx.TxPipelined (MULTI/EXEC). The transaction is recorded with its
// outcome (see the package comment); the error is Watch's or fn's, so
// redis.TxFailedErr says a watched key changed and the program may try
// again (a new transaction).
func (c *Client) Watch(ctx context.Context, fn func(*Tx) error, keys ...string) error {
	rtx := c.begin()
	t := &Tx{rec: rtx}
	err := c.c.Watch(ctx, func(x *redis.Tx) error {
		t.tx = x
		return fn(t)
	}, keys...)
	t.done = true
	switch {
	case t.outcome != nil:
		t.outcome()
	case err == nil:
		_ = rtx.Commit()
	default:
		_ = rtx.Abort()
	}
	return err
}

// Tx is a transaction in progress in Watch. Like go-redis's, it belongs
// to one goroutine.
type Tx struct {
	tx      *redis.Tx
	rec     *isoscope.Tx
	execd   bool   // TxPipelined sent MULTI/EXEC
	outcome func() // how the transaction ends, once EXEC answered
	done    bool
}

// ended returns the refusal of a command after EXEC or after Watch
// returned, or nil.
func (t *Tx) ended() error {
	if t.execd || t.done {
		return fmt.Errorf("%w: the transaction ended at its EXEC (or when Watch returned)", ErrRefused)
	}
	return nil
}

// Watch WATCHes more keys, as redis.Tx.Watch does.
func (t *Tx) Watch(ctx context.Context, keys ...string) *redis.StatusCmd {
	if err := t.ended(); err != nil {
		cmd := redis.NewStatusCmd(ctx, "watch")
		cmd.SetErr(err)
		return cmd
	}
	return t.tx.Watch(ctx, keys...)
}

// Unwatch forgets the watched keys, as redis.Tx.Unwatch does: the reads
// before EXEC are then not checked by it.
func (t *Tx) Unwatch(ctx context.Context, keys ...string) *redis.StatusCmd {
	if err := t.ended(); err != nil {
		cmd := redis.NewStatusCmd(ctx, "unwatch")
		cmd.SetErr(err)
		return cmd
	}
	return t.tx.Unwatch(ctx, keys...)
}

// Get runs GET key on the transaction's connection and records the read.
func (t *Tx) Get(ctx context.Context, key string) *redis.StringCmd {
	if err := t.ended(); err != nil {
		cmd := redis.NewStringCmd(ctx, "get", key)
		cmd.SetErr(err)
		return cmd
	}
	cmd := t.tx.Get(ctx, key)
	recordGet(t.rec, key, cmd)
	return cmd
}

// LRange runs LRANGE key 0 -1 on the transaction's connection and records
// the read of the list; other bounds are refused.
func (t *Tx) LRange(ctx context.Context, key string, start, stop int64) *redis.StringSliceCmd {
	if err := t.ended(); err != nil {
		return refusedSlice(ctx, err)
	}
	if err := wholeList(key, start, stop); err != nil {
		return refusedSlice(ctx, err)
	}
	cmd := t.tx.LRange(ctx, key, start, stop)
	recordLRange(t.rec, key, cmd)
	return cmd
}

// TxPipelined queues the commands fn gives p and runs them in one
// MULTI/EXEC, as redis.Tx.TxPipelined does; it ends the transaction. A
// command fn could not queue (refused) fails fn's call with its error
// when fn returns nil: nothing is sent.
func (t *Tx) TxPipelined(ctx context.Context, fn func(p *Pipe) error) ([]redis.Cmder, error) {
	if err := t.ended(); err != nil {
		return nil, err
	}
	p := &Pipe{}
	cmds, err := t.tx.TxPipelined(ctx, func(rp redis.Pipeliner) error {
		p.p = rp
		if err := fn(p); err != nil {
			return err
		}
		return p.refused
	})
	if len(p.queued) == 0 || cmds == nil {
		return cmds, err // nothing sent: fn failed, or queued nothing
	}
	t.execd = true
	switch {
	case err == nil || answered(err) && !errors.Is(err, redis.TxFailedErr) && !redis.IsExecAbortError(err):
		// EXEC ran (a command that failed inside it took no effect)
		for _, q := range p.queued {
			q.record(t.rec, true)
		}
		t.outcome = func() { _ = t.rec.Commit() }
	case answered(err): // EXEC answered nil, or EXECABORT: nothing ran
		for _, q := range p.queued {
			q.record(t.rec, false)
		}
		t.outcome = func() { _ = t.rec.Abort() }
	default: // the answer was lost
		for _, q := range p.queued {
			q.record(t.rec, false)
		}
		t.outcome = func() { _ = t.rec.Unknown() }
	}
	return cmds, err
}

// Pipe queues the commands of a MULTI/EXEC (Tx.TxPipelined). Their
// results are known once TxPipelined returns.
type Pipe struct {
	p       redis.Pipeliner
	queued  []queued
	refused error // the first refusal
}

// queued is a command queued in a Pipe, recorded once EXEC answered.
type queued struct {
	key    string
	vals   []string // SET's value, RPUSH's elements
	get    *redis.StringCmd
	lrange *redis.StringSliceCmd
	write  redis.Cmder // SET or RPUSH
	append bool
}

// record records q in tx: with ran, EXEC ran and q's own result decides;
// otherwise only its writes are recorded (aborted or unknown).
func (q queued) record(tx *isoscope.Tx, ran bool) {
	k := isoscope.Bytes([]byte(q.key))
	switch {
	case q.get != nil:
		if ran {
			recordGet(tx, q.key, q.get)
		}
	case q.lrange != nil:
		if ran {
			recordLRange(tx, q.key, q.lrange)
		}
	default:
		if ran && q.write.Err() != nil {
			return // failed inside EXEC: no effect
		}
		for _, v := range q.vals {
			if q.append {
				tx.Append(k, value2(v))
			} else {
				tx.Write(k, value2(v))
			}
		}
	}
}

func (p *Pipe) refuse(err error) {
	if p.refused == nil {
		p.refused = err
	}
}

// Get queues GET key; the read is recorded with its result.
func (p *Pipe) Get(ctx context.Context, key string) *redis.StringCmd {
	cmd := p.p.Get(ctx, key)
	p.queued = append(p.queued, queued{key: key, get: cmd})
	return cmd
}

// LRange queues LRANGE key 0 -1; other bounds are refused.
func (p *Pipe) LRange(ctx context.Context, key string, start, stop int64) *redis.StringSliceCmd {
	if err := wholeList(key, start, stop); err != nil {
		p.refuse(err)
		return refusedSlice(ctx, err)
	}
	cmd := p.p.LRange(ctx, key, start, stop)
	p.queued = append(p.queued, queued{key: key, lrange: cmd})
	return cmd
}

// Set queues SET key value; value is a string, a []byte or an integer,
// and expiration must be 0.
func (p *Pipe) Set(ctx context.Context, key string, value any, expiration time.Duration) *redis.StatusCmd {
	v, err := setArgs(key, value, expiration)
	if err != nil {
		p.refuse(err)
		cmd := redis.NewStatusCmd(ctx, "set", key)
		cmd.SetErr(err)
		return cmd
	}
	cmd := p.p.Set(ctx, key, v, 0)
	p.queued = append(p.queued, queued{key: key, vals: []string{v}, write: cmd})
	return cmd
}

// RPush queues RPUSH key values…; each is a string, a []byte or an
// integer.
func (p *Pipe) RPush(ctx context.Context, key string, values ...any) *redis.IntCmd {
	vs, err := pushArgs(key, values)
	if err != nil {
		p.refuse(err)
		cmd := redis.NewIntCmd(ctx, "rpush", key)
		cmd.SetErr(err)
		return cmd
	}
	cmd := p.p.RPush(ctx, key, vs...)
	q := queued{key: key, write: cmd, append: true}
	for _, v := range vs {
		q.vals = append(q.vals, v.(string))
	}
	p.queued = append(p.queued, q)
	return cmd
}

// recordGet records GET key's answer in tx, when it has one; it reports
// whether it recorded.
func recordGet(tx *isoscope.Tx, key string, cmd *redis.StringCmd) bool {
	s, err := cmd.Result()
	switch {
	case errors.Is(err, redis.Nil):
		tx.Read(isoscope.Bytes([]byte(key)), isoscope.Null)
	case err != nil:
		return false
	default:
		tx.Read(isoscope.Bytes([]byte(key)), value2(s))
	}
	return true
}

// recordLRange records LRANGE key 0 -1's answer in tx, when it has one;
// it reports whether it recorded.
func recordLRange(tx *isoscope.Tx, key string, cmd *redis.StringSliceCmd) bool {
	ss, err := cmd.Result()
	if err != nil {
		return false
	}
	list := make([]isoscope.Value, len(ss))
	for i, s := range ss {
		list[i] = value2(s)
	}
	tx.ReadList(isoscope.Bytes([]byte(key)), list...)
	return true
}

// value2 returns the recorded value of s, a value as Redis stores it: an
// integer when s is one's canonical decimal form, else a string.
func value2(s string) isoscope.Value {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && strconv.FormatInt(n, 10) == s {
		return isoscope.Int(n)
	}
	return isoscope.Bytes([]byte(s))
}

// arg returns v as Redis will store it, or refuses a type whose form the
// wrapper does not reproduce.
func arg(cmd, key string, v any) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case []byte:
		return string(v), nil
	case int:
		return strconv.FormatInt(int64(v), 10), nil
	case int8:
		return strconv.FormatInt(int64(v), 10), nil
	case int16:
		return strconv.FormatInt(int64(v), 10), nil
	case int32:
		return strconv.FormatInt(int64(v), 10), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case uint:
		return strconv.FormatUint(uint64(v), 10), nil
	case uint8:
		return strconv.FormatUint(uint64(v), 10), nil
	case uint16:
		return strconv.FormatUint(uint64(v), 10), nil
	case uint32:
		return strconv.FormatUint(uint64(v), 10), nil
	case uint64:
		return strconv.FormatUint(v, 10), nil
	}
	return "", fmt.Errorf("%w: %s %s: a value of type %T (want a string, a []byte or an integer)", ErrRefused, cmd, key, v)
}

func setArgs(key string, value any, expiration time.Duration) (string, error) {
	if expiration != 0 {
		return "", fmt.Errorf("%w: SET %s with expiration %v: a key that expires would vanish from the database and not from the history", ErrRefused, key, expiration)
	}
	return arg("SET", key, value)
}

func pushArgs(key string, values []any) ([]any, error) {
	if len(values) == 0 {
		return nil, fmt.Errorf("%w: RPUSH %s of no element", ErrRefused, key)
	}
	vs := make([]any, len(values))
	for i, v := range values {
		s, err := arg("RPUSH", key, v)
		if err != nil {
			return nil, err
		}
		vs[i] = s
	}
	return vs, nil
}

func wholeList(key string, start, stop int64) error {
	if start != 0 || stop != -1 {
		return fmt.Errorf("%w: LRANGE %s %d %d: only LRANGE key 0 -1 (the whole list) is recorded", ErrRefused, key, start, stop)
	}
	return nil
}

func refusedSlice(ctx context.Context, err error) *redis.StringSliceCmd {
	cmd := redis.NewStringSliceCmd(ctx, "lrange")
	cmd.SetErr(err)
	return cmd
}
