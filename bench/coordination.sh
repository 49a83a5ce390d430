#!/usr/bin/env bash
# bench/coordination.sh — several dbpilot serves coordinated through etcd:
#   - manager failover: the leader serve SIGKILLed → another serve leads
#     (lease TTL 2 s), over ROUNDS rounds;
#   - primary failover as a client sees it (kill -9 of the MariaDB primary →
#     first acknowledged write on the new primary) with 3 coordinated serves
#     and with 1 serve alone, same sandbox, same run. Known limit: this
#     second part re-attaches each killed primary itself and can race
#     serve's own rejoin (replication broke in a round of our runs); its
#     figures are not in the README yet.
# Usage: bash bench/coordination.sh [ROUNDS]   (default 10)
# Peers: orchestrator/raft is not installable here; see README.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS="${1:-10}"
bash scripts/install-deps.sh
make build >/dev/null
DBP="$PWD/bin/dbpilot"
export DBPILOT_HOME="$(mktemp -d /tmp/dbpcoord.XXXXXX)"
trap '"$DBP" sandbox destroy coordb >/dev/null 2>&1 || true; rm -rf "$DBPILOT_HOME"' EXIT
echo "dbpilot coordination benchmark — $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, $("$DBP" --version), etcd $(etcd --version | head -1 | awk '{print $3}'), $ROUNDS rounds"
"$DBP" sandbox deploy coordb --topology replication --nodes 3 >/dev/null 2>&1
go run ./bench/coordbench --dbpilot "$DBP" --sandbox coordb --rounds "$ROUNDS"
