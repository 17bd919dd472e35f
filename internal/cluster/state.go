package cluster

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// StateFile is the file in a cluster's directory that records its nodes'
// processes and addresses, for `isoscope cluster down`.
const StateFile = "isoscope-cluster.json"

// State is what StateFile holds.
type State struct {
	Spec string `json:"spec"`
	// Owner is the process id of the isoscope that stood the cluster up
	// (its proxies live in that process).
	Owner int         `json:"owner"`
	Nodes []NodeState `json:"nodes"`
}

// NodeState is one node in StateFile.
type NodeState struct {
	Name string `json:"name"`
	PID  int    `json:"pid"`
	DSN  string `json:"dsn"`
	// Addr is the host:port the node's clients reach (its client
	// proxy).
	Addr string `json:"addr,omitempty"`
	Dir  string `json:"dir"`
	Log  string `json:"log"`
}

func (c *Cluster) writeState() error {
	c.mu.Lock()
	st := State{Spec: c.Spec.String(), Owner: os.Getpid()}
	for i, n := range c.all() {
		ns := NodeState{Name: n.Name, Dir: n.Dir, Log: n.Log}
		if n.client != nil {
			ns.Addr = n.client.addr()
		}
		if c.dsn != nil && i < len(c.Nodes) {
			ns.DSN = c.dsn(i)
		}
		if n.proc != nil && !n.proc.exited() {
			ns.PID = n.proc.pid()
		}
		st.Nodes = append(st.Nodes, ns)
	}
	c.mu.Unlock()
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(c.Dir, StateFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(c.Dir, StateFile))
}

// ReadState reads the state file of the cluster in dir.
func ReadState(dir string) (*State, error) {
	b, err := os.ReadFile(filepath.Join(dir, StateFile))
	if err != nil {
		return nil, fmt.Errorf("%s holds no isoscope cluster: %v", dir, err)
	}
	var st State
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("%s: %v", filepath.Join(dir, StateFile), err)
	}
	return &st, nil
}

// Down stops the cluster recorded in dir by another isoscope (one that
// was killed, or `isoscope cluster up` in another terminal): it sends
// SIGTERM to the isoscope that owns it (which then stops its nodes) and
// to each node's server that is still running (checked by its command
// line naming its directory, so that a reused process id is left alone),
// SIGKILL to what is left after grace, and removes dir. It returns the
// names of the nodes it had to stop itself.
func Down(dir string, grace time.Duration) ([]string, error) {
	st, err := ReadState(dir)
	if err != nil {
		return nil, err
	}
	if st.Owner != 0 && st.Owner != os.Getpid() && isIsoscope(st.Owner) {
		_ = syscall.Kill(st.Owner, syscall.SIGTERM)
		deadline := time.Now().Add(grace)
		for time.Now().Before(deadline) && alive(st.Owner) {
			time.Sleep(100 * time.Millisecond)
		}
	}
	var stopped []string
	var live []NodeState
	for _, n := range st.Nodes {
		if n.PID > 0 && ownedBy(n.PID, dir) {
			_ = syscall.Kill(n.PID, syscall.SIGCONT)
			_ = syscall.Kill(n.PID, syscall.SIGTERM)
			live = append(live, n)
			stopped = append(stopped, n.Name)
		}
	}
	deadline := time.Now().Add(grace)
	for _, n := range live {
		for time.Now().Before(deadline) && ownedBy(n.PID, dir) {
			time.Sleep(100 * time.Millisecond)
		}
		if ownedBy(n.PID, dir) {
			_ = syscall.Kill(-n.PID, syscall.SIGKILL)
			_ = syscall.Kill(n.PID, syscall.SIGKILL)
		}
	}
	for _, n := range live {
		for i := 0; i < 50 && ownedBy(n.PID, dir); i++ {
			time.Sleep(100 * time.Millisecond)
		}
		if ownedBy(n.PID, dir) {
			return stopped, fmt.Errorf("%s (pid %d) did not stop; %s is left", n.Name, n.PID, dir)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return stopped, err
	}
	return stopped, nil
}

// alive reports whether process pid exists (and is no zombie).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// ownedBy reports whether process pid is alive and its command line
// names dir (every server isoscope starts is given its directory).
func ownedBy(pid int, dir string) bool {
	if !alive(pid) {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err == nil && strings.Contains(string(b), dir)
}

// isIsoscope reports whether process pid is alive and runs an isoscope
// binary (or a test of it).
func isIsoscope(pid int) bool {
	if !alive(pid) {
		return false
	}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return false
	}
	base := filepath.Base(exe)
	return strings.Contains(base, "isoscope") || strings.HasSuffix(base, ".test")
}
