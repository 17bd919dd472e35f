#!/usr/bin/env bash
# build-dolt.sh [OUTDIR]: builds dolt (for `--cluster dolt`) from the Go
# module proxy into OUTDIR (default $ISOSCOPE_BIN, else tmp/bin).
#
# The proxy serves github.com/dolthub/dolt/go only as pseudo-versions;
# this one is the commit of Dolt v2.2.0's release. It has no replace
# directive, so `go install MODULE@VERSION` builds it outside isoscope's
# go.mod (from a temporary directory). Needs cgo (gcc) and ICU's headers
# (Debian's libicu-dev). Measured: 45 minutes on two cores shared with
# other builds (load average 20-30), a 166 MB binary; nice'd.
# Nothing of Dolt is committed.
set -euo pipefail
DOLT_VERSION=v0.40.5-0.20260715172757-a6690826d767
GO=${GO:-go}
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-${ISOSCOPE_BIN:-$root/tmp/bin}}
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
echo "building github.com/dolthub/dolt/go/cmd/dolt@$DOLT_VERSION (long: up to most of an hour on two busy cores)"
GOFLAGS= GOWORK=off CGO_ENABLED=1 GOBIN="$work" nice $GO install "github.com/dolthub/dolt/go/cmd/dolt@$DOLT_VERSION"
mv "$work/dolt" "$out/dolt"
echo "$DOLT_VERSION" >"$out/dolt.version"
echo "built $out/dolt"
