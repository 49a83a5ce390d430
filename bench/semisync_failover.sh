#!/usr/bin/env bash
# bench/semisync_failover.sh — failover with semi-sync on every node: the
# client-seen write-unavailability (SIGKILL of the primary to the first
# acknowledged write on the new primary, as `dbpilot drill` measures it with a
# writer committing numbered rows) and the acknowledged writes lost, on a
# 3-node MariaDB sandbox whose servers all have BOTH semi-sync sides on
# (rpl_semi_sync_master_enabled and rpl_semi_sync_slave_enabled, set by SQL as
# DBAs who want any server promotable configure it), side by side with the
# same topology without semi-sync.
#
# Usage: bash bench/semisync_failover.sh [ROUNDS] [RATE]   (default 10 rounds, 100 writes/s)
#
# Before each semi-sync round both sides are turned on on every node and the
# replicas' IO threads restarted; from the round's first write the replicas'
# appliers wait rpl_semi_sync_master_timeout (10 s) for an acknowledgement
# nobody sends (Rpl_semi_sync_master_wait_sessions > 0 is checked): the state
# in which a failover used to take 5-10 s. The kill comes 2 s later (the
# drill's warm-up). The restored sandbox (old primary rejoined) gets both
# sides again for the next round.
#
# Target: failover <= 1 s client-seen, 0 acknowledged writes lost.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS="${1:-10}"
RATE="${2:-100}"
bash scripts/install-deps.sh
[ -x bin/dbpilot ] || make build >/dev/null
DBP="$PWD/bin/dbpilot"
export DBPILOT_HOME="$(mktemp -d /tmp/dbpbench.XXXXXX)"
trap '"$DBP" sandbox destroy sboth >/dev/null 2>&1 || true; "$DBP" sandbox destroy sasync >/dev/null 2>&1 || true; rm -rf "$DBPILOT_HOME"' EXIT

echo "dbpilot failover benchmark, semi-sync on every node — $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, $("$DBP" --version), $ROUNDS rounds at $RATE writes/s"
echo "server: $(/usr/sbin/mariadbd --version 2>/dev/null || mariadbd --version)"
# sboth is configured for semi-sync (serve's semi_sync: true); the other
# sides are turned on by SQL below.
"$DBP" sandbox deploy sboth --topology replication --nodes 3 --semi-sync >/dev/null 2>&1
"$DBP" sandbox deploy sasync --topology replication --nodes 3 >/dev/null 2>&1

sql() { "$DBP" sandbox sql sboth "$1" "$2" >/dev/null; }
value() { "$DBP" sandbox sql sboth "$1" "$2" --json | python3 -c 'import json,sys; print(list(json.load(sys.stdin)[0].values())[0])'; }
replicas() { "$DBP" sandbox status sboth --json | python3 -c 'import json,sys; print(" ".join(n["node"] for n in json.load(sys.stdin) if n.get("channels")))'; }

# both_sides_everywhere turns both semi-sync sides on on every node and
# restarts the replicas' IO threads, so that they connect as semi-sync
# replicas.
both_sides_everywhere() {
	for n in node1 node2 node3; do
		sql "$n" "SET GLOBAL rpl_semi_sync_master_enabled=ON; SET GLOBAL rpl_semi_sync_slave_enabled=ON"
	done
	for n in $(replicas); do
		sql "$n" "STOP SLAVE IO_THREAD; START SLAVE IO_THREAD"
	done
}

OUT="${BENCH_OUT:-$DBPILOT_HOME}"
files=()
waiting=0
for i in $(seq 1 "$ROUNDS"); do
	both_sides_everywhere
	file="$OUT/failover-semi-everywhere-$i.json"
	"$DBP" drill failover --sandbox sboth --rounds 1 --rate "$RATE" --json >"$file" 2>/dev/null &
	drill=$!
	# One second into the warm-up: are the replicas' appliers waiting for an
	# acknowledgement nobody sends?
	sleep 1
	for n in $(replicas); do
		w=$(value "$n" "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME='RPL_SEMI_SYNC_MASTER_WAIT_SESSIONS'" 2>/dev/null || echo 0)
		[ "${w:-0}" -gt 0 ] && waiting=$((waiting + 1))
	done
	wait "$drill" || true
	files+=("$file")
done

printf "%-28s %6s %6s %8s %8s %8s %9s %10s %8s\n" "drill" "rounds" "failed" "p50 s" "p95 s" "max s" "detect s" "lost acked" "acked"
python3 bench/drill_summary.py "failover, semi-sync all" "${files[@]}"
"$DBP" drill failover --sandbox sasync --rounds "$ROUNDS" --rate "$RATE" --json >"$OUT/failover-async.json" 2>/dev/null || true
python3 bench/drill_summary.py "failover, async" "$OUT/failover-async.json"
echo "replicas whose applier waited for a semi-sync acknowledgement at the kill: $waiting of $((2 * ROUNDS))"
echo "target: failover with semi-sync on every node <= 1 s client-seen (p95), 0 lost acknowledged writes"
