#!/usr/bin/env bash
# online-soak: a long `run --online` on PostgreSQL (fenced list-append,
# checked at serializability) with its memory and the online checker's
# state sampled every 10 s (docs/benchmarks.md, "A real run on
# PostgreSQL").
#
#   scripts/online-soak.sh NAME ISOLATION [MEMORY_MB] [DURATION] [DB]
#
# writes, in the current directory, NAME.jsonl (the history),
# NAME-findings.jsonl (each violation as it was found), NAME.out and
# NAME.err (the run's output), and NAME-rss.csv: per sample the time, the
# seconds since the start, the run's RSS in KiB (from /proc/PID/status),
# the history file's lines so far, and from the in-process service's
# GET /v1/state the transactions arrived at the checker, held and
# forgotten, its estimate and the bound it keeps it under (bytes; the
# bound is lowered while the live heap is above its target), the keys
# whose settled state was dropped, the violations so far, and Go's heap
# objects (bytes; live and garbage). The run uses the table
# online_soak_NAME. It returns when the run ends; the run is started here
# and waited for by its PID. Needs jq; start it with setsid (or nohup)
# when the shell that starts it may end first.
set -euo pipefail
name=${1:?usage: online-soak.sh NAME ISOLATION [MEMORY_MB] [DURATION] [DB]}
iso=${2:?isolation: repeatable-read, serializable, ...}
mem=${3:-512}
dur=${4:-1h}
db=${5:-postgres://postgres@127.0.0.1:5432/test}
bin=${ISOSCOPE:-bin/isoscope}
command -v jq >/dev/null || { echo "online-soak.sh: needs jq" >&2; exit 2; }

"$bin" run --db "$db" --table "online_soak_$name" \
  --isolation "$iso" --level ser --online --memory-mb "$mem" --duration "$dur" \
  --workload list-append --appends-per-key 20 --fence-every 100 \
  --online-findings "$name-findings.jsonl" -o "$name.jsonl" >"$name.out" 2>"$name.err" &
pid=$!

out=$name-rss.csv
echo "unix,elapsed_s,rss_kib,hist_lines,arrived,held,forgotten,estimate_bytes,bound_bytes,dropped_keys,violations,heap_bytes" >"$out"
t0=$(date +%s)
while kill -0 "$pid" 2>/dev/null; do
  rss=$(awk '/^VmRSS/{print $2}' "/proc/$pid/status" 2>/dev/null || true)
  # The in-process service listens on a loopback port of the run's own.
  port=$(ss -ltnpH 2>/dev/null | grep "pid=$pid," | awk '{print $4}' | head -1 || true)
  st=",,,,,,,"
  if [ -n "$port" ]; then
    st=$(curl -s -m 3 "http://$port/v1/state" |
      jq -r '[.black_box.arrived, .black_box.held, .black_box.forgotten, .black_box.bytes, .black_box.bound, .black_box.dropped_keys, .violations, .heap_bytes] | @csv' 2>/dev/null || echo ",,,,,,,")
  fi
  n=$({ wc -l <"$name.jsonl"; } 2>/dev/null || echo 0)
  now=$(date +%s)
  echo "$now,$((now - t0)),${rss:-0},$n,$st" >>"$out"
  sleep 10
done
wait "$pid" || true
