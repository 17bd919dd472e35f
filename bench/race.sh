#!/usr/bin/env bash
# The performance race (docs/benchmarks.md): isoscope against porcupine's
# checker on the same register logs, whole processes as a user runs them.
#
# It builds isoscope from this checkout and, in the bench module (its own
# go.mod: the main module never builds or requires porcupine), porcupine
# at the version bench/go.mod pins, fetched through the Go module proxy,
# with our driver (bench/porcupine) and the harness (bench/race); then,
# per log set, it compares the verdicts file by file and times RUNS runs
# of each tool, alternately, and prints the machine, the date and a
# Markdown table of median CPU time (user + system) and peak RSS.
#
# Log sets: porcupine's 102 etcd logs and 6 key-value logs (from
# shared/corpora beside the checkout, or CORPORA), and knossos's
# cas-failure history when CAS_FAILURE names it (knossos's
# data/cas-register/bad/cas-failure.edn; by default looked for in
# CORPORA/knossos/cas-register/bad/).
#
#   bench/race.sh            # or: make bench-porcupine
#   RUNS=7 CAS_FAILURE=/path/to/cas-failure.edn bench/race.sh
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
RUNS=${RUNS:-5}
CORPORA=${CORPORA:-../shared/corpora}
CAS_FAILURE=${CAS_FAILURE:-$CORPORA/knossos/cas-register/bad/cas-failure.edn}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

$GO build -o "$out/isoscope" ./cmd/isoscope
(cd bench && $GO build -o "$out/porcupine-race" ./porcupine && $GO build -o "$out/race" ./race)

sets=("porcupine etcd=$CORPORA/porcupine/test_data/jepsen/*.log"
      "porcupine kv=$CORPORA/porcupine/test_data/kv/*.txt")
if [ -f "$CAS_FAILURE" ]; then
  sets+=("knossos cas-failure=$CAS_FAILURE")
else
  echo "note: no knossos cas-failure history at $CAS_FAILURE (set CAS_FAILURE): that set is left out" >&2
fi

echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "isoscope: $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet 2>/dev/null || echo ' (modified)'); porcupine: $(sed -n 's/^require github.com\/anishathalye\/porcupine //p' bench/go.mod); $($GO version)"
echo "machine: $(nproc) processors, $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p'), $(free -g 2>/dev/null | awk '/^Mem:/ {print $2 " GiB"}')"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
echo
"$out/race" -isoscope "$out/isoscope" -porcupine "$out/porcupine-race" -runs "$RUNS" "${sets[@]}"
