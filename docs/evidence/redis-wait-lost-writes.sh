#!/usr/bin/env bash
# redis-wait-lost-writes.sh [TRIES]: a Redis primary, two replicas and
# three sentinels on 127.0.0.1 (ports 17001-17003, 17101-17103), no
# isoscope. Each try: SIGSTOP the primary for 2 s (sentinels:
# down-after-milliseconds 1000), SIGCONT it, and at once write
# keys try:N:W on it, each write followed by WAIT 1 1000 on the same
# connection, for 1.5 s; then wait until the sentinels agree on a
# primary and every node follows it, and read the keys back on it. A
# write whose WAIT answered 1 (a replica acknowledged it) but which the
# primary then does not have is an acknowledged write lost.
# Every process is stopped by its PID at the end.
set -uo pipefail
tries=${1:-5}
dir=$(mktemp -d /tmp/redis-wait-lost-XXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null; kill "$p" 2>/dev/null; done
  sleep 3
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  if [ -n "${KEEP:-}" ]; then echo "logs kept in $dir"; else rm -rf "$dir"; fi
}
trap cleanup EXIT
for port in 17001 17002 17003 17101 17102 17103; do
  if (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; then echo "port $port is in use" >&2; exit 2; fi
done
for i in 1 2 3; do
  p=$((17000 + i)); mkdir -p "$dir/n$i"
  printf 'bind 127.0.0.1\nport %d\nprotected-mode no\ndir %s\nappendonly yes\nappendfsync everysec\n' "$p" "$dir/n$i" >"$dir/n$i/redis.conf"
  [ "$i" = 1 ] || echo "replicaof 127.0.0.1 17001" >>"$dir/n$i/redis.conf"
  redis-server "$dir/n$i/redis.conf" >"$dir/n$i/log" 2>&1 & pids+=($!)
done
sleep 7
for i in 1 2 3; do
  p=$((17100 + i)); mkdir -p "$dir/s$i"
  printf 'bind 127.0.0.1\nport %d\nprotected-mode no\ndir %s\nsentinel monitor m 127.0.0.1 17001 2\nsentinel down-after-milliseconds m 1000\nsentinel failover-timeout m 4000\n' "$p" "$dir/s$i" >"$dir/s$i/sentinel.conf"
  redis-sentinel "$dir/s$i/sentinel.conf" >"$dir/s$i/log" 2>&1 & pids+=($!)
done
sleep 5
pid_of() { local port=$1 i; for i in 1 2 3; do [ $((17000 + i)) = "$port" ] && echo "${pids[$((i - 1))]}"; done; }
primary() { redis-cli -p 17101 SENTINEL get-master-addr-by-name m | tail -1; }
acked=0 lost=0
for t in $(seq 1 "$tries"); do
  p=$(primary); pid=$(pid_of "$p")
  kill -STOP "$pid"; sleep 2; kill -CONT "$pid"; echo "try $t: SIGCONT $p at $(date +%T.%3N)"
  # Writes on the old primary for 1.5 s after it resumed, each on a
  # connection of its own and followed by WAIT 1 1000 on it.
  ok=0 got=0 w=0 end=$(($(date +%s%N) + 1500000000))
  declare -A ackd=()
  while [ "$(date +%s%N)" -lt "$end" ]; do
    w=$((w + 1))
    n=$(printf 'SET try%s:%s %s\r\nWAIT 1 1000\r\n' "$t" "$w" "$w" | redis-cli -p "$p" 2>&1 | sed -n 2p)
    if [[ $n =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ]; then ackd[$w]=1; ok=$((ok + 1)); fi
  done
  # Settle: the sentinels agree and every node follows the primary.
  sleep 12
  np=$(primary)
  for k in "${!ackd[@]}"; do
    v=$(redis-cli -p "$np" GET "try$t:$k")
    if [ "$v" = "$k" ]; then got=$((got + 1)); else lost=$((lost + 1)); fi
  done
  unset ackd
  acked=$((acked + ok))
  echo "try $t: primary $p paused 2 s, then $np is primary; $ok writes acknowledged by WAIT 1, $got of them on $np"
done
echo "acknowledged by WAIT 1: $acked; lost: $lost"
