package db

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisAddr is a parsed redis:// or redis-sentinel:// address.
type redisAddr struct {
	// addrs are the server's address (redis://) or the sentinels'
	// (redis-sentinel://, then master names the monitored primary).
	addrs  []string
	master string
	// wait, when positive, follows every write with WAIT for that many
	// replicas (for at most waitTimeout): a write fewer replicas
	// acknowledged ends with an unknown outcome.
	wait        int
	waitTimeout time.Duration
	// replicaReads sends the transactions that only read to a replica
	// (through the sentinels).
	replicaReads bool
}

// parseRedis reads redis://HOST:PORT and
// redis-sentinel://HOST:PORT[,HOST:PORT…]/MASTER[?wait=N&wait-timeout=D&reads=replica].
func parseRedis(addr, scheme, rest string) (Target, error) {
	sentinel := scheme == "redis-sentinel"
	want := "want redis://host:port, or redis-sentinel://host:port[,host:port…]/master[?wait=N&wait-timeout=1s&reads=primary|replica]"
	u, err := url.Parse(scheme + ":" + rest)
	if err != nil || u.Host == "" || !strings.HasPrefix(rest, "//") {
		return Target{}, fmt.Errorf("database address %q: %s", addr, want)
	}
	if u.User != nil || u.Fragment != "" {
		return Target{}, fmt.Errorf("database address %q: a Redis address takes no user or fragment: %s", addr, want)
	}
	a := &redisAddr{waitTimeout: time.Second}
	for s := range strings.SplitSeq(u.Host, ",") {
		host, port, ok := strings.Cut(s, ":")
		if !ok || host == "" || port == "" {
			return Target{}, fmt.Errorf("database address %q: server %q is not host:port", addr, s)
		}
		a.addrs = append(a.addrs, s)
	}
	a.master = strings.TrimPrefix(u.Path, "/")
	switch {
	case sentinel && a.master == "":
		return Target{}, fmt.Errorf("database address %q: name the master the sentinels monitor: %s", addr, want)
	case sentinel && strings.Contains(a.master, "/"):
		return Target{}, fmt.Errorf("database address %q: master name %q: %s", addr, a.master, want)
	case !sentinel && (a.master != "" || len(a.addrs) != 1 || u.RawQuery != ""):
		return Target{}, fmt.Errorf("database address %q: redis:// is one server, without path or options (replicas and WAIT through sentinels: redis-sentinel://…): %s", addr, want)
	}
	q := u.Query()
	for k := range q {
		if k != "wait" && k != "wait-timeout" && k != "reads" {
			return Target{}, fmt.Errorf("database address %q: unknown option %q: %s", addr, k, want)
		}
	}
	if w := q.Get("wait"); w != "" {
		n, err := strconv.Atoi(w)
		if err != nil || n < 0 || n > 100 {
			return Target{}, fmt.Errorf("database address %q: wait=%s: want the number of replicas, 0 to 100", addr, w)
		}
		a.wait = n
	}
	if w := q.Get("wait-timeout"); w != "" {
		d, err := time.ParseDuration(w)
		if err != nil || d < time.Millisecond {
			return Target{}, fmt.Errorf("database address %q: wait-timeout=%s: want a duration of at least 1ms", addr, w)
		}
		a.waitTimeout = d
	}
	switch r := q.Get("reads"); r {
	case "", "primary":
	case "replica":
		a.replicaReads = true
	default:
		return Target{}, fmt.Errorf("database address %q: reads=%s: want primary or replica", addr, r)
	}
	display := scheme + "://" + u.Host
	if sentinel {
		display += "/" + a.master
		var opts []string
		if a.wait > 0 {
			opts = append(opts, "wait="+strconv.Itoa(a.wait), "wait-timeout="+a.waitTimeout.String())
		}
		if a.replicaReads {
			opts = append(opts, "reads=replica")
		}
		if len(opts) > 0 {
			display += "?" + strings.Join(opts, "&")
		}
	}
	return Target{Kind: Redis, Display: display, redis: a}, nil
}

// quietRedis silences go-redis's own logging (its failover client logs
// every sentinel and master it finds): isoscope reports what matters.
var quietRedis sync.Once

type redisNoLog struct{}

func (redisNoLog) Printf(context.Context, string, ...any) {}

// redisDB is a Redis database: the registers of the table are the
// strings TABLE:v:K, its lists the lists TABLE:l:K, and TABLE:isoscope
// marks it as isoscope's. A transaction WATCHes each key before it first
// reads it, buffers its writes, and commits them in one MULTI/EXEC,
// which Redis refuses (EXEC answers nil) when a watched key was written
// since: optimistic concurrency, as Redis documents it for
// read-modify-write transactions.
type redisDB struct {
	t     Target
	table string
	// primary reaches the primary (through the sentinels, or the one
	// server); replicas a replica (redis-sentinel:// with reads=replica).
	primary, replicas redis.UniversalClient
}

// redisTimeouts are the dial timeout and the read and write timeout of
// t's clients: twice the statement timeout, or 3 s. The clients never
// retry (a retried EXEC could run without its WATCH) and speak RESP2.
func (t Target) redisTimeouts() (dial, rw time.Duration) {
	dial, rw = t.dialTimeout(), 3*time.Second
	if t.StmtTimeout > 0 {
		rw = 2 * t.StmtTimeout
	}
	return dial, rw
}

func openRedis(ctx context.Context, t Target, table string) (Database, error) {
	quietRedis.Do(func() { redis.SetLogger(redisNoLog{}) })
	a := t.redis
	dial, rw := t.redisTimeouts()
	d := &redisDB{t: t, table: table}
	if a.master == "" {
		d.primary = redis.NewClient(&redis.Options{Addr: a.addrs[0], Protocol: 2, MaxRetries: -1, DialTimeout: dial,
			ReadTimeout: rw, WriteTimeout: rw, ContextTimeoutEnabled: true, ClientName: "isoscope"})
	} else {
		fo := func(replicaOnly bool) *redis.FailoverOptions {
			return &redis.FailoverOptions{MasterName: a.master, SentinelAddrs: a.addrs, ReplicaOnly: replicaOnly,
				Protocol: 2, MaxRetries: -1, DialTimeout: dial, ReadTimeout: rw, WriteTimeout: rw,
				ContextTimeoutEnabled: true, ClientName: "isoscope"}
		}
		d.primary = redis.NewFailoverClient(fo(false))
		if a.replicaReads {
			d.replicas = redis.NewFailoverClient(fo(true))
		}
	}
	if err := d.primary.Ping(ctx).Err(); err != nil {
		_ = d.Close()
		return nil, fmt.Errorf("cannot reach %s: %v", t.Display, err)
	}
	return d, nil
}

func (d *redisDB) Kind() Kind    { return Redis }
func (d *redisDB) Table() string { return d.table }

// Version is the primary's redis_version.
func (d *redisDB) Version(ctx context.Context) (string, error) {
	info, err := d.primary.Info(ctx, "server").Result()
	if err != nil {
		return "", err
	}
	for l := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "redis_version:"); ok {
			out := "Redis " + v
			if d.t.redis.master != "" {
				out += " (Sentinel)"
			}
			return out, nil
		}
	}
	return "", errors.New("INFO server names no redis_version")
}

// Supports: serializable only. Each transaction's reads are WATCHed
// and its writes applied by one MULTI/EXEC that fails when a watched key
// changed, on a server that runs one command at a time: the other levels
// would promise nothing more.
func (d *redisDB) Supports(iso Isolation) error {
	if iso != Serializable {
		return fmt.Errorf("redis: only serializable is offered (WATCH and MULTI/EXEC: optimistic transactions), not %s", iso)
	}
	return nil
}

// redisKey is the Redis key of register or list k of table.
func redisKey(table, kind string, k int64) string {
	return table + ":" + kind + ":" + strconv.FormatInt(k, 10)
}

// redisMark is the key that marks table as isoscope's.
func redisMark(table string) string { return table + ":isoscope" }

// tableKeys lists the table's keys on the primary (SCAN MATCH TABLE:*).
func (d *redisDB) tableKeys(ctx context.Context) ([]string, error) {
	var out []string
	iter := d.primary.Scan(ctx, 0, d.table+":*", 1000).Iterator()
	for iter.Next(ctx) {
		out = append(out, iter.Val())
	}
	return out, iter.Err()
}

// Reset deletes the table's keys, when they carry isoscope's mark (or
// there are none), and marks the table again; then it waits (at most
// 5 s) until the replicas have it, so that reads on a replica start from
// the empty table.
func (d *redisDB) Reset(ctx context.Context) error {
	if err := d.Drop(ctx); err != nil {
		return err
	}
	if err := d.primary.Set(ctx, redisMark(d.table), TableMark, 0).Err(); err != nil {
		return fmt.Errorf("marking table %s: %v", d.table, err)
	}
	if d.replicas != nil {
		c := d.primary.(*redis.Client)
		n, err := redisReplicaCount(ctx, c)
		if err != nil {
			return err
		}
		if n > 0 {
			if err := c.Wait(ctx, n, 5*time.Second).Err(); err != nil {
				return fmt.Errorf("waiting for the replicas after the reset: %v", err)
			}
		}
	}
	return nil
}

// redisReplicaCount is the number of replicas the primary has
// (connected_slaves of INFO replication).
func redisReplicaCount(ctx context.Context, c *redis.Client) (int, error) {
	info, err := c.Info(ctx, "replication").Result()
	if err != nil {
		return 0, err
	}
	for l := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "connected_slaves:"); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, nil
}

// Drop deletes the table's keys, unless some are there without
// isoscope's mark.
func (d *redisDB) Drop(ctx context.Context) error {
	keys, err := d.tableKeys(ctx)
	if err != nil {
		return fmt.Errorf("listing table %s's keys: %v", d.table, err)
	}
	if len(keys) == 0 {
		return nil
	}
	mark, err := d.primary.Get(ctx, redisMark(d.table)).Result()
	if errors.Is(err, redis.Nil) || (err == nil && mark != TableMark) {
		return &NotOursError{Table: d.table, Where: d.t.Display}
	}
	if err != nil {
		return err
	}
	for i := 0; i < len(keys); i += 500 {
		if err := d.primary.Del(ctx, keys[i:min(i+500, len(keys))]...).Err(); err != nil {
			return fmt.Errorf("deleting table %s's keys: %v", d.table, err)
		}
	}
	return nil
}

// Connect makes a session: each of its transactions takes a connection
// of its own from the client's pool (to the primary the sentinels name
// at that moment) and holds it from its first read to its EXEC.
func (d *redisDB) Connect(ctx context.Context) (Conn, error) {
	if err := d.primary.Ping(ctx).Err(); err != nil {
		return nil, err
	}
	return &redisConn{d: d}, nil
}

// errRedisConflict is EXEC's nil answer: a key the transaction watched
// was written after the transaction read it.
var errRedisConflict = errors.New("conflict: a watched key changed (EXEC answered nil)")

// errRedisNoRange refuses a range read: the table's keys are separate
// Redis keys, with no order to scan.
var errRedisNoRange = errors.New("redis: no range reads (the table's keys are separate Redis keys): use mt, general, lwt, list-append or blindw")

// redisWaitError is a write that fewer replicas than asked acknowledged
// within the wait timeout: it took effect on the primary, and may be lost
// in a failover.
type redisWaitError struct{ got, want int }

func (e *redisWaitError) Error() string {
	return fmt.Sprintf("WAIT: %d of the %d replicas acknowledged the write in time", e.got, e.want)
}

// redisAnswers are the error replies of a server that did not run a
// transaction's writes: a replica (READONLY), one still loading its data,
// a replica cut off from its primary (MASTERDOWN), a queued command
// refused (EXECABORT).
var redisAnswers = []string{"READONLY", "LOADING", "MASTERDOWN", "EXECABORT", "NOREPLICAS", "BUSY"}

// Classify: EXEC's nil answer aborts; an error reply that says nothing
// ran aborts too (a failover in progress: the next attempt finds the new
// primary); a WAIT that too few replicas acknowledged is unknown, as a
// lost connection or a timeout is.
func (d *redisDB) Classify(err error) (ErrorClass, string) {
	var we *redisWaitError
	var re redis.Error
	switch {
	case errors.Is(err, errRedisConflict):
		return Aborted, "conflict (a watched key changed)"
	case errors.Is(err, errRedisNoRange):
		return Failed, "no range reads"
	case errors.As(err, &we):
		return Disconnected, "WAIT: too few replicas acknowledged"
	case errors.Is(err, context.Canceled):
		return Interrupted, "interrupted"
	case errors.Is(err, context.DeadlineExceeded):
		return Disconnected, "no answer (timeout)"
	case errors.As(err, &re) && !strings.HasPrefix(err.Error(), "redis: "):
		word, _, _ := strings.Cut(strings.TrimSpace(err.Error()), " ")
		for _, a := range redisAnswers {
			if word == a {
				return Aborted, "refused: " + a
			}
		}
		return Failed, "error reply: " + word
	}
	return Disconnected, "connection lost: " + err.Error()
}

// Answered: error replies are the server's answers; a WAIT that timed
// out, a timeout or a lost connection is not.
func (d *redisDB) Answered(err error) bool {
	class, _ := d.Classify(err)
	return class == Aborted || class == Failed
}

// Close closes the clients.
func (d *redisDB) Close() error {
	var errs []error
	for _, c := range []redis.UniversalClient{d.primary, d.replicas} {
		if c != nil {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}

// redisOp is a buffered write: SET, DEL or RPUSH.
type redisOp struct {
	cmd, key string
	v        int64
}

// redisConn is one session: the transaction in progress holds a
// connection (conn) from its first command to its end, the keys it
// watched, what it read of them, and its buffered writes.
type redisConn struct {
	d *redisDB
	// readOnly says the next transaction only reads (RouteReadOnly).
	readOnly bool
	conn     *redis.Conn
	watched  map[string]bool
	// regs is each register's value as the transaction sees it (nil:
	// absent), once read or written; lists each list's base as read, and
	// appended the transaction's own appends to it.
	regs     map[string]*int64
	lists    map[string][]int64
	listRead map[string]bool
	appended map[string][]int64
	ops      []redisOp
}

// RouteReadOnly says whether the next transaction only reads: with
// reads=replica, such a transaction runs on a replica.
func (c *redisConn) RouteReadOnly(readOnly bool) { c.readOnly = readOnly }

func (c *redisConn) Begin(context.Context, Isolation) error {
	c.release()
	c.watched, c.regs, c.lists, c.listRead, c.appended, c.ops = map[string]bool{}, map[string]*int64{}, map[string][]int64{}, map[string]bool{}, map[string][]int64{}, nil
	return nil
}

// use returns the transaction's connection, taken at its first command:
// a replica's for a transaction that only reads when reads=replica, else
// the primary's.
func (c *redisConn) use() *redis.Conn {
	if c.conn == nil {
		if c.readOnly && c.d.replicas != nil {
			c.conn = c.d.replicas.(*redis.Client).Conn()
		} else {
			c.conn = c.d.primary.(*redis.Client).Conn()
		}
	}
	return c.conn
}

// release gives the transaction's connection back to the pool.
func (c *redisConn) release() {
	if c.conn != nil {
		_ = c.conn.Close()
		c.conn = nil
	}
}

// watch WATCHes key on the transaction's connection, once.
func (c *redisConn) watch(ctx context.Context, key string) error {
	if c.watched[key] {
		return nil
	}
	if err := c.use().Do(ctx, "WATCH", key).Err(); err != nil {
		return err
	}
	c.watched[key] = true
	return nil
}

// Read returns the register's value: the transaction's own write, or the
// server's value, read after WATCH.
func (c *redisConn) Read(ctx context.Context, k int64) ([]int64, error) {
	key := redisKey(c.d.table, "v", k)
	v, ok := c.regs[key]
	if !ok {
		if err := c.watch(ctx, key); err != nil {
			return nil, err
		}
		s, err := c.use().Get(ctx, key).Result()
		switch {
		case errors.Is(err, redis.Nil):
		case err != nil:
			return nil, err
		default:
			x, err := parseRegister("redis", k, s)
			if err != nil {
				return nil, err
			}
			v = &x[0]
		}
		c.regs[key] = v
	}
	if v == nil {
		return nil, nil
	}
	return []int64{*v}, nil
}

func (c *redisConn) Write(_ context.Context, k, v int64) error {
	key := redisKey(c.d.table, "v", k)
	c.regs[key] = &v
	c.ops = append(c.ops, redisOp{cmd: "SET", key: key, v: v})
	return nil
}

// Delete reads k (watched) and, when present, buffers its DEL.
func (c *redisConn) Delete(ctx context.Context, k int64) (bool, error) {
	vs, err := c.Read(ctx, k)
	if err != nil || len(vs) == 0 {
		return false, err
	}
	key := redisKey(c.d.table, "v", k)
	c.regs[key] = nil
	c.ops = append(c.ops, redisOp{cmd: "DEL", key: key})
	return true, nil
}

// Scan is not offered.
func (c *redisConn) Scan(context.Context, int64, int64, int) ([]KV, error) {
	return nil, errRedisNoRange
}

// Append buffers an RPUSH: a blind append, which needs no WATCH (the
// appends of concurrent transactions commute).
func (c *redisConn) Append(_ context.Context, k, e int64) error {
	key := redisKey(c.d.table, "l", k)
	c.appended[key] = append(c.appended[key], e)
	c.ops = append(c.ops, redisOp{cmd: "RPUSH", key: key, v: e})
	return nil
}

// ReadList returns the list as the server has it (LRANGE after WATCH,
// once), followed by the transaction's own appends.
func (c *redisConn) ReadList(ctx context.Context, k int64) ([]int64, error) {
	key := redisKey(c.d.table, "l", k)
	if !c.listRead[key] {
		if err := c.watch(ctx, key); err != nil {
			return nil, err
		}
		ss, err := c.use().LRange(ctx, key, 0, -1).Result()
		if err != nil {
			return nil, err
		}
		base := make([]int64, len(ss))
		for i, s := range ss {
			if base[i], err = strconv.ParseInt(s, 10, 64); err != nil {
				return nil, fmt.Errorf("redis: list %s holds %q, not an integer", key, s)
			}
		}
		c.lists[key], c.listRead[key] = base, true
	}
	out := append(append([]int64(nil), c.lists[key]...), c.appended[key]...)
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// CompareAndSet reads k (watched) and, when it holds old, buffers new.
func (c *redisConn) CompareAndSet(ctx context.Context, k, old, new int64) (bool, error) {
	return compareAndSet(ctx, c, k, old, new)
}

// InsertIfAbsent reads k (watched) and, when absent, buffers v.
func (c *redisConn) InsertIfAbsent(ctx context.Context, k, v int64) (bool, error) {
	return insertIfAbsent(ctx, c, k, v)
}

// Commit runs the buffered writes in one MULTI/EXEC on the connection
// that watched the keys read, even when there are none (an EXEC of
// nothing still fails when a watched key changed, which makes a
// transaction's reads one snapshot); then, with wait set and writes made,
// WAITs for the replicas. A transaction that touched nothing commits
// without a request.
func (c *redisConn) Commit(ctx context.Context) error {
	defer c.release()
	if len(c.watched) == 0 && len(c.ops) == 0 {
		return nil
	}
	conn := c.use()
	var exec *redis.Cmd
	_, err := conn.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, "MULTI")
		for _, op := range c.ops {
			switch op.cmd {
			case "DEL":
				p.Do(ctx, "DEL", op.key)
			default:
				p.Do(ctx, op.cmd, op.key, strconv.FormatInt(op.v, 10))
			}
		}
		exec = p.Do(ctx, "EXEC")
		return nil
	})
	if exec != nil && errors.Is(exec.Err(), redis.Nil) {
		return errRedisConflict
	}
	if err != nil {
		if exec != nil && exec.Err() != nil {
			return exec.Err()
		}
		return err
	}
	if w := c.d.t.redis.wait; w > 0 && len(c.ops) > 0 {
		got, err := conn.Wait(ctx, w, c.d.t.redis.waitTimeout).Result()
		if err != nil {
			return err
		}
		if int(got) < w {
			return &redisWaitError{got: int(got), want: w}
		}
	}
	return nil
}

// Rollback drops the buffered writes and the watches (UNWATCH) and gives
// the connection back.
func (c *redisConn) Rollback(ctx context.Context) error {
	defer c.release()
	c.ops = nil
	if c.conn != nil && len(c.watched) > 0 {
		return c.conn.Do(ctx, "UNWATCH").Err()
	}
	return nil
}

func (c *redisConn) Close() error   { c.release(); return nil }
func (c *redisConn) Discard() error { c.release(); return nil }
