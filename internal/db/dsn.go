package db

import (
	"fmt"
	"math"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Target is a parsed database address (the --db flag).
type Target struct {
	Kind Kind
	// Display is the address as people see it: the password hidden.
	Display string
	// driverDSN is what the driver opens.
	driverDSN string
	// mysql is the parsed MySQL configuration.
	mysql *mysql.Config
	// etcd is the parsed etcd address.
	etcd *etcdAddr
	// dqlite is the parsed dqlite address.
	dqlite *dqliteAddr
	// natsKV is the parsed NATS KV address.
	natsKV *natsKVAddr
	// zk is the parsed ZooKeeper address.
	zk *zkAddr
	// redis is the parsed Redis address.
	redis *redisAddr
	// memory says the SQLite or Badger database lives in memory; path is
	// the file (SQLite) or directory (Badger) otherwise.
	memory bool
	path   string
	// StmtTimeout, when positive, bounds how long the database may take:
	// the server cancels a statement that runs longer (PostgreSQL's
	// statement_timeout, MariaDB's max_statement_time, MySQL's
	// max_execution_time for reads), and the drivers' own network
	// timeouts are derived from it unless the address sets them (see
	// Open). Zero leaves the server's and the drivers' defaults.
	StmtTimeout time.Duration
}

// DefaultAddress is the database `isoscope run` uses without --db: an
// in-memory SQLite database, which needs no server.
const DefaultAddress = "sqlite::memory:"

// ParseTarget parses a database address:
//
//	postgres://user:pass@host:port/db?options   (also postgresql://)
//	mysql://user:pass@tcp(host:port)/db?options (go-sql-driver's form)
//	mysql://user:pass@host:port/db?options      (URL form; also mariadb://)
//	sqlite://FILE, sqlite:FILE, sqlite:///ABSOLUTE/FILE
//	sqlite::memory: (also sqlite://:memory:; "" is the default, in memory)
//	badger://DIR, badger:DIR, badger:///ABSOLUTE/DIR
//	badger::memory: (also badger://:memory:, badger://memory)
//	etcd://host:port[,host:port…][?reads=serializable]
//	dqlite://host:port[,host:port…][/database]  (database: default test)
//	nats-kv://host:port[,host:port…][?replicas=N&reads=direct|leader]
//	zookeeper://host:port[,host:port…][?reads=local|sync]
//	redis://host:port (one server)
//	redis-sentinel://host:port[,host:port…]/master[?wait=N&wait-timeout=D&reads=replica]
func ParseTarget(addr string) (Target, error) {
	addr = strings.TrimSpace(addr)
	if addr == "" {
		addr = DefaultAddress
	}
	scheme, rest, ok := strings.Cut(addr, ":")
	if !ok {
		return Target{}, badAddress(addr)
	}
	switch strings.ToLower(scheme) {
	case "postgres", "postgresql":
		u, err := url.Parse(addr)
		if err != nil {
			return Target{}, fmt.Errorf("database address: %v", err)
		}
		q := u.Query()
		if q.Get("application_name") == "" {
			q.Set("application_name", "isoscope")
			u.RawQuery = q.Encode()
		}
		return Target{Kind: Postgres, Display: u.Redacted(), driverDSN: u.String()}, nil
	case "mysql", "mariadb":
		return parseMySQL(addr, strings.TrimPrefix(rest, "//"))
	case "sqlite", "sqlite3":
		return parseSQLite(addr, rest)
	case "badger":
		return parseBadger(addr, rest)
	case "etcd":
		return parseEtcd(addr, rest)
	case "dqlite":
		return parseDqlite(addr, rest)
	case "nats-kv":
		return parseNatsKV(addr, rest)
	case "zookeeper", "zk":
		return parseZookeeper(addr, rest)
	case "redis", "redis-sentinel":
		return parseRedis(addr, strings.ToLower(scheme), rest)
	}
	return Target{}, badAddress(addr)
}

func badAddress(addr string) error {
	return fmt.Errorf("unknown database address %q (postgres://user@host:5432/db, mysql://user@host:3306/db, sqlite://FILE, sqlite::memory:, badger://DIR, badger::memory:, etcd://host:2379[,host:port…][?reads=serializable], dqlite://host:port[,host:port…][/database], nats-kv://host:4222[,host:port…][?replicas=N], zookeeper://host:2181[,host:port…][?reads=sync], redis://host:6379 or redis-sentinel://host:26379[,host:port…]/master[?wait=N&reads=replica])", addr)
}

// parseMySQL accepts go-sql-driver's DSN form (user:pass@tcp(host:port)/db)
// and the URL form (user:pass@host:port/db), and turns on client-side
// parameter interpolation: one round trip per statement.
func parseMySQL(addr, rest string) (Target, error) {
	dsn := rest
	if !strings.Contains(rest, "(") {
		u, err := url.Parse("mysql://" + rest)
		if err != nil {
			return Target{}, fmt.Errorf("database address: %v", err)
		}
		host := u.Host
		if host == "" {
			host = "127.0.0.1:3306"
		} else if u.Port() == "" {
			host = net.JoinHostPort(u.Hostname(), "3306")
		}
		user := ""
		if u.User != nil {
			user = u.User.Username()
			if p, ok := u.User.Password(); ok {
				user += ":" + p
			}
			user += "@"
		}
		dsn = user + "tcp(" + host + ")/" + strings.TrimPrefix(u.Path, "/")
		if u.RawQuery != "" {
			dsn += "?" + u.RawQuery
		}
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return Target{}, fmt.Errorf("database address %q: %v", addr, err)
	}
	cfg.InterpolateParams = true
	shown := *cfg
	if shown.Passwd != "" {
		shown.Passwd = "xxxxx"
	}
	return Target{Kind: MySQL, Display: "mysql://" + shown.FormatDSN(), driverDSN: cfg.FormatDSN(), mysql: cfg}, nil
}

func parseSQLite(addr, rest string) (Target, error) {
	path := strings.TrimPrefix(rest, "//")
	switch path {
	case ":memory:", "memory":
		return Target{Kind: SQLite, Display: DefaultAddress, memory: true}, nil
	case "":
		return Target{}, fmt.Errorf("database address %q names no file (sqlite://FILE or sqlite::memory:)", addr)
	}
	if strings.ContainsAny(path, "?#") {
		return Target{}, fmt.Errorf("database address %q: a SQLite file name may not hold ? or #", addr)
	}
	return Target{Kind: SQLite, Display: "sqlite://" + path, path: path}, nil
}

// BadgerMemory is the address of an in-memory Badger database.
const BadgerMemory = "badger::memory:"

func parseBadger(addr, rest string) (Target, error) {
	path := strings.TrimPrefix(rest, "//")
	switch path {
	case ":memory:", "memory":
		return Target{Kind: Badger, Display: BadgerMemory, memory: true}, nil
	case "":
		return Target{}, fmt.Errorf("database address %q names no directory (badger://DIR or badger::memory:)", addr)
	}
	if strings.ContainsAny(path, "?#") {
		return Target{}, fmt.Errorf("database address %q: a Badger directory name may not hold ? or #", addr)
	}
	return Target{Kind: Badger, Display: "badger://" + path, path: path}, nil
}

// InMemory says the database lives in this process's memory
// (sqlite::memory:, badger::memory:): no other process shares its keys.
func (t Target) InMemory() bool { return t.memory }

// postgresDSN is the PostgreSQL address with pgx's connect_timeout (whole
// seconds) set from StmtTimeout unless the address sets it.
func (t Target) postgresDSN() string {
	if t.StmtTimeout <= 0 {
		return t.driverDSN
	}
	u, err := url.Parse(t.driverDSN)
	if err != nil { // ParseTarget parsed it
		return t.driverDSN
	}
	q := u.Query()
	if q.Get("connect_timeout") == "" {
		q.Set("connect_timeout", strconv.Itoa(int(math.Ceil(connectTimeout(t.StmtTimeout).Seconds()))))
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// mysqlConfig is the MySQL configuration with go-sql-driver's timeout
// (connecting), readTimeout and writeTimeout (each network read and write)
// set from StmtTimeout unless the address sets them.
func (t Target) mysqlConfig() *mysql.Config {
	cfg := t.mysql.Clone()
	if d := t.StmtTimeout; d > 0 {
		if cfg.Timeout == 0 {
			cfg.Timeout = connectTimeout(d)
		}
		// A backstop behind the callers' context deadlines: the server
		// answers within d (max_statement_time), so an answer that takes
		// twice as long will not come.
		if cfg.ReadTimeout == 0 {
			cfg.ReadTimeout = 2 * d
		}
		if cfg.WriteTimeout == 0 {
			cfg.WriteTimeout = 2 * d
		}
	}
	return cfg
}

// dialTimeout is how long a client of a key-value store (etcd, NATS) may
// take to connect: connectTimeout of StmtTimeout, or 2 s without one.
func (t Target) dialTimeout() time.Duration {
	if t.StmtTimeout > 0 {
		return connectTimeout(t.StmtTimeout)
	}
	return 2 * time.Second
}

// connectTimeout is how long connecting may take when statements may take
// d: as long, and at least a second.
func connectTimeout(d time.Duration) time.Duration { return max(d, time.Second) }
