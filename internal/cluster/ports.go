package cluster

import (
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// handedOut holds the ports freePorts returned, closed again for the
// servers to bind: a proxy or another cluster's freePorts listening on
// port 0 may be given one of them back before its server binds it.
var handedOut = struct {
	sync.Mutex
	at     map[int]time.Time
	claims map[int]*os.File
}{at: map[int]time.Time{}, claims: map[int]*os.File{}}

// portClaims is the directory of the files by which processes claim the
// ports they hand out from one another: each of the isoscope processes
// on a machine (parallel test binaries, two runs) draws from the same
// range, and a port one drew and closed for its server could be drawn
// by another before the first server binds it (a Galera joiner that
// binds its client port after a state transfer of some seconds met
// one). A claim is an exclusive flock on PORT.lock, held open for
// handOutFor or until the process ends, when the kernel drops it: a
// crashed process's claims never block anyone.
var portClaims = filepath.Join(os.TempDir(), "isoscope-ports")

// claimPort takes the machine-wide claim on port, reporting false when
// another live process holds it. A directory that cannot be written
// claims nothing and blocks nothing (the in-process record still holds).
func claimPort(port int) (*os.File, bool) {
	if err := os.MkdirAll(portClaims, 0o777); err != nil {
		return nil, true
	}
	_ = os.Chmod(portClaims, 0o777|os.ModeSticky)
	f, err := os.OpenFile(filepath.Join(portClaims, strconv.Itoa(port)+".lock"), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, true
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return nil, !errors.Is(err, syscall.EWOULDBLOCK)
	}
	return f, true
}

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
					if f := handedOut.claims[p]; f != nil {
						_ = f.Close()
						delete(handedOut.claims, p)
					}
				}
			}
			claim, ok := claimPort(port)
			taken = !ok // another process drew it lately
			if ok {
				handedOut.at[port] = time.Now()
				if claim != nil {
					handedOut.claims[port] = claim
				}
			}
		}
		handedOut.Unlock()
		if !taken {
			return ln, nil
		}
		skipped = append(skipped, ln)
	}
}
