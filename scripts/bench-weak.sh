#!/bin/sh
# bench-weak.sh: the benchmark of the axiomatic weak levels in
# docs/benchmarks.md. Histories of a simulated causally consistent store
# (`isoscope gen --workload general --mode causal`: 8 operations per
# transaction, half reads, 10,000 keys drawn uniformly, fresh values), of
# 2^10 … 2^18 transactions and 2^20, with 50 and 100 sessions; each checked
# at rc-session, read-atomic and causal, the whole `isoscope check` job,
# RUNS times (default 3), printing the fastest wall time and that run's
# user and system time and peak RSS, with the load average before the run.
#
# Usage: scripts/bench-weak.sh [BIN] [DIR]   (defaults bin/isoscope, tmp)
set -eu
BIN=${1:-bin/isoscope}
DIR=${2:-tmp}
RUNS=${RUNS:-3}
SIZES=${SIZES:-"10 11 12 13 14 15 16 17 18 20"}
mkdir -p "$DIR"
printf '%-8s %-9s %-11s %8s %8s %8s %9s  %s\n' txns sessions level wall_s user_s sys_s rss_mb load
for s in 50 100; do
	for e in $SIZES; do
		n=$((1 << e))
		f="$DIR/causal-$e-$s.jsonl"
		[ -f "$f" ] || "$BIN" gen --workload general --mode causal --txns "$n" --sessions "$s" \
			--keys 10000 --dist uniform --seed 1 --out "$f"
		for l in rc-session ra cc; do
			best=
			for _ in $(seq "$RUNS"); do
				load=$(cut -d' ' -f1 /proc/loadavg)
				out=$( { /usr/bin/time -f "%e %U %S %M" "$BIN" check --level "$l" --no-holds "$f" >/dev/null; } 2>&1 | tail -1)
				wall=${out%% *}
				if [ -z "$best" ] || awk -v a="$wall" -v b="${best%% *}" 'BEGIN { exit !(a < b) }'; then
					best="$out $load"
				fi
			done
			set -- $best
			printf '%-8s %-9s %-11s %8s %8s %8s %9d  %s\n' "$n" "$s" "$l" "$1" "$2" "$3" $(($4 / 1024)) "$5"
		done
	done
done
