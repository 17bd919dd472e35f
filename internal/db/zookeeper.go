package db

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// zkAddr is a parsed zookeeper:// address.
type zkAddr struct {
	// servers are host:port pairs, which a client tries in turn.
	servers []string
	// sync makes every read a sync of the key followed by its read: the
	// server the session talks to first catches up with its leader's
	// commits as of the sync. Without it, a read is answered from the
	// server's own state, which ZooKeeper promises only sequentially
	// consistent (it may be behind the leader).
	sync bool
}

// parseZookeeper reads zookeeper://HOST:PORT[,HOST:PORT…][?reads=local|sync].
func parseZookeeper(addr, rest string) (Target, error) {
	want := "want zookeeper://host:port[,host:port…][?reads=local|sync]"
	u, err := url.Parse("zookeeper:" + rest)
	if err != nil || u.Host == "" || !strings.HasPrefix(rest, "//") {
		return Target{}, fmt.Errorf("database address %q: %s", addr, want)
	}
	if u.User != nil || u.Fragment != "" || (u.Path != "" && u.Path != "/") {
		return Target{}, fmt.Errorf("database address %q: a ZooKeeper address takes no user, path or fragment: %s", addr, want)
	}
	a := &zkAddr{}
	for s := range strings.SplitSeq(u.Host, ",") {
		host, port, ok := strings.Cut(s, ":")
		if !ok || host == "" || port == "" {
			return Target{}, fmt.Errorf("database address %q: server %q is not host:port", addr, s)
		}
		if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			return Target{}, fmt.Errorf("database address %q: server %q: port %q is not a number", addr, s, port)
		}
		a.servers = append(a.servers, s)
	}
	q := u.Query()
	for k := range q {
		if k != "reads" {
			return Target{}, fmt.Errorf("database address %q: unknown option %q: %s", addr, k, want)
		}
	}
	switch r := q.Get("reads"); r {
	case "", "local":
	case "sync":
		a.sync = true
	default:
		return Target{}, fmt.Errorf("database address %q: reads=%s: want local or sync", addr, r)
	}
	display := "zookeeper://" + u.Host
	if a.sync {
		display += "?reads=sync"
	}
	return Target{Kind: Zookeeper, Display: display, zk: a}, nil
}

// zkRoot is the znode under which every table lives; zkLocks holds the
// run locks, outside every table, so that Reset never deletes one.
const (
	zkRoot  = "/isoscope"
	zkLocks = "/isoscope-locks"
)

// zkSession is the session timeout a client asks for (the servers bound
// it to 2 to 20 ticks).
const zkSession = 4 * time.Second

// zkDB is a ZooKeeper ensemble: the table is the znode /isoscope/TABLE
// (whose data is TableMark), a register the child vK (its data the
// value in decimal), a list the child lK (its elements comma-separated).
type zkDB struct {
	t     Target
	table string
	// admin is the session Reset, Drop and Version use.
	admin *zk.Conn
}

func openZookeeper(ctx context.Context, t Target, table string) (Database, error) {
	d := &zkDB{t: t, table: table}
	c, err := d.connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("cannot reach %s: %v", t.Display, err)
	}
	d.admin = c
	return d, nil
}

// connect opens a ZooKeeper session with the address's servers and waits
// (within ctx and the dial timeout) until the session is established.
// The client keeps its session across broken connections on its own; a
// request that a broken connection cost fails, and the runner then
// discards the session and opens a new one, which it records as a new
// session.
func (d *zkDB) connect(ctx context.Context) (*zk.Conn, error) {
	c, events, err := zk.Connect(d.t.zk.servers, zkSession, zk.WithLogInfo(false), zk.WithLogger(zkQuiet{}))
	if err != nil {
		return nil, err
	}
	t := time.NewTimer(d.t.dialTimeout())
	defer t.Stop()
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return c, nil
			}
			if ev.State == zk.StateAuthFailed || ev.State == zk.StateExpired {
				c.Close()
				return nil, fmt.Errorf("no ZooKeeper session: %v", ev.State)
			}
		case <-t.C:
			st := c.State()
			c.Close()
			return nil, fmt.Errorf("no ZooKeeper session within %s (state %v)", d.t.dialTimeout(), st)
		case <-ctx.Done():
			c.Close()
			return nil, ctx.Err()
		}
	}
}

// zkQuiet is a go-zookeeper logger that says nothing: isoscope reports
// lost connections itself.
type zkQuiet struct{}

// Printf discards the message.
func (zkQuiet) Printf(string, ...any) {}

// zkDo runs f, a request of go-zookeeper (which takes no context), and
// returns its result, or ctx's error as soon as ctx ends. A request
// abandoned so ends when its session answers or is closed: the runner
// discards a session whose request got no answer in time.
func zkDo[T any](ctx context.Context, f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := f()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

func (d *zkDB) Kind() Kind    { return Zookeeper }
func (d *zkDB) Table() string { return d.table }

// Version asks the server the admin session is connected to for its
// version (the srvr four-letter word, which ZooKeeper allows by default).
func (d *zkDB) Version(ctx context.Context) (string, error) {
	if _, err := zkDo(ctx, func() (bool, error) { ok, _, err := d.admin.Exists("/"); return ok, err }); err != nil {
		return "", err
	}
	server := d.admin.Server()
	if server == "" {
		server = d.t.zk.servers[0]
	}
	st, err := zkSrvr(ctx, server)
	v := st["Zookeeper version"]
	if err != nil || v == "" {
		return "ZooKeeper (its version unknown: srvr did not answer; is it in 4lw.commands.whitelist?)", nil
	}
	if i := strings.IndexAny(v, "-,"); i > 0 {
		v = v[:i]
	}
	return "ZooKeeper " + v, nil
}

// zkSrvr asks the server at addr the srvr four-letter word, and returns
// its answer's "name: value" lines ("Zookeeper version", "Mode", …).
// (go-zookeeper's FLWSrvr refuses the version line of Debian's build,
// "3.8.0-${mvngit.commit.id}".)
func zkSrvr(ctx context.Context, addr string) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var dl net.Dialer
	c, err := dl.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	if _, err := c.Write([]byte("srvr")); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(c, 64<<10))
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for l := range strings.SplitSeq(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ": "); ok {
			out[k] = strings.TrimSpace(v)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s answered srvr with %q", addr, b)
	}
	return out, nil
}

// Supports: serializable only. A transaction that writes, or reads
// several keys, commits as one multi that checks the version of every
// key it read; ZooKeeper offers nothing weaker that would mean more.
func (d *zkDB) Supports(iso Isolation) error {
	if iso != Serializable {
		return fmt.Errorf("zookeeper: only serializable is offered (a transaction commits as one multi that checks every version it read), not %s", iso)
	}
	return nil
}

// tablePath is the table's znode; keyPath a register's or a list's.
func (d *zkDB) tablePath() string { return zkRoot + "/" + d.table }
func (d *zkDB) keyPath(prefix string, k int64) string {
	return d.tablePath() + "/" + prefix + strconv.FormatInt(k, 10)
}

// Reset deletes the table's znode and its children, if isoscope made it,
// and creates it again empty.
func (d *zkDB) Reset(ctx context.Context) error {
	if err := d.Drop(ctx); err != nil {
		return err
	}
	if err := d.ensure(ctx, zkRoot); err != nil {
		return err
	}
	_, err := zkDo(ctx, func() (string, error) {
		return d.admin.Create(d.tablePath(), []byte(TableMark), 0, zk.WorldACL(zk.PermAll))
	})
	if err != nil {
		return fmt.Errorf("creating the znode %s: %v", d.tablePath(), err)
	}
	return nil
}

// ensure creates the persistent znode path unless it exists.
func (d *zkDB) ensure(ctx context.Context, path string) error {
	_, err := zkDo(ctx, func() (string, error) { return d.admin.Create(path, nil, 0, zk.WorldACL(zk.PermAll)) })
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return fmt.Errorf("creating the znode %s: %v", path, err)
	}
	return nil
}

// Drop deletes the table's znode and its children, when it exists and
// isoscope made it (its data is TableMark).
func (d *zkDB) Drop(ctx context.Context) error {
	p := d.tablePath()
	data, err := zkDo(ctx, func() ([]byte, error) { b, _, err := d.admin.Get(p); return b, err })
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the znode %s: %v", p, err)
	}
	if string(data) != TableMark {
		return &NotOursError{Table: d.table, Where: d.t.Display}
	}
	kids, err := zkDo(ctx, func() ([]string, error) { k, _, err := d.admin.Children(p); return k, err })
	if err != nil {
		return fmt.Errorf("listing the znode %s: %v", p, err)
	}
	for _, k := range kids {
		if _, err := zkDo(ctx, func() (struct{}, error) { return struct{}{}, d.admin.Delete(p+"/"+k, -1) }); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return fmt.Errorf("deleting the znode %s/%s: %v", p, k, err)
		}
	}
	if _, err := zkDo(ctx, func() (struct{}, error) { return struct{}{}, d.admin.Delete(p, -1) }); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("deleting the znode %s: %v", p, err)
	}
	return nil
}

// Connect opens a ZooKeeper session of the connection's own.
func (d *zkDB) Connect(ctx context.Context) (Conn, error) {
	c, err := d.connect(ctx)
	if err != nil {
		return nil, err
	}
	return &zkConn{d: d, c: c}, nil
}

// errZKConflict is the answer to a multi whose version check failed: a
// key the transaction read changed before it committed.
var errZKConflict = errors.New("conflict: a key the transaction read changed before its multi (version check failed)")

// zkConflict says err is ZooKeeper's answer to an operation on a
// version, or an existence, that is no longer the one read.
func zkConflict(err error) bool {
	return errors.Is(err, errZKConflict) || errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNodeExists) || errors.Is(err, zk.ErrNoNode)
}

// Classify: a failed version check aborts; a lost connection, an expired
// or moved session, a closing server and a timeout disconnect (ZooKeeper
// answers a request it cannot serve by dropping the connection).
func (d *zkDB) Classify(err error) (ErrorClass, string) {
	switch {
	case zkConflict(err):
		return Aborted, "conflict (version check failed)"
	case errors.Is(err, context.Canceled):
		return Interrupted, "interrupted"
	case errors.Is(err, context.DeadlineExceeded):
		return Disconnected, "no answer (timeout)"
	case errors.Is(err, zk.ErrConnectionClosed), errors.Is(err, zk.ErrSessionExpired), errors.Is(err, zk.ErrSessionMoved),
		errors.Is(err, zk.ErrClosing), errors.Is(err, zk.ErrNoServer):
		return Disconnected, "connection lost: " + err.Error()
	}
	return Failed, err.Error()
}

// Answered: a failed version check is the ensemble's answer, and so is
// any error but those of a lost connection.
func (d *zkDB) Answered(err error) bool {
	class, _ := d.Classify(err)
	return class == Aborted || class == Failed
}

func (d *zkDB) Close() error { d.admin.Close(); return nil }

// zkRead is what a transaction read of a znode: its data and version
// (absent: it did not exist).
type zkRead struct {
	data    string
	version int32
	absent  bool
}

// zkConn is one session: its own ZooKeeper session, and the transaction
// in progress, which remembers what it read and buffers its writes.
type zkConn struct {
	d *zkDB
	c *zk.Conn
	// read maps each znode the transaction read to what it read; order
	// lists them in order.
	read  map[string]zkRead
	order []string
	// writes are the buffered writes (nil: a delete), in worder's order;
	// exists says, for a znode written without being read, whether it
	// existed when written (which the commit's create or setData needs).
	writes map[string]*string
	worder []string
	exists map[string]bool
}

func (c *zkConn) Begin(context.Context, Isolation) error {
	c.read, c.order = map[string]zkRead{}, nil
	c.writes, c.worder, c.exists = map[string]*string{}, nil, map[string]bool{}
	return nil
}

// get reads path: the transaction's own write if it made one, else what
// it read of it before, else the znode as the session's server has it
// (after a sync of it, with reads=sync).
func (c *zkConn) get(ctx context.Context, path string) (string, bool, error) {
	if w, ok := c.writes[path]; ok {
		if w == nil {
			return "", false, nil
		}
		return *w, true, nil
	}
	if r, ok := c.read[path]; ok {
		return r.data, !r.absent, nil
	}
	if c.d.t.zk.sync {
		if _, err := zkDo(ctx, func() (string, error) { return c.c.Sync(path) }); err != nil {
			return "", false, err
		}
	}
	type got struct {
		b  []byte
		st *zk.Stat
	}
	g, err := zkDo(ctx, func() (got, error) { b, st, err := c.c.Get(path); return got{b, st}, err })
	r := zkRead{}
	switch {
	case errors.Is(err, zk.ErrNoNode):
		r.absent = true
	case err != nil:
		return "", false, err
	default:
		r.data, r.version = string(g.b), g.st.Version
	}
	c.read[path] = r
	c.order = append(c.order, path)
	return r.data, !r.absent, nil
}

// put buffers a write of path (nil: a delete). A znode neither read nor
// written before is looked up, so that the commit knows whether to
// create it or set its data.
func (c *zkConn) put(ctx context.Context, path string, v *string) error {
	_, read := c.read[path]
	_, written := c.writes[path]
	if !read && !written {
		ok, err := zkDo(ctx, func() (bool, error) { ok, _, err := c.c.Exists(path); return ok, err })
		if err != nil {
			return err
		}
		c.exists[path] = ok
	}
	if !written {
		c.worder = append(c.worder, path)
	}
	c.writes[path] = v
	return nil
}

func (c *zkConn) Read(ctx context.Context, k int64) ([]int64, error) {
	v, ok, err := c.get(ctx, c.d.keyPath("v", k))
	if err != nil || !ok {
		return nil, err
	}
	return parseRegister("zookeeper", k, v)
}

func (c *zkConn) Write(ctx context.Context, k, v int64) error {
	s := strconv.FormatInt(v, 10)
	return c.put(ctx, c.d.keyPath("v", k), &s)
}

// Delete reads k and, when present, buffers its delete.
func (c *zkConn) Delete(ctx context.Context, k int64) (bool, error) {
	p := c.d.keyPath("v", k)
	_, found, err := c.get(ctx, p)
	if err != nil || !found {
		return false, err
	}
	return true, c.put(ctx, p, nil)
}

// Scan is not offered: ZooKeeper has no ordered range read.
func (c *zkConn) Scan(context.Context, int64, int64, int) ([]KV, error) {
	return nil, errors.New("zookeeper: no range reads (znodes have no order): use the mt, lwt or list-append workload")
}

// Append reads the list and buffers it one element longer: the commit's
// version check makes it a compare-and-set, retried by the runner when
// another append came first.
func (c *zkConn) Append(ctx context.Context, k, e int64) error {
	p := c.d.keyPath("l", k)
	l, _, err := c.get(ctx, p)
	if err != nil {
		return err
	}
	if l != "" {
		l += ","
	}
	l += strconv.FormatInt(e, 10)
	return c.put(ctx, p, &l)
}

func (c *zkConn) ReadList(ctx context.Context, k int64) ([]int64, error) {
	l, ok, err := c.get(ctx, c.d.keyPath("l", k))
	if err != nil || !ok || l == "" {
		return nil, err
	}
	return parseList(l)
}

// CompareAndSet reads k and, when it holds old, buffers new: the commit
// sets it only if its version is still the one read (setData with a
// version).
func (c *zkConn) CompareAndSet(ctx context.Context, k, old, new int64) (bool, error) {
	return compareAndSet(ctx, c, k, old, new)
}

// InsertIfAbsent reads k and, when absent, buffers v: the commit creates
// it, which fails if another transaction created it first.
func (c *zkConn) InsertIfAbsent(ctx context.Context, k, v int64) (bool, error) {
	return insertIfAbsent(ctx, c, k, v)
}

// ops are the commit's multi: a version check of every znode read and
// not written (a create and a delete of it, for one read absent: the
// create fails if it exists), then each write: setData on the version
// read (or any version, for a znode written blind that existed), create
// for one read absent or absent when written, delete on the version
// read.
func (c *zkConn) ops() []any {
	acl := zk.WorldACL(zk.PermAll)
	var ops []any
	for _, p := range c.order {
		if _, w := c.writes[p]; w {
			continue
		}
		r := c.read[p]
		if r.absent {
			ops = append(ops, &zk.CreateRequest{Path: p, Acl: acl}, &zk.DeleteRequest{Path: p, Version: 0})
		} else {
			ops = append(ops, &zk.CheckVersionRequest{Path: p, Version: r.version})
		}
	}
	for _, p := range c.worder {
		w := c.writes[p]
		r, read := c.read[p]
		exists := (read && !r.absent) || (!read && c.exists[p])
		version := int32(-1)
		if read {
			version = r.version
		}
		switch {
		case w == nil && exists:
			ops = append(ops, &zk.DeleteRequest{Path: p, Version: version})
		case w == nil:
			// A delete of a znode read absent writes nothing; the
			// absence is still checked.
			ops = append(ops, &zk.CreateRequest{Path: p, Acl: acl}, &zk.DeleteRequest{Path: p, Version: 0})
		case exists:
			ops = append(ops, &zk.SetDataRequest{Path: p, Data: []byte(*w), Version: version})
		default:
			ops = append(ops, &zk.CreateRequest{Path: p, Data: []byte(*w), Acl: acl})
		}
	}
	return ops
}

// Commit: a transaction that read one znode and wrote none commits
// without a request (its read was its one access: ZooKeeper's plain read,
// sequentially consistent); any other commits as one multi (ops), which
// ZooKeeper applies atomically through its leader, or not at all.
func (c *zkConn) Commit(ctx context.Context) error {
	if len(c.writes) == 0 && len(c.read) <= 1 {
		return nil
	}
	ops := c.ops()
	c.writes, c.worder = map[string]*string{}, nil
	res, err := zkDo(ctx, func() ([]zk.MultiResponse, error) { return c.c.Multi(ops...) })
	if err == nil {
		for _, r := range res {
			if r.Error != nil {
				err = r.Error
				break
			}
		}
	}
	if err != nil && zkConflict(err) {
		return fmt.Errorf("%w: %v", errZKConflict, err)
	}
	return err
}

// Rollback drops the buffered writes.
func (c *zkConn) Rollback(context.Context) error {
	c.writes, c.worder = map[string]*string{}, nil
	return nil
}

func (c *zkConn) Close() error   { c.c.Close(); return nil }
func (c *zkConn) Discard() error { c.c.Close(); return nil }

// Lock holds the run's table with an ephemeral znode
// /isoscope-locks/TABLE, whose data says who holds it, made by a session
// of the lock's own: ZooKeeper deletes it when that session ends (at
// Release, or when a crashed run's session expires, within the session
// timeout). A table in use is an InUseError naming the holder.
func (d *zkDB) Lock(ctx context.Context) (*TableLock, error) {
	fail := func(err error) (*TableLock, error) {
		return nil, fmt.Errorf("locking table %s with the znode %s/%s: %v", d.table, zkLocks, d.table, err)
	}
	c, err := d.connect(ctx)
	if err != nil {
		return fail(err)
	}
	if _, err := zkDo(ctx, func() (string, error) { return c.Create(zkLocks, nil, 0, zk.WorldACL(zk.PermAll)) }); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		c.Close()
		return fail(err)
	}
	p := zkLocks + "/" + d.table
	holder := holderText()
	_, err = zkDo(ctx, func() (string, error) {
		return c.Create(p, []byte(holder), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	})
	if errors.Is(err, zk.ErrNodeExists) {
		held := "the ephemeral znode " + p
		if b, gerr := zkDo(ctx, func() ([]byte, error) { b, _, err := c.Get(p); return b, err }); gerr == nil {
			held = fmt.Sprintf("%s; %s, which ZooKeeper deletes when its session ends", b, held)
		}
		c.Close()
		return nil, &InUseError{Table: d.table, Where: d.t.Display, Holder: held}
	}
	if err != nil {
		c.Close()
		return fail(err)
	}
	// Closing the session deletes the ephemeral znode at once (a
	// closed session's ephemeral znodes go with it).
	return &TableLock{release: func() error { c.Close(); return nil }}, nil
}
