package db_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/db"
	"github.com/isoscope/isoscope/internal/testservice"
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
		return testservice.Postgres(t)
	case "mysql":
		return testservice.MySQL(t)
	}
	return addr
}

// TestConnSemantics runs every operation of the interface on every
// database and checks what it returns.
func TestConnSemantics(t *testing.T) {
	for name, addr := range databases(t) {
		t.Run(name, func(t *testing.T) {
			d := testservice.Open(t, address(t, name, addr))
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
			if vs, err := c.Read(ctx, 1); len(vs) != 0 || err != nil {
				t.Fatalf("Read of an absent key = %v, %v", vs, err)
			}
			must(c.Write(ctx, 1, 10))
			must(c.Write(ctx, 2, 20))
			must(c.Write(ctx, 3, 30))
			must(c.Write(ctx, 2, 21))
			if vs, err := c.Read(ctx, 2); !reflect.DeepEqual(vs, []int64{21}) || err != nil {
				t.Fatalf("Read(2) = %v, %v", vs, err)
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
			if found, err := c.Delete(ctx, 2); !found || err != nil {
				t.Errorf("Delete of a present key = %v, %v", found, err)
			}
			if found, err := c.Delete(ctx, 99); found || err != nil {
				t.Errorf("Delete of an absent key = %v, %v", found, err)
			}
			if found, err := c.Delete(ctx, 2); found || err != nil {
				t.Errorf("Delete of a key deleted in the same transaction = %v, %v", found, err)
			}
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
			if vs, err := c.Read(ctx, 9); len(vs) != 0 || err != nil {
				t.Errorf("a rolled back write is visible: %v, %v", vs, err)
			}
			if vs, _ := c.Read(ctx, 1); !reflect.DeepEqual(vs, []int64{11}) {
				t.Errorf("Read(1) = %v after CAS, want [11]", vs)
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

// connect opens a connection to d, closed when the test ends.
func connect(t *testing.T, ctx context.Context, d db.Database) db.Conn {
	t.Helper()
	c, err := d.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestClassifyConflicts runs a write skew under SERIALIZABLE: PostgreSQL
// aborts one transaction with a serialization failure, MariaDB with a
// deadlock; both must be classified aborted.
func TestClassifyConflicts(t *testing.T) {
	for _, name := range []string{"postgres", "mysql"} {
		t.Run(name, func(t *testing.T) {
			d := testservice.Open(t, address(t, name, ""))
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			a, b := connect(t, ctx, d), connect(t, ctx, d)
			for _, c := range []db.Conn{a, b} {
				if err := c.Begin(ctx, db.Serializable); err != nil {
					t.Fatal(err)
				}
				for k := int64(1); k <= 2; k++ {
					if _, err := c.Read(ctx, k); err != nil {
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
	addr := testservice.Postgres(t)
	d := testservice.Open(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := d.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Begin(ctx, db.Serializable); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(ctx, 1); err != nil {
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

// TestPostgresRepeatableReadTwoRows shows what Read and Scan return when
// PostgreSQL's REPEATABLE READ shows a transaction two rows of one primary
// key: the transaction read the key, a concurrent one deleted it and
// committed, and the first then wrote it again (an upsert that inserts,
// since the old row is gone, without the serialization failure an update
// of a concurrently deleted row gets). Its snapshot still shows the old
// row, and it sees its own new one too. Every row is returned, so the
// history shows what the client saw.
func TestPostgresRepeatableReadTwoRows(t *testing.T) {
	d := testservice.Open(t, testservice.Postgres(t))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	a, b := connect(t, ctx, d), connect(t, ctx, d)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(b.Begin(ctx, db.Serializable))
	must(b.Write(ctx, 90, 7))
	must(b.Commit(ctx))

	must(a.Begin(ctx, db.RepeatableRead))
	if vs, err := a.Read(ctx, 90); !reflect.DeepEqual(vs, []int64{7}) || err != nil {
		t.Fatalf("Read(90) = %v, %v", vs, err)
	}
	must(b.Begin(ctx, db.RepeatableRead))
	if found, err := b.Delete(ctx, 90); !found || err != nil {
		t.Fatalf("Delete(90) = %v, %v", found, err)
	}
	must(b.Commit(ctx))
	must(a.Write(ctx, 90, 4))
	vs, err := a.Read(ctx, 90)
	must(err)
	kvs, err := a.Scan(ctx, 0, 100, 0)
	must(err)
	must(a.Commit(ctx))
	slices.Sort(vs)
	if !reflect.DeepEqual(vs, []int64{4, 7}) || len(kvs) != 2 || kvs[0].Key != 90 || kvs[1].Key != 90 {
		t.Errorf("after a concurrent delete and an insert, Read(90) = %v and Scan = %v; PostgreSQL 15 shows both rows", vs, kvs)
	}
}
