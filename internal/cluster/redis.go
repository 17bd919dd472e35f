package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisMaster is the name under which a redis cluster's sentinels
// monitor its primary: the master name its clients ask them for.
const RedisMaster = "isoscope"

// RedisSentinels is the number of sentinels a redis cluster runs beside
// its data nodes; RedisQuorum of them must agree that the primary is down
// before one of them fails it over (a majority also has to elect that
// one).
const (
	RedisSentinels = 3
	RedisQuorum    = 2
)

// RedisWaitReplicas is the number of replicas a redis-wait cluster's
// writes wait for (Redis's WAIT): with the primary, a majority of the n
// data nodes.
func RedisWaitReplicas(n int) int { return n / 2 }

// Redis sentinel timing: a primary that has not answered for
// redisDownAfter is subjectively down; a failover that has not finished
// within redisFailoverTimeout is given up (and the same primary is not
// failed over again within twice that).
const (
	redisDownAfter       = 1000 * time.Millisecond
	redisFailoverTimeout = 4000 * time.Millisecond
)

// upRedis stands up spec.Nodes redis-server processes (Debian's
// redis-server), n1 the primary and the others its replicas, and
// RedisSentinels redis-sentinel processes that monitor them and fail the
// primary over. Each data node listens on one port, which two proxies
// forward to: its peer proxy, the address every other process knows it
// by (replicas replicate from the primary's peer proxy, every node
// announces its peer proxy as its own address, the sentinels monitor the
// peer proxies), and its client proxy, which the clients dial. Isolate
// cuts a data node off from the other data nodes and from the
// sentinels; its clients still reach it, as in Redis's documented
// split-brain. The clients find the primary by asking a sentinel through
// the sentinel's client proxy, which rewrites each data node's peer
// address in the answers (and in the +switch-master messages) into its
// client proxy's address (same length: five-digit ports).
//
// Each data node appends every write to its append-only file
// (appendonly yes, appendfsync everysec: a killed server loses nothing
// the kernel was given, a common production setting), and keeps its
// process title (set-proc-title no), so that its command line names its
// directory for cluster down.
func upRedis(ctx context.Context, c *Cluster, wait int, replicaReads bool, say func(string)) error {
	server, err := exec.LookPath("redis-server")
	if err != nil {
		return fmt.Errorf("redis needs the Redis server (Debian: redis-server): %v", err)
	}
	sentinel, err := exec.LookPath("redis-sentinel")
	if err != nil {
		return fmt.Errorf("redis needs Redis Sentinel (Debian: redis-sentinel): %v", err)
	}
	n := c.Spec.Nodes
	ports, err := freePorts(n + RedisSentinels)
	if err != nil {
		return err
	}
	for i := range n {
		name := "n" + strconv.Itoa(i+1)
		dir := filepath.Join(c.Dir, name)
		node := &Node{Name: name, Dir: filepath.Join(dir, "data"), Log: filepath.Join(dir, "redis-server.log"), Role: "replica"}
		if i == 0 {
			node.Role = "primary"
		}
		if err := os.MkdirAll(node.Dir, 0o755); err != nil {
			return err
		}
		target := "127.0.0.1:" + strconv.Itoa(ports[i])
		if node.client, err = newProxy(name+"-client", target, nil); err != nil {
			return err
		}
		if node.peer, err = newProxy(name+"-peer", target, c.whoIs); err != nil {
			return err
		}
		c.Nodes = append(c.Nodes, node)
	}
	primary := c.Nodes[0].peer
	var toClient []replacement
	for i, node := range c.Nodes {
		conf := fmt.Sprintf(`bind 127.0.0.1
port %d
protected-mode no
daemonize no
set-proc-title no
dir %s
appendonly yes
appendfsync everysec
replica-announce-ip 127.0.0.1
replica-announce-port %d
repl-timeout 10
`, ports[i], strconv.Quote(node.Dir), node.peer.port())
		if i > 0 {
			conf += fmt.Sprintf("replicaof 127.0.0.1 %d\n", primary.port())
		}
		file := filepath.Join(filepath.Dir(node.Dir), "redis.conf")
		if err := os.WriteFile(file, []byte(conf), 0o644); err != nil {
			return err
		}
		args := []string{server, file}
		node.launch = func() (*proc, error) { return startProc(node.Name, node.Log, nil, nil, args...) }
		peerPort, clientPort := strconv.Itoa(node.peer.port()), strconv.Itoa(node.client.port())
		if len(peerPort) != len(clientPort) {
			return fmt.Errorf("redis: %s's proxies have ports of different lengths (%s, %s)", node.Name, peerPort, clientPort)
		}
		toClient = append(toClient, portReplacements(peerPort, clientPort)...)
	}
	c.ready = func(ctx context.Context, i int) error { return redisReady(ctx, c, i) }
	if err := startTogether(ctx, c, "redis", say); err != nil {
		return err
	}
	for i := 1; i < n; i++ {
		rctx, cancel := context.WithTimeout(ctx, c.ReadyTimeout)
		err := redisLinked(rctx, c, i)
		cancel()
		if err != nil {
			return fmt.Errorf("redis: %s: %v; %s", c.Nodes[i].Name, err, logExcerpt(c.Nodes[i].Log))
		}
	}
	// The sentinels name one another too (SENTINEL sentinels, which a
	// failover client asks): their own ports become their client
	// proxies'.
	var sentinels []string
	for j := range RedisSentinels {
		name := "s" + strconv.Itoa(j+1)
		dir := filepath.Join(c.Dir, name)
		s := &Node{Name: name, Dir: filepath.Join(dir, "data"), Log: filepath.Join(dir, "redis-sentinel.log"), Role: "sentinel"}
		if err := os.MkdirAll(s.Dir, 0o755); err != nil {
			return err
		}
		port := ports[n+j]
		if s.client, err = newProxy(name+"-client", "127.0.0.1:"+strconv.Itoa(port), nil); err != nil {
			return err
		}
		c.mu.Lock()
		c.aux = append(c.aux, s)
		c.mu.Unlock()
		sentinels = append(sentinels, s.client.addr())
		own, proxied := strconv.Itoa(port), strconv.Itoa(s.client.port())
		if len(own) != len(proxied) {
			return fmt.Errorf("redis: sentinel %s's ports are of different lengths (%s, %s)", name, own, proxied)
		}
		toClient = append(toClient, portReplacements(own, proxied)...)
	}
	for j, s := range c.aux {
		s.client.setRewrite(toClient)
		port := ports[n+j]
		conf := fmt.Sprintf(`bind 127.0.0.1
port %d
protected-mode no
daemonize no
set-proc-title no
dir %s
sentinel announce-ip 127.0.0.1
sentinel monitor %s 127.0.0.1 %d %d
sentinel down-after-milliseconds %s %d
sentinel failover-timeout %s %d
sentinel parallel-syncs %s 1
`, port, strconv.Quote(s.Dir), RedisMaster, primary.port(), RedisQuorum,
			RedisMaster, redisDownAfter.Milliseconds(), RedisMaster, redisFailoverTimeout.Milliseconds(), RedisMaster)
		file := filepath.Join(filepath.Dir(s.Dir), "sentinel.conf")
		if err := os.WriteFile(file, []byte(conf), 0o644); err != nil {
			return err
		}
		say("redis: starting sentinel " + s.Name)
		p, err := startProc(s.Name, s.Log, nil, nil, sentinel, file)
		if err != nil {
			return err
		}
		c.mu.Lock()
		s.proc = p
		c.mu.Unlock()
	}
	for _, s := range c.aux {
		rctx, cancel := context.WithTimeout(ctx, c.ReadyTimeout)
		err := sentinelReady(rctx, s, n)
		cancel()
		if err != nil {
			return fmt.Errorf("redis: sentinel %s: %v; %s", s.Name, err, logExcerpt(s.Log))
		}
	}
	dsn := "redis-sentinel://" + strings.Join(sentinels, ",") + "/" + RedisMaster
	var opts []string
	if wait > 0 {
		opts = append(opts, "wait="+strconv.Itoa(wait))
	}
	if replicaReads {
		opts = append(opts, "reads=replica")
	}
	if len(opts) > 0 {
		dsn += "?" + strings.Join(opts, "&")
	}
	c.dsn = func(int) string { return dsn }
	return nil
}

// portReplacements rewrite port from into port to (of the same length)
// where a sentinel's answers carry a port: a RESP bulk string of its own
// (get-master-addr-by-name, the ip and port fields of SENTINEL replicas
// and sentinels), "127.0.0.1 PORT" (the +switch-master message) and
// "127.0.0.1:PORT" (the name fields).
func portReplacements(from, to string) []replacement {
	bulk := func(p string) []byte { return []byte("$" + strconv.Itoa(len(p)) + "\r\n" + p + "\r\n") }
	return []replacement{{from: bulk(from), to: bulk(to)},
		{from: []byte("127.0.0.1 " + from), to: []byte("127.0.0.1 " + to)},
		{from: []byte("127.0.0.1:" + from), to: []byte("127.0.0.1:" + to)}}
}

// redisClient is a client of one Redis server or sentinel at addr that
// neither retries nor reconnects on its own.
func redisClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, MaxRetries: -1, DialTimeout: 2 * time.Second,
		ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second, PoolSize: 1})
}

// redisReady waits until data node i answers PING through its client
// proxy (a server still loading its data answers LOADING).
func redisReady(ctx context.Context, c *Cluster, i int) error {
	return poll(ctx, 200*time.Millisecond, func(ctx context.Context) error {
		if err := c.runningNow(i); err != nil {
			return err
		}
		cl := redisClient(c.Nodes[i].client.addr())
		defer cl.Close()
		return cl.Ping(ctx).Err()
	})
}

// redisLinked waits until replica i has finished its first
// synchronization with the primary (master_link_status:up).
func redisLinked(ctx context.Context, c *Cluster, i int) error {
	return poll(ctx, 200*time.Millisecond, func(ctx context.Context) error {
		if err := c.runningNow(i); err != nil {
			return err
		}
		cl := redisClient(c.Nodes[i].client.addr())
		defer cl.Close()
		info, err := cl.Info(ctx, "replication").Result()
		if err != nil {
			return err
		}
		if !strings.Contains(info, "master_link_status:up") {
			return errors.New("its link to the primary is not up")
		}
		return nil
	})
}

// sentinelReady waits until sentinel s, asked through its client proxy,
// knows the primary, its n-1 replicas and the other sentinels.
func sentinelReady(ctx context.Context, s *Node, n int) error {
	return poll(ctx, 200*time.Millisecond, func(ctx context.Context) error {
		if s.proc == nil || s.proc.exited() {
			return &exitedError{name: s.Name, log: s.Log}
		}
		cl := redisClient(s.client.addr())
		defer cl.Close()
		if err := cl.Do(ctx, "SENTINEL", "get-master-addr-by-name", RedisMaster).Err(); err != nil {
			return err
		}
		rs, err := cl.Do(ctx, "SENTINEL", "replicas", RedisMaster).Slice()
		if err != nil {
			return err
		}
		if len(rs) != n-1 {
			return fmt.Errorf("it knows %d of the %d replicas", len(rs), n-1)
		}
		ss, err := cl.Do(ctx, "SENTINEL", "sentinels", RedisMaster).Slice()
		if err != nil {
			return err
		}
		if len(ss) != RedisSentinels-1 {
			return fmt.Errorf("it knows %d of the %d other sentinels", len(ss), RedisSentinels-1)
		}
		return nil
	})
}
