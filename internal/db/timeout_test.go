package db_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/db"
	"github.com/isoscope/isoscope/internal/testservice"
)

// TestStatementTimeout opens PostgreSQL and MariaDB with a statement
// timeout of 300 ms and makes a write wait for a row lock another
// connection holds: the server cancels it after the timeout (PostgreSQL's
// statement_timeout, MariaDB's max_statement_time — not InnoDB's lock wait
// of 10 s), the error is an abort and the server's answer, and the
// connection stays usable. Errors that are no answer are not taken for
// one.
func TestStatementTimeout(t *testing.T) {
	for name, reach := range map[string]func(testing.TB) string{"postgres": testservice.Postgres, "mysql": testservice.MySQL} {
		t.Run(name, func(t *testing.T) {
			target, err := db.ParseTarget(reach(t))
			if err != nil {
				t.Fatal(err)
			}
			target.StmtTimeout = 300 * time.Millisecond
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			d, err := target.Open(ctx, testservice.Table())
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if err := d.Reset(ctx); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = d.Drop(context.Background()) }()
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
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			must(a.Begin(ctx, db.ReadCommitted))
			must(a.Write(ctx, 1, 1))
			must(b.Begin(ctx, db.ReadCommitted))
			start := time.Now()
			err = b.Write(ctx, 1, 2)
			took := time.Since(start)
			class, why := d.Classify(err)
			if err == nil || class != db.Aborted || !strings.HasPrefix(why, "statement timeout (") {
				t.Fatalf("the blocked write: %v (%s, %q)", err, class, why)
			}
			if took < 250*time.Millisecond || took > 5*time.Second {
				t.Errorf("the server cancelled the write after %v, want about 300ms", took)
			}
			ans, ok := d.(db.Answerer)
			if !ok {
				t.Fatal("the database tells no answers from failures (db.Answerer)")
			}
			if !ans.Answered(err) {
				t.Errorf("the statement timeout %v is not taken for the server's answer", err)
			}
			for _, e := range []error{context.DeadlineExceeded, errors.New("driver: something broke")} {
				if ans.Answered(e) {
					t.Errorf("%v taken for the server's answer", e)
				}
			}
			must(a.Rollback(ctx))
			must(b.Rollback(ctx))
			must(b.Begin(ctx, db.ReadCommitted))
			must(b.Write(ctx, 1, 3))
			must(b.Commit(ctx))
			if vs, err := b.Read(ctx, 1); err != nil || len(vs) != 1 || vs[0] != 3 {
				t.Errorf("after the timeout the connection reads %v, %v", vs, err)
			}
		})
	}
}
