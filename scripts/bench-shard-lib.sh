# bench-shard-lib: what bench-shard.sh, bench-shard-ab.sh and
# bench-shard-wall.sh share.
# Sourced after DIR, PIDS, TXNS and DIST are set: it defines cpu PID
# (user + system seconds of a process so far), starts a NATS server of its
# own (JetStream, its store in $DIR; its PID in nats_pid and PIDS, its
# address in URL) and generates the benchmarks' history into $DIR/h.jsonl
# with the binary $1: general workload, 8 operations a transaction over
# 100,000 keys drawn by $DIST, 100 sessions, 20 early-commit faults.
clk_tck=$(getconf CLK_TCK)
cpu() { awk -v t="$clk_tck" '{printf "%.2f", ($14+$15)/t}' "/proc/$1/stat"; }
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
nats-server -a 127.0.0.1 -p "$port" -js -sd "$DIR/store" >"$DIR/nats.log" 2>&1 &
nats_pid=$!; PIDS+=("$nats_pid")
URL=nats://127.0.0.1:$port
sleep 1
"$1" gen --workload general --txns "$TXNS" --sessions 100 --keys 100000 --dist "$DIST" --timestamps --ts-fault early-commit --ts-faults 20 --seed 42 --out "$DIR/h.jsonl" 2>/dev/null
