# isoscope: the two commands a fresh machine needs are `make demo` and
# `make test` (which runs `make setup` first).
GO ?= go
BIN := bin/isoscope
STATICCHECK_VERSION := v0.8.2

.PHONY: build demo setup test test-race lint bench bench-scale bench-weak bench-shard bench-shard-scale fuzz clean roundtrip-all bench-porcupine bench-veristrong evidence tidb dolt evidence-optin

build:
	$(GO) build -buildvcs=auto -o $(BIN) ./cmd/isoscope

# demo: run a workload on the embedded database and check it; then generate a
# mini-transaction history with planted anomalies and check it. A check
# that finds the planted violations exits 1, which is the demo's expected
# outcome; any other status (2 bad input, 3 undecided, 0: the plants were
# missed) fails the demo.
demo: build
	@mkdir -p tmp
	cd tmp && ../$(BIN) run
	$(BIN) gen --txns 100000 --sessions 24 --keys 10000 --dist zipfian --seed 7 \
		--plant lost-update,write-skew,long-fork --out tmp/demo.jsonl
	@for level in ser si; do \
		echo "--- $(BIN) check --level $$level tmp/demo.jsonl"; \
		$(BIN) check --level $$level tmp/demo.jsonl; st=$$?; \
		if [ $$st -ne 1 ]; then echo "demo: exit status $$st, want 1 (the planted violations)"; exit 1; fi; \
		echo "--- exit status 1: the planted violations were found, as expected"; \
	done

# setup: install what the tests need (Debian packages, staticcheck);
# a quick no-op when everything is there (scripts/setup.sh says what).
setup:
	@scripts/setup.sh

# test: setup, formatting, vet, staticcheck and every test (the
# databases of docs/services.md must be running for the integration tests).
# Each package's tests may take up to 30 minutes: the long differential
# runs take minutes on a loaded two-core machine, past go test's default 10.
test:
	@scripts/setup.sh || echo "make test: going on without what setup could not install (above); the tests that need it fail and name it"
	@$(MAKE) --no-print-directory lint
	$(GO) test -count=1 -timeout 30m ./...

# test-race: the short tests of every package under the race detector.
# Every package, not a list: a package's tests reach the goroutines of the
# packages it imports (the parallel checkers, readers, servers and
# cluster proxies), so a list would miss some and drift. -short leaves
# out the tests that honour testing.Short (the long differential runs).
test-race:
	$(GO) test -race -short -count=1 -timeout 30m ./...

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
		if [ -n "$$out" ]; then echo "not gofmt-ed:"; echo "$$out"; exit 1; fi
	@$(GO) mod tidy -diff >/dev/null 2>&1 || { echo "go.mod or go.sum is not tidy: run go mod tidy"; $(GO) mod tidy -diff; exit 1; }
	$(GO) vet ./...
	@PATH="$$PATH:$$($(GO) env GOPATH)/bin" command -v staticcheck >/dev/null 2>&1 || $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	PATH="$$PATH:$$($(GO) env GOPATH)/bin" staticcheck ./...

# roundtrip-all: convert every corpus history (the largest too, about 12
# minutes) to every writable format and back, and check that no verdict
# changed at any level; `make test` runs a sample.
roundtrip-all:
	ISOSCOPE_ROUNDTRIP_ALL=1 $(GO) test -count=1 -timeout 60m -run 'TestRoundTrip' ./internal/conformance/

# fuzz: every fuzz target for FUZZTIME each (CI runs them briefly; run
# longer by hand, e.g. make fuzz FUZZTIME=2m).
FUZZTIME ?= 10s
fuzz:
	@mkdir -p tmp; set -e; for f in $$(grep -rl --include='*_test.go' '^func Fuzz' internal); do \
		pkg=./$$(dirname $$f); \
		for t in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$f); do \
			echo "fuzz $$pkg $$t ($(FUZZTIME))"; \
			if ! $(GO) test -run='^$$' -fuzz="^$$t$$" -fuzztime=$(FUZZTIME) $$pkg >tmp/fuzz.log 2>&1; then \
				grep -v '^fuzz: elapsed' tmp/fuzz.log; \
				if [ -n "$$(git status --porcelain -- $$pkg/testdata/fuzz 2>/dev/null)" ]; then exit 1; fi; \
				echo "no failing input was saved (the fuzzing engine's own failure?): once more"; \
				$(GO) test -run='^$$' -fuzz="^$$t$$" -fuzztime=$(FUZZTIME) $$pkg >tmp/fuzz.log 2>&1 || \
					{ grep -v '^fuzz: elapsed' tmp/fuzz.log; exit 1; }; \
			fi; \
		done; \
	done

bench:
	$(GO) test -run='^$$' -bench=. -benchmem ./...

# bench-porcupine: isoscope against porcupine's checker on the same
# register logs (docs/benchmarks.md); porcupine is built from the version
# bench/go.mod pins, in its own module, which CI never builds.
bench-porcupine:
	GO=$(GO) bench/race.sh

# bench-veristrong: isoscope against VeriStrong's checker on its fig13
# histories, fauna-page and (COBRALOGS=dir) CobraLogs' 100k histories;
# VeriStrong is built from VERISTRONG_SRC, a checkout of its repository
# (docs/benchmarks.md).
bench-veristrong:
	GO=$(GO) bench/race-veristrong.sh

# bench-scale: the scaling table's rows (docs/benchmarks.md, "Scaling:
# Elle's and AWDIT's sizes") at the sizes that fit in about 30 minutes:
# list-append, general, mt, timestamped and AWDIT-shaped histories, each
# generated into tmp/ and checked once; markdown rows on standard output.
bench-scale: build
	scripts/bench-scale.sh $(BIN) tmp

# bench-online: the online black-box checker (internal/check/online) on a
# stream of ONLINE_TXNS (default 50,000,000) generated list-append
# transactions at SER with fences and planted lost updates; RSS samples in
# tmp/online-stream.csv, the plot in tmp/online-memory.png
# (docs/benchmarks.md).
.PHONY: bench-online
bench-online:
	mkdir -p tmp && ONLINE_BENCH_TXNS=$${ONLINE_TXNS:-50000000} ONLINE_BENCH_CSV=$(CURDIR)/tmp/online-stream.csv ONLINE_PLOTS=$(CURDIR)/tmp \
		$(GO) test -run='^$$' -bench=OnlineStream -benchtime=1x -timeout=0 ./internal/check/online

# bench-weak: rc-session, read-atomic and causal on causal-store histories
# of 2^10 to 2^20 transactions with 50 and 100 sessions (docs/benchmarks.md).
bench-weak: build
	scripts/bench-weak.sh $(BIN) tmp

# bench-shard: sharded online checking over NATS JetStream (a server of its
# own) with 1, 2 and 4 key shards against one serve (docs/scaling.md).
bench-shard: build
	scripts/bench-shard.sh 300000

# bench-shard-scale: what 2 and 4 key workers give against one, on a
# history of 1,000,000 transactions: each worker's CPU (bench-shard-ab.sh,
# this build against itself, 5 rounds) and the workers running at once on
# this machine, by the wall clock (bench-shard-wall.sh, 5 rounds).
bench-shard-scale: build
	scripts/bench-shard-ab.sh $(BIN) $(BIN) 5 1000000
	scripts/bench-shard-wall.sh $(BIN) 5 1000000

# evidence: RUNS (default 10) seeded fault runs per row (cluster x isolation
# x fault x workload) on clusters stood up on 127.0.0.1, each checked at
# SSER, SER, SI and RC; tmp/evidence/runs.tsv and summary.md (docs/databases.md
# holds the results). ROWS="galera:3/repeatable-read/partition/mt/si …"
# chooses the rows; runs already in runs.tsv are skipped. RUNS, TXNS, DURATION,
# INTERVAL and CHECK_TIMEOUT (each check's limit, default 120s) as in scripts/evidence.sh.
evidence: build
	scripts/evidence.sh $(BIN) tmp/evidence $(ROWS)

# evidence-optin: the evidence rows of the opt-in servers (make tidb and
# make dolt first), into the same tmp/evidence as make evidence: TiDB in
# pessimistic and optimistic mode under kill and pause, Dolt under kill,
# all at repeatable read.
OPTIN_ROWS := tidb:1/repeatable-read/kill/mt/si tidb:1/repeatable-read/pause/mt/si \
	tidb-optimistic:1/repeatable-read/kill/mt/si tidb-optimistic:1/repeatable-read/pause/mt/si \
	dolt:1/repeatable-read/kill/mt/si
evidence-optin: build
	scripts/evidence.sh $(BIN) tmp/evidence $(OPTIN_ROWS)

# tidb, dolt: the opt-in servers of `--cluster tidb`, `tidb-optimistic`
# and `dolt`, built from the Go module proxy outside isoscope's go.mod
# into tmp/bin, or $ISOSCOPE_BIN when set (where isoscope and its tests
# look for them). Long (each 45-52 minutes on two busy cores); CI builds
# neither, and their tests skip without them.
tidb:
	GO=$(GO) scripts/build-tidb.sh

dolt:
	GO=$(GO) scripts/build-dolt.sh

clean:
	rm -rf bin tmp
