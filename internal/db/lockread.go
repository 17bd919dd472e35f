package db

import "context"

// LockingReader is a Conn that can read a key as a locking read, SELECT …
// FOR UPDATE: the read returns the latest committed version (InnoDB at
// REPEATABLE READ) or the snapshot's, failing on a concurrent update
// (PostgreSQL), and locks the row until the transaction ends.
type LockingReader interface {
	// ReadLocked is Read as a locking read.
	ReadLocked(ctx context.Context, k int64) ([]int64, error)
}

// ReadLocked runs the point read with FOR UPDATE (a plain read on SQLite,
// where the transaction already holds the database's write lock).
func (c *sqlConn) ReadLocked(ctx context.Context, k int64) ([]int64, error) {
	return c.readWith(ctx, c.d.read+c.d.forUpdate, k)
}
