package db

import (
	"context"
	"path/filepath"
	"testing"
)

// sqliteNodes opens n SQLite files as the nodes of a "cluster" that does
// not replicate: each node's table shows which node a transaction ran on.
func sqliteNodes(t *testing.T, n int) []Database {
	t.Helper()
	ctx := context.Background()
	var out []Database
	for i := range n {
		d, err := Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "node.db"), "")
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Reset(ctx); err != nil {
			t.Fatalf("node %d: %v", i, err)
		}
		t.Cleanup(func() { d.Close() })
		out = append(out, d)
	}
	return out
}

// run runs one transaction of writes (or, with none, a read of key 1) on c
// and returns what the read saw.
func runTxn(t *testing.T, c Conn, writes ...int64) []int64 {
	t.Helper()
	ctx := context.Background()
	if err := c.Begin(ctx, Serializable); err != nil {
		t.Fatal(err)
	}
	var got []int64
	var err error
	if len(writes) == 0 {
		got, err = c.Read(ctx, 1)
	}
	for _, k := range writes {
		if err == nil {
			err = c.Write(ctx, k, k*10)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	return got
}

// has reports whether node d holds key k.
func has(t *testing.T, d Database, k int64) bool {
	t.Helper()
	ctx := context.Background()
	c, err := d.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Begin(ctx, Serializable); err != nil {
		t.Fatal(err)
	}
	vs, err := c.Read(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.Rollback(ctx)
	return len(vs) > 0
}

// TestMultiSpreadsAndHops: connections go to the nodes in turn, and with
// Hop a session moves to the next node every Hop transactions.
func TestMultiSpreadsAndHops(t *testing.T) {
	nodes := sqliteNodes(t, 2)
	m, err := NewMulti(nodes, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a, _ := m.Connect(ctx)
	b, _ := m.Connect(ctx)
	runTxn(t, a, 1)
	runTxn(t, b, 2)
	a.Close()
	b.Close()
	if !has(t, nodes[0], 1) || has(t, nodes[1], 1) || !has(t, nodes[1], 2) || has(t, nodes[0], 2) {
		t.Fatal("two connections did not go to the two nodes in turn")
	}
	m.Hop = 2
	c, _ := m.Connect(ctx) // the third connection: node 0
	defer c.Close()
	for k := int64(3); k <= 6; k++ {
		runTxn(t, c, k)
	}
	for k, node := range map[int64]int{3: 0, 4: 0, 5: 1, 6: 1} {
		if !has(t, nodes[node], k) || has(t, nodes[1-node], k) {
			t.Errorf("key %d was not written on node %d", k, node)
		}
	}
}

// TestMultiRoutesReads: a transaction that only reads goes to a reader,
// the others to a writer.
func TestMultiRoutesReads(t *testing.T) {
	nodes := sqliteNodes(t, 2)
	m, err := NewMulti(nodes[:1], nodes[1:])
	if err != nil {
		t.Fatal(err)
	}
	c, err := m.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := c.(ReadRouter)
	r.RouteReadOnly(false)
	runTxn(t, c, 1)
	if got := runTxn(t, c); len(got) != 1 {
		t.Fatalf("a read routed to the writer read %v, want its write", got)
	}
	r.RouteReadOnly(true)
	if got := runTxn(t, c); len(got) != 0 {
		t.Fatalf("a read routed to the reader read %v, want nothing (the reader has no replica of the write)", got)
	}
}
