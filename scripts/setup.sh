#!/usr/bin/env bash
# setup.sh installs what isoscope's tests need on a Debian 12 machine, and
# nothing when all of it is there (a quick no-op): `make test` and CI
# (.ci/run) run it first. It needs root (or sudo) only to install.
#
#   chromium              the HTML report's end-to-end test (headless)
#   gdb                   the PostgreSQL commit-race replay holds a backend
#                         inside its COMMIT
#   nats-server           the sharded checker's failover test runs a
#                         three-server NATS cluster of its own
#   galera-4, rsync       `--cluster galera` (MariaDB Galera nodes)
#   postgresql-15         `--cluster postgres-standby` (primary, hot standby)
#   etcd-server           `--cluster etcd`
#   postgresql-15-auto-failover, pg-auto-failover-cli
#                         `--cluster pg-auto-failover` (pg_autoctl, monitor)
#   go-dqlite             `--cluster dqlite` (Debian's dqlite-demo nodes)
#   libfaketime           the clock faults (`--faults clock`)
#   zookeeper             `--cluster zookeeper` (ZooKeeper 3.8 servers run
#                         by java; it brings the JRE, slf4j and log4j)
#   redis-server,         `--cluster redis` (a primary, replicas and three
#   redis-sentinel        sentinels that fail it over)
#   staticcheck           `make lint`, by go install at a pinned version
#
# It also says which of the test services (PostgreSQL, MariaDB, NATS on
# 127.0.0.1) does not answer, and how to start it; it starts
# nothing itself. Exit status 1 when something could not be installed.
set -uo pipefail

STATICCHECK_VERSION="${STATICCHECK_VERSION:-v0.8.2}"
GO="${GO:-go}"

# need PACKAGE TEST...: PACKAGE is missing unless every test passes; a test
# is a command name (looked up on the PATH) or an absolute file path.
missing=()
need() {
  local pkg=$1; shift
  for t in "$@"; do
    if [[ $t == /* ]]; then
      [[ -e $t ]] || { missing+=("$pkg"); return; }
    else
      command -v "$t" >/dev/null 2>&1 || { missing+=("$pkg"); return; }
    fi
  done
}

need chromium chromium
need gdb gdb
need nats-server nats-server
need mariadb-server /usr/sbin/mariadbd /usr/bin/mariadb-install-db
need galera-4 /usr/lib/galera/libgalera_smm.so
need rsync /usr/bin/rsync
need postgresql-15 /usr/lib/postgresql/15/bin/initdb /usr/lib/postgresql/15/bin/postgres /usr/lib/postgresql/15/bin/pg_basebackup
need etcd-server etcd
need postgresql-15-auto-failover /usr/share/postgresql/15/extension/pgautofailover.control
need pg-auto-failover-cli /usr/bin/pg_autoctl
need go-dqlite dqlite-demo
need libfaketime /usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1
need zookeeper /usr/share/java/zookeeper.jar /usr/share/java/slf4j-log4j12.jar /usr/share/java/log4j-1.2.jar java
need redis-server redis-server
need redis-sentinel redis-sentinel

status=0
if ((${#missing[@]})); then
  sudo=()
  if [[ $(id -u) != 0 ]]; then
    if command -v sudo >/dev/null 2>&1; then sudo=(sudo -n); fi
  fi
  echo "setup: installing ${missing[*]}"
  # chromium keeps its recommended packages (fonts for the screenshots);
  # the servers are installed without theirs.
  rest=()
  for p in "${missing[@]}"; do [[ $p == chromium ]] || rest+=("$p"); done
  apt=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get)
  ok=1
  "${apt[@]}" update -qq >/dev/null || ok=0
  if ((ok)) && [[ " ${missing[*]} " == *" chromium "* ]]; then
    "${apt[@]}" install -y -qq chromium >/dev/null || ok=0
  fi
  if ((ok)) && ((${#rest[@]})); then
    "${apt[@]}" install -y -qq --no-install-recommends "${rest[@]}" >/dev/null || ok=0
  fi
  if ((!ok)); then
    echo "setup: could not install ${missing[*]}; as root, run:" >&2
    echo "  apt-get update && apt-get install -y --no-install-recommends ${missing[*]}" >&2
    status=1
  fi
fi

gobin="$("$GO" env GOPATH)/bin"
if ! PATH="$PATH:$gobin" staticcheck -version 2>/dev/null | grep -qF "(${STATICCHECK_VERSION#v})"; then
  echo "setup: installing staticcheck $STATICCHECK_VERSION"
  if ! "$GO" install "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION"; then
    echo "setup: could not install staticcheck; run: $GO install honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION" >&2
    status=1
  fi
fi

# The services the integration tests use (they read their addresses from
# ISOSCOPE_TEST_POSTGRES, ISOSCOPE_TEST_MYSQL, ISOSCOPE_TEST_NATS, …).
service() { # name port start-command
  if ! (exec 3<>"/dev/tcp/127.0.0.1/$2") 2>/dev/null; then
    echo "setup: $1 does not answer on 127.0.0.1:$2; start it (as root) with: $3" >&2
  fi
}
service PostgreSQL 5432 'pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start'
service MariaDB 3306 'start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd'
service "NATS (JetStream)" 4222 'start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log'
exit $status
