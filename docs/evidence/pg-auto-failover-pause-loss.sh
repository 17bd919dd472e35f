#!/usr/bin/env bash
# pg-auto-failover-pause-loss.sh DIR: pg_auto_failover 2.0 (Debian 12:
# postgresql-15-auto-failover, pg-auto-failover-cli) on 127.0.0.1, no
# isoscope. A monitor, a primary n1 and one asynchronous secondary n2
# (--replication-quorum false: synchronous_standby_names is empty), the
# monitor's health checks quickened as isoscope's cluster has them (every
# 1 s, unhealthy after 6 s). Eight clients insert numbered rows into n1
# only, each through a new connection, and note each INSERT that n1
# acknowledged. n1 (its pg_autoctl and PostgreSQL) is stopped with SIGSTOP
# for PAUSE seconds (default 10) and continued with SIGCONT; once the
# monitor has made n2 the primary, the script lists the rows n1
# acknowledged that n2 does not have, with their time after the SIGCONT,
# and the monitor's events. Run as root (the servers run as postgres);
# DIR must be reachable by the postgres user. Every process it starts is
# stopped by its process id (group) at the end.
set -euo pipefail
dir=$(realpath -m "${1:?usage: $0 DIR}")
pause=${PAUSE:-10}
mkdir -p "$dir" && chown postgres "$dir"
pg=/usr/lib/postgresql/15/bin
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
mport=$(port) p1=$(port) p2=$(port)
as_pg() { # as_pg NODE CMD...: runs CMD as postgres with NODE's own config dirs
  local n=$1; shift
  runuser -u postgres -- env HOME="$dir/$n" XDG_CONFIG_HOME="$dir/$n/config" XDG_DATA_HOME="$dir/$n/share" \
    PATH="$pg:/usr/bin:/bin" "$@"
}
pids=() writers=()
cleanup() {
  for w in "${writers[@]}"; do kill "$w" 2>/dev/null || true; done
  for p in "${pids[@]}"; do kill -CONT -- "-$p" 2>/dev/null || true; kill -INT "$p" 2>/dev/null || true; done; sleep 3
  for p in "${pids[@]}"; do kill -KILL -- "-$p" 2>/dev/null || true; done
}
trap cleanup EXIT
start() { # start NODE: pg_autoctl run for NODE, in a process group of its own
  setsid runuser -u postgres -- env HOME="$dir/$1" XDG_CONFIG_HOME="$dir/$1/config" XDG_DATA_HOME="$dir/$1/share" \
    PATH="$pg:/usr/bin:/bin" pg_autoctl run --pgdata "$dir/$1/data" >>"$dir/$1.log" 2>&1 &
  pids+=($!); eval "pid_$1=$!"
}
for n in monitor n1 n2; do mkdir -p "$dir/$n"; chown postgres "$dir/$n"; done
as_pg monitor pg_autoctl create monitor --pgdata "$dir/monitor/data" --pgport "$mport" --hostname 127.0.0.1 \
  --auth trust --no-ssl >"$dir/monitor-create.log" 2>&1
cat >>"$dir/monitor/data/postgresql.conf" <<'CONF'
pgautofailover.health_check_period = 1000
pgautofailover.health_check_timeout = 1000
pgautofailover.health_check_max_retries = 1
pgautofailover.health_check_retry_delay = 500
pgautofailover.node_considered_unhealthy_timeout = 6000
CONF
start monitor; sleep 3
mon="postgres://autoctl_node@127.0.0.1:$mport/pg_auto_failover?sslmode=disable"
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
states() {
  as_pg monitor psql -h 127.0.0.1 -p "$mport" -d pg_auto_failover -Atc \
    "SELECT string_agg(nodename||':'||reportedstate||':'||goalstate, ' ' ORDER BY nodeid) FROM pgautofailover.node"
}
echo "waiting for n1 primary, n2 secondary…"
until [ "$(states)" = "n1:primary:primary n2:secondary:secondary" ]; do sleep 1; done
as_pg n1 psql -h 127.0.0.1 -p "$p1" -d test -Atc "CREATE TABLE t (v bigint PRIMARY KEY)"
echo "synchronous_standby_names on n1: \"$(as_pg n1 psql -h 127.0.0.1 -p "$p1" -d test -Atc 'SHOW synchronous_standby_names')\""
# writer W: inserts W*1000000+i for i = 1, 2, … into n1, each through a new
# connection (a connection that n1 does not answer within 2 s is given
# up), and appends "TIME VALUE" to acked.W for each INSERT n1 acknowledged.
writer() {
  local w=$1 i=0 v
  while :; do
    i=$((i + 1)); v=$((w * 1000000 + i))
    if timeout 3 "$pg/psql" "host=127.0.0.1 port=$p1 dbname=test user=postgres connect_timeout=2" \
      -Atqc "SET statement_timeout = 2000" -c "INSERT INTO t VALUES ($v)" >/dev/null 2>&1; then
      echo "$(date +%s.%N) $v" >>"$dir/acked.$w"
    fi
  done
}
for w in 1 2 3 4 5 6 7 8; do writer $w & writers+=($!); done
sleep 5
echo "$(date +%T.%N | cut -c1-12) SIGSTOP n1 (process group $pid_n1) for ${pause}s; $(states)"
kill -STOP -- "-$pid_n1"
sleep "$pause"
cont=$(date +%s.%N)
kill -CONT -- "-$pid_n1"
echo "$(date +%T.%N | cut -c1-12) SIGCONT n1; $(states)"
for s in 1 2 3 4 5; do sleep 1; echo "$(date +%T.%N | cut -c1-12) $(states)"; done
for w in "${writers[@]}"; do kill "$w" 2>/dev/null || true; done
for w in "${writers[@]}"; do wait "$w" 2>/dev/null || true; done; writers=()
echo "waiting for n2 to be the primary…"
for s in $(seq 120); do states | grep -Eq 'n2:(wait_primary|primary):' && break; sleep 1; done
states | grep -Eq 'n2:(wait_primary|primary):' || { echo "n2 is not the primary after 120 s: $(states)"; exit 1; }
sleep 2
echo "$(date +%T.%N | cut -c1-12) $(states)"
as_pg n2 psql -h 127.0.0.1 -p "$p2" -d test -Atc "SELECT v FROM t ORDER BY v" >"$dir/on-n2"
cat "$dir"/acked.* | sort -n >"$dir/acked"
awk -v c="$cont" 'NR==FNR { have[$1]=1; next }
  { n++; if (!($2 in have)) { lost++; printf "lost: row %s, acknowledged by n1 %+.3f s after its SIGCONT\n", $2, $1-c } }
  END { printf "%d inserts acknowledged by n1, %d of them not on n2, the new primary\n", n, lost }' "$dir/on-n2" "$dir/acked"
echo "the monitor's events:"
as_pg monitor psql -h 127.0.0.1 -p "$mport" -d pg_auto_failover -Atc \
  "SELECT to_char(eventtime, 'HH24:MI:SS.MS')||' '||nodename||' '||reportedstate||' -> '||goalstate||': '||left(description, 90)
     FROM pgautofailover.event WHERE eventtime > to_timestamp($cont) - interval '$((pause + 2)) s' ORDER BY eventid"
echo "n1's keeper after the SIGCONT:"
grep -E "demote|Stop|stop|draining|Transition" "$dir/n1.log" | tail -8
