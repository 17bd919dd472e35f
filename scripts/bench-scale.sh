#!/bin/sh
# bench-scale.sh: the rows of docs/benchmarks.md's "Scaling: Elle's and
# AWDIT's sizes" at the sizes that fit in about 30 minutes on a 2-core
# machine. For each workload and size it generates the history with
# `isoscope gen` (kept in DIR for the next run), then runs the whole
# `isoscope check --no-holds --level L` job once under /usr/bin/time and
# prints a markdown row: transactions, operations, level, verdict, wall
# and CPU (user + system) seconds, peak RSS, CPU microseconds a
# transaction, the load average before the run, and the check's command.
#
# Usage: scripts/bench-scale.sh [BIN] [DIR]   (defaults bin/isoscope, tmp)
#
# ONLY=general,list-append,mt,timestamped,weak runs a subset; the sizes
# are each workload's *_SIZES variable (space-separated transactions, or
# operations for the weak levels).
set -eu
BIN=${1:-bin/isoscope}
DIR=${2:-tmp}
ONLY=${ONLY:-general,list-append,mt,timestamped,weak}
GENERAL_SIZES=${GENERAL_SIZES:-"10000 30000 100000"}
LIST_SIZES=${LIST_SIZES:-"10000 100000 1000000"}
MT_SIZES=${MT_SIZES:-"10000 100000 1000000"}
TS_SIZES=${TS_SIZES:-"10000 100000 1000000"}
WEAK_SIZES=${WEAK_SIZES:-"100000 1763153 5057778"}
mkdir -p "$DIR"

want() { case ",$ONLY," in *",$1,"*) return 0 ;; esac; return 1; }

# gen FILE ARGS...: generates FILE unless it is there.
gen() {
	f=$1
	shift
	[ -s "$f" ] || "$BIN" gen "$@" --seed 1 --out "$f" 2>/dev/null
}

# row WORKLOAD FILE LEVEL: checks FILE at LEVEL and prints the row.
row() {
	load=$(cut -d' ' -f1 /proc/loadavg)
	out=$( { /usr/bin/time -f "TIME %e %U %S %M" "$BIN" check --no-holds --level "$3" "$2" 2>&1; } 2>&1 || true)
	verdict=$(printf '%s\n' "$out" | grep -m1 '(checker' | sed 's/ *(checker.*//; s/:.*//')
	stats=$(printf '%s\n' "$out" | sed -n 's/.*(checker \([a-z-]*\); \([0-9]*\) transactions.*, \([0-9]*\) operations.*/\1 \2 \3/p' | head -1 | sed 's/ *$//')
	set -- "$1" "$2" "$3" $(printf '%s\n' "$out" | grep '^TIME' | tail -1 | cut -d' ' -f2-) $stats
	# $4 wall, $5 user, $6 sys, $7 RSS KB, $8 checker, $9 txns, ${10} ops
	awk -v w="$1" -v f="$(basename "$2")" -v l="$3" -v wall="$4" -v u="$5" -v s="$6" -v rss="$7" \
		-v ck="${8:-?}" -v n="${9:-0}" -v ops="${10:-0}" -v v="$verdict" -v la="$load" 'BEGIN {
		cpu = u + s
		per = n > 0 ? sprintf("%.1f", cpu / n * 1e6) : "—"
		printf "| %s | %d | %d | %s | %s (%s) | %.2f s | %.2f s | %.2f GB | %s µs | %s | `isoscope check --no-holds --level %s %s` |\n",
			w, n, ops, l, v, ck, wall, cpu, rss / 1048576, per, la, l, f
	}'
}

echo "| workload | transactions | operations | level | verdict (checker) | wall | CPU | peak RSS | CPU a transaction | load | command |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"

if want list-append; then
	for n in $LIST_SIZES; do
		f="$DIR/scale-la-$n.jsonl"
		gen "$f" --workload list-append --txns "$n" --sessions 100 --keys 10 --appends-per-key 100
		for l in ser si rc; do row list-append "$f" $l; done
	done
fi
if want general; then
	for n in $GENERAL_SIZES; do
		f="$DIR/scale-general-$n.jsonl"
		gen "$f" --workload general --txns "$n" --sessions 24 --keys 2000
		for l in ser si; do row general "$f" $l; done
	done
fi
if want mt; then
	for n in $MT_SIZES; do
		f="$DIR/scale-mt-$n.jsonl"
		gen "$f" --txns "$n" --sessions 24 --keys 10000 --dist zipfian
		for l in ser si; do row mt "$f" $l; done
	done
fi
if want timestamped; then
	for n in $TS_SIZES; do
		f="$DIR/scale-ts-$n.jsonl"
		gen "$f" --workload blindw --blindw-mixed --mode si --ops 8 --txns "$n" --sessions 24 --keys 10000 --timestamps
		for l in si ser; do row timestamped "$f" $l; done
	done
fi
if want weak; then
	# AWDIT's largest history's proportions (CockroachDB TPC-C: 50 sessions,
	# about 28 operations a transaction, a key for every 7.5 operations),
	# keys drawn from AWDIT's generator's Pareto distribution.
	for e in $WEAK_SIZES; do
		f="$DIR/scale-awdit-$e.jsonl"
		gen "$f" --workload awdit --events "$e" --sessions 50 --ops 28 --keys $((e * 2 / 15))
		for l in rc-session read-atomic causal; do row "awdit (TPC-C proportions)" "$f" $l; done
	done
fi
