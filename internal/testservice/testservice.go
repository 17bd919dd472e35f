// Package testservice finds the services that integration tests run
// against (docs/services.md): PostgreSQL at ISOSCOPE_TEST_POSTGRES,
// MariaDB or MySQL at ISOSCOPE_TEST_MYSQL and NATS JetStream at
// ISOSCOPE_TEST_NATS, with the development machines' addresses as
// defaults. A test that cannot reach its service fails with a message
// saying how to start it when CI=true, and is skipped with that message
// elsewhere. Each test gets a table of its own, dropped when it ends, so
// that tests and concurrent runs do not clash; Proxy stands between a
// test and its database to stall or cut its connections.
package testservice

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/db"
)

// The default addresses: the services every development and CI machine
// runs on loopback.
const (
	DefaultPostgres = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	DefaultMySQL    = "mysql://root@127.0.0.1:3306/test"
)

// How to start each service again, as root (docs/services.md).
const (
	startPostgres = "pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start"
	startMariaDB  = "start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd"
	startNATS     = "start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log"
)

// DefaultNATS is the NATS server (with JetStream) of the development and
// CI machines.
const DefaultNATS = "nats://127.0.0.1:4222"

// NATSAddr is the test NATS server's address: ISOSCOPE_TEST_NATS, or
// DefaultNATS.
func NATSAddr() string {
	if addr := os.Getenv("ISOSCOPE_TEST_NATS"); addr != "" {
		return addr
	}
	return DefaultNATS
}

// NATS returns the address of the test NATS server (ISOSCOPE_TEST_NATS)
// after checking that it accepts connections; like the databases, one
// that cannot be reached fails the test in CI and skips it elsewhere.
func NATS(t testing.TB) string {
	t.Helper()
	addr := NATSAddr()
	host := strings.TrimPrefix(addr, "nats://")
	conn, err := net.DialTimeout("tcp", host, 5*time.Second)
	if err != nil {
		Unavailable(t, "NATS is not reachable at "+addr+" (ISOSCOPE_TEST_NATS): "+err.Error()+
			"\nstart it (as root) with: "+startNATS+"\nor point ISOSCOPE_TEST_NATS at another server")
	}
	_ = conn.Close()
	return addr
}

// Postgres returns the address of the test PostgreSQL after checking that
// it answers.
func Postgres(t testing.TB) string {
	t.Helper()
	return reach(t, "ISOSCOPE_TEST_POSTGRES", DefaultPostgres, "PostgreSQL", startPostgres)
}

// MySQL returns the address of the test MariaDB (or MySQL) after checking
// that it answers.
func MySQL(t testing.TB) string {
	t.Helper()
	return reach(t, "ISOSCOPE_TEST_MYSQL", DefaultMySQL, "MariaDB", startMariaDB)
}

// Setup is the command that installs, on a Debian machine, the programs
// the tests need (galera-4, postgresql-15, etcd-server, go-dqlite,
// libfaketime, chromium, gdb, nats-server, staticcheck).
const Setup = "make setup (scripts/setup.sh)"

// HowToInstall returns, for an error message that names the Debian
// package a missing program comes from (the clusters' "etcd needs the etcd
// server (Debian: etcd-server)"), a line saying which command installs
// it; "" for any other message.
func HowToInstall(msg string) string {
	if !strings.Contains(msg, "(Debian: ") {
		return ""
	}
	return "\ninstall what the tests need with: " + Setup
}

// InCI reports whether the tests run in CI (CI=true), where a database
// that cannot be reached fails the test.
func InCI() bool { return os.Getenv("CI") == "true" }

// Unavailable stops a test that needs what the machine lacks (a database,
// a server, a debugger), saying why: it fails in CI, whose machines have
// all of it, and skips elsewhere, so that a developer's machine without it
// can still run the rest.
func Unavailable(t testing.TB, why string) {
	t.Helper()
	if InCI() {
		t.Fatal(why)
	}
	t.Skip(why)
}

func reach(t testing.TB, env, def, name, start string) string {
	t.Helper()
	addr := os.Getenv(env)
	if addr == "" {
		addr = def
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	d, err := db.Open(ctx, addr, "")
	if err != nil {
		Unavailable(t, name+" is not reachable at "+addr+" ("+env+"): "+err.Error()+
			"\nstart it (as root) with: "+start+"\nor point "+env+" at another server")
	}
	_ = d.Close()
	return addr
}

// Table returns a table name of its own for one test or run:
// isoscope_t_ and 12 random hexadecimal digits.
func Table() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "isoscope_t_" + hex.EncodeToString(b[:])
}

// Open opens the database at addr with a table of its own, creates the
// table, and drops it and closes the database when the test ends.
func Open(t testing.TB, addr string) db.Database {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := db.Open(ctx, addr, Table())
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Reset(ctx); err != nil {
		_ = d.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := d.Drop(ctx); err != nil {
			t.Errorf("dropping the test table: %v", err)
		}
		_ = d.Close()
	})
	return d
}
