package db_test

import (
	"context"
	"database/sql"
	"errors"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/db"
	"github.com/isoscope/isoscope/internal/testservice"
)

// rawSQL opens the database at addr through database/sql directly, as a
// user's own program would, for tables isoscope did not make.
func rawSQL(t *testing.T, addr string) *sql.DB {
	t.Helper()
	var driver, dsn string
	switch {
	case strings.HasPrefix(addr, "postgres://"):
		driver, dsn = "pgx", addr
	case strings.HasPrefix(addr, "mysql://"):
		u, err := url.Parse(addr)
		if err != nil {
			t.Fatal(err)
		}
		driver, dsn = "mysql", u.User.String()+"@tcp("+u.Host+")"+u.Path
	case strings.HasPrefix(addr, "sqlite://"):
		driver, dsn = "sqlite", strings.TrimPrefix(addr, "sqlite://")
	default:
		t.Fatalf("no raw access to %s", addr)
	}
	d, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// TestResetLeavesForeignTables: a table that exists without isoscope's
// mark is neither reset nor dropped (its rows survive, the error says
// why); a table isoscope made is reset and dropped as before.
func TestResetLeavesForeignTables(t *testing.T) {
	for _, name := range []string{"sqlite-file", "postgres", "mysql"} {
		t.Run(name, func(t *testing.T) {
			addr := map[string]string{"sqlite-file": "sqlite://" + filepath.Join(t.TempDir(), "own.db")}[name]
			if addr == "" {
				addr = address(t, name, "")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			raw := rawSQL(t, addr)
			precious := testservice.Table()
			if _, err := raw.ExecContext(ctx, "CREATE TABLE "+precious+" (a INT)"); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _, _ = raw.Exec("DROP TABLE " + precious) })
			if _, err := raw.ExecContext(ctx, "INSERT INTO "+precious+" (a) VALUES (42)"); err != nil {
				t.Fatal(err)
			}
			d, err := db.Open(ctx, addr, precious)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			for op, f := range map[string]func(context.Context) error{"Reset": d.Reset, "Drop": d.Drop} {
				var notOurs *db.NotOursError
				if err := f(ctx); !errors.As(err, &notOurs) || notOurs.Table != precious {
					t.Errorf("%s of a foreign table: %v, want a NotOursError", op, err)
				}
			}
			var a int
			if err := raw.QueryRowContext(ctx, "SELECT a FROM "+precious).Scan(&a); err != nil || a != 42 {
				t.Fatalf("the foreign table's row: %d, %v", a, err)
			}

			ours := testservice.Table()
			o, err := db.Open(ctx, addr, ours)
			if err != nil {
				t.Fatal(err)
			}
			defer o.Close()
			for i := 0; i < 2; i++ {
				if err := o.Reset(ctx); err != nil {
					t.Fatalf("Reset %d of isoscope's own table: %v", i, err)
				}
			}
			if _, err := raw.ExecContext(ctx, "INSERT INTO "+ours+" (k, v) VALUES (1, 2)"); err != nil {
				t.Fatal(err)
			}
			if err := o.Reset(ctx); err != nil {
				t.Fatal(err)
			}
			var n int
			if err := raw.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+ours).Scan(&n); err != nil || n != 0 {
				t.Errorf("rows after Reset: %d, %v", n, err)
			}
			if err := o.Drop(ctx); err != nil {
				t.Fatal(err)
			}
			if err := o.Drop(ctx); err != nil {
				t.Errorf("Drop of a table that is gone: %v", err)
			}
		})
	}
}

// TestBadgerResetLeavesForeignKeys: keys under a table's prefix that
// isoscope did not mark survive Reset and Drop.
func TestBadgerResetLeavesForeignKeys(t *testing.T) {
	ctx := context.Background()
	dir := "badger://" + filepath.Join(t.TempDir(), "b")
	d, err := db.Open(ctx, dir, "mine")
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := d.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Begin(ctx, db.Serializable); err != nil {
		t.Fatal(err)
	}
	if err := c.Write(ctx, 1, 7); err != nil {
		t.Fatal(err)
	}
	if err := c.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	if err := d.Reset(ctx); err != nil {
		t.Fatalf("Reset of isoscope's own keys: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	// The same keys under another name's prefix, written by "someone
	// else": a table named "mine" but opened as a store that has keys
	// under "theirs/" without the mark.
	d2, err := db.Open(ctx, dir, "theirs")
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	c2, err := d2.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c2.Begin(ctx, db.Serializable); err != nil {
		t.Fatal(err)
	}
	if err := c2.Write(ctx, 1, 9); err != nil {
		t.Fatal(err)
	}
	if err := c2.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var notOurs *db.NotOursError
	if err := d2.Reset(ctx); !errors.As(err, &notOurs) {
		t.Fatalf("Reset of unmarked keys: %v, want a NotOursError", err)
	}
	if err := c2.Begin(ctx, db.Serializable); err != nil {
		t.Fatal(err)
	}
	v, err := c2.Read(ctx, 1)
	if err != nil || len(v) != 1 || v[0] != 9 {
		t.Errorf("the unmarked key after a refused Reset: %v, %v", v, err)
	}
	_ = c2.Rollback(ctx)
	_ = c2.Close()
}
