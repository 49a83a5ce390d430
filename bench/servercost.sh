#!/usr/bin/env bash
# bench/servercost.sh — what monitoring costs the monitored server: CPU
# seconds of the mariadbd process per hour of monitoring, dbpilot serve
# (1 s collection, its default collectors and discovery) against
# prometheus-mysqld-exporter at its default collectors scraped every second,
# in one run, on one real MariaDB sandbox.
#
# Three windows of the same length on the same idle sandbox, one after the
# other: nobody monitoring (the baseline), dbpilot serve, mysqld_exporter.
# For each: the mariadbd process' CPU (utime+stime from /proc/<pid>/stat)
# per hour, minus the baseline's, and the statements per second it saw
# (Questions, and the commands that moved most: Com_* deltas). The ratio
# dbpilot / mysqld_exporter is checked against the target (<= 0.5).
#
# Usage: bash bench/servercost.sh
#   SERVERCOST_MINUTES=5      length of each window (three windows)
#   SERVERCOST_PORT=21900     sandbox port
# Needs: mariadb-server, prometheus-mysqld-exporter (installed if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
MINUTES="${SERVERCOST_MINUTES:-5}"
PORT="${SERVERCOST_PORT:-21900}"
WINDOW=$(python3 -c "print(int(float('$MINUTES') * 60))")
bash scripts/install-deps.sh
if [ ! -x /usr/bin/prometheus-mysqld-exporter ]; then
	SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq prometheus-mysqld-exporter >/dev/null
	# Debian starts the packaged service; the benchmark runs its own.
	$SUDO systemctl stop prometheus-mysqld-exporter >/dev/null 2>&1 || true
fi
make build >/dev/null
DBP="$PWD/bin/dbpilot"
export DBPILOT_HOME="$(mktemp -d /tmp/dbpcost.XXXXXX)"
NAME=cost
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	"$DBP" sandbox destroy "$NAME" >/dev/null 2>&1 || true
	rm -rf "$DBPILOT_HOME"
}
trap cleanup EXIT
USER_=bench
PASS=bench-servercost-pw
HZ=$(getconf CLK_TCK)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

"$DBP" sandbox deploy "$NAME" --topology single --port-base "$PORT" >/dev/null
"$DBP" sandbox sql "$NAME" node1 "CREATE USER '$USER_'@'127.0.0.1' IDENTIFIED BY '$PASS'" >/dev/null
# What serve's account has (the heartbeat writes dbpilot.heartbeat);
# mysqld_exporter uses the same account.
"$DBP" sandbox sql "$NAME" node1 "GRANT ALL PRIVILEGES ON *.* TO '$USER_'@'127.0.0.1'" >/dev/null
read -r P MPID < <("$DBP" sandbox status "$NAME" --json | python3 -c 'import json,sys; n=json.load(sys.stdin)[0]; print(n["port"], n["pid"])')
[ -n "$MPID" ] && [ -d "/proc/$MPID" ] || { echo "servercost: no mariadbd pid for sandbox $NAME"; exit 1; }

cpu_ticks() { awk '{print $14+$15}' "/proc/$MPID/stat"; }
# status: the server's Questions and Com_* counters as "name value" lines,
# read through the sandbox's own client (a few statements, the same in
# every window).
status() { "$DBP" sandbox sql "$NAME" node1 "SHOW GLOBAL STATUS WHERE Variable_name = 'Questions' OR Variable_name LIKE 'Com\\_%'" 2>/dev/null | awk 'NF==2 && $2 ~ /^[0-9]+$/ {print $1, $2}'; }
RES="$DBPILOT_HOME/results.tsv"
: >"$RES"
measure() { # LABEL: one window, appended to RES
	local s0 c0 t0 s1 c1 t1
	s0="$DBPILOT_HOME/$1.s0"; s1="$DBPILOT_HOME/$1.s1"
	status >"$s0"; c0=$(cpu_ticks); t0=$(date +%s.%N)
	sleep "$WINDOW"
	c1=$(cpu_ticks); t1=$(date +%s.%N); status >"$s1"
	printf "%s\t%s\t%s\t%s\t%s\n" "$1" "$(python3 -c "print($t1-$t0)")" "$((c1 - c0))" "$s0" "$s1" >>"$RES"
}

echo "dbpilot server-side cost — $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores (load average $(cut -d' ' -f1-3 /proc/loadavg) at start), $("$DBP" --version), $(prometheus-mysqld-exporter --version 2>&1 | head -1 | cut -c1-60)"
echo "one MariaDB sandbox ($(/usr/sbin/mariadbd --version 2>/dev/null | awk '{print $3}'), port $P, idle), three windows of ${WINDOW}s: nobody, dbpilot serve, mysqld_exporter"
sleep 5 # the sandbox settles after deploy

# 1. the baseline: nobody monitoring.
measure idle

# 2. dbpilot serve: one cluster, its default collectors at 1 s.
API=$(free_port)
{
	echo "listen: 127.0.0.1:$API"
	echo "state: $DBPILOT_HOME/state.db"
	echo "token: bench"
	echo "credentials: {user: $USER_, password: $PASS}"
	echo "replication: {user: repl, password: unused}"
	echo "clusters:"
	echo "  - {name: $NAME, seeds: ['127.0.0.1:$P'], auto_failover: false}"
} >"$DBPILOT_HOME/serve.yaml"
"$DBP" serve --config "$DBPILOT_HOME/serve.yaml" >/dev/null 2>"$DBPILOT_HOME/serve.log" &
SERVE=$!
PIDS+=("$SERVE")
sleep 15 # connections, the heartbeat table, the first runs of the slow collectors
kill -0 "$SERVE" 2>/dev/null || { echo "serve exited:"; tail -5 "$DBPILOT_HOME/serve.log"; exit 1; }
measure dbpilot
kill "$SERVE"; wait "$SERVE" 2>/dev/null || true
sleep 3

# 3. mysqld_exporter at its default collectors, scraped every second.
EXPORT=$(free_port)
DATA_SOURCE_NAME="$USER_:$PASS@(127.0.0.1:$P)/" prometheus-mysqld-exporter --web.listen-address="127.0.0.1:$EXPORT" >/dev/null 2>"$DBPILOT_HOME/exporter.log" &
EXP=$!
PIDS+=("$EXP")
(while :; do curl -s -o /dev/null --max-time 0.9 "http://127.0.0.1:$EXPORT/metrics" & sleep 1; done) &
SCRAPER=$!
PIDS+=("$SCRAPER")
sleep 5
curl -s "http://127.0.0.1:$EXPORT/metrics" | grep -q '^mysql_up 1' || { echo "mysqld_exporter does not reach the sandbox:"; tail -5 "$DBPILOT_HOME/exporter.log"; exit 1; }
measure exporter
kill "$SCRAPER" "$EXP" 2>/dev/null || true

python3 - "$RES" "$HZ" <<'PY'
import sys
hz = float(sys.argv[2])
rows = {}
for line in open(sys.argv[1]):
    label, win, ticks, s0, s1 = line.rstrip("\n").split("\t")
    def load(p):
        return {k: int(v) for k, v in (l.split() for l in open(p) if l.strip())}
    a, b = load(s0), load(s1)
    win = float(win)
    delta = {k: b[k] - a.get(k, 0) for k in b}
    rows[label] = (win, int(ticks) / hz, delta)
idle_h = rows["idle"][1] / rows["idle"][0] * 3600
print()
print(f"{'monitor':<16} {'window s':>8} {'mariadbd cpu s':>14} {'cpu s/h':>8} {'net cpu s/h':>11} {'statements/s':>12}  top commands per second")
net = {}
for label in ("idle", "dbpilot", "exporter"):
    win, cpu, delta = rows[label]
    per_h = cpu / win * 3600
    net[label] = per_h - idle_h
    q = delta.get("Questions", 0) / win
    top = sorted(((v / win, k[4:].lower()) for k, v in delta.items() if k.startswith("Com_") and v > 0), reverse=True)[:5]
    name = {"idle": "nobody", "dbpilot": "dbpilot serve", "exporter": "mysqld_exporter"}[label]
    print(f"{name:<16} {win:>8.0f} {cpu:>14.2f} {per_h:>8.1f} {net[label] if label != 'idle' else 0:>11.1f} {q:>12.1f}  " + ", ".join(f"{k} {v:.1f}" for v, k in top))
print()
print("net cpu s/h: mariadbd CPU per hour of monitoring minus the idle window's; statements/s: Questions delta (the status reads of this script included, a few per window)")
if net["exporter"] > 0:
    ratio = net["dbpilot"] / net["exporter"]
    print(f"dbpilot / mysqld_exporter server-side CPU: {ratio:.2f} (target <= 0.5): " + ("met" if ratio <= 0.5 else "MISSED"))
else:
    print("mysqld_exporter cost nothing measurable over the idle window: no ratio")
PY
