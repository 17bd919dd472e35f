package db

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

// TestLeaseLockOnMariaDB holds tables with lease rows on the test MariaDB
// (the lock of a server that refuses GET_LOCK, as Galera's does, and
// dqlite's): a second holder is refused, naming the first; a released
// lease is free again; a lease whose holder stopped renewing it (a
// crashed run) is taken over once it has run out.
func TestLeaseLockOnMariaDB(t *testing.T) {
	addr := os.Getenv("ISOSCOPE_TEST_MYSQL")
	if addr == "" {
		addr = "mysql://root@127.0.0.1:3306/test"
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var b [6]byte
	_, _ = rand.Read(b[:])
	table := "isoscope_t_" + hex.EncodeToString(b[:])
	open := func() *sqlDB {
		d, err := Open(ctx, addr, table)
		if err != nil {
			t.Fatalf("MariaDB (docs/services.md): %v", err)
		}
		t.Cleanup(func() { _ = d.Close() })
		return d.(*sqlDB)
	}
	first, second := open(), open()
	inUse := InUseError{Table: table, Where: first.display}
	l, err := first.lockLease(ctx, inUse)
	if err != nil {
		t.Fatal(err)
	}
	_, err = second.lockLease(ctx, inUse)
	var refused *InUseError
	if !errors.As(err, &refused) || !strings.Contains(refused.Holder, "isoscope pid") || !strings.Contains(err.Error(), "lease row") {
		t.Fatalf("a second lease: got %v, want a refusal naming the holder", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	l2, err := second.lockLease(ctx, inUse)
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	// A holder that crashed renews nothing: its row stays, and its lease
	// runs out (here: ran out a second ago).
	name := strings.ToLower(table) + "_crashed"
	if _, err := second.db.ExecContext(ctx, "INSERT INTO "+leaseTable+" (name, holder, expires) VALUES (?, 'a crashed run', UNIX_TIMESTAMP() - 1)", name); err != nil {
		t.Fatal(err)
	}
	crashed := &sqlDB{kind: MySQL, table: table + "_crashed", display: first.display, db: first.db, dialect: first.dialect}
	l3, err := crashed.lockLease(ctx, InUseError{Table: crashed.table})
	if err != nil {
		t.Fatalf("a lease that ran out: %v", err)
	}
	for _, l := range []*TableLock{l2, l3} {
		if err := l.Release(); err != nil {
			t.Fatal(err)
		}
	}
}
