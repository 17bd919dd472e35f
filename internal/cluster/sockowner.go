package cluster

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// sockOwner returns the name in pids of the process that holds the TCP
// socket bound to local port port on 127.0.0.1, or "" if none of them
// does. It reads /proc/net/tcp for the socket's inode, then each
// process's open files for that inode (root may read every process's).
func sockOwner(port int, pids map[int]string) string {
	if len(pids) == 0 {
		return ""
	}
	inode := socketInode(port)
	if inode == "" {
		return ""
	}
	want := "socket:[" + inode + "]"
	for pid, name := range pids {
		dir := fmt.Sprintf("/proc/%d/fd", pid)
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if t, err := os.Readlink(dir + "/" + e.Name()); err == nil && t == want {
				return name
			}
		}
	}
	return ""
}

// socketInode finds the inode of the IPv4 TCP socket whose local address
// is 127.0.0.1:port.
func socketInode(port int) string {
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return ""
	}
	defer f.Close()
	local := fmt.Sprintf("0100007F:%04X", port)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 9 && fields[1] == local {
			if _, err := strconv.Atoi(fields[9]); err == nil && fields[9] != "0" {
				return fields[9]
			}
		}
	}
	return ""
}
