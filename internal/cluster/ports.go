package cluster

import (
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// handedOut holds the ports freePorts returned, closed again for the
// servers to bind: a proxy or another cluster's freePorts listening on
// port 0 may be given one of them back before its server binds it.
var handedOut = struct {
	sync.Mutex
	at map[int]time.Time
}{at: map[int]time.Time{}}

// handOutFor is how long a port freePorts returned stays out of the
// others' way: long enough for any server to have bound it.
const handOutFor = 10 * time.Minute

// serverPortsFrom is the lowest port freePorts hands out; it hands out
// ports below the system's ephemeral range, from which every outgoing
// connection takes its local port and could take a port handed out
// before its server binds it (a Galera node started ten seconds after
// its ports were chosen met one). Five digits, for the proxies that
// rewrite addresses.
const serverPortsFrom = 20000

// serverPortsTo is the highest port freePorts hands out: just below the
// ephemeral range (0: there is no room below it, and ports come from it).
var serverPortsTo = func() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	lo, err := strconv.Atoi(f[0])
	if err != nil || lo-1 < serverPortsFrom+1000 {
		return 0
	}
	return lo - 1
}()

// listenFree listens on a free port of 127.0.0.1 that freePorts has not
// handed out lately; with handOut, it hands the port out itself, drawn
// below the ephemeral range where there is room.
func listenFree(handOut bool) (net.Listener, error) {
	var skipped []net.Listener
	defer func() {
		for _, l := range skipped {
			_ = l.Close()
		}
	}()
	for try := 0; ; try++ {
		addr := "127.0.0.1:0"
		if handOut && serverPortsTo > 0 && try < 1000 {
			addr = "127.0.0.1:" + strconv.Itoa(serverPortsFrom+rand.IntN(serverPortsTo-serverPortsFrom+1))
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			if addr != "127.0.0.1:0" {
				continue // taken: draw another
			}
			return nil, err
		}
		port := ln.Addr().(*net.TCPAddr).Port
		handedOut.Lock()
		at, taken := handedOut.at[port]
		taken = taken && time.Since(at) < handOutFor
		if !taken && handOut {
			for p, at := range handedOut.at {
				if time.Since(at) >= handOutFor {
					delete(handedOut.at, p)
				}
			}
			handedOut.at[port] = time.Now()
		}
		handedOut.Unlock()
		if !taken {
			return ln, nil
		}
		skipped = append(skipped, ln)
	}
}
