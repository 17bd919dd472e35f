package db

import (
	"strings"
	"testing"
	"time"
)

func TestParseTarget(t *testing.T) {
	for _, c := range []struct {
		addr    string
		kind    Kind
		display string
		driver  string // a substring of the driver's DSN
	}{
		{"", SQLite, "sqlite::memory:", ""},
		{"sqlite::memory:", SQLite, "sqlite::memory:", ""},
		{"sqlite://:memory:", SQLite, "sqlite::memory:", ""},
		{"sqlite://run.db", SQLite, "sqlite://run.db", ""},
		{"sqlite:run.db", SQLite, "sqlite://run.db", ""},
		{"sqlite:///tmp/run.db", SQLite, "sqlite:///tmp/run.db", ""},
		{"badger::memory:", Badger, "badger::memory:", ""},
		{"badger://:memory:", Badger, "badger::memory:", ""},
		{"badger://memory", Badger, "badger::memory:", ""},
		{"badger://data/b", Badger, "badger://data/b", ""},
		{"badger:data/b", Badger, "badger://data/b", ""},
		{"BADGER:///tmp/b", Badger, "badger:///tmp/b", ""},
		{"postgres://postgres@127.0.0.1:5432/test", Postgres, "postgres://postgres@127.0.0.1:5432/test?application_name=isoscope", "application_name=isoscope"},
		{"postgresql://u:secret@h/db?application_name=x", Postgres, "postgresql://u:xxxxx@h/db?application_name=x", "u:secret@h"},
		{"mysql://root@tcp(127.0.0.1:3306)/test", MySQL, "mysql://root@tcp(127.0.0.1:3306)/test?interpolateParams=true", "root@tcp(127.0.0.1:3306)/test"},
		{"mysql://root@127.0.0.1:3306/test", MySQL, "mysql://root@tcp(127.0.0.1:3306)/test?interpolateParams=true", "tcp(127.0.0.1:3306)"},
		{"mariadb://u:pw@db.example/shop?timeout=5s", MySQL, "mysql://u:xxxxx@tcp(db.example:3306)/shop?interpolateParams=true&timeout=5s", "u:pw@tcp(db.example:3306)/shop"},
		{"mysql://u:pw@tcp(h:1)/d", MySQL, "mysql://u:xxxxx@tcp(h:1)/d?interpolateParams=true", "u:pw@"},
	} {
		got, err := ParseTarget(c.addr)
		if err != nil {
			t.Errorf("%q: %v", c.addr, err)
			continue
		}
		if got.Kind != c.kind || got.Display != c.display || !strings.Contains(got.driverDSN, c.driver) {
			t.Errorf("%q: got %s %q (driver %q), want %s %q (driver ∋ %q)", c.addr, got.Kind, got.Display, got.driverDSN, c.kind, c.display, c.driver)
		}
	}
	for _, bad := range []string{"redis://x", "nothing", "sqlite:", "sqlite://a?b", "mysql://u@tcp(h/d", "badger:", "badger://", "badger://a?b"} {
		if _, err := ParseTarget(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParseIsolation(t *testing.T) {
	for i := range numIsolations {
		for _, s := range []string{i.String(), i.SQL()} {
			if got, err := ParseIsolation(s); err != nil || got != i {
				t.Errorf("ParseIsolation(%q) = %v, %v", s, got, err)
			}
		}
	}
	if got, _ := ParseIsolation("RR"); got != RepeatableRead {
		t.Errorf("RR = %v", got)
	}
	if _, err := ParseIsolation("snapshot"); err == nil {
		t.Error("snapshot accepted")
	}
	if RepeatableRead.SQL() != "REPEATABLE READ" {
		t.Errorf("SQL = %q", RepeatableRead.SQL())
	}
}

func TestProductVersion(t *testing.T) {
	for in, want := range map[string]string{
		"PostgreSQL 15.20 (Debian 15.20-0+deb12u1) on x86_64-pc-linux-gnu": "PostgreSQL 15.20",
		"10.11.19-MariaDB-0+deb12u1":                                       "MariaDB 10.11.19",
		"8.0.36":                                                           "MySQL 8.0.36",
		"8.0.11-TiDB-v9.0.0-beta.2.pre-812-ge4e814f":                       "TiDB v9.0.0-beta.2.pre-812-ge4e814f",
		"SQLite 3.51.2":                                                    "SQLite 3.51.2",
	} {
		if got := productVersion(in); got != want {
			t.Errorf("productVersion(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseList(t *testing.T) {
	if l, err := parseList("1,22,-3"); err != nil || len(l) != 3 || l[1] != 22 || l[2] != -3 {
		t.Errorf("parseList = %v, %v", l, err)
	}
	if _, err := parseList("1,,2"); err == nil {
		t.Error("empty element accepted")
	}
}

// TestNetworkTimeouts derives the drivers' network timeouts from the
// statement timeout, unless the address sets them.
func TestNetworkTimeouts(t *testing.T) {
	pg, err := ParseTarget("postgres://postgres@127.0.0.1:5432/test")
	if err != nil {
		t.Fatal(err)
	}
	if dsn := pg.postgresDSN(); strings.Contains(dsn, "connect_timeout") {
		t.Errorf("no statement timeout, yet %s", dsn)
	}
	pg.StmtTimeout = 1500 * time.Millisecond
	if dsn := pg.postgresDSN(); !strings.Contains(dsn, "connect_timeout=2") {
		t.Errorf("statement timeout 1.5s: %s", dsn)
	}
	pg, _ = ParseTarget("postgres://postgres@127.0.0.1:5432/test?connect_timeout=7")
	pg.StmtTimeout = time.Second
	if dsn := pg.postgresDSN(); !strings.Contains(dsn, "connect_timeout=7") || strings.Count(dsn, "connect_timeout") != 1 {
		t.Errorf("the address's connect_timeout: %s", dsn)
	}

	my, err := ParseTarget("mysql://root@127.0.0.1:3306/test")
	if err != nil {
		t.Fatal(err)
	}
	if c := my.mysqlConfig(); c.Timeout != 0 || c.ReadTimeout != 0 || c.WriteTimeout != 0 {
		t.Errorf("no statement timeout, yet %v %v %v", c.Timeout, c.ReadTimeout, c.WriteTimeout)
	}
	my.StmtTimeout = 2 * time.Second
	if c := my.mysqlConfig(); c.Timeout != 2*time.Second || c.ReadTimeout != 4*time.Second || c.WriteTimeout != 4*time.Second {
		t.Errorf("statement timeout 2s: timeout %v, readTimeout %v, writeTimeout %v", c.Timeout, c.ReadTimeout, c.WriteTimeout)
	}
	if my.mysql.ReadTimeout != 0 {
		t.Errorf("the parsed configuration was changed")
	}
	my, _ = ParseTarget("mysql://root@127.0.0.1:3306/test?readTimeout=9s")
	my.StmtTimeout = 2 * time.Second
	if c := my.mysqlConfig(); c.ReadTimeout != 9*time.Second || c.WriteTimeout != 4*time.Second {
		t.Errorf("the address's readTimeout: %v, writeTimeout %v", c.ReadTimeout, c.WriteTimeout)
	}
}

// TestParseEtcd: etcd addresses name one or more endpoints and the kind
// of read; bad ones are refused naming the address.
func TestParseEtcd(t *testing.T) {
	tg, err := ParseTarget("etcd://127.0.0.1:2379,127.0.0.1:2479?reads=serializable")
	if err != nil || tg.Kind != Etcd || len(tg.etcd.endpoints) != 2 || !tg.etcd.serializable || tg.etcd.endpoints[1] != "http://127.0.0.1:2479" {
		t.Fatalf("got %+v, %v", tg, err)
	}
	if tg, err := ParseTarget("etcd://127.0.0.1:2379"); err != nil || tg.etcd.serializable {
		t.Fatalf("got %+v, %v", tg, err)
	}
	for _, bad := range []string{"etcd://", "etcd://127.0.0.1", "etcd://127.0.0.1:2379?reads=stale"} {
		if _, err := ParseTarget(bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("%s: got %v, want an error naming it", bad, err)
		}
	}
}
