#!/usr/bin/env bash
# pg-auto-failover-no-fencing.sh DIR: pg_auto_failover 2.0 (Debian 12:
# postgresql-15-auto-failover, pg-auto-failover-cli) on 127.0.0.1, no
# isoscope. A monitor, a primary and one asynchronous secondary; then the
# monitor and the secondary are killed, so that the primary reaches
# neither. pg_auto_failover's documentation says the primary demotes itself
# once network_partition_timeout (20 s) has passed; the script waits 45 s,
# shows that the primary still takes writes, and shows its keeper's log
# saying "Network is healthy". Run as root (the servers run as postgres);
# DIR must be reachable by the postgres user. Every process it starts is
# stopped by its process id at the end.
set -euo pipefail
dir=$(realpath -m "${1:?usage: $0 DIR}")
mkdir -p "$dir" && chown postgres "$dir"
pg=/usr/lib/postgresql/15/bin
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
mport=$(port) p1=$(port) p2=$(port)
as_pg() { # as_pg NODE CMD...: runs CMD as postgres with NODE's own config dirs
  local n=$1; shift
  runuser -u postgres -- env HOME="$dir/$n" XDG_CONFIG_HOME="$dir/$n/config" XDG_DATA_HOME="$dir/$n/share" \
    PATH="$pg:/usr/bin:/bin" "$@"
}
pids=()
cleanup() { for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null || true; done; sleep 3;
            for p in "${pids[@]}"; do kill -KILL -- "-$p" 2>/dev/null || true; done; }
trap cleanup EXIT
start() { # start NODE: pg_autoctl run for NODE, in a process group of its own
  setsid runuser -u postgres -- env HOME="$dir/$1" XDG_CONFIG_HOME="$dir/$1/config" XDG_DATA_HOME="$dir/$1/share" \
    PATH="$pg:/usr/bin:/bin" pg_autoctl run --pgdata "$dir/$1/data" >>"$dir/$1.log" 2>&1 &
  pids+=($!); eval "pid_$1=$!"
}
for n in monitor n1 n2; do mkdir -p "$dir/$n"; chown postgres "$dir/$n"; done
as_pg monitor pg_autoctl create monitor --pgdata "$dir/monitor/data" --pgport "$mport" --hostname 127.0.0.1 \
  --auth trust --no-ssl >"$dir/monitor-create.log" 2>&1
start monitor; sleep 3
mon="postgres://autoctl_node@127.0.0.1:$mport/pg_auto_failover?sslmode=disable"
i=0
for n in n1 n2; do
  p=$([ $n = n1 ] && echo "$p1" || echo "$p2")
  as_pg $n pg_autoctl create postgres --pgdata "$dir/$n/data" --pgport "$p" --hostname 127.0.0.1 --listen 127.0.0.1 \
    --name $n --dbname test --monitor "$mon" --auth trust --no-ssl --replication-quorum false >"$dir/$n-create.log" 2>&1
  start $n
  if [ $n = n1 ]; then
    until as_pg n1 psql -h 127.0.0.1 -p "$p1" -d postgres -Atc 'SELECT 1' >/dev/null 2>&1; do sleep 1; done
    # pg_autoctl's pg_basebackup asks for a spread checkpoint: make it quick
    as_pg n1 psql -h 127.0.0.1 -p "$p1" -d postgres -c 'ALTER SYSTEM SET checkpoint_completion_target = 0' -c 'SELECT pg_reload_conf()' >/dev/null
  fi
done
echo "waiting for n1 primary, n2 secondary…"
until [ "$(as_pg monitor psql -h 127.0.0.1 -p "$mport" -d pg_auto_failover -Atc \
  "SELECT string_agg(nodename||':'||reportedstate||':'||goalstate, ' ' ORDER BY nodeid) FROM pgautofailover.node")" \
  = "n1:primary:primary n2:secondary:secondary" ]; do sleep 1; done
q() { as_pg n1 psql -h 127.0.0.1 -p "$p1" -d test -Atc "$1"; }
q "CREATE TABLE t (v int)"
q "SHOW synchronous_standby_names" | sed 's/^/synchronous_standby_names on n1: "/; s/$/"/'
echo "killing the monitor and n2 (SIGKILL, process groups $pid_monitor and $pid_n2) at $(date +%T)"
kill -KILL -- "-$pid_monitor" "-$pid_n2"
for s in 15 30 45; do
  sleep 15
  if q "INSERT INTO t VALUES ($s) RETURNING 'n1 committed a write ${s}s after it lost the monitor and its standby; pg_is_in_recovery=' || pg_is_in_recovery()"; then :; else echo "n1 refused a write after ${s}s"; fi
done
echo "n1's keeper, the last lines about partitions:"
grep -E "network partition|Network|demote|split brain" "$dir/n1.log" | tail -6
