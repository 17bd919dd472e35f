package cluster

import (
	"bytes"
	"io"
	"net"
	"testing"
	"testing/iotest"
	"time"
)

// TestCopyRewriting: addresses are rewritten even when a read splits
// them, and the bytes around them pass unchanged.
func TestCopyRewriting(t *testing.T) {
	rep := []replacement{{from: []byte("127.0.0.1:40321"), to: []byte("127.0.0.1:36319")}, {from: []byte("127.0.0.1:41111"), to: []byte("127.0.0.1:42222")}}
	in := []byte("\x00\x01tcp://127.0.0.1:40321\x00tcp://127.0.0.1:41111;127.0.0.1:4032;127.0.0.1:40321")
	want := []byte("\x00\x01tcp://127.0.0.1:36319\x00tcp://127.0.0.1:42222;127.0.0.1:4032;127.0.0.1:36319")
	var out bytes.Buffer
	if err := copyRewriting(&out, iotest.OneByteReader(bytes.NewReader(in)), rep); err != io.EOF {
		t.Fatalf("copy ended with %v, want EOF", err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Fatalf("got %q\nwant %q", out.Bytes(), want)
	}
}

// TestProxyAvoidsHandedOutPorts: the ports freePorts hands out for
// servers to bind lie below the ephemeral range (which outgoing
// connections take their ports from), and are never a proxy's, nor
// handed out twice, though the system would offer them again at once.
func TestProxyAvoidsHandedOutPorts(t *testing.T) {
	ports, err := freePorts(50)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]bool{}
	for _, p := range ports {
		out[p] = true
		if serverPortsTo > 0 && (p < serverPortsFrom || p > serverPortsTo) {
			t.Errorf("port %d handed out, not in %d–%d, below the ephemeral range", p, serverPortsFrom, serverPortsTo)
		}
	}
	more, err := freePorts(50)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range more {
		if out[p] {
			t.Errorf("port %d handed out twice", p)
		}
	}
	for range 200 {
		p, err := newProxy("t", "127.0.0.1:1", nil)
		if err != nil {
			t.Fatal(err)
		}
		if out[p.port()] {
			t.Errorf("a proxy listens on port %d, handed out for a server", p.port())
		}
		defer p.close()
	}
}

// TestProxyRewritesSetAfterListening: the rewrites a proxy is given after
// it started listening (the cluster sets them once every node's proxy
// has its port) apply to the connections it forwards, and giving them is
// ordered before the forwarding goroutines read them (go test -race).
func TestProxyRewritesSetAfterListening(t *testing.T) {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); _ = c.Close() }()
		}
	}()
	p, err := newProxy("t", echo.Addr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	p.setRewrite([]replacement{{from: []byte("ab"), to: []byte("xy")}})
	c, err := net.Dial("tcp", p.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("-ab-\n")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 5)
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if string(got) != "-xy-\n" {
		t.Fatalf("echoed through the proxy: %q, want %q", got, "-xy-\n")
	}
}

// TestProxySilence: a silenced connection stays open and passes nothing
// either way; a new one is accepted and never answered; unblock closes
// both, and connections made after it pass again.
func TestProxySilence(t *testing.T) {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); _ = c.Close() }()
		}
	}()
	p, err := newProxy("t", echo.Addr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", p.addr())
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	// echoes says whether a byte sent on c comes back within wait; gone
	// whether c was closed.
	echoes := func(c net.Conn, wait time.Duration) (ok, gone bool) {
		if _, err := c.Write([]byte("x")); err != nil {
			return false, true
		}
		_ = c.SetReadDeadline(time.Now().Add(wait))
		b := make([]byte, 1)
		n, err := c.Read(b)
		if ne, isNet := err.(net.Error); isNet && ne.Timeout() {
			return false, false
		}
		return n == 1 && b[0] == 'x', err != nil
	}
	old := dial()
	defer old.Close()
	if ok, _ := echoes(old, 2*time.Second); !ok {
		t.Fatal("no echo before the silence")
	}
	p.silence("*")
	if ok, gone := echoes(old, 300*time.Millisecond); ok || gone {
		t.Errorf("a silenced connection: echoed %v, closed %v; want neither", ok, gone)
	}
	fresh := dial()
	defer fresh.Close()
	if ok, gone := echoes(fresh, 300*time.Millisecond); ok || gone {
		t.Errorf("a connection made while silent: echoed %v, closed %v; want neither", ok, gone)
	}
	p.unblock()
	for _, c := range []net.Conn{old, fresh} {
		if _, gone := echoes(c, 2*time.Second); !gone {
			t.Error("a silenced connection is still open after unblock")
		}
	}
	after := dial()
	defer after.Close()
	if ok, _ := echoes(after, 2*time.Second); !ok {
		t.Error("no echo after unblock")
	}
}
