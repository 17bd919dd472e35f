package db

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// ReadRouter is a Conn that can send a transaction that only reads to
// another node than one that writes (a hot standby): the runner tells it,
// before Begin, whether the next transaction writes.
type ReadRouter interface {
	// RouteReadOnly says whether the next transaction only reads.
	RouteReadOnly(readOnly bool)
}

// Multi is one database served by several nodes of a replicated cluster
// (Galera's masters, a PostgreSQL primary and its standbys, or any
// cluster given by one address per node): each connection goes to the
// next node in turn, so that sessions spread across the nodes, and a
// session that reconnects after a fault moves on to another node. With
// readers (hot standbys, which refuse writes), every connection is a
// pair: transactions that only read go to a reader, the others to a
// writer node.
type Multi struct {
	writers, readers []Database
	next, nextRead   atomic.Uint64
	// SettleFor bounds how long Reset waits for the table to appear on
	// every node.
	SettleFor time.Duration
	// Hop, when positive, moves each session to the next node (of the
	// writers) every Hop transactions.
	Hop int
}

// NewMulti makes one database of nodes (which take writes) and readers
// (which only take reads; none for a multi-master cluster). They must be
// of one kind and share the table.
func NewMulti(writers, readers []Database) (*Multi, error) {
	if len(writers) == 0 {
		return nil, errors.New("a cluster needs at least one node that takes writes")
	}
	for _, d := range append(writers[1:], readers...) {
		if d.Kind() != writers[0].Kind() {
			return nil, fmt.Errorf("the cluster's nodes are of different kinds: %s and %s", writers[0].Kind(), d.Kind())
		}
	}
	return &Multi{writers: writers, readers: readers, SettleFor: 30 * time.Second}, nil
}

// Nodes is the number of nodes, writers and readers.
func (m *Multi) Nodes() int { return len(m.writers) + len(m.readers) }

// Kind is the nodes' kind.
func (m *Multi) Kind() Kind { return m.writers[0].Kind() }

// Table is the nodes' table.
func (m *Multi) Table() string { return m.writers[0].Table() }

// Version is the first node's version.
func (m *Multi) Version(ctx context.Context) (string, error) { return m.writers[0].Version(ctx) }

// Supports asks the first node; readers run a serializable transaction
// at repeatable read (see Connect).
func (m *Multi) Supports(iso Isolation) error { return m.writers[0].Supports(iso) }

// Lock locks the table on the first node, the one Reset resets it on:
// every node serves one database (a lease row replicates; a PostgreSQL
// primary's advisory lock covers its standbys, which take no writes).
func (m *Multi) Lock(ctx context.Context) (*TableLock, error) { return m.writers[0].Lock(ctx) }

// Reset resets the table on the first node, which replicates it, and
// waits (at most SettleFor) until every other node shows the empty table.
func (m *Multi) Reset(ctx context.Context) error {
	if err := m.writers[0].Reset(ctx); err != nil {
		return err
	}
	deadline := time.Now().Add(m.SettleFor)
	for _, d := range append(m.writers[1:], m.readers...) {
		for {
			err := probeTable(ctx, d)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("the table did not reach every node within %s: %v", m.SettleFor, err)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

// probeTable reads a key of the table on d, in a transaction that only
// reads.
func probeTable(ctx context.Context, d Database) error {
	c, err := d.Connect(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	return probe(ctx, c, probeLevel(d))
}

// probeLevel is the level a probe runs at: read committed, or
// serializable where that is all the database offers (SQLite).
func probeLevel(d Database) Isolation {
	if d.Supports(ReadCommitted) == nil {
		return ReadCommitted
	}
	return Serializable
}

// probe reads a key of the table on c, in a transaction that only reads.
func probe(ctx context.Context, c Conn, iso Isolation) error {
	if err := c.Begin(ctx, iso); err != nil {
		return err
	}
	if _, err := c.Read(ctx, 0); err != nil {
		_ = c.Rollback(ctx)
		return err
	}
	return c.Rollback(ctx)
}

// Drop drops the table on the first node.
func (m *Multi) Drop(ctx context.Context) error { return m.writers[0].Drop(ctx) }

// Connect opens a connection on the next node in turn that answers; with
// readers, also on the next reader, lazily, at the first transaction that
// only reads. With Hop set, the connection moves on to the next node
// every Hop transactions.
func (m *Multi) Connect(ctx context.Context) (Conn, error) {
	w, err := connectNext(ctx, m.writers, &m.next)
	if err != nil {
		return nil, err
	}
	if m.Hop > 0 && len(m.writers) > 1 {
		w = &hopConn{Conn: w, m: m}
	}
	if len(m.readers) == 0 {
		return w, nil
	}
	return &routedConn{m: m, w: w}, nil
}

// hopConn is a session's connection that moves to the next node every
// Hop transactions: the session goes on, in the same session order, on
// another node (what a client behind a load balancer sees).
type hopConn struct {
	Conn
	m    *Multi
	txns int
}

// Begin first moves to the next node when the session has run Hop
// transactions on this one; a node that does not answer is skipped.
func (c *hopConn) Begin(ctx context.Context, iso Isolation) error {
	if c.txns > 0 && c.txns%c.m.Hop == 0 {
		next, err := connectNext(ctx, c.m.writers, &c.m.next)
		if err != nil {
			return err
		}
		_ = c.Conn.Close()
		c.Conn = next
	}
	c.txns++
	return c.Conn.Begin(ctx, iso)
}

// ReadLocked is the node's locking read.
func (c *hopConn) ReadLocked(ctx context.Context, k int64) ([]int64, error) {
	lr, ok := c.Conn.(LockingReader)
	if !ok {
		return nil, errors.New("this database has no locking reads")
	}
	return lr.ReadLocked(ctx, k)
}

// connectNext connects to the next node of nodes in turn, trying the
// others when it does not answer; the error is the last node's. With
// several nodes, a node is taken only once it serves a read of the table
// (a Galera node outside the primary component accepts connections but
// refuses every query): when none does, the error goes back to the
// runner, which waits before it tries again.
func connectNext(ctx context.Context, nodes []Database, next *atomic.Uint64) (Conn, error) {
	start := next.Add(1) - 1
	var err error
	for j := range uint64(len(nodes)) {
		var c Conn
		d := nodes[(start+j)%uint64(len(nodes))]
		if c, err = d.Connect(ctx); err == nil {
			if len(nodes) == 1 {
				return c, nil
			}
			if err = probe(ctx, c, probeLevel(d)); err == nil {
				return c, nil
			}
			_ = c.Discard()
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, err
}

// Classify is the first node's.
func (m *Multi) Classify(err error) (ErrorClass, string) { return m.writers[0].Classify(err) }

// Answered asks the first node, when it tells.
func (m *Multi) Answered(err error) bool {
	if a, ok := m.writers[0].(Answerer); ok {
		return a.Answered(err)
	}
	class, _ := m.Classify(err)
	return class == Failed || class == Aborted
}

// Close closes every node's connections.
func (m *Multi) Close() error {
	var errs []error
	for _, d := range append(append([]Database{}, m.writers...), m.readers...) {
		errs = append(errs, d.Close())
	}
	return errors.Join(errs...)
}

// routedConn is a session's pair of connections: to a writer node, and
// (once needed) to a reader. Each transaction runs wholly on one of them.
type routedConn struct {
	m        *Multi
	w, r     Conn
	readOnly bool
	// cur is the connection of the transaction in progress.
	cur Conn
}

// RouteReadOnly says whether the next transaction only reads.
func (c *routedConn) RouteReadOnly(readOnly bool) { c.readOnly = readOnly }

// Begin starts the transaction on the reader when it only reads (a
// serializable one at repeatable read on PostgreSQL, whose hot standby
// refuses serializable transactions), otherwise on the writer.
func (c *routedConn) Begin(ctx context.Context, iso Isolation) error {
	if !c.readOnly {
		c.cur = c.w
		return c.w.Begin(ctx, iso)
	}
	if c.r == nil {
		r, err := connectNext(ctx, c.m.readers, &c.m.nextRead)
		if err != nil {
			return err
		}
		c.r = r
	}
	c.cur = c.r
	if iso == Serializable && c.m.readers[0].Kind() == Postgres {
		iso = RepeatableRead
	}
	return c.r.Begin(ctx, iso)
}

func (c *routedConn) conn() Conn {
	if c.cur == nil {
		return c.w
	}
	return c.cur
}

func (c *routedConn) Read(ctx context.Context, k int64) ([]int64, error) {
	return c.conn().Read(ctx, k)
}

// ReadLocked is a locking read on the transaction's node.
func (c *routedConn) ReadLocked(ctx context.Context, k int64) ([]int64, error) {
	lr, ok := c.conn().(LockingReader)
	if !ok {
		return nil, errors.New("this database has no locking reads")
	}
	return lr.ReadLocked(ctx, k)
}

func (c *routedConn) Write(ctx context.Context, k, v int64) error { return c.conn().Write(ctx, k, v) }

func (c *routedConn) Delete(ctx context.Context, k int64) (bool, error) {
	return c.conn().Delete(ctx, k)
}

func (c *routedConn) Scan(ctx context.Context, lo, hi int64, limit int) ([]KV, error) {
	return c.conn().Scan(ctx, lo, hi, limit)
}

func (c *routedConn) Append(ctx context.Context, k, e int64) error {
	return c.conn().Append(ctx, k, e)
}

func (c *routedConn) ReadList(ctx context.Context, k int64) ([]int64, error) {
	return c.conn().ReadList(ctx, k)
}

func (c *routedConn) CompareAndSet(ctx context.Context, k, old, new int64) (bool, error) {
	return c.conn().CompareAndSet(ctx, k, old, new)
}

func (c *routedConn) InsertIfAbsent(ctx context.Context, k, v int64) (bool, error) {
	return c.conn().InsertIfAbsent(ctx, k, v)
}

func (c *routedConn) Commit(ctx context.Context) error { return c.conn().Commit(ctx) }

func (c *routedConn) Rollback(ctx context.Context) error { return c.conn().Rollback(ctx) }

// Close closes both connections.
func (c *routedConn) Close() error {
	err := c.w.Close()
	if c.r != nil {
		err = errors.Join(err, c.r.Close())
	}
	return err
}

// Discard discards both connections: the session reconnects both.
func (c *routedConn) Discard() error {
	err := c.w.Discard()
	if c.r != nil {
		err = errors.Join(err, c.r.Discard())
	}
	return err
}
