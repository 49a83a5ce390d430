# dbpilot — see README.md. Targets: build, test, lint, package, demo, bench, fuzz, clean.
GO          ?= go
BIN         := bin/dbpilot
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS     := -s -w -X main.version=$(VERSION)
# No cgo: the only cgo in the build is the standard library's optional libc
# DNS resolver and user lookup, and without it bin/dbpilot is the static
# binary the design promises (with cgo it needs libc.so.6, and is 127 KB
# bigger). Exported, so tests and vet see the same pure-Go code as the binary.
CGO_ENABLED ?= 0
export CGO_ENABLED
TOOLS       := $(CURDIR)/.tools
STATICCHECK := $(TOOLS)/staticcheck
STATICCHECK_VERSION := v0.8.2
# Integration tests start real MariaDB sandboxes; keep the whole run well
# under 15 minutes on 2 cores.
TEST_TIMEOUT ?= 14m

.PHONY: all build test unit lint package demo deps test-deps bench bench-backup bench-webui bench-timemachine bench-faults fuzz clean web-vendor

all: build

build:
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/dbpilot

# package builds dist/dbpilot_<version>_<arch>.deb with nfpm (pinned in
# tools/go.mod; cobra/doc for the man pages in tools/mandoc/go.mod, so
# neither is in dbpilot's go.mod): the binary built as by `build`, the
# systemd unit, an example configuration, man pages, completions
# (packaging/, scripts/package.sh). GOARCH=arm64 builds the arm64 one.
package:
	GO="$(GO)" VERSION="$(VERSION)" LDFLAGS="$(LDFLAGS)" bash scripts/package.sh

# deps installs what the demo needs when it is missing: the MariaDB server
# and client, nothing else.
deps:
	@bash scripts/install-deps.sh

# test-deps installs, besides, what the tests use: Prometheus, tmux,
# Chromium, etcd, VictoriaMetrics, Galera with rsync, mariadb-backup and
# socat, zstd (scripts/install-deps.sh --test).
test-deps:
	@bash scripts/install-deps.sh --test

# test runs every test: unit tests and integration tests against real
# MariaDB sandboxes. With CI=true a server that cannot start fails the run.
test: test-deps
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./...

# unit runs the tests that need no server.
unit:
	$(GO) test -count=1 -short ./...

$(STATICCHECK):
	GOBIN=$(TOOLS) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

# lint fails when go.mod or go.sum is not what `go mod tidy` would write
# (a direct import marked // indirect, a module no longer used, a missing sum),
# and on internal/lint's checks of the source (no function over 120 lines).
lint: $(STATICCHECK)
	@out=$$($(GO) mod tidy -diff 2>&1) || { printf '%s\n' "$$out"; echo "lint: go.mod/go.sum are not tidy (diff above): run 'go mod tidy' and commit go.mod and go.sum"; exit 1; }
	@for m in tools tools/mandoc; do out=$$($(GO) -C $$m mod tidy -diff 2>&1) || { printf '%s\n' "$$out"; echo "lint: $$m/go.mod/go.sum are not tidy (diff above): run 'go -C $$m mod tidy' and commit them"; exit 1; }; done
	@test -z "$$(gofmt -l . | grep -v '^.tools/')" || (echo "gofmt needed:"; gofmt -l . | grep -v '^.tools/'; exit 1)
	$(GO) vet ./...
	$(STATICCHECK) ./...
	$(GO) test -count=1 ./internal/lint

# demo deploys (or reuses) the 3-node semi-sync GTID sandbox "demo", prints
# its topology and analysis, then runs the daemon on it in the foreground.
demo: deps build
	@if $(BIN) sandbox status demo >/dev/null 2>&1; then \
		echo "== sandbox demo is running; reusing it (destroy it with: $(BIN) sandbox destroy demo)"; \
	else \
		$(BIN) sandbox deploy demo --topology replication --nodes 3 --semi-sync --force; \
	fi
	@echo "== $(BIN) topology --sandbox demo"
	@$(BIN) topology --sandbox demo
	@echo "== $(BIN) analyze --sandbox demo"
	@$(BIN) analyze --sandbox demo
	@echo "== $(BIN) serve --sandbox demo   (Ctrl-C stops; try: $(BIN) sandbox kill demo node1 in another terminal)"
	@echo "== web console: open http://127.0.0.1:7070/ in a browser (actions ask for the API token; serve prints its file below)"
	@$(BIN) serve --sandbox demo

bench: deps build
	bash bench/foundation.sh
	bash bench/failover.sh
	bash bench/monitoring.sh
	bash bench/backup.sh

# bench-backup: dump/restore against mydumper/myloader and mariadb-dump
# (8 x 1M + 5M + 1M-row keyless table by default; ROWS, TABLES, BIG_ROWS,
# THREADS scale it).
bench-backup: deps build
	bash bench/backup.sh

# bench-webui: the web console's page load, chart render and serve CPU with
# tabs open, in headless Chromium.
bench-webui: deps build
	bash bench/webui.sh

# bench-timemachine: the web console's redraw of a past moment (median and
# p90 of 20 key presses on the time bar) across a real failover.
bench-timemachine: deps build
	bash bench/timemachine.sh

# bench-faults: the fault matrix (bench/faults.sh): kill -9, SIGSTOP, locked
# accounts, serve killed mid-recovery, etcd down... against real sandboxes
# and bin/dbpilot, one row per scenario: most writable nodes at once,
# acknowledged writes lost, time to writes open, held or VIOLATED. About
# 6-8 minutes; not part of `make test`.
bench-faults: deps build
	bash bench/faults.sh

# web-vendor refreshes the console's third-party files (Preact+htm, uPlot)
# in web/static/vendor from the versions pinned in web/package-lock.json.
# Their copies are committed, so building needs neither Node.js nor a
# network; only this target does.
web-vendor:
	cd web && npm ci --no-audit --no-fund
	mkdir -p web/static/vendor/preact-htm web/static/vendor/uplot
	cp web/node_modules/htm/preact/standalone.module.js web/static/vendor/preact-htm/
	cp web/node_modules/htm/LICENSE web/static/vendor/preact-htm/LICENSE-htm
	cp web/node_modules/preact/LICENSE web/static/vendor/preact-htm/LICENSE-preact
	cp web/node_modules/uplot/dist/uPlot.esm.min.js web/node_modules/uplot/dist/uPlot.min.css web/static/vendor/uplot/ 2>/dev/null || \
		{ cp web/node_modules/uplot/dist/uPlot.esm.js web/static/vendor/uplot/uPlot.esm.min.js; cp web/node_modules/uplot/dist/uPlot.min.css web/static/vendor/uplot/; }
	cp web/node_modules/uplot/LICENSE web/static/vendor/uplot/

# fuzz runs each parser fuzzer briefly.
fuzz:
	$(GO) test -run XXX -fuzz FuzzParseMariaGTID -fuzztime 20s ./gtid/
	$(GO) test -run XXX -fuzz FuzzParseMariaList -fuzztime 20s ./gtid/
	$(GO) test -run XXX -fuzz FuzzParseMariaSet -fuzztime 20s ./gtid/
	$(GO) test -run XXX -fuzz FuzzParseMySQLSet -fuzztime 20s ./gtid/
	$(GO) test -run XXX -fuzz FuzzParseInstanceKey -fuzztime 20s .
	$(GO) test -run XXX -fuzz FuzzParseVersion -fuzztime 20s .
	$(GO) test -run XXX -fuzz FuzzParseServerVersion -fuzztime 20s ./sandbox/
	$(GO) test -run XXX -fuzz FuzzParseSlowLog -fuzztime 20s ./mysql/
	$(GO) test -run XXX -fuzz FuzzFingerprint -fuzztime 20s ./mysql/
	$(GO) test -run XXX -fuzz FuzzParse -fuzztime 20s ./watchdog/
	$(GO) test -run XXX -fuzz FuzzReadEvents -fuzztime 20s ./binlog/
	$(GO) test -run XXX -fuzz FuzzWalk -fuzztime 20s ./pitr/
	$(GO) test -run XXX -fuzz FuzzCheckCondition -fuzztime 20s ./backup/

clean:
	rm -rf bin dist
