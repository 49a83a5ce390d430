#!/usr/bin/env bash
# bench/webui.sh — what the web console costs, measured in headless Chromium.
#
# Deploys a 3-node semi-sync sandbox ("wb"), writes 24 h of 1-second history
# into a fresh serve state with bench/webuigen (the sandbox's 3 instances
# plus a cluster "big" of 50 synthetic instances, whose seed is a closed
# port: its charts have data, its topology is one unreachable node), runs
# `dbpilot serve` on it and measures with bench/webuibench:
#   - page load: TTFB, first contentful paint, DOMContentLoaded, load, and
#     "ready" (the first .cluster-card / g.node in the DOM), bytes and requests;
#   - chart render time after choosing 1 h and 24 h, for 3 and 50 instances,
#     and the bytes of the range queries;
#   - a cluster page opened at ?range=24h until every chart is drawn, beside
#     Prometheus' own graph page (Debian's prometheus, classic UI) on a copy
#     of the same samples, for the qps chart;
#   - the PromQL time of the same query on serve and on that Prometheus;
#   - serve's CPU while TABS tabs stay on the cluster page versus idle;
#   - last, a real kill of wb's primary with the page open: when serve's API,
#     then the page, show the dead primary and the new one.
# Grafana is not packaged by Debian, so it is not compared here.
#
# Usage: bash bench/webui.sh [SECONDS] [TABS] [RUNS]   (defaults 60 5 5)
# Needs: mariadb-server and chromium (make test-deps / scripts/install-deps.sh --test).
set -euo pipefail
cd "$(dirname "$0")/.."
SECS="${1:-60}"
TABS="${2:-5}"
RUNS="${3:-5}"
bash scripts/install-deps.sh --test >/dev/null
command -v chromium >/dev/null || { echo "webui.sh: chromium is not installed (make test-deps)" >&2; exit 2; }
make build >/dev/null
DBP="$PWD/bin/dbpilot"
export DBPILOT_HOME="$(mktemp -d /tmp/dbpweb.XXXXXX)"
TOOLS="$DBPILOT_HOME/tools"
mkdir -p "$TOOLS"
go build -o "$TOOLS/webuigen" ./bench/webuigen
go build -o "$TOOLS/webuibench" ./bench/webuibench
SERVE_PID=""
PROM_PID=""
cleanup() {
	[ -n "$SERVE_PID" ] && kill "$SERVE_PID" 2>/dev/null && wait "$SERVE_PID" 2>/dev/null || true
	[ -n "$PROM_PID" ] && kill "$PROM_PID" 2>/dev/null && wait "$PROM_PID" 2>/dev/null || true
	"$DBP" sandbox destroy wb >/dev/null 2>&1 || true
	rm -rf "$DBPILOT_HOME"
}
trap cleanup EXIT

PORT_BASE=21600
LISTEN=127.0.0.1:17080
PROM_LISTEN=127.0.0.1:17090
BIG_SEED=127.0.0.1:$((PORT_BASE + 99)) # nothing listens there
echo "== deploy sandbox wb (3 nodes, semi-sync, ports $((PORT_BASE + 1))-$((PORT_BASE + 3)))"
"$DBP" sandbox deploy wb --topology replication --nodes 3 --semi-sync --port-base "$PORT_BASE" >/dev/null
DESC="$DBPILOT_HOME/sandboxes/wb/sandbox.json"
read -r ADMIN_USER ADMIN_PW REPL_USER REPL_PW < <(python3 -c "
import json,sys
d=json.load(open('$DESC'))
print(d['admin']['user'], d['admin']['password'], d['replication']['user'], d['replication']['password'])")
N1=127.0.0.1:$((PORT_BASE + 1)); N2=127.0.0.1:$((PORT_BASE + 2)); N3=127.0.0.1:$((PORT_BASE + 3))
STATE="$DBPILOT_HOME/serve"
mkdir -p "$STATE"
TOKEN=bench-web-token
cat >"$STATE/dbpilot.yaml" <<EOF
listen: $LISTEN
state: $STATE/state.db
token: $TOKEN
credentials: {user: "$ADMIN_USER", password: "$ADMIN_PW"}
replication: {user: "$REPL_USER", password: "$REPL_PW"}
clusters:
  - name: wb
    seeds: [$N1, $N2, $N3]
    auto_failover: true
  - name: big
    seeds: [$BIG_SEED]
EOF
echo "== write 24 h of 1 s history: wb (3 instances) and big (50 instances)"
"$TOOLS/webuigen" -dir "$STATE/metrics" -c "wb=$N1,$N2,$N3" -c big=50@40001 -hours 24 -end $(( $(date +%s) - 2 ))
du -sh "$STATE/metrics" | awk '{print "   store size " $1}'

PROM_FLAG=()
if command -v prometheus >/dev/null; then
	# Prometheus reads the same TSDB blocks: a copy taken before serve adds
	# live samples, served by Debian's Prometheus for the side-by-side figures.
	cp -r "$STATE/metrics" "$DBPILOT_HOME/prom-data"
	printf 'global: {scrape_interval: 1m}\nscrape_configs: []\n' >"$DBPILOT_HOME/prometheus.yml"
	prometheus --config.file="$DBPILOT_HOME/prometheus.yml" --storage.tsdb.path="$DBPILOT_HOME/prom-data" \
		--storage.tsdb.retention.time=30d --web.listen-address="$PROM_LISTEN" >"$DBPILOT_HOME/prometheus.log" 2>&1 &
	PROM_PID=$!
	for _ in $(seq 100); do
		curl -fsS "http://$PROM_LISTEN/-/ready" >/dev/null 2>&1 && break
		sleep 0.2
	done
	echo "== $(prometheus --version 2>&1 | head -1) on $PROM_LISTEN with a copy of the same samples"
	PROM_FLAG=(-prom "http://$PROM_LISTEN")
else
	echo "== prometheus is not installed (make test-deps): no side-by-side figures"
fi

echo "== dbpilot serve on $LISTEN"
"$DBP" serve --config "$STATE/dbpilot.yaml" >"$STATE/serve.log" 2>&1 &
SERVE_PID=$!
for _ in $(seq 100); do
	curl -fsS "http://$LISTEN/api/health" >/dev/null 2>&1 && break
	sleep 0.2
done
curl -fsS "http://$LISTEN/api/health" >/dev/null || { echo "serve did not start:"; cat "$STATE/serve.log"; exit 1; }
sleep 10 # live samples on top of the history

"$TOOLS/webuibench" -url "http://$LISTEN" -token "$TOKEN" -small wb -big big -pid "$SERVE_PID" -tabs "$TABS" -secs "$SECS" -runs "$RUNS" \
	"${PROM_FLAG[@]}" -kill "\"$DBP\" sandbox kill wb node1"
echo
echo "serve: $(grep -c . "$STATE/serve.log") log lines; chromium: $(chromium --version 2>/dev/null)"
