#!/usr/bin/env bash
# bench-shard-ab: CPU a transaction of each key worker of 1, 2 and 4 key
# shards, for two builds of isoscope alternately (docs/benchmarks.md).
#
#   scripts/bench-shard-ab.sh OLD_BIN NEW_BIN [ROUNDS] [TXNS]
#
# DIST=uniform draws the keys uniformly instead of gen's zipfian default
# (whose hottest key takes 7.8 % of the operations, which one shard holds).
#
# On one generated history (bench-shard.sh's: general workload, 8
# operations a transaction over 100,000 keys, 20 early-commit faults) each
# build publishes the history once for 1, 2 and 4 shards (its own form of
# pieces) to a NATS server of this script's own; then, ROUNDS times, each
# key worker of each build runs alone over its prepublished subject, from
# the first message, until its checker has taken every piece, the builds
# alternating. A worker's CPU time (user + system, /proc/PID/stat) over the
# transactions of the history is what a worker of that many shards costs a
# transaction of the history: the capacity of N workers against one is the
# 1-shard worker's cost over the cost of the slowest (or the mean) of the
# N. CPU time, not wall time: the machine may be shared. Each line:
#   build shards shard round cpu_seconds us_per_txn
set -euo pipefail
OLD=$1 NEW=$2 ROUNDS=${3:-5} TXNS=${4:-300000} FIRST=${FIRST:-1} DIST=${DIST:-zipfian}
DIR=$(mktemp -d "${TMPDIR:-/tmp}/bench-shard-ab.XXXXXX")
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$DIR"; }
trap 'sort "$DIR/curl.err" 2>/dev/null | uniq -c >&2; cleanup' EXIT
# shellcheck source=scripts/bench-shard-lib.sh
source "$(dirname "$0")/bench-shard-lib.sh" "$NEW"
for b in old new; do
  bin=$OLD; [ $b = new ] && bin=$NEW
  for shards in 1 2 4; do
    "$bin" publish "$DIR/h.jsonl" --nats "$URL" --prefix "ab$b$shards" --shards "$shards" >"$DIR/pub-$b$shards.json" 2>/dev/null
  done
done
echo "# $(date -u +%FT%TZ) $(nproc) cores, $TXNS transactions, keys $DIST, load average $(cut -d' ' -f1-3 /proc/loadavg) before the runs"
for ((r = FIRST; r < FIRST + ROUNDS; r++)); do
  for b in old new; do
    bin=$OLD; [ $b = new ] && bin=$NEW
    for shards in 1 2 4; do
      for ((i = 0; i < shards; i++)); do
        kill -0 "$nats_pid" || { echo "the NATS server stopped" >&2; exit 1; }
        want=$(python3 -c "import json; print([s['pieces'] for s in json.load(open('$DIR/pub-$b$shards.json'))['subjects'] if s['subject']=='ab$b$shards.k.$i'][0])")
        # A log of its own: the shell truncates it in the child, after
        # which a shared one could still show the last worker's address.
        werr="$DIR/w-$b$shards-$i-$r.err"
        "$bin" serve --nats "$URL" --prefix "ab$b$shards" --shard "k:$i" --listen 127.0.0.1:0 --timeout 1s --memory-mb 0 >/dev/null 2>"$werr" &
        wp=$!; PIDS+=("$wp")
        until addr=$(grep -o 'on http://[0-9.:]*' "$werr" 2>/dev/null | head -1 | sed 's|on http://||') && [ -n "$addr" ]; do sleep 0.02; done
        until [ "$(curl -sS --max-time 10 "http://$addr/v1/state" 2>>"$DIR/curl.err" | python3 -c 'import json,sys; print(json.load(sys.stdin)["checked"])' 2>/dev/null || echo 0)" -ge "$want" ]; do
          kill -0 "$wp" || { echo "the worker stopped" >&2; exit 1; }
          sleep 0.1
        done
        c=$(cpu "$wp")
        kill "$wp"; wait "$wp" 2>/dev/null || true
        python3 -c "print('$b $shards $i $r $c %.2f' % ($c/$TXNS*1e6))"
      done
    done
  done
  echo "# load average $(cut -d' ' -f1-3 /proc/loadavg) after round $r"
done
