package cluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
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
	p := &proc{name: name, cmd: cmd, done: make(chan struct{}), log: log}
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

// signal sends sig to the process (not to its group: the servers'
// children are theirs to manage).
func (p *proc) signal(sig syscall.Signal) error {
	if p.exited() {
		return errors.New(p.name + " is not running")
	}
	return p.cmd.Process.Signal(sig)
}

// stop ends the process: SIGCONT (it may be paused), SIGTERM, and
// SIGKILL to its whole group if it has not exited after grace.
func (p *proc) stop(grace time.Duration) {
	if p.exited() {
		return
	}
	_ = syscall.Kill(p.pid(), syscall.SIGCONT)
	_ = syscall.Kill(p.pid(), syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
	}
	p.kill()
}

// kill sends SIGKILL to the process's group (the server and any helper
// it started, such as Galera's rsync) and waits for the process.
func (p *proc) kill() {
	_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
	_ = syscall.Kill(p.pid(), syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
	}
}

// run runs argv to its end (initdb, pg_basebackup, mariadb-install-db)
// with its output in logPath, as user, killing it after limit.
func run(name, logPath string, user *account, limit time.Duration, argv ...string) error {
	p, err := startProc(name, logPath, user, nil, argv...)
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
		return fmt.Errorf("%s: %v (log: %s)", name, p.err, logPath)
	}
	return nil
}
