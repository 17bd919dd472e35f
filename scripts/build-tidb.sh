#!/usr/bin/env bash
# build-tidb.sh [OUTDIR]: builds tidb-server (for `--cluster tidb`) from
# the Go module proxy into OUTDIR (default $ISOSCOPE_BIN, else tmp/bin).
#
# The proxy refuses TiDB's version list and tags but serves this exact
# pseudo-version pair (docs/clusters.md). `go install` cannot build
# it (tidb's go.mod replaces its parser with the nested ./pkg/parser,
# which the module zip leaves out), so the build happens in a copy of the
# module, outside isoscope's go.mod, with the parser module put back at
# pkg/parser. Nothing of TiDB is committed. Measured: 52 minutes on two
# cores shared with other builds (load average 20-30), a 244 MB binary;
# needs cgo (gcc). The build runs nice'd.
set -euo pipefail
TIDB_VERSION=v1.1.0-beta.0.20251126154744-e4e814fdc0af
PARSER_VERSION=v0.0.0-20251126154744-e4e814fdc0af
GO=${GO:-go}
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-${ISOSCOPE_BIN:-$root/tmp/bin}}
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$root/tmp/build-tidb
rm -rf "$work"
mkdir -p "$work"
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
export GOFLAGS=-mod=mod GOWORK=off CGO_ENABLED=1
cd "$work"
echo "downloading github.com/pingcap/tidb@$TIDB_VERSION and its parser"
tidb=$(GOFLAGS= $GO mod download -json "github.com/pingcap/tidb@$TIDB_VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
parser=$(GOFLAGS= $GO mod download -json "github.com/pingcap/tidb/pkg/parser@$PARSER_VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
[ -d "$tidb" ] && [ -d "$parser" ] || { echo "build-tidb: the module proxy did not serve both modules" >&2; exit 1; }
cp -r "$tidb" src
chmod -R u+w src
rm -rf src/pkg/parser
cp -r "$parser" src/pkg/parser
chmod -R u+w src/pkg/parser
cd src
echo "building tidb-server (long: most of an hour on two busy cores)"
nice $GO build -o "$out/tidb-server.new" ./cmd/tidb-server
mv "$out/tidb-server.new" "$out/tidb-server"
echo "$TIDB_VERSION" >"$out/tidb-server.version"
echo "built $out/tidb-server"
