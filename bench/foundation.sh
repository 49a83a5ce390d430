#!/usr/bin/env bash
# bench/foundation.sh — figures for the foundation: sandbox deploy time (3 and
# 5 nodes), topology discovery time on 5 nodes side by side with
# percona-toolkit's pt-slave-find, inspect time per instance side by side with
# the mariadb client reading the same statements, and the sandbox's memory.
#
# Usage: bash bench/foundation.sh [RUNS]   (default 20 timed runs per figure)
# Needs: mariadb-server, mariadb-client, percona-toolkit (installed if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-20}"
DEPLOY_RUNS=3

bash scripts/install-deps.sh
if ! command -v pt-slave-find >/dev/null 2>&1; then
	echo "bench: installing percona-toolkit (peer: pt-slave-find)" >&2
	SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq percona-toolkit >/dev/null
fi
[ -x bin/dbpilot ] || make build >/dev/null
DBP="$PWD/bin/dbpilot"

export DBPILOT_HOME="$(mktemp -d /tmp/dbpbench.XXXXXX)"
cleanup() {
	for s in b3 b5; do "$DBP" sandbox destroy "$s" >/dev/null 2>&1 || true; done
	rm -rf "$DBPILOT_HOME"
}
trap cleanup EXIT

now_ms() { date +%s%N | awk '{printf "%.3f", $1/1e6}'; }
# stats "label" values... → prints median, p95, min (ms)
stats() {
	python3 - "$@" <<'PY'
import sys, statistics
label, vals = sys.argv[1], sorted(float(v) for v in sys.argv[2:])
p95 = vals[min(len(vals)-1, int(round(0.95*(len(vals)-1))))]
print(f"{label:<44} {statistics.median(vals):>9.1f} {p95:>9.1f} {vals[0]:>9.1f} {len(vals):>5}")
PY
}
# time_cmd N cmd... → prints N wall times in ms
time_cmd() {
	local n="$1"; shift
	local out=()
	for _ in $(seq "$n"); do
		local t0; t0=$(now_ms)
		"$@" >/dev/null 2>&1 || true
		local t1; t1=$(now_ms)
		out+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b-a}')")
	done
	echo "${out[@]}"
}

echo "dbpilot foundation benchmark — $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, $("$DBP" --version)"
echo "server: $(/usr/sbin/mariadbd --version 2>/dev/null || mariadbd --version)"
echo
printf "%-44s %9s %9s %9s %5s\n" "figure (ms)" "median" "p95" "min" "runs"

deploy_times() {
	local nodes="$1" name="$2" ts=()
	for _ in $(seq "$DEPLOY_RUNS"); do
		"$DBP" sandbox destroy "$name" >/dev/null 2>&1 || true
		local t0; t0=$(now_ms)
		"$DBP" sandbox deploy "$name" --topology replication --nodes "$nodes" --semi-sync >/dev/null 2>&1
		local t1; t1=$(now_ms)
		ts+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b-a}')")
	done
	echo "${ts[@]}"
}
stats "sandbox deploy, 3 nodes (semi-sync)" $(deploy_times 3 b3)
"$DBP" sandbox destroy b3 >/dev/null
stats "sandbox deploy, 5 nodes (semi-sync)" $(deploy_times 5 b5)

eval "$("$DBP" sandbox env b5)"
P1=$NODE1_PORT

# Discovery from a replica (node3): dbpilot crawls up and down.
"$DBP" topology --sandbox b5 --node 3 >/dev/null # warm the page cache
stats "dbpilot topology, 5 nodes (from a replica)" $(time_cmd "$RUNS" "$DBP" topology 127.0.0.1:"$NODE3_PORT" -u "$DBPILOT_USER" --password "$DBPILOT_PASSWORD")
stats "dbpilot analyze, 5 nodes" $(time_cmd "$RUNS" "$DBP" analyze --sandbox b5)
# Peer: pt-slave-find walks down from the primary (it cannot start at a replica).
stats "pt-slave-find, 5 nodes (from the primary)" $(time_cmd "$RUNS" pt-slave-find --report-format hostname h=127.0.0.1,P="$P1",u="$DBPILOT_USER",p="$DBPILOT_PASSWORD")

# inspect per instance; baseline: one mariadb client process running the
# statements inspect needs most (variables, status, replica status, hosts).
stats "dbpilot inspect, one replica" $(time_cmd "$RUNS" "$DBP" inspect 127.0.0.1:"$NODE2_PORT" -u "$DBPILOT_USER" --password "$DBPILOT_PASSWORD")
stats "dbpilot inspect, the primary" $(time_cmd "$RUNS" "$DBP" inspect 127.0.0.1:"$P1" -u "$DBPILOT_USER" --password "$DBPILOT_PASSWORD")
stats "mariadb client, same statements, one replica" $(time_cmd "$RUNS" mariadb -h127.0.0.1 -P"$NODE2_PORT" -u"$DBPILOT_USER" -p"$DBPILOT_PASSWORD" -e "SELECT @@version, @@server_id, @@read_only, @@log_bin, @@gtid_binlog_pos, @@gtid_slave_pos, @@gtid_current_pos, @@gtid_binlog_state; SHOW GLOBAL STATUS WHERE Variable_name IN ('Uptime','Rpl_semi_sync_master_status','Rpl_semi_sync_slave_status'); SHOW ALL SLAVES STATUS; SHOW SLAVE HOSTS")

# In-process figure: what the crawl itself costs, without process start-up.
ONE=$("$DBP" topology --sandbox b5 --json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(sum(len(c["instances"]) for c in d["clusters"]))')
echo
echo "instances discovered by dbpilot topology: $ONE"
echo "pt-slave-find tree:"; pt-slave-find --report-format hostname h=127.0.0.1,P="$P1",u="$DBPILOT_USER",p="$DBPILOT_PASSWORD" 2>/dev/null | sed 's/^/  /'
echo "dbpilot topology tree:"; "$DBP" topology --sandbox b5 | sed 's/^/  /'

# Memory of the 5-node sandbox: sum of the servers' resident and peak RSS.
echo
python3 - "$DBPILOT_HOME" <<'PY'
import os, sys
home = sys.argv[1]
rss = hwm = n = 0
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        cmd = open(f"/proc/{pid}/cmdline", "rb").read().decode(errors="replace")
        if "--defaults-file=" + home not in cmd: continue
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmRSS:"): rss += int(line.split()[1])
            if line.startswith("VmHWM:"): hwm += int(line.split()[1])
        n += 1
    except OSError:
        pass
print(f"5-node sandbox: {n} server processes, RSS {rss/1024:.0f} MB, peak RSS {hwm/1024:.0f} MB ({hwm/1024/max(n,1):.0f} MB per node)")
PY
TOPO_RSS=$( { /usr/bin/time -f %M "$DBP" topology --sandbox b5 >/dev/null; } 2>&1 | tail -1)
PT_RSS=$( { /usr/bin/time -f %M pt-slave-find h=127.0.0.1,P="$P1",u="$DBPILOT_USER",p="$DBPILOT_PASSWORD" >/dev/null; } 2>&1 | tail -1)
echo "peak RSS of one run: dbpilot topology $((TOPO_RSS/1024)) MB, pt-slave-find $((PT_RSS/1024)) MB"
