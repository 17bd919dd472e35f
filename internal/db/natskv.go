package db

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// natsKVAddr is a parsed nats-kv:// address.
type natsKVAddr struct {
	// servers are the NATS servers' URLs, which a client tries in turn.
	servers []string
	// replicas is the bucket's number of replicas when Reset creates it.
	replicas int
	// leaderReads turns the bucket's direct gets off (AllowDirect false):
	// every read is then answered by the stream's leader, rather than by
	// any replica (the KV default, which may answer from a replica that
	// is behind).
	leaderReads bool
}

// parseNatsKV reads nats-kv://HOST:PORT[,HOST:PORT…][?replicas=N][&reads=direct|leader].
func parseNatsKV(addr, rest string) (Target, error) {
	want := "want nats-kv://host:port[,host:port…][?replicas=N&reads=direct|leader]"
	u, err := url.Parse("nats-kv:" + rest)
	if err != nil || u.Host == "" || !strings.HasPrefix(rest, "//") {
		return Target{}, fmt.Errorf("database address %q: %s", addr, want)
	}
	if u.User != nil || u.Fragment != "" || (u.Path != "" && u.Path != "/") {
		return Target{}, fmt.Errorf("database address %q: a NATS KV address takes no user, path or fragment: %s", addr, want)
	}
	a := &natsKVAddr{replicas: 1}
	for s := range strings.SplitSeq(u.Host, ",") {
		host, port, ok := strings.Cut(s, ":")
		if !ok || host == "" || port == "" {
			return Target{}, fmt.Errorf("database address %q: server %q is not host:port", addr, s)
		}
		a.servers = append(a.servers, "nats://"+s)
	}
	q := u.Query()
	for k := range q {
		if k != "replicas" && k != "reads" {
			return Target{}, fmt.Errorf("database address %q: unknown option %q: %s", addr, k, want)
		}
	}
	if r := q.Get("replicas"); r != "" {
		n, err := strconv.Atoi(r)
		if err != nil || n < 1 || n > 5 {
			return Target{}, fmt.Errorf("database address %q: replicas=%s: want 1 to 5 (JetStream's limit)", addr, r)
		}
		a.replicas = n
	}
	switch r := q.Get("reads"); r {
	case "", "direct":
	case "leader":
		a.leaderReads = true
	default:
		return Target{}, fmt.Errorf("database address %q: reads=%s: want direct or leader", addr, r)
	}
	display := "nats-kv://" + u.Host + "?replicas=" + strconv.Itoa(a.replicas)
	if a.leaderReads {
		display += "&reads=leader"
	}
	return Target{Kind: NatsKV, Display: display, natsKV: a}, nil
}

// natsKVDB is a JetStream key-value bucket named after the table: the
// registers are its keys v.K, the lists its keys l.K (elements
// comma-separated). Each transaction is one key's read-modify-write.
type natsKVDB struct {
	t     Target
	table string
	// admin is the connection Reset, Drop and Version use.
	admin *nats.Conn
	js    jetstream.JetStream
}

func openNatsKV(ctx context.Context, t Target, table string) (Database, error) {
	d := &natsKVDB{t: t, table: table}
	nc, err := d.connect()
	if err != nil {
		return nil, fmt.Errorf("cannot reach %s: %v", t.Display, err)
	}
	d.admin = nc
	if d.js, err = jetstream.New(nc); err != nil {
		nc.Close()
		return nil, err
	}
	if _, err := d.js.AccountInfo(ctx); err != nil {
		nc.Close()
		return nil, fmt.Errorf("%s: JetStream does not answer: %v", t.Display, err)
	}
	return d, nil
}

// connect opens a NATS connection to the address's servers. It does not
// reconnect on its own: a session whose connection broke is given a new
// one by the runner, which records the loss.
func (d *natsKVDB) connect() (*nats.Conn, error) {
	return nats.Connect(strings.Join(d.t.natsKV.servers, ","), nats.Name("isoscope"), nats.Timeout(d.t.dialTimeout()),
		nats.NoReconnect(), nats.DontRandomize())
}

func (d *natsKVDB) Kind() Kind    { return NatsKV }
func (d *natsKVDB) Table() string { return d.table }

// Version is the version of the server the admin connection reached.
func (d *natsKVDB) Version(context.Context) (string, error) {
	if !d.admin.IsConnected() {
		return "", errors.New("not connected")
	}
	return "NATS " + d.admin.ConnectedServerVersion() + " (JetStream KV)", nil
}

// Supports: serializable only. A transaction is one key's
// read-modify-write, committed by a compare-and-set on the key's
// revision, which JetStream claims is linearizable; the other levels
// would promise nothing more of it.
func (d *natsKVDB) Supports(iso Isolation) error {
	if iso != Serializable {
		return fmt.Errorf("nats-kv: only serializable is offered (each transaction is one key's compare-and-set by revision), not %s", iso)
	}
	return nil
}

// Reset deletes the table's bucket, if isoscope made it, and creates it
// again empty with the address's replicas, file storage and one
// revision kept per key. A new bucket of several replicas may wait for
// JetStream to know its servers: creating it is tried for at most 30 s.
func (d *natsKVDB) Reset(ctx context.Context) error {
	if err := d.Drop(ctx); err != nil {
		return err
	}
	cfg := jetstream.KeyValueConfig{Bucket: d.table, Description: TableMark, History: 1,
		Replicas: d.t.natsKV.replicas, Storage: jetstream.FileStorage}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := d.js.CreateKeyValue(ctx, cfg)
		if err == nil {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("creating the KV bucket %s (%d replicas): %v", d.table, cfg.Replicas, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	if d.t.natsKV.leaderReads {
		s, err := d.js.Stream(ctx, "KV_"+d.table)
		if err != nil {
			return err
		}
		sc := s.CachedInfo().Config
		sc.AllowDirect = false
		if _, err := d.js.UpdateStream(ctx, sc); err != nil {
			return fmt.Errorf("turning direct gets off on the KV bucket %s: %v", d.table, err)
		}
	}
	return nil
}

// Drop deletes the table's bucket, when it exists and isoscope made it
// (its description is TableMark).
func (d *natsKVDB) Drop(ctx context.Context) error {
	kv, err := d.js.KeyValue(ctx, d.table)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("looking up the KV bucket %s: %v", d.table, err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		return err
	}
	if st.Config().Description != TableMark {
		return &NotOursError{Table: d.table, Where: d.t.Display}
	}
	if err := d.js.DeleteKeyValue(ctx, d.table); err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) {
		return fmt.Errorf("deleting the KV bucket %s: %v", d.table, err)
	}
	return nil
}

// Connect opens a NATS connection of the session's own and binds the
// bucket (which asks the stream's leader for its configuration).
func (d *natsKVDB) Connect(ctx context.Context) (Conn, error) {
	nc, err := d.connect()
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	kv, err := js.KeyValue(ctx, d.table)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return &natsKVConn{nc: nc, kv: kv}, nil
}

// errNatsConflict is the answer to a compare-and-set whose revision is no
// longer the key's: another transaction wrote the key after this one
// read it.
var errNatsConflict = errors.New("conflict: the key changed after the transaction read it (wrong last sequence)")

// errNatsMultiKey refuses a transaction's second key: a KV bucket has no
// transactions over several keys.
var errNatsMultiKey = errors.New("nats-kv: a transaction reads and writes one key (JetStream KV has no transactions over several keys): use the lwt workload, or list-append with --ops 1")

// isWrongLastSequence says err is JetStream's answer to a compare-and-set
// on a stale revision (10071; 10164 on a replicated stream), or the
// client's ErrKeyExists for a Create of a present key.
func isWrongLastSequence(err error) bool {
	var api *jetstream.APIError
	if errors.As(err, &api) {
		return api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence || api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
	}
	return errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch)
}

// Classify: a stale revision aborts; an API error JetStream answered
// fails, but for "temporarily unavailable" (503: the stream or the meta
// group has no leader, as during a fault), which loses the connection as
// a timeout, a closed connection or no responders do: the session
// reconnects with back-off, and a COMMIT that got it is unknown.
func (d *natsKVDB) Classify(err error) (ErrorClass, string) {
	var api *jetstream.APIError
	switch {
	case errors.Is(err, errNatsConflict) || isWrongLastSequence(err):
		return Aborted, "conflict (wrong last sequence)"
	case errors.Is(err, errNatsMultiKey):
		return Failed, "a second key (no multi-key transactions)"
	case errors.Is(err, context.Canceled):
		return Interrupted, "interrupted"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		return Disconnected, "no answer (timeout)"
	case errors.As(err, &api) && api.Code == 503:
		return Disconnected, fmt.Sprintf("unavailable: %s (%d)", api.Description, api.ErrorCode)
	case errors.As(err, &api):
		return Failed, fmt.Sprintf("%s (%d)", api.Description, api.ErrorCode)
	}
	return Disconnected, "connection lost: " + err.Error()
}

// Answered: JetStream's API errors are its answers; a timeout or a lost
// connection is not.
func (d *natsKVDB) Answered(err error) bool {
	class, _ := d.Classify(err)
	return class == Aborted || class == Failed
}

func (d *natsKVDB) Close() error { d.admin.Close(); return nil }

// natsKVConn is one session: its own NATS connection, and the
// transaction in progress, which touches one key: the revision it read
// (0: absent) and the write it buffers.
type natsKVConn struct {
	nc *nats.Conn
	kv jetstream.KeyValue
	// key is the transaction's key ("" until it touches one); read says
	// it was read, at revision rev (0: absent).
	key  string
	read bool
	rev  uint64
	// write is the buffered value (when written), or a delete (deleted).
	write            *string
	written, deleted bool
}

func (c *natsKVConn) Begin(context.Context, Isolation) error {
	c.key, c.read, c.rev, c.write, c.written, c.deleted = "", false, 0, nil, false, false
	return nil
}

// touch makes key the transaction's key, refusing a second one.
func (c *natsKVConn) touch(key string) error {
	if c.key != "" && c.key != key {
		return errNatsMultiKey
	}
	c.key = key
	return nil
}

// get reads key: the transaction's own write if it made one, else the
// bucket's latest revision, which it remembers for the compare-and-set
// at commit.
func (c *natsKVConn) get(ctx context.Context, key string) (string, bool, error) {
	if err := c.touch(key); err != nil {
		return "", false, err
	}
	if c.written {
		if c.deleted {
			return "", false, nil
		}
		return *c.write, true, nil
	}
	e, err := c.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		if !c.read {
			c.read, c.rev = true, 0
		}
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	if !c.read {
		c.read, c.rev = true, e.Revision()
	}
	return string(e.Value()), true, nil
}

// put buffers a write of key (nil: a delete).
func (c *natsKVConn) put(key string, v *string) error {
	if err := c.touch(key); err != nil {
		return err
	}
	c.write, c.written, c.deleted = v, true, v == nil
	return nil
}

// natsKey encodes k under prefix ("v." for registers, "l." for lists).
func natsKey(prefix string, k int64) string { return prefix + strconv.FormatInt(k, 10) }

func (c *natsKVConn) Read(ctx context.Context, k int64) ([]int64, error) {
	v, ok, err := c.get(ctx, natsKey("v.", k))
	if err != nil || !ok {
		return nil, err
	}
	return parseRegister("nats-kv", k, v)
}

func (c *natsKVConn) Write(_ context.Context, k, v int64) error {
	s := strconv.FormatInt(v, 10)
	return c.put(natsKey("v.", k), &s)
}

// Delete reads k and, when present, buffers its delete.
func (c *natsKVConn) Delete(ctx context.Context, k int64) (bool, error) {
	key := natsKey("v.", k)
	_, found, err := c.get(ctx, key)
	if err != nil || !found {
		return false, err
	}
	return true, c.put(key, nil)
}

// Scan is not offered: a transaction touches one key.
func (c *natsKVConn) Scan(context.Context, int64, int64, int) ([]KV, error) {
	return nil, errNatsMultiKey
}

// Append reads the list and buffers it one element longer: the commit's
// compare-and-set on the revision read makes it a CAS loop, retried by
// the runner when another append came first.
func (c *natsKVConn) Append(ctx context.Context, k, e int64) error {
	key := natsKey("l.", k)
	l, _, err := c.get(ctx, key)
	if err != nil {
		return err
	}
	if l != "" {
		l += ","
	}
	l += strconv.FormatInt(e, 10)
	return c.put(key, &l)
}

func (c *natsKVConn) ReadList(ctx context.Context, k int64) ([]int64, error) {
	l, ok, err := c.get(ctx, natsKey("l.", k))
	if err != nil || !ok || l == "" {
		return nil, err
	}
	return parseList(l)
}

// CompareAndSet reads k and, when it holds old, buffers new: the commit
// sets it only if the key's revision is still the one read.
func (c *natsKVConn) CompareAndSet(ctx context.Context, k, old, new int64) (bool, error) {
	return compareAndSet(ctx, c, k, old, new)
}

// InsertIfAbsent reads k and, when absent, buffers v: the commit creates
// the key only if it is still absent.
func (c *natsKVConn) InsertIfAbsent(ctx context.Context, k, v int64) (bool, error) {
	return insertIfAbsent(ctx, c, k, v)
}

// Commit writes the buffered write: Update on the revision read, Create
// when the key was read absent, Put when it was not read (a blind
// write); a delete is Delete on the revision read. A transaction that
// only read commits without a request: its read was its one access.
func (c *natsKVConn) Commit(ctx context.Context) error {
	if !c.written {
		return nil
	}
	var err error
	switch {
	case c.deleted:
		err = c.kv.Delete(ctx, c.key, jetstream.LastRevision(c.rev))
	case !c.read:
		_, err = c.kv.Put(ctx, c.key, []byte(*c.write))
	case c.rev == 0:
		_, err = c.kv.Create(ctx, c.key, []byte(*c.write))
	default:
		_, err = c.kv.Update(ctx, c.key, []byte(*c.write), c.rev)
	}
	c.written = false
	if err != nil && isWrongLastSequence(err) {
		return fmt.Errorf("%w: %v", errNatsConflict, err)
	}
	return err
}

// Rollback drops the buffered write.
func (c *natsKVConn) Rollback(context.Context) error {
	c.write, c.written, c.deleted = nil, false, false
	return nil
}

func (c *natsKVConn) Close() error   { c.nc.Close(); return nil }
func (c *natsKVConn) Discard() error { c.nc.Close(); return nil }
