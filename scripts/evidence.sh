#!/usr/bin/env bash
# evidence.sh BIN OUTDIR [ROW…]: runs RUNS (default 10) seeded fault runs
# per row on clusters isoscope stands up on 127.0.0.1, checks each
# history at SSER, SER, SI and RC, and appends one line per run to
# OUTDIR/runs.tsv; then summarises every row in OUTDIR/summary.md, with
# the first counterexample at the row's documented level.
#
# A row is CLUSTER/ISOLATION/FAULTS/WORKLOAD/DOCUMENTED[/FLAGS], e.g.
#   galera:3/repeatable-read/partition/mt/si
#   galera:3/read-committed/partition,pause/mt/rc/--hop+5   (FLAGS: + for spaces)
# Without rows, the default rows below run. Runs are nice'd. Each run
# is TXNS transactions (default 4000), or, with DURATION (e.g. 30s), that
# long whatever the count. Each check may take CHECK_TIMEOUT (default 120s,
# wall clock: give a loaded machine more); one that runs out is
# "undecided" in runs.tsv. FIRST_SEED (default 1) is the first seed run:
# FIRST_SEED=7 RUNS=10 runs seeds 7 to 10, continuing a row of 6.
set -euo pipefail
bin=$(realpath "$1"); out=$2; shift 2
runs=${RUNS:-10}
first_seed=${FIRST_SEED:-1}
txns=${TXNS:-4000}
interval=${INTERVAL:-2s}
check_timeout=${CHECK_TIMEOUT:-120s}
count=(--txns "$txns")
[ -z "${DURATION:-}" ] || count=(--duration "$DURATION")
rows=("$@")
if [ ${#rows[@]} -eq 0 ]; then
  rows=(
    postgres-standby:2/serializable/partition/mt/ser
    postgres-standby:2/serializable/kill/mt/ser
    galera:3/repeatable-read/partition/mt/si
    galera:3/repeatable-read/kill/mt/si
    galera:3/serializable/partition/mt/ser
    galera:3/repeatable-read/pause/list-append/si
    dqlite:3/serializable/partition/mt/ser
    dqlite:3/serializable/kill,restart/mt/ser
    dqlite:3/serializable/pause/mt/ser
    postgres-standby:2/serializable/pause/mt/ser
    postgres-standby:2/serializable/restart/mt/ser
    postgres-standby:2/serializable/cut/mt/ser
    galera:3/repeatable-read/pause/mt/si
    postgres-standby:2/serializable/clock/mt/ser
    galera:3/repeatable-read/clock/mt/si
    nats-kv:3/serializable/partition,kill,pause/lwt/sser/--txns+30000
    nats-kv-leader:3/serializable/partition,kill,pause/lwt/sser/--txns+30000
    nats-kv-leader:3/serializable/partition,kill,pause/list-append/sser/--ops+1+--txns+8000
    redis:3/serializable/partition,kill,pause/mt/sser/--duration+20s+--txns+1000000
    redis-wait:3/serializable/partition,kill,pause/mt/sser/--duration+20s+--txns+1000000
    redis-replica-reads:3/serializable/partition,kill,pause/mt/sser/--duration+20s+--txns+1000000
    redis:3/serializable/partition,kill,pause/lwt/sser/--duration+20s+--txns+1000000
    redis-wait:3/serializable/partition,kill,pause/lwt/sser/--duration+20s+--txns+1000000
    zookeeper:3/serializable/partition,kill,pause/lwt/ser/--txns+6000
    zookeeper-sync:3/serializable/partition,kill,pause/lwt/sser/--txns+6000
    zookeeper-sync:3/serializable/partition,kill,pause/mt/ser
  )
fi
mkdir -p "$out/histories"
tsv="$out/runs.tsv"
[ -f "$tsv" ] || printf 'row\tseed\tcommitted\ttransactions\tfaults\tsser\tser\tsi\trc\tfile\n' >"$tsv"
verdict() { # verdict LEVEL FILE: holds, VIOLATED or undecided
  local first
  first=$(nice "$bin" check --level "$1" --no-holds --timeout "$check_timeout" "$2" 2>/dev/null | head -1 || true)
  case "$first" in
    *" holds "*) echo holds ;;
    *VIOLATED*) echo "VIOLATED(${first#*VIOLATED: })" | sed 's/ anomal.*/)/' ;;
    *) echo undecided ;;
  esac
}
for row in "${rows[@]}"; do
  IFS=/ read -r cl iso faults wl doc extra <<<"$row"
  extra=${extra//+/ }
  for seed in $(seq "$first_seed" "$runs"); do
    name=$(echo "$row" | tr '/:,' '___')-$seed
    file="$out/histories/$name.jsonl"
    if grep -q "^$row	$seed	" "$tsv"; then continue; fi
    nice "$bin" run --cluster "$cl" --faults "$faults" --fault-interval "$interval" --workload "$wl" \
      "${count[@]}" --sessions 6 --keys 20 --isolation "$iso" --level rc --seed "$seed" \
      --stmt-timeout 3s --reconnect-for 60s $extra -o "$file" >"$out/histories/$name.out" 2>"$out/histories/$name.err" || true
    if [ ! -s "$file" ]; then echo "$row seed $seed: no history (see $out/histories/$name.err)"; continue; fi
    committed=$(grep -o '^ *[0-9]* committed' "$out/histories/$name.err" | head -1 | tr -dc 0-9)
    ntx=$(grep -c '"id"' "$file" || true)
    nf=$(grep -c '^{"fault"' "$file" || true)
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$row" "$seed" "$committed" "$ntx" "$nf" \
      "$(verdict sser "$file")" "$(verdict ser "$file")" "$(verdict si "$file")" "$(verdict rc "$file")" "$file" >>"$tsv"
    echo "$(date +%T) $row seed $seed done"
  done
done
# The summary: per row, runs, transactions, faults, and how many runs
# held at each level; then the first counterexample at the documented
# level, one of each anomaly kind (MAXLINES, default 40, lines of it).
{
  echo "| cluster | isolation | faults | workload | runs | committed (all runs) | faults injected | SSER holds | SER holds | SI holds | RC holds |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
  awk -F'\t' 'NR>1 { split($1, r, "/"); k=$1; n[k]++; c[k]+=$3; f[k]+=$5;
      for (i=6; i<=9; i++) if ($i=="holds") h[k,i]++; w=r[4]; if (r[6] != "") { x=r[6]; gsub(/\+/, " ", x); w=w " (" x ")" }
      key[k]=r[1] " | " r[2] " | " r[3] " | " w }
    END { for (k in n) printf "| %s | %d | %d | %d | %d/%d | %d/%d | %d/%d | %d/%d |\n", key[k], n[k], c[k], f[k],
      h[k,6], n[k], h[k,7], n[k], h[k,8], n[k], h[k,9], n[k] }' "$tsv" | sort
  for row in "${rows[@]}"; do
    IFS=/ read -r cl iso faults wl doc extra <<<"$row"
    f=$(awk -F'\t' -v r="$row" -v d="$doc" 'NR>1 && $1==r { col = (d=="sser"?6:(d=="ser"?7:(d=="si"?8:9))); if ($col ~ /VIOLATED/) { print $10; exit } }' "$tsv")
    [ -n "$f" ] || continue
    seed=$(awk -F'\t' -v r="$row" -v f="$f" '$1==r && $10==f { print $2 }' "$tsv")
    echo
    echo "$row, seed $seed, at $doc:"
    echo
    echo '```'
    # The whole output first: sed stopping early must not stop the script.
    nice "$bin" check --level "$doc" --no-holds --max-shown 1 "$f" >"$out/example.txt" 2>/dev/null || true
    grep -v '^  [a-z]* n[0-9]\( [-+][0-9a-z.]*\)\{0,1\}, ' "$out/example.txt" | grep -v '^  … and [0-9]* more$' | sed -n "1,${MAXLINES:-40}p"
    echo '```'
  done
} >"$out/summary.md"
echo "summary: $out/summary.md"
