package db_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/db"
	"github.com/isoscope/isoscope/internal/db/dbtest"
)

// databases returns every database the tests reach, by name.
func databases(t *testing.T) map[string]string {
	return map[string]string{
		"sqlite-memory": "sqlite::memory:",
		"sqlite-file":   "sqlite://" + filepath.Join(t.TempDir(), "conn.db"),
		"postgres":      "",
		"mysql":         "",
	}
}

func address(t *testing.T, name, addr string) string {
	switch name {
	case "postgres":
		return dbtest.Postgres(t)
	case "mysql":
		return dbtest.MySQL(t)
	}
	return addr
}

// TestConnSemantics runs every operation of the interface on every
// database and checks what it returns.
func TestConnSemantics(t *testing.T) {
	for name, addr := range databases(t) {
		t.Run(name, func(t *testing.T) {
			d := dbtest.Open(t, address(t, name, addr))
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if v, err := d.Version(ctx); err != nil || !strings.ContainsAny(v, "0123456789") {
				t.Errorf("Version = %q, %v", v, err)
			}
			c, err := d.Connect(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			must(c.Begin(ctx, db.Serializable))
			if _, ok, err := c.Read(ctx, 1); ok || err != nil {
				t.Fatalf("Read of an absent key: ok=%v err=%v", ok, err)
			}
			must(c.Write(ctx, 1, 10))
			must(c.Write(ctx, 2, 20))
			must(c.Write(ctx, 3, 30))
			must(c.Write(ctx, 2, 21))
			if v, ok, err := c.Read(ctx, 2); v != 21 || !ok || err != nil {
				t.Fatalf("Read(2) = %d, %v, %v", v, ok, err)
			}
			must(c.Commit(ctx))

			must(c.Begin(ctx, db.Serializable))
			kvs, err := c.Scan(ctx, 0, 10, 0)
			must(err)
			if want := []db.KV{{1, 10}, {2, 21}, {3, 30}}; !reflect.DeepEqual(kvs, want) {
				t.Errorf("Scan = %v, want %v", kvs, want)
			}
			kvs, err = c.Scan(ctx, 2, 10, 1)
			must(err)
			if want := []db.KV{{2, 21}}; !reflect.DeepEqual(kvs, want) {
				t.Errorf("Scan with limit = %v, want %v", kvs, want)
			}
			must(c.Delete(ctx, 2))
			must(c.Delete(ctx, 99))
			kvs, err = c.Scan(ctx, 1, 3, 0)
			must(err)
			if want := []db.KV{{1, 10}}; !reflect.DeepEqual(kvs, want) {
				t.Errorf("Scan after delete = %v, want %v", kvs, want)
			}
			must(c.Append(ctx, 5, 7))
			must(c.Append(ctx, 5, 8))
			l, err := c.ReadList(ctx, 5)
			must(err)
			if !reflect.DeepEqual(l, []int64{7, 8}) {
				t.Errorf("ReadList = %v", l)
			}
			if l, err := c.ReadList(ctx, 6); l != nil || err != nil {
				t.Errorf("ReadList of an absent key = %v, %v", l, err)
			}
			if ok, err := c.CompareAndSet(ctx, 1, 10, 11); !ok || err != nil {
				t.Errorf("CAS 10→11 = %v, %v", ok, err)
			}
			if ok, err := c.CompareAndSet(ctx, 1, 10, 12); ok || err != nil {
				t.Errorf("CAS 10→12 after 11 = %v, %v", ok, err)
			}
			if ok, err := c.InsertIfAbsent(ctx, 7, 70); !ok || err != nil {
				t.Errorf("insert of an absent key = %v, %v", ok, err)
			}
			if ok, err := c.InsertIfAbsent(ctx, 7, 71); ok || err != nil {
				t.Errorf("insert of a present key = %v, %v", ok, err)
			}
			must(c.Commit(ctx))

			must(c.Begin(ctx, db.Serializable))
			must(c.Write(ctx, 9, 90))
			must(c.Rollback(ctx))
			must(c.Begin(ctx, db.Serializable))
			if _, ok, err := c.Read(ctx, 9); ok || err != nil {
				t.Errorf("a rolled back write is visible: %v, %v", ok, err)
			}
			if v, _, _ := c.Read(ctx, 1); v != 11 {
				t.Errorf("Read(1) = %d after CAS, want 11", v)
			}
			must(c.Commit(ctx))
			for iso := db.Serializable; iso <= db.ReadUncommitted; iso++ {
				err := d.Supports(iso)
				if (err == nil) != (d.Kind() != db.SQLite || iso == db.Serializable) {
					t.Errorf("Supports(%s) = %v", iso, err)
				}
				if err == nil {
					must(c.Begin(ctx, iso))
					must(c.Rollback(ctx))
				} else if c.Begin(ctx, iso) == nil {
					t.Errorf("Begin(%s) succeeded where unsupported", iso)
				}
			}
		})
	}
}

// TestOpenRejects checks bad tables and unreachable servers.
func TestOpenRejects(t *testing.T) {
	ctx := context.Background()
	if _, err := db.Open(ctx, "sqlite::memory:", "x; DROP TABLE y"); err == nil {
		t.Error("a bad table name was accepted")
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := db.Open(ctx, "postgres://nobody@127.0.0.1:1/none?connect_timeout=2", ""); err == nil || !strings.Contains(err.Error(), "cannot reach") {
		t.Errorf("unreachable server: %v", err)
	}
}

// TestClassifyConflicts runs a write skew under SERIALIZABLE: PostgreSQL
// aborts one transaction with a serialization failure, MariaDB with a
// deadlock; both must be classified aborted.
func TestClassifyConflicts(t *testing.T) {
	for _, name := range []string{"postgres", "mysql"} {
		t.Run(name, func(t *testing.T) {
			d := dbtest.Open(t, address(t, name, ""))
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			a, err := d.Connect(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			b, err := d.Connect(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			for _, c := range []db.Conn{a, b} {
				if err := c.Begin(ctx, db.Serializable); err != nil {
					t.Fatal(err)
				}
				for k := int64(1); k <= 2; k++ {
					if _, _, err := c.Read(ctx, k); err != nil {
						t.Fatal(err)
					}
				}
			}
			// A write skew: each writes the key the other read.
			done := make(chan error, 2)
			for k, c := range []db.Conn{a, b} {
				go func() {
					err := c.Write(ctx, int64(k+1), 1)
					if err == nil {
						err = c.Commit(ctx)
					}
					done <- err
				}()
			}
			err, errB := <-done, <-done
			// Exactly one of the two must fail, and be classified aborted.
			if (err == nil) == (errB == nil) {
				t.Fatalf("%v, %v: want exactly one failure", err, errB)
			}
			if err == nil {
				err = errB
			}
			class, why := d.Classify(err)
			if class != db.Aborted || !strings.Contains(why, "(40001)") && !strings.Contains(why, "(1213)") {
				t.Errorf("Classify(%v) = %s, %q", err, class, why)
			}
			_ = a.Rollback(ctx)
			_ = b.Rollback(ctx)
		})
	}
}

// TestClassifyDisconnect terminates a PostgreSQL session's backend and
// checks that its next statement is classified as a lost connection.
func TestClassifyDisconnect(t *testing.T) {
	addr := dbtest.Postgres(t)
	d := dbtest.Open(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := d.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Begin(ctx, db.Serializable); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Read(ctx, 1); err != nil {
		t.Fatal(err)
	}
	admin, err := sql.Open("pgx", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var n int
	if err := admin.QueryRowContext(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE pid <> pg_backend_pid() AND query LIKE '%'||$1||'%'`, d.Table()).Scan(&n); err != nil || n != 1 {
		t.Fatalf("terminated %d backends: %v", n, err)
	}
	err = c.Commit(ctx)
	if class, why := d.Classify(err); class != db.Disconnected {
		t.Errorf("Classify(%v) = %s, %q; want disconnected", err, class, why)
	}
	_ = c.Discard()
	// The database is still there for new connections.
	c, err = d.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Begin(ctx, db.Serializable); err != nil {
		t.Fatalf("a new connection after the old one was terminated: %v", err)
	}
	_ = c.Rollback(ctx)
}
