package cluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// proc is one server process, started in a process group of its own so
// that a terminal's SIGINT reaches isoscope, which stops it, and not the
// server directly.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
	log  *os.File
	// quit is the signal that shuts the server down cleanly (SIGTERM;
	// PostgreSQL's fast shutdown is SIGINT, its SIGTERM waits for every
	// client to leave).
	quit syscall.Signal
}

// account is a system user a server runs as (PostgreSQL refuses to run
// as root; Galera's rsync state transfer fails as root).
type account struct {
	name     string
	uid, gid uint32
}

// startProc starts argv with its output appended to logPath, as user
// when it is set and isoscope runs as root.
func startProc(name, logPath string, user *account, env []string, argv ...string) (*proc, error) {
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if user != nil && os.Geteuid() == 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: user.uid, Gid: user.gid}
		_ = log.Chown(int(user.uid), int(user.gid))
	}
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return nil, fmt.Errorf("starting %s: %v", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{}), log: log, quit: syscall.SIGTERM}
	go func() {
		p.err = cmd.Wait()
		_ = log.Close()
		close(p.done)
	}()
	return p, nil
}

// pid is the process's id.
func (p *proc) pid() int { return p.cmd.Process.Pid }

// exited reports whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signalTree sends sig to the process and every process it forked,
// still alive (PostgreSQL's backends, which make themselves leaders of
// their own process groups; Galera's rsync), so that SIGSTOP stops them
// all.
func (p *proc) signalTree(sig syscall.Signal) error {
	if p.exited() {
		return errors.New(p.name + " is not running")
	}
	for _, pid := range tree(p.pid()) {
		_ = syscall.Kill(pid, sig)
	}
	return nil
}

// tree returns pid and its descendants, parents first, from /proc.
func tree(pid int) []int {
	children := map[int][]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces and parentheses.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(f[1]); err == nil {
			children[ppid] = append(children[ppid], child)
		}
	}
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

// stop ends the process: SIGCONT (it may be paused), its quit signal, and
// SIGKILL to its whole group if it has not exited after grace.
func (p *proc) stop(grace time.Duration) {
	if p.exited() {
		return
	}
	pids := tree(p.pid())
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGCONT)
	}
	_ = syscall.Kill(p.pid(), p.quit)
	select {
	case <-p.done:
		waitGone(pids)
	case <-time.After(grace):
	}
	p.kill()
}

// kill sends SIGKILL to the process, its group and every process it
// forked, and waits (at most 10 s) until all of them are gone: a server
// started again on the same data must not meet its predecessor's
// children (PostgreSQL refuses to start while a killed postmaster's
// backends still hold its shared memory).
func (p *proc) kill() {
	pids := tree(p.pid())
	_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
	}
	waitGone(pids)
}

// waitGone waits (at most 10 s) until none of pids is alive.
func waitGone(pids []int) {
	for range 200 {
		left := false
		for _, pid := range pids {
			if alive(pid) {
				left = true
				break
			}
		}
		if !left {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// run runs argv to its end (initdb, pg_basebackup, mariadb-install-db)
// with its output in logPath, as user, killing it after limit.
func run(name, logPath string, user *account, limit time.Duration, argv ...string) error {
	return runEnv(name, logPath, user, nil, limit, argv...)
}

// runEnv is run with env added to isoscope's environment.
func runEnv(name, logPath string, user *account, env []string, limit time.Duration, argv ...string) error {
	p, err := startProc(name, logPath, user, env, argv...)
	if err != nil {
		return err
	}
	select {
	case <-p.done:
	case <-time.After(limit):
		p.kill()
		return fmt.Errorf("%s did not finish within %s (log: %s)", name, limit, logPath)
	}
	if p.err != nil {
		return fmt.Errorf("%s: %v; the end of its log (%s):\n%s", name, p.err, logPath, logTail(logPath, 6))
	}
	return nil
}
