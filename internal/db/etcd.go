package db

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// etcdAddr is a parsed etcd:// address.
type etcdAddr struct {
	endpoints []string
	// serializable makes every read a serializable one (served by the
	// member the client talks to, possibly stale) rather than a
	// linearizable one (confirmed by the leader).
	serializable bool
}

// parseEtcd reads etcd://HOST:PORT[,HOST:PORT…][?reads=linearizable|serializable].
func parseEtcd(addr, rest string) (Target, error) {
	u, err := url.Parse("etcd:" + rest)
	if err != nil || u.Host == "" {
		return Target{}, fmt.Errorf("database address %q: want etcd://host:port[,host:port…][?reads=serializable]", addr)
	}
	a := &etcdAddr{}
	for e := range strings.SplitSeq(u.Host, ",") {
		if _, _, ok := strings.Cut(e, ":"); !ok {
			return Target{}, fmt.Errorf("database address %q: endpoint %q has no port", addr, e)
		}
		a.endpoints = append(a.endpoints, "http://"+e)
	}
	switch r := u.Query().Get("reads"); r {
	case "", "linearizable":
	case "serializable":
		a.serializable = true
	default:
		return Target{}, fmt.Errorf("database address %q: reads=%s: want linearizable or serializable", addr, r)
	}
	return Target{Kind: Etcd, Display: "etcd://" + u.Host + map[bool]string{true: "?reads=serializable"}[a.serializable], etcd: a}, nil
}

// etcdDB is an etcd cluster (or one member of it): the table is a prefix
// of keys.
type etcdDB struct {
	t       Target
	table   string
	display string
	// admin is the connection Reset, Drop and Version use.
	admin *clientv3.Client
}

func openEtcd(ctx context.Context, t Target, table string) (Database, error) {
	d := &etcdDB{t: t, table: table, display: t.Display}
	c, err := d.client()
	if err != nil {
		return nil, err
	}
	d.admin = c
	if _, err := d.Version(ctx); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("cannot reach %s: %v", t.Display, err)
	}
	return d, nil
}

// client connects to the address's endpoints (gRPC connects lazily).
func (d *etcdDB) client() (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{Endpoints: d.t.etcd.endpoints, DialTimeout: d.t.dialTimeout(), Logger: zap.NewNop()})
}

func (d *etcdDB) Kind() Kind    { return Etcd }
func (d *etcdDB) Table() string { return d.table }

// Version asks the first endpoint that answers for its server version.
func (d *etcdDB) Version(ctx context.Context) (string, error) {
	var err error
	for _, e := range d.t.etcd.endpoints {
		var st *clientv3.StatusResponse
		if st, err = d.admin.Status(ctx, e); err == nil {
			return "etcd " + st.Version, nil
		}
	}
	return "", err
}

// Supports: serializable (every read validated at commit), repeatable
// read (snapshot reads, written keys validated: snapshot isolation) and
// read committed (each read the latest committed value).
func (d *etcdDB) Supports(iso Isolation) error {
	if iso == ReadUncommitted {
		return errors.New("etcd: read-uncommitted is not offered (a transaction's writes are buffered until its Txn commits them)")
	}
	return nil
}

// prefix is where the table's keys live; list is the prefix of lists.
func (d *etcdDB) prefix() string { return d.table + "/v/" }
func (d *etcdDB) list() string   { return d.table + "/l/" }

// key encodes k so that keys sort as their numbers do.
func etcdKey(prefix string, k int64) string { return fmt.Sprintf("%s%020d", prefix, uint64(k)) }

// Reset deletes every key of the table.
func (d *etcdDB) Reset(ctx context.Context) error { return d.Drop(ctx) }

// Drop deletes every key of the table.
func (d *etcdDB) Drop(ctx context.Context) error {
	_, err := d.admin.Delete(ctx, d.table+"/", clientv3.WithPrefix())
	return err
}

// Connect opens a client of its own for the session.
func (d *etcdDB) Connect(ctx context.Context) (Conn, error) {
	c, err := d.client()
	if err != nil {
		return nil, err
	}
	// gRPC connects lazily: ask for the cluster's state, so that a member
	// that does not answer fails the connection here.
	if _, err := c.Get(ctx, d.table+"/ping", clientv3.WithSerializable(), clientv3.WithCountOnly()); err != nil {
		_ = c.Close()
		return nil, err
	}
	return &etcdConn{d: d, c: c}, nil
}

// errConflict is the answer to a Txn whose compares failed: what the
// transaction read or wrote changed before it could commit.
var errConflict = errors.New("conflict: a key the transaction read or wrote changed before its Txn (etcd's compare failed)")

// Classify: a failed compare aborts; a gRPC status of Unavailable,
// DeadlineExceeded, Canceled without the run's context, and connection
// errors disconnect.
func (d *etcdDB) Classify(err error) (ErrorClass, string) {
	switch {
	case errors.Is(err, errConflict):
		return Aborted, "conflict (etcd Txn compare failed)"
	case errors.Is(err, context.Canceled):
		return Interrupted, "interrupted"
	case errors.Is(err, context.DeadlineExceeded):
		return Disconnected, "no answer (deadline exceeded)"
	}
	if s, ok := status.FromError(err); ok {
		switch s.Code() {
		case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.Aborted, codes.Unknown:
			return Disconnected, "connection lost: " + s.Message()
		}
		return Failed, s.Message()
	}
	return Failed, err.Error()
}

// Answered: a failed compare is the cluster's answer; so is any gRPC
// status but those of a lost connection.
func (d *etcdDB) Answered(err error) bool {
	class, _ := d.Classify(err)
	return class == Aborted || class == Failed
}

func (d *etcdDB) Close() error { return d.admin.Close() }

// etcdConn is one session: its own client, and the transaction in
// progress, which buffers its writes.
type etcdConn struct {
	d   *etcdDB
	c   *clientv3.Client
	iso Isolation
	// rev is the snapshot's revision (0 until the first read of a
	// transaction at serializable or repeatable read).
	rev int64
	// seen is the mod revision of each key read (0: absent), validated
	// at commit: every key read at serializable, the keys written at
	// repeatable read, the lists appended to at every level.
	seen     map[string]int64
	validate map[string]bool
	// writes are the buffered writes: a value, or nil for a delete.
	writes map[string]*string
	order  []string
}

func (c *etcdConn) Begin(ctx context.Context, iso Isolation) error {
	c.iso, c.rev = iso, 0
	c.seen, c.validate, c.writes, c.order = map[string]int64{}, map[string]bool{}, map[string]*string{}, nil
	return nil
}

// get reads key: the transaction's own write if it made one, else the
// snapshot's (serializable, repeatable read) or the latest committed
// (read committed) value, linearizable unless the address asks for
// serializable reads.
func (c *etcdConn) get(ctx context.Context, key string) (string, bool, error) {
	if w, ok := c.writes[key]; ok {
		if w == nil {
			return "", false, nil
		}
		return *w, true, nil
	}
	var opts []clientv3.OpOption
	if c.d.t.etcd.serializable {
		opts = append(opts, clientv3.WithSerializable())
	}
	if c.rev > 0 && c.iso != ReadCommitted {
		opts = append(opts, clientv3.WithRev(c.rev))
	}
	resp, err := c.c.Get(ctx, key, opts...)
	if err != nil {
		return "", false, err
	}
	if c.rev == 0 {
		c.rev = resp.Header.Revision
	}
	var mod int64
	val, found := "", false
	if len(resp.Kvs) > 0 {
		mod, val, found = resp.Kvs[0].ModRevision, string(resp.Kvs[0].Value), true
	}
	if _, ok := c.seen[key]; !ok {
		c.seen[key] = mod
	}
	if c.iso == Serializable {
		c.validate[key] = true
	}
	return val, found, nil
}

// put buffers a write (nil: a delete); at repeatable read and above the
// key is validated at commit (first committer wins), reading its
// version first if the transaction has not.
func (c *etcdConn) put(ctx context.Context, key string, v *string) error {
	if c.iso != ReadCommitted {
		if _, ok := c.seen[key]; !ok {
			if _, _, err := c.get(ctx, key); err != nil {
				return err
			}
		}
		c.validate[key] = true
	}
	if _, ok := c.writes[key]; !ok {
		c.order = append(c.order, key)
	}
	c.writes[key] = v
	return nil
}

func (c *etcdConn) Read(ctx context.Context, k int64) ([]int64, error) {
	v, ok, err := c.get(ctx, etcdKey(c.d.prefix(), k))
	if err != nil || !ok {
		return nil, err
	}
	return parseRegister("etcd", k, v)
}

func (c *etcdConn) Write(ctx context.Context, k, v int64) error {
	s := strconv.FormatInt(v, 10)
	return c.put(ctx, etcdKey(c.d.prefix(), k), &s)
}

func (c *etcdConn) Delete(ctx context.Context, k int64) (bool, error) {
	key := etcdKey(c.d.prefix(), k)
	_, found, err := c.get(ctx, key)
	if err != nil || !found {
		return false, err
	}
	return true, c.put(ctx, key, nil)
}

// Scan is not offered: a range read would need its range validated at
// commit (phantoms), which this adapter does not do.
func (c *etcdConn) Scan(context.Context, int64, int64, int) ([]KV, error) {
	return nil, errors.New("etcd: scans are not offered (use the mt, general, list-append, lwt or blindw workloads)")
}

// Append reads the list and writes it back longer; the list's key is
// validated at commit at every level, so that no append is lost.
func (c *etcdConn) Append(ctx context.Context, k, e int64) error {
	key := etcdKey(c.d.list(), k)
	l, _, err := c.get(ctx, key)
	if err != nil {
		return err
	}
	c.validate[key] = true
	if l != "" {
		l += ","
	}
	l += strconv.FormatInt(e, 10)
	return c.put(ctx, key, &l)
}

func (c *etcdConn) ReadList(ctx context.Context, k int64) ([]int64, error) {
	l, ok, err := c.get(ctx, etcdKey(c.d.list(), k))
	if err != nil || !ok || l == "" {
		return nil, err
	}
	return parseList(l)
}

// CompareAndSet reads k and, when it holds old, writes new; the key is
// validated at commit at every level (an etcd compare on its version).
func (c *etcdConn) CompareAndSet(ctx context.Context, k, old, new int64) (bool, error) {
	ok, err := compareAndSet(ctx, c, k, old, new)
	if ok {
		c.validate[etcdKey(c.d.prefix(), k)] = true
	}
	return ok, err
}

// InsertIfAbsent reads k and, when absent, writes v; validated as
// CompareAndSet.
func (c *etcdConn) InsertIfAbsent(ctx context.Context, k, v int64) (bool, error) {
	ok, err := insertIfAbsent(ctx, c, k, v)
	if ok {
		c.validate[etcdKey(c.d.prefix(), k)] = true
	}
	return ok, err
}

// Commit sends one Txn: if every validated key still has the mod
// revision the transaction saw (0: still absent), then the buffered
// writes. A transaction that wrote nothing and validates nothing commits
// without a request.
func (c *etcdConn) Commit(ctx context.Context) error {
	if len(c.writes) == 0 && len(c.validate) == 0 {
		return nil
	}
	var cmps []clientv3.Cmp
	for key := range c.validate {
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(key), "=", c.seen[key]))
	}
	var ops []clientv3.Op
	for _, key := range c.order {
		if v := c.writes[key]; v != nil {
			ops = append(ops, clientv3.OpPut(key, *v))
		} else {
			ops = append(ops, clientv3.OpDelete(key))
		}
	}
	resp, err := c.c.Txn(ctx).If(cmps...).Then(ops...).Commit()
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		return errConflict
	}
	return nil
}

// Rollback drops the buffered writes.
func (c *etcdConn) Rollback(context.Context) error {
	c.writes, c.order = map[string]*string{}, nil
	return nil
}

func (c *etcdConn) Close() error   { return c.c.Close() }
func (c *etcdConn) Discard() error { return c.c.Close() }
