#!/usr/bin/env bash
# bench-shard: throughput and cost of sharded online checking over NATS
# JetStream (docs/scaling.md), against one `serve` fed directly over HTTP.
#
#   scripts/bench-shard.sh [TXNS]
#
# For one generated timestamped history (general workload, 8 operations a
# transaction, early-commit faults planted) it measures:
#   - single: one `isoscope serve`, the history posted over HTTP in batches
#     of 10,000; the time until it has checked them all, and its CPU time;
#   - for 1, 2 and 4 key shards (and as many session shards): the history
#     published first (`isoscope publish`: its rate and bytes on the wire),
#     then the workers started, and the time until `isoscope findings
#     --drain` says every shard has checked its last message, with the
#     workers' and the NATS server's CPU time;
#   - the same with the publisher running while the workers check (end to
#     end: publish -> workers -> merged findings).
# It runs a NATS server of its own (JetStream, its store in a temporary
# directory), so that its CPU time is this benchmark's alone. Every process
# is started here and stopped by its PID.
set -euo pipefail
TXNS=${1:-200000}
BIN=${BIN:-bin/isoscope}
DIR=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$DIR"; }
trap cleanup EXIT
now() { date +%s.%N; }
DIST=zipfian
# shellcheck source=scripts/bench-shard-lib.sh
source "$(dirname "$0")/bench-shard-lib.sh" "$BIN"
bytes=$(stat -c %s "$DIR/h.jsonl")
echo "history: $TXNS transactions, $bytes bytes ($((bytes / TXNS)) a transaction as JSON lines)"
split -l 10000 "$DIR/h.jsonl" "$DIR/part."

# single: one serve fed directly.
"$BIN" serve --listen 127.0.0.1:0 --timeout 1s --memory-mb 0 >"$DIR/single.out" 2>"$DIR/single.err" &
sp=$!; PIDS+=("$sp")
until addr=$(grep -o 'on http://[0-9.:]*' "$DIR/single.err" | head -1 | sed 's|on http://||') && [ -n "$addr" ]; do sleep 0.05; done
c0=$(cpu "$sp"); t0=$(now)
for f in "$DIR"/part.*; do curl -sf -o /dev/null --data-binary @"$f" "http://$addr/v1/transactions"; done
until [ "$(curl -s "http://$addr/v1/state" | python3 -c 'import json,sys; print(json.load(sys.stdin)["checked"])')" -ge "$TXNS" ]; do sleep 0.05; done
t1=$(now); c1=$(cpu "$sp")
python3 -c "
d=$t1-$t0; c=$c1-$c0
print(f'single serve: {d:.2f} s, {$TXNS/d:,.0f} txn/s, CPU {c:.2f} s = {c/$TXNS*1e6:.1f} us a transaction')"
kill "$sp"; wait "$sp" 2>/dev/null || true

# alone PREFIX SHARDS: each key worker of the prepublished PREFIX again,
# alone on the machine, from its subject's first message (a restart: it
# replays to its checkpoint, checking every piece as it did), timed until
# its checker has taken every piece of its subject: a key worker's rate
# when it has a core to itself, as on a machine of its own.
alone() {
  local prefix=$1 shards=$2 i
  for ((i = 0; i < shards; i++)); do
    want=$(python3 -c "import json; print([s['pieces'] for s in json.load(open('$DIR/pub.json'))['subjects'] if s['subject']=='$prefix.k.$i'][0])")
    t0=$(now)
    "$BIN" serve --nats "$URL" --prefix "$prefix" --shard "k:$i" --listen 127.0.0.1:0 --timeout 1s --memory-mb 0 >/dev/null 2>"$DIR/alone.err" &
    ap=$!; PIDS+=("$ap")
    until addr=$(grep -o 'on http://[0-9.:]*' "$DIR/alone.err" 2>/dev/null | head -1 | sed 's|on http://||') && [ -n "$addr" ]; do sleep 0.02; done
    until [ "$(curl -s "http://$addr/v1/state" | python3 -c 'import json,sys; print(json.load(sys.stdin)["checked"])')" -ge "$want" ]; do sleep 0.05; done
    t1=$(now); c=$(cpu "$ap")
    python3 -c "
d=$t1-$t0
print(f'  key worker k:$i of $shards alone: {$want} pieces in {d:.2f} s: {$TXNS/d:,.0f} txn/s of the history, CPU {$c:.2f} s')"
    kill "$ap"; wait "$ap" 2>/dev/null || true
  done
}

for shards in 1 2 4; do
  for mode in prepublished endtoend; do
    prefix="bench$RANDOM$shards$mode"
    n0=0; [ -n "$nats_pid" ] && n0=$(cpu "$nats_pid")
    tp0=$(now)
    if [ $mode = prepublished ]; then
      "$BIN" publish "$DIR/h.jsonl" --nats "$URL" --prefix "$prefix" --shards "$shards" >"$DIR/pub.json" 2>"$DIR/pub.err"
      cat "$DIR/pub.err"
    fi
    tp1=$(now)
    np=0; [ -n "$nats_pid" ] && np=$(cpu "$nats_pid")
    W=()
    # End to end, the publisher and the workers share the machine, and a
    # writer can come later than a reader by more than a second: the
    # service's default timeout (5 s) keeps the verdicts the history's, and
    # its wait after the last piece is taken off the time.
    timeout=1; [ $mode = endtoend ] && timeout=5
    for k in k s; do for ((i = 0; i < shards; i++)); do
      "$BIN" serve --nats "$URL" --prefix "$prefix" --shard "$k:$i" --listen 127.0.0.1:0 --timeout ${timeout}s --memory-mb 0 >/dev/null 2>"$DIR/w-$k$i.err" &
      W+=($!); PIDS+=($!)
    done; done
    t0=$(now)
    if [ $mode = endtoend ]; then
      "$BIN" publish "$DIR/h.jsonl" --nats "$URL" --prefix "$prefix" --shards "$shards" >"$DIR/pub.json" 2>"$DIR/pub.err" &
      pp=$!; PIDS+=("$pp")
    fi
    "$BIN" findings --nats "$URL" --prefix "$prefix" --listen "" --drain >"$DIR/merged.jsonl" 2>"$DIR/findings.err"
    t1=$(now)
    [ $mode = endtoend ] && wait "$pp"
    wc=0; kc=0
    for i in "${!W[@]}"; do
      c=$(cpu "${W[$i]}"); wc=$(python3 -c "print($wc+$c)")
      [ "$i" -lt "$shards" ] && kc=$(python3 -c "print($kc+$c)")
    done
    n1=0; [ -n "$nats_pid" ] && n1=$(cpu "$nats_pid")
    pbytes=$(python3 -c "import json; print(json.load(open('$DIR/pub.json'))['bytes'])")
    python3 -c "
d=$t1-$t0-($timeout if '$mode'=='endtoend' else 0); pub=$tp1-$tp0
less=' (less the 5 s timeout)' if '$mode'=='endtoend' else ''
print(f'{$shards} key shards + {$shards} session shards, {\"$mode\"}: {d:.2f} s from the workers start to drained{less}, {$TXNS/d:,.0f} txn/s; '
      f'workers CPU {$wc:.2f} s = {$wc/$TXNS*1e6:.1f} us a transaction (key shards {$kc/$TXNS*1e6:.1f}); '
      f'NATS server CPU {($n1-$n0):.2f} s = {($n1-$n0)/$TXNS*1e6:.1f} us a transaction (publishing {($np-$n0)/$TXNS*1e6:.1f}); '
      f'{$pbytes/$TXNS:.0f} bytes a transaction on the wire'
      + (f'; publish alone {pub:.2f} s, {$TXNS/pub:,.0f} txn/s' if '$mode'=='prepublished' else ''))"
    tail -1 "$DIR/findings.err"
    for p in "${W[@]}"; do kill "$p"; wait "$p" 2>/dev/null || true; done
    [ $mode = prepublished ] && alone "$prefix" "$shards"
  done
done
