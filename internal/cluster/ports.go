package cluster

import (
	"net"
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

// listenFree listens on a free port of 127.0.0.1 that freePorts has not
// handed out lately; with handOut, it hands the port out itself.
func listenFree(handOut bool) (net.Listener, error) {
	var skipped []net.Listener
	defer func() {
		for _, l := range skipped {
			_ = l.Close()
		}
	}()
	for {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
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
