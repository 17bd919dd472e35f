package db

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
)

// InUseError says that another run holds the table: a run refuses to
// share its table, since the other run's writes would show in its
// history as values none of its own transactions wrote.
type InUseError struct {
	// Table is the table's name and Where the database's display name.
	Table, Where string
	// Holder says who holds it, as far as the database can tell ("" when
	// it cannot).
	Holder string
	// Another says how to choose another table ("--table NAME" unless
	// the whole database is one run's, as a Badger directory is).
	Another string
}

func (e *InUseError) Error() string {
	holder := "another isoscope run"
	if e.Holder != "" {
		holder += " (" + e.Holder + ")"
	}
	another := e.Another
	if another == "" {
		another = "choose another table with --table NAME"
	}
	return fmt.Sprintf("table %s in %s is in use by %s: two runs on one table spoil each other's histories; wait for that run to end, or %s",
		e.Table, e.Where, holder, another)
}

// TableLock is a run's exclusive hold on its table (Database.Lock). It
// ends with Release, or with the process: a lock held by a session of the
// database goes with the session, one held by a lease when the lease runs
// out, a file lock when the process exits.
type TableLock struct {
	once    sync.Once
	release func() error
	err     error
}

// Release gives the table up; later calls do nothing and return the
// first call's error.
func (l *TableLock) Release() error {
	if l == nil {
		return nil
	}
	l.once.Do(func() {
		if l.release != nil {
			l.err = l.release()
		}
	})
	return l.err
}

// processLock is the lock of a database that lives in this process alone
// (an in-memory one): no other run can reach its table.
func processLock() *TableLock { return &TableLock{} }

// holderText describes this process as a lock's holder, with a random
// token that sets each lock apart: "isoscope pid 4242 on host, since
// 03:31:02 UTC (lock 3fa2b1c0)".
func holderText() string {
	host, _ := os.Hostname()
	var tok [4]byte
	_, _ = rand.Read(tok[:])
	return fmt.Sprintf("isoscope pid %d on %s, since %s (lock %s)",
		os.Getpid(), host, time.Now().UTC().Format("2006-01-02 15:04:05 UTC"), hex.EncodeToString(tok[:]))
}

// lockFileName is the lock file of table in the embedded database at
// path: beside it, named after both (the table's name folded to lower
// case, as SQLite folds it).
func lockFileName(path, table string) string {
	return path + ".isoscope-lock-" + strings.ToLower(table)
}

// lockFile takes an exclusive flock on the file name, creating it, and
// writes this process's holder text into it. When another process (or
// another open file in this one) holds it, the error is an *InUseError
// whose Holder is the text the holder wrote. The lock goes when the
// process exits; Release removes the file.
func lockFile(name string, inUse InUseError) (*TableLock, error) {
	for {
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("locking table %s: %v", inUse.Table, err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			holder, _ := os.ReadFile(name)
			_ = f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				inUse.Holder = strings.TrimSpace(string(holder))
				if inUse.Holder == "" {
					inUse.Holder = "lock file " + name
				} else {
					inUse.Holder += "; lock file " + name
				}
				return nil, &inUse
			}
			return nil, fmt.Errorf("locking table %s (%s): %v", inUse.Table, name, err)
		}
		// A holder that released the lock removed the file after this
		// process opened it: the lock is on a file no longer there, and
		// the next run would create another. Start again.
		if !sameFile(f, name) {
			_ = f.Close()
			continue
		}
		if err := f.Truncate(0); err == nil {
			_, _ = f.WriteAt([]byte(holderText()+", table "+inUse.Table+"\n"), 0)
		}
		return &TableLock{release: func() error {
			rmErr := os.Remove(name)
			if err := f.Close(); err != nil {
				return err
			}
			if errors.Is(rmErr, os.ErrNotExist) {
				return nil
			}
			return rmErr
		}}, nil
	}
}

// sameFile reports whether the open file f is the file at name now.
func sameFile(f *os.File, name string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(name)
	return err == nil && os.SameFile(a, b)
}
