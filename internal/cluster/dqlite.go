package cluster

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	dqclient "github.com/canonical/go-dqlite/client"
)

// upDqlite stands up spec.Nodes dqlite nodes: Debian's dqlite-demo (a
// go-dqlite application node with a small HTTP API beside its dqlite
// endpoint). Node 1 bootstraps the cluster; the others join it through
// its peer proxy, one after the other, and each promotes itself to voter
// while the cluster has fewer than three (go-dqlite's app: at most three
// voters, further nodes are stand-bys).
//
// A dqlite node has one endpoint for both Raft and clients, and its
// address is its identity in the Raft configuration, which the nodes
// replicate and dial: a node cannot be told to advertise its proxy's
// address instead of the one it listens on. So the proxies rewrite
// addresses in the traffic, as Galera's do: between nodes every node's
// real address becomes its peer proxy's (a joining node's own address in
// its join request, the bootstrap node's in the configuration it
// replicates, the sender's address in Raft's handshake, to which replies
// are sent), and towards clients every node's real and peer addresses
// become its client proxy's (the leader a node names, which the client
// then dials). All the addresses have the same length (five-digit ports).
func upDqlite(ctx context.Context, c *Cluster, say func(string)) error {
	bin, err := exec.LookPath("dqlite-demo")
	if err != nil {
		return fmt.Errorf("dqlite needs dqlite-demo (Debian: go-dqlite): %v", err)
	}
	n := c.Spec.Nodes
	// Per node: the HTTP API's port and the dqlite endpoint's.
	ports, err := freePorts(2 * n)
	if err != nil {
		return err
	}
	real := make([]string, n)
	for i := range n {
		name := "n" + strconv.Itoa(i+1)
		dir := filepath.Join(c.Dir, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		real[i] = "127.0.0.1:" + strconv.Itoa(ports[2*i+1])
		node := &Node{Name: name, Dir: filepath.Join(dir, "data"), Log: filepath.Join(dir, "dqlite-demo.log")}
		if node.client, err = newProxy(name+"-client", real[i], nil); err != nil {
			return err
		}
		if node.peer, err = newProxy(name+"-peer", real[i], c.whoIs); err != nil {
			return err
		}
		c.Nodes = append(c.Nodes, node)
	}
	toPeer, toClient, err := dqliteRewrites(c.Nodes, real)
	if err != nil {
		return err
	}
	for _, node := range c.Nodes {
		node.peer.setRewrite(toPeer)
		node.client.setRewrite(toClient)
	}
	api := make([]string, n)
	for i, node := range c.Nodes {
		api[i] = "127.0.0.1:" + strconv.Itoa(ports[2*i])
		args := []string{bin, "--api", api[i], "--db", real[i], "--dir", node.Dir, "--verbose"}
		if i > 0 {
			args = append(args, "--join", c.Nodes[0].peer.addr())
		}
		node.launch = func() (*proc, error) { return startProc(node.Name, node.Log, nil, nil, args...) }
	}
	c.dsn = func(i int) string { return "dqlite://" + c.Nodes[i].client.addr() + "/test" }
	c.ready = func(ctx context.Context, i int) error { return dqliteReady(ctx, c, i, api[i], true) }
	// One at a time: a node joins through the leader. It stays a spare,
	// which the leader does not replicate to, until the cluster has three
	// nodes: then the third promotes itself and the second to voters.
	for i, node := range c.Nodes {
		say("dqlite: starting " + node.Name)
		p, err := node.launch()
		if err != nil {
			return err
		}
		c.mu.Lock()
		node.proc = p
		c.mu.Unlock()
		rctx, cancel := context.WithTimeout(ctx, c.ReadyTimeout)
		err = dqliteReady(rctx, c, i, api[i], i == 0)
		cancel()
		if err != nil {
			return fmt.Errorf("dqlite: %s: %v; %s", node.Name, err, logExcerpt(node.Log))
		}
	}
	rctx, cancel := context.WithTimeout(ctx, c.ReadyTimeout)
	defer cancel()
	if err := poll(rctx, 200*time.Millisecond, func(ctx context.Context) error { return dqliteVoters(ctx, c) }); err != nil {
		return fmt.Errorf("dqlite: %v", err)
	}
	for i := range c.Nodes {
		if err := c.ready(rctx, i); err != nil {
			return fmt.Errorf("dqlite: %s: %v; %s", c.Nodes[i].Name, err, logExcerpt(c.Nodes[i].Log))
		}
	}
	return nil
}

// dqliteRewrites are the replacements of the peer proxies (each node's
// real address into its peer proxy's) and of the client proxies (each
// node's real and peer addresses into its client proxy's).
func dqliteRewrites(nodes []*Node, real []string) (toPeer, toClient []replacement, err error) {
	seen := map[string]bool{}
	for i, node := range nodes {
		for _, a := range []string{real[i], node.peer.addr(), node.client.addr()} {
			if len(a) != len(real[0]) || seen[a] {
				return nil, nil, fmt.Errorf("dqlite: the addresses of the nodes and their proxies must differ and have the same length, for the proxies to rewrite one into another: %s", a)
			}
			seen[a] = true
		}
		toPeer = append(toPeer, replacement{from: []byte(real[i]), to: []byte(node.peer.addr())})
		toClient = append(toClient, replacement{from: []byte(real[i]), to: []byte(node.client.addr())},
			replacement{from: []byte(node.peer.addr()), to: []byte(node.client.addr())})
	}
	return toPeer, toClient, nil
}

// dqliteReady waits until node i serves: its HTTP API answers (dqlite-demo
// listens only once it has joined and a query went through the leader),
// and, with leader set, through its client proxy it names a leader (a
// spare, which the leader does not replicate to, knows none).
func dqliteReady(ctx context.Context, c *Cluster, i int, api string, leader bool) error {
	return poll(ctx, 200*time.Millisecond, func(ctx context.Context) error {
		if err := c.runningNow(i); err != nil {
			return err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+api+"/isoscope-ready", nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s's API answered %s", c.Nodes[i].Name, resp.Status)
		}
		if !leader {
			return nil
		}
		addr, err := dqliteLeader(ctx, c.Nodes[i].client.addr())
		if err != nil {
			return err
		}
		if addr == "" {
			return fmt.Errorf("%s knows no leader", c.Nodes[i].Name)
		}
		return nil
	})
}

// dqliteLeader asks the node at addr for the leader's address ("" when it
// knows none).
func dqliteLeader(ctx context.Context, addr string) (string, error) {
	cl, err := dqclient.New(ctx, addr)
	if err != nil {
		return "", err
	}
	defer cl.Close()
	info, err := cl.Leader(ctx)
	if err != nil {
		return "", err
	}
	return info.Address, nil
}

// dqliteVoters succeeds once the leader's configuration holds every node
// and min(nodes, 3) voters (1 or at least 3 nodes: see ParseSpec).
func dqliteVoters(ctx context.Context, c *Cluster) error {
	leader, err := dqliteLeader(ctx, c.Nodes[0].client.addr())
	if err != nil {
		return err
	}
	if leader == "" {
		return fmt.Errorf("%s knows no leader", c.Nodes[0].Name)
	}
	cl, err := dqclient.New(ctx, leader)
	if err != nil {
		return err
	}
	defer cl.Close()
	nodes, err := cl.Cluster(ctx)
	if err != nil {
		return err
	}
	voters := 0
	for _, n := range nodes {
		if n.Role == dqclient.Voter {
			voters++
		}
	}
	if want := min(len(c.Nodes), 3); len(nodes) != len(c.Nodes) || voters < want {
		return fmt.Errorf("the cluster has %d nodes and %d voters, want %d and %d", len(nodes), voters, len(c.Nodes), want)
	}
	return nil
}
