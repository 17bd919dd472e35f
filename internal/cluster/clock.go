package cluster

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// libfaketime is Debian's libfaketime (package libfaketime), which a
// dynamically linked program loads with LD_PRELOAD to see a shifted
// clock.
const libfaketime = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"

// clockFile is the name, in a node's directory, of the file libfaketime
// reads the node's clock offset from ("+0", "-83", "+120": seconds).
const clockFile = "clock"

// ClockSkew says whether the clocks of a kind's nodes can be skewed: nil
// when they can, or why not. The servers of Galera (mariadbd) and
// PostgreSQL are dynamically linked C programs that read the clock
// through the C library, which libfaketime intercepts; etcd is a
// statically linked Go program that reads the clock through the vDSO,
// which no LD_PRELOAD reaches.
func ClockSkew(k Kind) error {
	switch k {
	case Galera, PostgresStandby:
		if _, err := os.Stat(libfaketime); err != nil {
			return fmt.Errorf("skewing %s's clocks needs libfaketime (Debian: faketime): %v", k, err)
		}
		return nil
	case Etcd:
		return errors.New("etcd's clocks cannot be skewed: etcd is a statically linked Go program that reads the clock through the vDSO, which libfaketime (LD_PRELOAD) cannot reach")
	case NatsKV, NatsKVLeader:
		return fmt.Errorf("%s's clocks cannot be skewed: nats-server is a Go program, whose runtime reads the clock through the vDSO, not through the C library that libfaketime (LD_PRELOAD) intercepts", k)
	}
	return fmt.Errorf("%s's clocks cannot be skewed: isoscope skews only the clocks of servers that read time through the C library (galera, postgres-standby)", k)
}

// Option is an option of Up.
type Option func(*Cluster)

// WithClocks starts every node under libfaketime, so that SkewClock can
// shift its clock; Up refuses it for a kind whose clocks cannot be
// skewed (ClockSkew).
func WithClocks() Option { return func(c *Cluster) { c.clocks = true } }

// clockEnv is the environment that starts node's server under
// libfaketime with its own control file, when the cluster was stood up
// WithClocks (nil otherwise). The file is made, at offset 0,
// the first time. libfaketime reads it again once its cache of one
// second has passed (FAKETIME_CACHE_DURATION; FAKETIME_NO_CACHE would
// open the file at every reading of the clock); only the wall clock is
// shifted (FAKETIME_DONT_FAKE_MONOTONIC), as a clock stepped by hand or
// by NTP is: the monotonic clock, which timers and timeouts use, keeps
// running.
func (c *Cluster) clockEnv(n *Node) []string {
	if !c.clocks {
		return nil
	}
	if n.clock == "" {
		n.clock = filepath.Join(filepath.Dir(n.Dir), clockFile)
		if _, err := os.Stat(n.clock); err != nil {
			_ = writeClock(n.clock, 0)
		}
	}
	return []string{
		"LD_PRELOAD=" + libfaketime,
		"FAKETIME_TIMESTAMP_FILE=" + n.clock,
		"FAKETIME_CACHE_DURATION=1",
		"FAKETIME_DONT_FAKE_MONOTONIC=1",
	}
}

// writeClock writes offset (whole seconds) to the control file, by
// renaming a new file over it: libfaketime never reads half a line.
func writeClock(file string, offset time.Duration) error {
	s := strconv.FormatInt(int64(offset.Round(time.Second)/time.Second), 10)
	if offset >= 0 {
		s = "+" + s
	}
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, []byte(s+"\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}

// ClockOffset asks node i for its clock (PostgreSQL: clock_timestamp();
// MariaDB: SYSDATE(6)) and returns how far it is from this machine's,
// measured against the middle of the query's round trip.
func (c *Cluster) ClockOffset(ctx context.Context, i int) (time.Duration, error) {
	n, err := c.node(i)
	if err != nil {
		return 0, err
	}
	var db *sql.DB
	var query string
	switch c.Spec.Kind {
	case Galera:
		db, err = openMySQL(c.dsn(i))
		query = "SELECT CAST(UNIX_TIMESTAMP(SYSDATE(6)) * 1000000 AS SIGNED)"
	case PostgresStandby:
		db, err = sql.Open("pgx", c.dsn(i)+"&connect_timeout=3")
		query = "SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint"
	default:
		return 0, ClockSkew(c.Spec.Kind)
	}
	if err != nil {
		return 0, err
	}
	defer db.Close()
	if err := db.PingContext(ctx); err != nil {
		return 0, fmt.Errorf("%s: %v", n.Name, err)
	}
	before := time.Now()
	var micros int64
	if err := db.QueryRowContext(ctx, query).Scan(&micros); err != nil {
		return 0, fmt.Errorf("%s: %v", n.Name, err)
	}
	after := time.Now()
	mid := before.Add(after.Sub(before) / 2)
	return time.UnixMicro(micros).Sub(mid), nil
}

// clockTolerance is how close a node's clock must come to the offset
// asked for to count as set.
const clockTolerance = 500 * time.Millisecond

// SkewClock sets node i's clock to offset from the real time (0: the
// real time again) and waits, asking the node (ClockOffset) every 200 ms
// for at most 10 s, until its clock shows it; it returns the offset the
// node showed. The cluster must have been stood up WithClocks.
func (c *Cluster) SkewClock(ctx context.Context, i int, offset time.Duration) (time.Duration, error) {
	c.mu.Lock()
	n, err := c.node(i)
	file := ""
	if err == nil {
		file = n.clock
	}
	c.mu.Unlock()
	if err != nil {
		return 0, err
	}
	if file == "" {
		if err := ClockSkew(c.Spec.Kind); err != nil {
			return 0, err
		}
		return 0, fmt.Errorf("%s was not started under libfaketime (the cluster was stood up without clock faults)", n.Name)
	}
	if err := writeClock(file, offset); err != nil {
		return 0, err
	}
	want := offset.Round(time.Second)
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var seen time.Duration
	err = poll(wctx, 200*time.Millisecond, func(ctx context.Context) error {
		got, err := c.ClockOffset(ctx, i)
		if err != nil {
			return err
		}
		seen = got
		if math.Abs(float64(got-want)) > float64(clockTolerance) {
			return fmt.Errorf("%s's clock is %s off, not yet %s", n.Name, got.Round(time.Millisecond), want)
		}
		return nil
	})
	return seen, err
}
