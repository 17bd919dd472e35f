package cluster

import (
	"context"
	"database/sql"
	"testing"
	"time"
)

// TestPGAutoFailoverUp is a smoke test while developing.
func TestPGAutoFailoverUp(t *testing.T) {
	c := up(t, "pg-auto-failover:3")
	ctx := context.Background()
	i, err := c.Primary(ctx)
	t.Log(i, err)
	db, err := sql.Open("pgx", c.DSNs()[1])
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var s string
	if err := db.QueryRowContext(ctx, "SHOW synchronous_standby_names").Scan(&s); err != nil {
		t.Fatal(err)
	}
	t.Log(s)
	_ = time.Second
}
