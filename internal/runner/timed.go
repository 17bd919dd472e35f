package runner

import (
	"context"
	"errors"

	"github.com/isoscope/isoscope/internal/db"
)

// timedConn is a session's connection with the run's deadline on every
// request: a statement, a COMMIT or a ROLLBACK that gets no answer within
// it fails, and the session takes the connection for lost. It also tells
// the session when the database answered, which ends an outage.
type timedConn struct {
	db.Conn
	s *session
}

// timed runs f with the run's statement deadline and notes how it went.
func timed[T any](c *timedConn, ctx context.Context, f func(context.Context) (T, error)) (T, error) {
	wait := c.s.r.wait
	if wait <= 0 {
		v, err := f(ctx)
		c.s.note(ctx, nil, err)
		return v, err
	}
	sctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	v, err := f(sctx)
	c.s.note(ctx, sctx, err)
	return v, err
}

// timedErr is timed for a request that returns only an error.
func timedErr(c *timedConn, ctx context.Context, f func(context.Context) error) error {
	_, err := timed(c, ctx, func(ctx context.Context) (struct{}, error) { return struct{}{}, f(ctx) })
	return err
}

// note records how a request went: an answer (a result, or an error the
// server reported) ends the session's outage; a deadline that passed
// while the run went on marks the connection as not answering.
func (s *session) note(ctx, sctx context.Context, err error) {
	switch {
	case err == nil || s.r.answered(err):
		s.answered()
	case sctx != nil && ctx.Err() == nil && errors.Is(sctx.Err(), context.DeadlineExceeded):
		s.timedOut = true
	}
}

func (c *timedConn) Begin(ctx context.Context, iso db.Isolation) error {
	return timedErr(c, ctx, func(ctx context.Context) error { return c.Conn.Begin(ctx, iso) })
}

func (c *timedConn) Read(ctx context.Context, k int64) ([]int64, error) {
	return timed(c, ctx, func(ctx context.Context) ([]int64, error) { return c.Conn.Read(ctx, k) })
}

func (c *timedConn) Write(ctx context.Context, k, v int64) error {
	return timedErr(c, ctx, func(ctx context.Context) error { return c.Conn.Write(ctx, k, v) })
}

func (c *timedConn) Delete(ctx context.Context, k int64) (bool, error) {
	return timed(c, ctx, func(ctx context.Context) (bool, error) { return c.Conn.Delete(ctx, k) })
}

func (c *timedConn) Scan(ctx context.Context, lo, hi int64, limit int) ([]db.KV, error) {
	return timed(c, ctx, func(ctx context.Context) ([]db.KV, error) { return c.Conn.Scan(ctx, lo, hi, limit) })
}

func (c *timedConn) Append(ctx context.Context, k, e int64) error {
	return timedErr(c, ctx, func(ctx context.Context) error { return c.Conn.Append(ctx, k, e) })
}

func (c *timedConn) ReadList(ctx context.Context, k int64) ([]int64, error) {
	return timed(c, ctx, func(ctx context.Context) ([]int64, error) { return c.Conn.ReadList(ctx, k) })
}

func (c *timedConn) CompareAndSet(ctx context.Context, k, old, new int64) (bool, error) {
	return timed(c, ctx, func(ctx context.Context) (bool, error) { return c.Conn.CompareAndSet(ctx, k, old, new) })
}

func (c *timedConn) InsertIfAbsent(ctx context.Context, k, v int64) (bool, error) {
	return timed(c, ctx, func(ctx context.Context) (bool, error) { return c.Conn.InsertIfAbsent(ctx, k, v) })
}

func (c *timedConn) Commit(ctx context.Context) error {
	return timedErr(c, ctx, c.Conn.Commit)
}

func (c *timedConn) Rollback(ctx context.Context) error {
	return timedErr(c, ctx, c.Conn.Rollback)
}

// ReadLocked is the connection's locking read, where it has one.
func (c *timedConn) ReadLocked(ctx context.Context, k int64) ([]int64, error) {
	lr, ok := c.Conn.(db.LockingReader)
	if !ok {
		return nil, errNoLockingReads
	}
	return timed(c, ctx, func(ctx context.Context) ([]int64, error) { return lr.ReadLocked(ctx, k) })
}

// Timestamps are the connection's, where it tells them.
func (c *timedConn) Timestamps() (start, commit uint64, ok bool) {
	if ts, isTS := c.Conn.(db.Timestamper); isTS {
		return ts.Timestamps()
	}
	return 0, 0, false
}
