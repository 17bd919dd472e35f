package db

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// sqlConn is one session's connection through database/sql.
type sqlConn struct {
	c *sql.Conn
	d *dialect
	// iso is the session's isolation level as last set (MySQL sets it per
	// session); numIsolations when not yet set.
	iso Isolation
}

func (c *sqlConn) exec(ctx context.Context, q string, args ...any) error {
	_, err := c.c.ExecContext(ctx, q, args...)
	return err
}

func (c *sqlConn) Begin(ctx context.Context, iso Isolation) error {
	if iso >= numIsolations || (c.d.serializableOnly && iso != Serializable) {
		return fmt.Errorf("isolation %s is not supported here", iso)
	}
	if c.d.beginPerSession && iso != c.iso {
		if err := c.exec(ctx, "SET SESSION TRANSACTION ISOLATION LEVEL "+iso.SQL()); err != nil {
			return err
		}
		c.iso = iso
	}
	if c.d.beginWait != nil {
		return c.d.beginWait(ctx, func() error { return c.exec(ctx, c.d.begin(iso)) })
	}
	return c.exec(ctx, c.d.begin(iso))
}

func (c *sqlConn) Read(ctx context.Context, k int64) ([]int64, error) {
	return c.readWith(ctx, c.d.read, k)
}

// readWith runs a point read statement and returns the values of the rows
// it found.
func (c *sqlConn) readWith(ctx context.Context, stmt string, k int64) ([]int64, error) {
	rows, err := c.c.QueryContext(ctx, stmt, k)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var v sql.NullInt64
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		if v.Valid { // a row that only holds a list has no value
			out = append(out, v.Int64)
		}
	}
	return out, rows.Err()
}

func (c *sqlConn) Write(ctx context.Context, k, v int64) error {
	return c.exec(ctx, c.d.write, k, v)
}

func (c *sqlConn) Delete(ctx context.Context, k int64) (bool, error) {
	return c.changed(c.c.ExecContext(ctx, c.d.del, k))
}

func (c *sqlConn) Scan(ctx context.Context, lo, hi int64, limit int) ([]KV, error) {
	var rows *sql.Rows
	var err error
	if limit > 0 {
		rows, err = c.c.QueryContext(ctx, c.d.iter, lo, hi, limit)
	} else {
		rows, err = c.c.QueryContext(ctx, c.d.scan, lo, hi)
	}
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []KV
	for rows.Next() {
		var k int64
		var v sql.NullInt64
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		if v.Valid { // a row that only holds a list has no value
			out = append(out, KV{k, v.Int64})
		}
	}
	return out, rows.Err()
}

func (c *sqlConn) Append(ctx context.Context, k, e int64) error {
	return c.exec(ctx, c.d.appendList, k, strconv.FormatInt(e, 10))
}

func (c *sqlConn) ReadList(ctx context.Context, k int64) ([]int64, error) {
	var l sql.NullString
	err := c.c.QueryRowContext(ctx, c.d.readList, k).Scan(&l)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && (!l.Valid || l.String == "")) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return parseList(l.String)
}

// parseList parses a comma-separated list of integers.
// parseRegister reads the value v a key-value store holds at register k
// (decimal text); who names the store in the error.
func parseRegister(who string, k int64, v string) ([]int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%s: key %d holds %q, not a number", who, k, v)
	}
	return []int64{n}, nil
}

func parseList(s string) ([]int64, error) {
	parts := strings.Split(s, ",")
	out := make([]int64, len(parts))
	for i, p := range parts {
		n, err := strconv.ParseInt(p, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("list %q: element %d is not an integer", s, i)
		}
		out[i] = n
	}
	return out, nil
}

func (c *sqlConn) CompareAndSet(ctx context.Context, k, old, new int64) (bool, error) {
	return c.changed(c.c.ExecContext(ctx, c.d.cas, new, k, old))
}

func (c *sqlConn) InsertIfAbsent(ctx context.Context, k, v int64) (bool, error) {
	return c.changed(c.c.ExecContext(ctx, c.d.insert, k, v))
}

func (c *sqlConn) changed(res sql.Result, err error) (bool, error) {
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

func (c *sqlConn) Commit(ctx context.Context) error { return c.exec(ctx, "COMMIT") }

func (c *sqlConn) Rollback(ctx context.Context) error { return c.exec(ctx, "ROLLBACK") }

func (c *sqlConn) Close() error { return c.c.Close() }

// Discard tells database/sql that the connection is broken, so that it is
// closed rather than pooled.
func (c *sqlConn) Discard() error {
	_ = c.c.Raw(func(any) error { return driver.ErrBadConn })
	return c.c.Close()
}

// registerConn is a connection's read of a register and its write of one,
// which its commit validates against what it read.
type registerConn interface {
	Read(ctx context.Context, k int64) ([]int64, error)
	Write(ctx context.Context, k, v int64) error
}

// compareAndSet reads k through c and, when it holds old, writes new: it
// says whether it did. The key-value adapters' compare-and-set, whose
// commit sets the key only if it is still as read.
func compareAndSet(ctx context.Context, c registerConn, k, old, new int64) (bool, error) {
	vs, err := c.Read(ctx, k)
	if err != nil || len(vs) == 0 || vs[0] != old {
		return false, err
	}
	return true, c.Write(ctx, k, new)
}

// insertIfAbsent reads k through c and, when it is absent, writes v: it
// says whether it did. The key-value adapters' insert, whose commit
// creates the key only if it is still absent.
func insertIfAbsent(ctx context.Context, c registerConn, k, v int64) (bool, error) {
	vs, err := c.Read(ctx, k)
	if err != nil || len(vs) > 0 {
		return false, err
	}
	return true, c.Write(ctx, k, v)
}
