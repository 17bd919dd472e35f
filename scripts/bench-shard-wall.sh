#!/usr/bin/env bash
# bench-shard-wall: wall-clock throughput of 1, 2 and 4 key workers running
# at once on this machine (docs/scaling.md), beside bench-shard-ab.sh's CPU
# per worker.
#
#   scripts/bench-shard-wall.sh BIN [ROUNDS] [TXNS]
#
# On bench-shard-ab.sh's history (DIST as there), published once for 1, 2
# and 4 shards to a NATS server of this script's own, ROUNDS times: the N
# key workers of N shards are started together over their prepublished
# subjects, and the time from their start until every one has taken every
# piece of its subject (polled every 50 ms) is the deployment's: its
# throughput is the history's transactions over that time. The workers
# share the machine's cores with the NATS server, which serves them their
# messages (its CPU time is printed too); no publisher and no session
# shards run. Each line:
#   shards round wall_seconds txn_per_second workers_cpu nats_cpu
set -euo pipefail
BIN=$1 ROUNDS=${2:-5} TXNS=${3:-1000000} DIST=${DIST:-zipfian}
DIR=$(mktemp -d "${TMPDIR:-/tmp}/bench-shard-wall.XXXXXX")
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$DIR"; }
trap cleanup EXIT
# shellcheck source=scripts/bench-shard-lib.sh
source "$(dirname "$0")/bench-shard-lib.sh" "$BIN"
for shards in 1 2 4; do
  "$BIN" publish "$DIR/h.jsonl" --nats "$URL" --prefix "w$shards" --shards "$shards" >"$DIR/pub-$shards.json" 2>/dev/null
done
echo "# $(date -u +%FT%TZ) $(nproc) cores, $TXNS transactions, keys $DIST, load average $(cut -d' ' -f1-3 /proc/loadavg) before the runs"
for ((r = 1; r <= ROUNDS; r++)); do
  for shards in 1 2 4; do
    wants=() wps=() addrs=()
    for ((i = 0; i < shards; i++)); do
      wants+=("$(python3 -c "import json; print([s['pieces'] for s in json.load(open('$DIR/pub-$shards.json'))['subjects'] if s['subject']=='w$shards.k.$i'][0])")")
    done
    n0=$(cpu "$nats_pid")
    t0=$(date +%s.%N)
    for ((i = 0; i < shards; i++)); do
      "$BIN" serve --nats "$URL" --prefix "w$shards" --shard "k:$i" --shards "$shards" --listen 127.0.0.1:0 --timeout 1s --memory-mb 0 >/dev/null 2>"$DIR/w-$shards-$i-$r.err" &
      wps+=($!); PIDS+=($!)
    done
    for ((i = 0; i < shards; i++)); do
      until a=$(grep -o 'on http://[0-9.:]*' "$DIR/w-$shards-$i-$r.err" 2>/dev/null | head -1 | sed 's|on http://||') && [ -n "$a" ]; do sleep 0.01; done
      addrs+=("$a")
    done
    done_=()
    left=$shards
    while ((left > 0)); do
      for ((i = 0; i < shards; i++)); do
        [ -n "${done_[$i]:-}" ] && continue
        c=$(curl -s --max-time 5 "http://${addrs[$i]}/v1/state" | grep -o '"checked":[0-9]*' | cut -d: -f2 || true)
        if [ -n "$c" ] && [ "$c" -ge "${wants[$i]}" ]; then done_[$i]=1; left=$((left - 1)); fi
      done
      ((left > 0)) && sleep 0.05
    done
    t1=$(date +%s.%N)
    wc=0
    for p in "${wps[@]}"; do wc=$(python3 -c "print($wc+$(cpu "$p"))"); kill "$p"; wait "$p" 2>/dev/null || true; done
    n1=$(cpu "$nats_pid")
    python3 -c "d=$t1-$t0; print('$shards $r %.2f %.0f %.2f %.2f' % (d, $TXNS/d, $wc, $n1-$n0))"
  done
  echo "# load average $(cut -d' ' -f1-3 /proc/loadavg) after round $r"
done
