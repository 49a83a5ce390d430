#!/usr/bin/env bash
# bench/timemachine.sh — how long the web console takes to redraw a past
# moment of a cluster (issue 27's time machine), measured in headless
# Chromium.
#
# Deploys a 3-node sandbox ("tmb"), runs `dbpilot serve` on it with
# automatic failover, lets a few seconds of healthy history pass, kills the
# primary (a real failover in the history), waits for the new primary, and
# runs bench/timemachinebench: the cluster page opened at ?at= a few
# seconds before the failover, then N presses of → (one second on each, so
# across the failover) and N of PageDown/PageUp, each timed by the page
# from the keydown to the frame that shows the new moment's tree
# (data-redraw-ms); median, p90 and max, beside GET /at alone.
# No peer: orchestrator's web UI has no past view, and PMM/Grafana show
# metrics, not topologies, at a past time.
#
# Usage: bash bench/timemachine.sh [N]   (default 20 presses of each kind)
# Needs: mariadb-server and chromium (make test-deps / scripts/install-deps.sh --test).
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-20}"
bash scripts/install-deps.sh --test >/dev/null
command -v chromium >/dev/null || { echo "timemachine.sh: chromium is not installed (make test-deps)" >&2; exit 2; }
make build >/dev/null
DBP="$PWD/bin/dbpilot"
export DBPILOT_HOME="$(mktemp -d /tmp/dbptm.XXXXXX)"
TOOLS="$DBPILOT_HOME/tools"
mkdir -p "$TOOLS"
go build -o "$TOOLS/timemachinebench" ./bench/timemachinebench
SERVE_PID=""
cleanup() {
	[ -n "$SERVE_PID" ] && kill "$SERVE_PID" 2>/dev/null && wait "$SERVE_PID" 2>/dev/null || true
	"$DBP" sandbox destroy tmb >/dev/null 2>&1 || true
	rm -rf "$DBPILOT_HOME"
}
trap cleanup EXIT

PORT_BASE=21700
LISTEN=127.0.0.1:17180
echo "dbpilot time machine benchmark — $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, $("$DBP" --version), $(chromium --version 2>/dev/null)"
echo "== deploy sandbox tmb (3 nodes, ports $((PORT_BASE + 1))-$((PORT_BASE + 3)))"
"$DBP" sandbox deploy tmb --topology replication --nodes 3 --port-base "$PORT_BASE" >/dev/null
DESC="$DBPILOT_HOME/sandboxes/tmb/sandbox.json"
read -r ADMIN_USER ADMIN_PW REPL_USER REPL_PW < <(python3 -c "
import json
d=json.load(open('$DESC'))
print(d['admin']['user'], d['admin']['password'], d['replication']['user'], d['replication']['password'])")
N1=127.0.0.1:$((PORT_BASE + 1)); N2=127.0.0.1:$((PORT_BASE + 2)); N3=127.0.0.1:$((PORT_BASE + 3))
STATE="$DBPILOT_HOME/serve"
mkdir -p "$STATE"
cat >"$STATE/dbpilot.yaml" <<YAML
listen: $LISTEN
state: $STATE/state.db
token: bench-tm-token
hooks: {pre_failover: ["sleep 2"]} # the dead primary on record: a 0.3 s failover may leave none
credentials: {user: "$ADMIN_USER", password: "$ADMIN_PW"}
replication: {user: "$REPL_USER", password: "$REPL_PW"}
clusters:
  - name: tmb
    seeds: [$N1, $N2, $N3]
    auto_failover: true
YAML
"$DBP" serve --config "$STATE/dbpilot.yaml" >"$STATE/serve.log" 2>&1 &
SERVE_PID=$!
primary() { curl -fsS "http://$LISTEN/api/clusters/tmb" 2>/dev/null | python3 -c "import json,sys; d=json.load(sys.stdin); p=d.get('primary') or {}; print(d.get('state',''), p.get('port',0))" 2>/dev/null || echo "- 0"; }
for _ in $(seq 150); do
	[ "$(primary)" = "ok $((PORT_BASE + 1))" ] && break
	sleep 0.2
done
[ "$(primary)" = "ok $((PORT_BASE + 1))" ] || { echo "serve does not see tmb ok:"; tail -20 "$STATE/serve.log"; exit 1; }
sleep 10 # healthy history
echo "== kill the primary $N1; serve fails over"
"$DBP" sandbox kill tmb node1 >/dev/null
for _ in $(seq 300); do
	read -r st port < <(primary)
	[ "$st" = ok ] && [ "$port" != "$((PORT_BASE + 1))" ] && [ "$port" != 0 ] && break
	sleep 0.2
done
read -r st port < <(primary)
[ "$st" = ok ] && [ "$port" != "$((PORT_BASE + 1))" ] || { echo "no failover:"; tail -20 "$STATE/serve.log"; exit 1; }
echo "   new primary 127.0.0.1:$port"
sleep 15 # history after the failover
"$TOOLS/timemachinebench" -url "http://$LISTEN" -cluster tmb -n "$N"
