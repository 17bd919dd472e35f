package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// natsStream connects to node i through its client proxy and binds a
// JetStream context; the connection does not reconnect.
func natsStream(t *testing.T, c *Cluster, i int) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect("nats://"+c.Nodes[i].client.addr(), nats.Timeout(2*time.Second), nats.NoReconnect())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// publishes says whether a message published through js is acknowledged
// within a second.
func publishes(js jetstream.JetStream) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := js.Publish(ctx, "isoscope.test", []byte("x"))
	return err == nil
}

// TestNatsKV stands up three nats-server processes: they listen on
// 127.0.0.1 only and keep their files in the cluster's directory; every
// route goes through the peer proxies; a stream of three replicas takes
// writes; a server cut off from the others cannot commit one while the
// others can, and can again once healed; a killed server is started again
// on its data; a paused one does not answer.
func TestNatsKV(t *testing.T) {
	t.Parallel() // it stands up its own servers, on ports of its own
	c := up(t, "nats-kv:3")
	checkConfined(t, c)
	for _, n := range c.Nodes {
		if n.peer.accepted.Load() == 0 {
			t.Errorf("no route went through %s's peer proxy", n.Name)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	js := natsStream(t, c, 1)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ISOSCOPE_TEST", Subjects: []string{"isoscope.test"}, Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	if !waitFor(30*time.Second, func() bool { return publishes(js) }) {
		t.Fatal("the stream of three replicas takes no write")
	}
	if err := c.Isolate(0); err != nil {
		t.Fatal(err)
	}
	cut := natsStream(t, c, 0)
	if !waitFor(20*time.Second, func() bool { return !publishes(cut) }) {
		t.Error("n1, cut off from the others, still commits writes")
	}
	if !waitFor(30*time.Second, func() bool { return publishes(js) }) {
		t.Error("n2 and n3 take no write while n1 is cut off")
	}
	c.Heal()
	if !waitFor(60*time.Second, func() bool { return publishes(cut) }) {
		t.Error("n1 takes no write after the partition healed")
	}
	if err := c.Kill(2); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx, 2); err != nil {
		t.Fatalf("n3 after a kill: %v", err)
	}
	if !publishes(natsStream(t, c, 2)) && !waitFor(30*time.Second, func() bool { return publishes(js) }) {
		t.Error("no write after n3 was killed and started again")
	}
	paused := natsStream(t, c, 2)
	if err := c.Pause(2); err != nil {
		t.Fatal(err)
	}
	if publishes(paused) {
		t.Error("n3, paused, answered")
	}
	if err := c.Resume(2); err != nil {
		t.Fatal(err)
	}
	if !waitFor(30*time.Second, func() bool { return publishes(paused) }) {
		t.Error("n3 takes no write after it was resumed")
	}
}
