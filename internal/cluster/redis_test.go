package cluster

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// sentinelPrimary asks sentinel s (through its client proxy) for the
// primary's address: the client proxy of a data node.
func sentinelPrimary(s *Node) string {
	cl := redisClient(s.client.addr())
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	a, err := cl.Do(ctx, "SENTINEL", "get-master-addr-by-name", RedisMaster).StringSlice()
	if err != nil || len(a) != 2 {
		return ""
	}
	return a[0] + ":" + a[1]
}

// nodeAt is the index of the data node whose client proxy is addr (-1:
// none).
func nodeAt(c *Cluster, addr string) int {
	for i, n := range c.Nodes {
		if n.client.addr() == addr {
			return i
		}
	}
	return -1
}

// primaryIndex is the data node every sentinel names as the primary, once
// they agree (-1 when they do not within d).
func primaryIndex(c *Cluster, d time.Duration) int {
	at := -1
	waitFor(d, func() bool {
		first := sentinelPrimary(c.aux[0])
		for _, s := range c.aux[1:] {
			if sentinelPrimary(s) != first {
				return false
			}
		}
		at = nodeAt(c, first)
		return at >= 0
	})
	return at
}

// set writes key=v on the server at addr, and says whether it was
// acknowledged within a second.
func set(addr, key, v string) bool {
	cl := redisClient(addr)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return cl.Set(ctx, key, v, 0).Err() == nil
}

// get reads key on the server at addr ("" when absent or unanswered).
func get(addr, key string) string {
	cl := redisClient(addr)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	v, _ := cl.Get(ctx, key).Result()
	return v
}

// TestRedis stands up three Redis data nodes and three sentinels: every
// process listens on 127.0.0.1 and keeps its files in the cluster's
// directory; the replicas replicate through the primary's peer proxy and
// the sentinels answer with client proxies' addresses. Cut off from the
// others, the primary is failed over by the sentinels while its own
// clients still write to it; once healed it becomes a replica and the
// write it acknowledged alone is gone (Redis's documented split brain).
// A killed primary and a paused one are failed over too, and the
// cluster takes writes through the new primary each time.
func TestRedis(t *testing.T) {
	t.Parallel() // it stands up its own servers, on ports of its own
	c := up(t, "redis:3")
	checkConfined(t, c)
	if len(c.aux) != RedisSentinels {
		t.Fatalf("%d sentinels, want %d", len(c.aux), RedisSentinels)
	}
	if !strings.HasPrefix(c.DSNs()[0], "redis-sentinel://") || c.DSNs()[0] != c.DSNs()[2] {
		t.Errorf("DSNs %v: want one redis-sentinel:// address for every node", c.DSNs())
	}
	if p := primaryIndex(c, 10*time.Second); p != 0 {
		t.Fatalf("the sentinels name node %d the primary, want n1", p)
	}
	if c.Nodes[0].peer.accepted.Load() == 0 {
		t.Error("no replica or sentinel went through n1's peer proxy")
	}
	if !set(c.Nodes[0].client.addr(), "k", "1") {
		t.Fatal("the primary takes no write")
	}
	if !waitFor(10*time.Second, func() bool { return get(c.Nodes[2].client.addr(), "k") == "1" }) {
		t.Fatal("the write did not reach n3")
	}

	// Partition: n1 cut off, a replica promoted; n1's clients still
	// write to it, and that write is lost when n1 rejoins.
	if err := c.Isolate(0); err != nil {
		t.Fatal(err)
	}
	if !set(c.Nodes[0].client.addr(), "k", "lost") {
		t.Fatal("n1, cut off from the others, refused its client's write")
	}
	p := -1
	waitFor(30*time.Second, func() bool { p = primaryIndex(c, time.Second); return p > 0 })
	if p <= 0 {
		t.Fatalf("no replica was promoted while n1 was cut off (primary %d)", p)
	}
	if !set(c.Nodes[p].client.addr(), "k", "2") {
		t.Fatalf("the new primary %s takes no write", c.Nodes[p].Name)
	}
	c.Heal()
	if !waitFor(60*time.Second, func() bool { return get(c.Nodes[0].client.addr(), "k") == "2" }) {
		t.Fatalf("n1 did not follow the new primary after the partition healed: k=%q", get(c.Nodes[0].client.addr(), "k"))
	}

	for _, fault := range []string{"kill", "pause"} {
		old := primaryIndex(c, 10*time.Second)
		if old < 0 {
			t.Fatal("the sentinels do not agree on a primary")
		}
		var err error
		if fault == "kill" {
			err = c.Kill(old)
		} else {
			err = c.Pause(old)
		}
		if err != nil {
			t.Fatal(err)
		}
		next := -1
		waitFor(40*time.Second, func() bool { next = primaryIndex(c, time.Second); return next >= 0 && next != old })
		if next < 0 || next == old {
			t.Fatalf("%s of the primary %s: no failover", fault, c.Nodes[old].Name)
		}
		v := fault + strconv.Itoa(next)
		if !waitFor(20*time.Second, func() bool { return set(c.Nodes[next].client.addr(), "k", v) }) {
			t.Fatalf("the new primary %s takes no write", c.Nodes[next].Name)
		}
		if fault == "kill" {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			err = c.Start(ctx, old)
			cancel()
		} else {
			err = c.Resume(old)
		}
		if err != nil {
			t.Fatal(err)
		}
		if !waitFor(60*time.Second, func() bool { return get(c.Nodes[old].client.addr(), "k") == v }) {
			t.Fatalf("%s, back after the %s, does not follow the new primary", c.Nodes[old].Name, fault)
		}
	}
	var pids []int
	for _, s := range c.aux {
		pids = append(pids, s.proc.pid())
	}
	c.Stop()
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("sentinel process %d is still alive after Stop", pid)
		}
	}
}

// TestRedisFailoverClient: go-redis's failover client, given the
// sentinels' client proxies, reaches the primary through its client
// proxy, and after the primary is killed, the new one.
func TestRedisFailoverClient(t *testing.T) {
	t.Parallel()
	c := up(t, "redis:2")
	var sentinels []string
	for _, s := range c.aux {
		sentinels = append(sentinels, s.client.addr())
	}
	cl := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: RedisMaster, SentinelAddrs: sentinels, MaxRetries: -1})
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := cl.Set(ctx, "k", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	before := c.Nodes[0].client.accepted.Load()
	if before == 0 {
		t.Fatal("the failover client did not go through n1's client proxy")
	}
	if err := c.Kill(0); err != nil {
		t.Fatal(err)
	}
	if !waitFor(40*time.Second, func() bool { return cl.Set(ctx, "k", "2", 0).Err() == nil }) {
		t.Fatal("the failover client found no new primary after n1 was killed")
	}
	if c.Nodes[1].client.accepted.Load() == 0 {
		t.Error("the failover client did not reach n2 through its client proxy")
	}
}
