#!/usr/bin/env bash
# postgres-syncrep-cancel.sh DIR: PostgreSQL 15 (Debian 12), no isoscope,
# no standby needed. A primary whose synchronous_standby_names names a
# standby that is not connected (as a primary cut off from its
# synchronous standbys is): a COMMIT waits; cancelled (a client's cancel
# request, here pg_cancel_backend; statement_timeout does not reach a
# COMMIT's wait), the wait ends with a WARNING, the COMMIT reports
# success, and every other session
# sees the row, though no standby has it; a failover to a standby then
# loses a row that clients both were told committed and read. Run as
# root (the server runs as postgres); every process it starts is stopped
# by its process id.
set -euo pipefail
dir=$(realpath -m "${1:?usage: $0 DIR}")
pg=/usr/lib/postgresql/15/bin
mkdir -p "$dir" && chown postgres "$dir"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
runuser -u postgres -- "$pg/initdb" -D "$dir/data" -U postgres -A trust >/dev/null
cat >>"$dir/data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
synchronous_standby_names = 'ANY 1 (standby_that_is_not_there)'
CONF
runuser -u postgres -- "$pg/postgres" -D "$dir/data" >"$dir/postgres.log" 2>&1 &
pid=$!
trap 'kill -INT $pid; wait $pid 2>/dev/null || true' EXIT
until runuser -u postgres -- "$pg/psql" -h 127.0.0.1 -p "$port" -U postgres -Atc 'SELECT 1' >/dev/null 2>&1; do sleep 0.2; done
psql() { runuser -u postgres -- "$pg/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 "$@"; }
psql -qc 'SET synchronous_commit = local' -c 'CREATE TABLE t (v int)'
echo '-- session 1: INSERT, COMMIT waiting for the absent synchronous standby'
psql -c "SET application_name = 'session1'" -c 'BEGIN' -c 'INSERT INTO t VALUES (1)' -c 'COMMIT' 2>&1 &
s1=$!
sleep 2
echo '-- session 2, 2 s later: reads nothing yet, then cancels session 1 (as a client that gave up does)'
psql -Atc 'SELECT count(*) AS rows_visible FROM t'
psql -Atc "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'session1'" >/dev/null
wait $s1
echo '-- session 2: reads it'
psql -Atc 'SELECT count(*) AS rows_visible FROM t'
