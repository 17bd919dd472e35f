package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// natsServer is where Debian installs nats-server; PATH is searched
// first.
const natsServer = "/usr/sbin/nats-server"

// NatsServerEnv names the environment variable that, when set, is the
// nats-server binary a nats-kv cluster runs (a release other than
// Debian's, e.g. one built by go install
// github.com/nats-io/nats-server/v2@latest).
const NatsServerEnv = "ISOSCOPE_NATS_SERVER"

// NatsKVReplicas is the number of replicas of the KV bucket a nats-kv
// cluster of n servers serves: three, or n when it has fewer.
func NatsKVReplicas(n int) int { return min(n, 3) }

// upNatsKV stands up spec.Nodes nats-server processes as one JetStream
// cluster. Each server's route port is behind its peer proxy, and every
// route goes through one (each server advertises its proxy's address to
// the others, and is given the others' proxies as its routes), so that
// Isolate cuts a server off; clients reach it through its client proxy,
// and are told no other server's address (no_advertise), so that a
// session stays on its node. With leaderReads, the nodes' addresses turn
// the bucket's direct gets off: the stream's leader answers every read.
func upNatsKV(ctx context.Context, c *Cluster, leaderReads bool, say func(string)) error {
	bin, err := natsServerBinary()
	if err != nil {
		return err
	}
	n := c.Spec.Nodes
	ports, err := freePorts(2 * n)
	if err != nil {
		return err
	}
	if err := proxiedNodes(c, ports, "nats-server.log"); err != nil {
		return err
	}
	for i, node := range c.Nodes {
		var routes []string
		for _, o := range c.Nodes {
			if o != node {
				routes = append(routes, strconv.Quote("nats-route://"+o.peer.addr()))
			}
		}
		conf := fmt.Sprintf(`server_name: %s
listen: "127.0.0.1:%d"
jetstream {
  store_dir: %s
  max_memory_store: 256MB
  max_file_store: 4GB
}
`, node.Name, ports[2*i], strconv.Quote(node.Dir))
		if n > 1 {
			// One server alone runs JetStream standalone: a cluster block
			// would have it wait for peers.
			conf += fmt.Sprintf(`cluster {
  name: isoscope
  listen: "127.0.0.1:%d"
  advertise: %q
  no_advertise: true
  routes: [%s]
}
`, ports[2*i+1], node.peer.addr(), strings.Join(routes, ", "))
		}
		file := filepath.Join(filepath.Dir(node.Dir), "nats-server.conf")
		if err := os.WriteFile(file, []byte(conf), 0o644); err != nil {
			return err
		}
		args := []string{bin, "-c", file}
		node.launch = func() (*proc, error) { return startProc(node.Name, node.Log, nil, nil, args...) }
	}
	opts := "?replicas=" + strconv.Itoa(NatsKVReplicas(len(c.Nodes)))
	if leaderReads {
		opts += "&reads=leader"
	}
	c.dsn = func(i int) string { return "nats-kv://" + c.Nodes[i].client.addr() + opts }
	c.ready = func(ctx context.Context, i int) error { return natsReady(ctx, c, i) }
	// JetStream elects its meta leader once a quorum of servers runs: the
	// servers start together.
	return startTogether(ctx, c, "nats-kv", say)
}

// natsServerBinary is $ISOSCOPE_NATS_SERVER when set, else nats-server
// on PATH, else Debian's.
func natsServerBinary() (string, error) {
	if f := os.Getenv(NatsServerEnv); f != "" {
		if !isExecutable(f) {
			return "", fmt.Errorf("$%s is %s, which is no executable file", NatsServerEnv, f)
		}
		return filepath.Abs(f)
	}
	bin, err := exec.LookPath("nats-server")
	if err == nil {
		return bin, nil
	}
	if isExecutable(natsServer) {
		return natsServer, nil
	}
	return "", fmt.Errorf("nats-kv needs the NATS server (Debian: nats-server): %v", err)
}

// natsReady waits until server i answers through its client proxy and its
// JetStream knows a meta leader (it answers an account info request).
func natsReady(ctx context.Context, c *Cluster, i int) error {
	return poll(ctx, 200*time.Millisecond, func(ctx context.Context) error {
		if err := c.runningNow(i); err != nil {
			return err
		}
		nc, err := nats.Connect("nats://"+c.Nodes[i].client.addr(), nats.Timeout(2*time.Second), nats.NoReconnect())
		if err != nil {
			return err
		}
		defer nc.Close()
		js, err := jetstream.New(nc)
		if err != nil {
			return err
		}
		if _, err := js.AccountInfo(ctx); err != nil {
			return fmt.Errorf("%s's JetStream: %v", c.Nodes[i].Name, err)
		}
		return nil
	})
}
