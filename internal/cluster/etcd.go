package cluster

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// upEtcd stands up spec.Nodes etcd members (Debian's etcd-server). Each
// member advertises its peer proxy's address, so every connection
// between members goes through a proxy; clients reach a member through
// its client proxy.
func upEtcd(ctx context.Context, c *Cluster, say func(string)) error {
	bin, err := exec.LookPath("etcd")
	if err != nil {
		return fmt.Errorf("etcd needs the etcd server (Debian: etcd-server): %v", err)
	}
	n := c.Spec.Nodes
	ports, err := freePorts(2 * n)
	if err != nil {
		return err
	}
	if err := proxiedNodes(c, ports, "etcd.log"); err != nil {
		return err
	}
	var initial []string
	for _, node := range c.Nodes {
		initial = append(initial, node.Name+"=http://"+node.peer.addr())
	}
	for i, node := range c.Nodes {
		args := []string{bin, "--name", node.Name, "--data-dir", node.Dir,
			"--listen-client-urls", "http://127.0.0.1:" + strconv.Itoa(ports[2*i]),
			"--advertise-client-urls", "http://" + node.client.addr(),
			"--listen-peer-urls", "http://127.0.0.1:" + strconv.Itoa(ports[2*i+1]),
			"--initial-advertise-peer-urls", "http://" + node.peer.addr(),
			"--initial-cluster", strings.Join(initial, ","),
			"--initial-cluster-token", "isoscope-" + filepath.Base(c.Dir),
			"--initial-cluster-state", "new",
			"--heartbeat-interval", "100", "--election-timeout", "1000"}
		node.launch = func() (*proc, error) { return startProc(node.Name, node.Log, nil, nil, args...) }
	}
	c.dsn = func(i int) string { return "etcd://" + c.Nodes[i].client.addr() }
	c.ready = func(ctx context.Context, i int) error { return etcdReady(ctx, c, i) }
	// The members must start together: none is ready before a quorum is.
	return startTogether(ctx, c, "etcd", say)
}

// etcdReady waits until member i answers and knows a leader.
func etcdReady(ctx context.Context, c *Cluster, i int) error {
	return poll(ctx, 200*time.Millisecond, func(ctx context.Context) error {
		if err := c.runningNow(i); err != nil {
			return err
		}
		ep := "http://" + c.Nodes[i].client.addr()
		cl, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			return err
		}
		defer cl.Close()
		st, err := cl.Status(ctx, ep)
		if err != nil {
			return err
		}
		if st.Leader == 0 {
			return fmt.Errorf("%s knows no leader", c.Nodes[i].Name)
		}
		return nil
	})
}
