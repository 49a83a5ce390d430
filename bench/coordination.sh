#!/usr/bin/env bash
# bench/coordination.sh — several dbpilot serves coordinated through etcd:
#   - manager failover: the leader serve SIGKILLed → another serve leads
#     (lease TTL 2 s), over ROUNDS rounds;
#   - primary failover as a client sees it (kill -9 of the MariaDB primary →
#     first INSERT acknowledged on another node, an application account
#     without SUPER retrying every ~5 ms) with 3 coordinated serves and with
#     1 serve alone, same sandbox, same run, ROUNDS rounds each. Serves run
#     with rejoin on: after each round the killed server is started again
#     and serve fences it and makes it a replica of the new primary. When
#     that has not happened within 20 s (errant transactions: the server
#     stays out, or its replication stops), the serves are stopped, the
#     sandbox is redeployed on the same ports and fresh serves are started;
#     the rounds that needed a redeploy are counted and printed. Per-round
#     lines go to stderr.
# Usage: bash bench/coordination.sh [ROUNDS]   (default 10)
# Peers: orchestrator/raft is not installable here; its figures are in docs/coordination.md.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS="${1:-10}"
bash scripts/install-deps.sh --test
make build >/dev/null
DBP="$PWD/bin/dbpilot"
export DBPILOT_HOME="$(mktemp -d /tmp/dbpcoord.XXXXXX)"
trap '"$DBP" sandbox destroy coordb >/dev/null 2>&1 || true; rm -rf "$DBPILOT_HOME"' EXIT
echo "dbpilot coordination benchmark — $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, $("$DBP" --version), etcd $(etcd --version | head -1 | awk '{print $3}'), $ROUNDS rounds"
"$DBP" sandbox deploy coordb --topology replication --nodes 3 >/dev/null 2>&1
go run ./bench/coordbench --dbpilot "$DBP" --sandbox coordb --rounds "$ROUNDS"
