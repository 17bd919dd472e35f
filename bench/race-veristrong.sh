#!/usr/bin/env bash
# The performance race against VeriStrong (docs/benchmarks.md): isoscope
# and VeriStrong's checker on the same histories, whole processes as a
# user runs them, alternately.
#
# VeriStrong is built from a checkout of github.com/CzxingcHen/VeriStrong
# at the pinned commit (VERISTRONG_COMMIT) that VERISTRONG_SRC names: its
# veristrong/ directory is built with meson (release), which needs the
# Debian packages meson, ninja-build, cmake, g++-12, libboost-log-dev,
# libboost-graph-dev, libboost-test-dev, libfmt-dev and zlib1g-dev. The
# histories are VeriStrong's own fig13 histories (its history/ directory,
# or shared/corpora/veristrong-perf), Cobra's fauna-page
# (shared/corpora/cobra-logs) and, when COBRALOGS names a checkout of
# github.com/DBCobra/CobraLogs, its scaling/*-100000 histories.
#
# Per history it prints both verdicts (isoscope: holds or violation by its
# exit status; VeriStrong: its "accept:" line), then the median CPU time
# (user + system, the process and the processes it waited for) and peak
# resident memory of RUNS runs of each, alternately, as a Markdown row.
# isoscope runs `check --level ser --no-holds` (VeriStrong decides
# serializability only); VeriStrong runs with `--pruning fast`, Cobra logs
# as `--history-type cobra` when their writes share one id (fig13) and
# `cobra-uv` otherwise (its reader pairs reads with writes by writer
# transaction there).
#
# ONLY, an extended regular expression, keeps the histories whose names
# it matches (VeriStrong takes minutes on HD-10k and WH-10k).
#
#   VERISTRONG_SRC=/path/to/VeriStrong bench/race-veristrong.sh
#   RUNS=5 COBRALOGS=/path/to/CobraLogs VERISTRONG_SRC=… bench/race-veristrong.sh
#   ONLY='tpcc|rubis' VERISTRONG_SRC=… bench/race-veristrong.sh
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
RUNS=${RUNS:-3}
CORPORA=${CORPORA:-../shared/corpora}
VERISTRONG_COMMIT=b5cc58f
: "${VERISTRONG_SRC:?set VERISTRONG_SRC to a checkout of github.com/CzxingcHen/VeriStrong at $VERISTRONG_COMMIT}"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

$GO build -o "$out/isoscope" ./cmd/isoscope
vs="$VERISTRONG_SRC/veristrong/builddir-release/checker"
if [ ! -x "$vs" ]; then
  (cd "$VERISTRONG_SRC/veristrong" &&
    CC=gcc-12 CXX=g++-12 meson setup builddir-release --buildtype=release >/dev/null &&
    meson compile -C builddir-release checker >/dev/null)
fi

fig13=$CORPORA/veristrong-perf/fig13-14-15-table1
[ -d "$fig13" ] || fig13=$VERISTRONG_SRC/history/fig13-14-15-table1
# name|isoscope history|VeriStrong arguments
sets=()
for h in BL RH HD WH; do
  f=$fig13/$h-10k/hist-00000/history.bincode
  [ -f "$f" ] && sets+=("$h-10k|$f|$f")
done
for h in tpcc rubis twitter; do
  d=$fig13/$h-10k
  [ -d "$d" ] && sets+=("$h-10k|$d|$d --history-type cobra")
done
d=$CORPORA/cobra-logs/ser-violation/fauna-page
[ -d "$d" ] && sets+=("fauna-page|$d|$d --history-type cobra-uv")
if [ -n "${COBRALOGS:-}" ]; then
  for d in "$COBRALOGS"/scaling/*-100000; do
    sets+=("CobraLogs $(basename "$d")|$d|$d --history-type cobra-uv")
  done
fi

# run ARGV…: runs it, appends "cpu_seconds peak_kb" to $out/m (the last
# line of time's report: a failing command's has a line before it), and leaves
# its standard output and error in $out/o.
run() {
  /usr/bin/time -f '%U %S %M' -o "$out/t" "$@" >"$out/o" 2>&1 || true
  tail -1 "$out/t" | awk '{ printf "%.3f %d\n", $1 + $2, $3 }' >>"$out/m"
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "isoscope: $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet 2>/dev/null || echo ' (modified)'); VeriStrong: $(git -C "$VERISTRONG_SRC" rev-parse --short HEAD 2>/dev/null || echo "$VERISTRONG_COMMIT (not a git checkout)"); $($GO version)"
echo "machine: $(nproc) processors, $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p'), $(free -g 2>/dev/null | awk '/^Mem:/ {print $2 " GiB"}')"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
echo
echo "| history | isoscope verdict | VeriStrong verdict | isoscope CPU | VeriStrong CPU | ratio | isoscope peak RSS | VeriStrong peak RSS |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
for s in "${sets[@]}"; do
  IFS='|' read -r name iso vsargs <<<"$s"
  if [ -n "${ONLY:-}" ] && ! grep -Eq "$ONLY" <<<"$name"; then
    continue
  fi
  : >"$out/iso"
  : >"$out/vs"
  iv=? vv=?
  for _ in $(seq "$RUNS"); do
    : >"$out/m"
    run "$out/isoscope" check --level ser --no-holds "$iso"
    iv=$(sed -n 's/^serializable holds.*/holds/p; s/^serializable VIOLATED.*/violation/p; s/^serializable UNKNOWN.*/undecided/p' "$out/o" | head -1)
    # shellcheck disable=SC2086 # vsargs is the history and its flags
    run "$vs" $vsargs --pruning fast
    vv=$(sed -n 's/^accept: true$/holds/p; s/^accept: false$/violation/p' "$out/o" | tail -1)
    sed -n 1p "$out/m" >>"$out/iso"
    sed -n 2p "$out/m" >>"$out/vs"
  done
  ic=$(cut -d' ' -f1 "$out/iso" | median) vc=$(cut -d' ' -f1 "$out/vs" | median)
  im=$(cut -d' ' -f2 "$out/iso" | median) vm=$(cut -d' ' -f2 "$out/vs" | median)
  ratio=$(awk -v a="$ic" -v b="$vc" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "-" }')
  printf '| %s | %s | %s | %s s | %s s | %s | %d MB | %d MB |\n' "$name" "${iv:-none}" "${vv:-none}" "$ic" "$vc" "$ratio" $((im / 1024)) $((vm / 1024))
done
