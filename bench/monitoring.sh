#!/usr/bin/env bash
# bench/monitoring.sh — what 1-second monitoring costs.
#
# 1. Server-side overhead: sysbench oltp_read_write on a sandbox primary,
#    without and with `dbpilot serve` collecting every collector at 1 s.
# 2. Collector cost: CPU seconds and peak RSS of `dbpilot serve` monitoring
#    1, 10 and 50 sandbox instances at 1 s, side by side with
#    prometheus-mysqld-exporter (one process per instance, as 0.14 works)
#    scraped once per second by a real Prometheus server, which also scrapes
#    dbpilot's /metrics.
# 3. Query analytics cost: serve's statements collector (digest table read
#    every 10 s, deltas stored in SQLite, per-digest series) on a sandbox
#    under a sysbench load with DIGESTS extra distinct digests: serve's CPU
#    with queries on and off, mysqld_exporter with only its
#    perf_schema.eventsstatements collector scraped every 10 s, and the
#    server-side cost of each one's read of the digest table (its own
#    digest row: calls, average latency, rows).
#
# Usage: bash bench/monitoring.sh [SYSBENCH_SECONDS] [WINDOW_SECONDS]  (defaults 60 60)
#        SECTIONS="1 2 3" (default all), DIGESTS=300
# Needs: mariadb-server, sysbench, prometheus, prometheus-mysqld-exporter (installed if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
SB_SECS="${1:-60}"
WINDOW="${2:-60}"
SECTIONS="${SECTIONS:-1 2 3}"
DIGESTS="${DIGESTS:-300}"
want() { [[ " $SECTIONS " == *" $1 "* ]]; }
bash scripts/install-deps.sh --test
need=()
command -v sysbench >/dev/null || need+=(sysbench)
command -v prometheus >/dev/null || need+=(prometheus)
[ -x /usr/bin/prometheus-mysqld-exporter ] || need+=(prometheus-mysqld-exporter)
if [ ${#need[@]} -gt 0 ]; then
	SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
	# Debian starts the packaged services; the benchmark runs its own.
	$SUDO systemctl stop prometheus prometheus-mysqld-exporter prometheus-node-exporter >/dev/null 2>&1 || true
fi
[ -x bin/dbpilot ] || make build >/dev/null
DBP="$PWD/bin/dbpilot"
export DBPILOT_HOME="$(mktemp -d /tmp/dbpmon.XXXXXX)"
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	for s in $("$DBP" sandbox list --json 2>/dev/null | python3 -c 'import json,sys; print(" ".join(d["name"] for d in json.load(sys.stdin)))' 2>/dev/null); do
		"$DBP" sandbox destroy "$s" >/dev/null 2>&1 || true
	done
	rm -rf "$DBPILOT_HOME"
}
trap cleanup EXIT
USER_=bench
PASS=bench-monitor-pw

# cpu_ticks PID... → utime+stime (clock ticks) summed; hwm_kb PID... → sum of VmHWM
cpu_ticks() { local t=0; for p in "$@"; do t=$((t + $(awk '{print $14+$15}' "/proc/$p/stat" 2>/dev/null || echo 0))); done; echo $t; }
hwm_kb() { local t=0; for p in "$@"; do t=$((t + $(awk '/VmHWM/{print $2}' "/proc/$p/status" 2>/dev/null || echo 0))); done; echo $t; }
HZ=$(getconf CLK_TCK)

# deploy N: sandboxes of up to 5 nodes; a common monitoring account on each.
SANDBOXES=()
deploy() {
	local n="$1" i=0 base=21000
	while [ "$n" -gt 0 ]; do
		local k=$(( n > 5 ? 5 : n )) topo=replication
		[ "$k" -eq 1 ] && topo=single
		local name="mon$i"
		"$DBP" sandbox deploy "$name" --topology "$topo" --nodes "$k" --port-base $((base + i*10)) >/dev/null
		"$DBP" sandbox sql "$name" node1 "CREATE USER '$USER_'@'127.0.0.1' IDENTIFIED BY '$PASS'" >/dev/null
		# dbpilot needs what serve's admin account has (SHOW SLAVE HOSTS needs
		# REPLICATION MASTER ADMIN on MariaDB 10.5+, the heartbeat writes
		# dbpilot.heartbeat); mysqld_exporter uses the same account.
		"$DBP" sandbox sql "$name" node1 "GRANT ALL PRIVILEGES ON *.* TO '$USER_'@'127.0.0.1'" >/dev/null
		SANDBOXES+=("$name")
		n=$((n - k)); i=$((i + 1))
	done
	sleep 1
}
ports_of() { "$DBP" sandbox list --json | python3 -c 'import json,sys; print(" ".join(str(p) for d in json.load(sys.stdin) for p in d["ports"]))'; }

write_config() { # FILE
	{
		echo "listen: 127.0.0.1:17070"
		echo "state: $DBPILOT_HOME/state.db"
		echo "token: bench"
		echo "credentials: {user: $USER_, password: $PASS}"
		echo "replication: {user: repl, password: unused}"
		echo "clusters:"
		for s in "${SANDBOXES[@]}"; do
			local p; p=$("$DBP" sandbox list --json | python3 -c "import json,sys; print([d for d in json.load(sys.stdin) if d['name']=='$s'][0]['ports'][0])")
			echo "  - {name: $s, seeds: ['127.0.0.1:$p'], auto_failover: false}"
		done
	} >"$1"
}

echo "dbpilot monitoring benchmark — $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, $("$DBP" --version), $(prometheus-mysqld-exporter --version 2>&1 | head -1)"

# ---- 1. server-side overhead ----------------------------------------------
if want 1; then
deploy 1
P1=$(ports_of)
SB=(sysbench oltp_read_write --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$P1" --mysql-user="$USER_" --mysql-password="$PASS" --mysql-db=sbtest --tables=4 --table-size=20000 --threads=2)
"$DBP" sandbox sql mon0 node1 "CREATE DATABASE sbtest" >/dev/null
"$DBP" sandbox sql mon0 node1 "GRANT ALL ON sbtest.* TO '$USER_'@'127.0.0.1'" >/dev/null
"${SB[@]}" prepare >/dev/null
tps() { "${SB[@]}" --time="$SB_SECS" --report-interval=0 run | awk '/transactions:/{gsub(/\(/,"",$3); print $3}'; }
write_config "$DBPILOT_HOME/serve.yaml"
# Warm the buffer pool, then alternate runs without and with monitoring so
# drift (page cache, purge, checkpoints) falls on both sides equally.
"${SB[@]}" --time=20 run >/dev/null
WITHOUT=(); WITH=()
for round in 1 2; do
	WITHOUT+=("$(tps)")
	"$DBP" serve --config "$DBPILOT_HOME/serve.yaml" >/dev/null 2>"$DBPILOT_HOME/serve.log" & SERVE=$!; PIDS+=("$SERVE")
	sleep 3
	WITH+=("$(tps)")
	kill "$SERVE"; wait "$SERVE" 2>/dev/null || true
done
python3 - "$SB_SECS" "${WITHOUT[*]}" "${WITH[*]}" <<'PY'
import sys
secs = float(sys.argv[1])
wo = [float(x) for x in sys.argv[2].split()]
w = [float(x) for x in sys.argv[3].split()]
print(f"\n1. sysbench oltp_read_write, 2 threads, {secs:.0f} s per run, alternating (tps)")
print(f"   without dbpilot: {' '.join(f'{x:.1f}' for x in wo)}; with dbpilot serve at 1 s: {' '.join(f'{x:.1f}' for x in w)}")
print(f"   monitored / unmonitored throughput: {sum(w)/sum(wo)*100:.1f}%   (target >= 99%)")
PY
for s in "${SANDBOXES[@]}"; do "$DBP" sandbox destroy "$s" >/dev/null; done
SANDBOXES=()
fi

# ---- 2. collector cost ------------------------------------------------------
if want 2; then
printf "\n2. collector cost over %ss at 1 s resolution\n" "$WINDOW"
printf "   %-10s %-26s %10s %12s %14s %12s\n" instances tool "cpu s" "cpu s/inst" "peak RSS MB" "series"
for N in 1 10 50; do
	deploy "$N"
	PORTS=$(ports_of)
	write_config "$DBPILOT_HOME/serve.yaml"
	rm -rf "$DBPILOT_HOME/state.db"* "$DBPILOT_HOME/metrics"
	# mysqld_exporter: one process per instance, default collectors.
	EXP=(); TARGETS=""; j=0
	for p in $PORTS; do
		lp=$((19100 + j)); j=$((j + 1))
		DATA_SOURCE_NAME="$USER_:$PASS@(127.0.0.1:$p)/" prometheus-mysqld-exporter --web.listen-address=127.0.0.1:$lp >/dev/null 2>&1 & EXP+=($!); PIDS+=($!)
		TARGETS="$TARGETS'127.0.0.1:$lp',"
	done
	"$DBP" serve --config "$DBPILOT_HOME/serve.yaml" >/dev/null 2>"$DBPILOT_HOME/serve.log" & SERVE=$!; PIDS+=("$SERVE")
	cat >"$DBPILOT_HOME/prom.yml" <<YML
global: {scrape_interval: 1s, scrape_timeout: 900ms}
scrape_configs:
  - job_name: mysqld_exporter
    static_configs: [{targets: [${TARGETS%,}]}]
  - job_name: dbpilot
    honor_labels: true
    static_configs: [{targets: ['127.0.0.1:17070']}]
YML
	prometheus --config.file="$DBPILOT_HOME/prom.yml" --storage.tsdb.path="$DBPILOT_HOME/prom" --web.listen-address=127.0.0.1:19090 >/dev/null 2>&1 & PROM=$!; PIDS+=("$PROM")
	sleep 5 # warm up: connections, first scrapes
	d0=$(cpu_ticks "$SERVE"); e0=$(cpu_ticks "${EXP[@]}")
	sleep "$WINDOW"
	d1=$(cpu_ticks "$SERVE"); e1=$(cpu_ticks "${EXP[@]}")
	dh=$(hwm_kb "$SERVE"); eh=$(hwm_kb "${EXP[@]}")
	series=$(curl -s "http://127.0.0.1:17070/metrics" | grep -vc '^#' || true)
	eseries=0; for j in $(seq 0 $((N - 1))); do eseries=$((eseries + $(curl -s "http://127.0.0.1:$((19100 + j))/metrics" | grep -vc '^#' || true))); done
	up=$(curl -s 'http://127.0.0.1:19090/api/v1/query?query=count(up==1)' | python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else 0)')
	python3 - "$N" "$d0" "$d1" "$dh" "$series" "$e0" "$e1" "$eh" "$eseries" "$HZ" "$up" <<'PY'
import sys
n, d0, d1, dh, ds, e0, e1, eh, es, hz, up = sys.argv[1:]
n, hz = int(n), float(hz)
dc, ec = (int(d1) - int(d0)) / hz, (int(e1) - int(e0)) / hz
print(f"   {n:<10} {'dbpilot serve':<26} {dc:>10.2f} {dc/n:>12.3f} {int(dh)/1024:>14.1f} {ds:>12}")
print(f"   {n:<10} {'mysqld_exporter x'+str(n):<26} {ec:>10.2f} {ec/n:>12.3f} {int(eh)/1024:>14.1f} {es:>12}")
ratio = (dc / ec) if ec else float('nan')
print(f"   {'':<10} dbpilot/exporter CPU per instance: {ratio:.2f}   (target <= 0.5; Prometheus sees {up} targets up)")
PY
	kill "$SERVE" "$PROM" "${EXP[@]}" 2>/dev/null || true
	wait "$SERVE" "$PROM" "${EXP[@]}" 2>/dev/null || true
	for s in "${SANDBOXES[@]}"; do "$DBP" sandbox destroy "$s" >/dev/null; done
	SANDBOXES=(); PIDS=()
	rm -rf "$DBPILOT_HOME/prom"
done
fi

# ---- 3. query analytics cost -------------------------------------------------
if want 3; then
deploy 1
P1=$(ports_of)
SB=(sysbench oltp_read_write --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$P1" --mysql-user="$USER_" --mysql-password="$PASS" --mysql-db=sbtest --tables=4 --table-size=20000 --threads=2)
"$DBP" sandbox sql mon0 node1 "CREATE DATABASE sbtest" >/dev/null
"${SB[@]}" prepare >/dev/null
# DIGESTS distinct statements (their aliases differ), so that the table holds
# more than sysbench's few digests.
python3 -c "print(''.join(f'SELECT {i} AS dbpilot_bench_digest_{i};' for i in range($DIGESTS)))" | "$DBP" sandbox sql mon0 node1 - >/dev/null
# A steady load for the whole section: its statements change the table.
"${SB[@]}" --rate=100 --time=$((3 * WINDOW + 60)) --report-interval=0 run >/dev/null 2>&1 & LOAD=$!; PIDS+=("$LOAD")
sleep 5
serve_cpu() { # queries: disabled|on → CPU seconds of serve over WINDOW
	write_config "$DBPILOT_HOME/serve.yaml"
	[ "$1" = disabled ] && echo "queries: {disabled: true}" >>"$DBPILOT_HOME/serve.yaml"
	rm -rf "$DBPILOT_HOME/state.db"* "$DBPILOT_HOME/metrics"
	"$DBP" serve --config "$DBPILOT_HOME/serve.yaml" >/dev/null 2>"$DBPILOT_HOME/serve.log" & local sv=$!; PIDS+=("$sv")
	sleep 12 # connections, the statements collector's baseline
	local c0; c0=$(cpu_ticks "$sv"); sleep "$WINDOW"; local c1; c1=$(cpu_ticks "$sv")
	kill "$sv"; wait "$sv" 2>/dev/null || true
	python3 -c "print(($c1 - $c0) / $HZ)"
}
OFF=$(serve_cpu disabled)
ON=$(serve_cpu on)
DSN="$USER_:$PASS@(127.0.0.1:$P1)/"
DATA_SOURCE_NAME="$DSN" prometheus-mysqld-exporter --web.listen-address=127.0.0.1:19100 \
	--no-collect.global_status --no-collect.global_variables --no-collect.slave_status --no-collect.info_schema.innodb_cmp \
	--no-collect.info_schema.innodb_cmpmem --no-collect.info_schema.query_response_time --collect.perf_schema.eventsstatements \
	>/dev/null 2>&1 & EXP=$!; PIDS+=("$EXP")
cat >"$DBPILOT_HOME/prom.yml" <<YML
global: {scrape_interval: 10s, scrape_timeout: 9s}
scrape_configs:
  - job_name: mysqld_exporter
    static_configs: [{targets: ['127.0.0.1:19100']}]
YML
prometheus --config.file="$DBPILOT_HOME/prom.yml" --storage.tsdb.path="$DBPILOT_HOME/prom" --web.listen-address=127.0.0.1:19090 >/dev/null 2>&1 & PROM=$!; PIDS+=("$PROM")
sleep 12
e0=$(cpu_ticks "$EXP"); sleep "$WINDOW"; e1=$(cpu_ticks "$EXP")
ESERIES=$(curl -s http://127.0.0.1:19100/metrics | grep -c '^mysql_perf_schema_events_statements_total' || true)
kill "$EXP" "$PROM" "$LOAD" 2>/dev/null || true; wait "$EXP" "$PROM" "$LOAD" 2>/dev/null || true
DIGROWS=$("$DBP" sandbox sql mon0 node1 "SELECT COUNT(*) FROM performance_schema.events_statements_summary_by_digest" | tail -1)
"$DBP" queries --sandbox mon0 --since-start --by count --limit 5000 --json >"$DBPILOT_HOME/digests.json"
python3 - "$WINDOW" "$OFF" "$ON" "$e0" "$e1" "$HZ" "$ESERIES" "$DIGROWS" "$DBPILOT_HOME/digests.json" <<'PY'
import json, sys
window, off, on, e0, e1, hz, eseries, rows, path = sys.argv[1:]
window, off, on, hz = float(window), float(off), float(on), float(hz)
ecpu = (int(e1) - int(e0)) / hz
print(f"\n3. query analytics over {window:.0f} s, digest table read every 10 s ({rows.strip()} rows in it), sysbench at 100 tx/s")
print(f"   dbpilot serve CPU: queries off {off:.2f} s, on {on:.2f} s; statements collector {on - off:.2f} s ({(on - off) / window * 1000:.1f} ms per s)")
print(f"   mysqld_exporter (perf_schema.eventsstatements only, scraped every 10 s): {ecpu:.2f} s ({ecpu / window * 1000:.1f} ms per s), {eseries} digests with series")
qs = json.load(open(path))["queries"]
print(f"   server-side cost of each read of the digest table (its own digest row in performance_schema):")
print(f"   {'reader':<40} {'calls':>6} {'avg ms':>9} {'max ms':>9} {'rows/call':>10}")
for q in qs:
    t = q["digest_text"]
    if "events_statements_summary_by_digest" not in t or q["count"] == 0:
        continue
    who = "dbpilot (all digests, deltas here)" if "SUM_SORT_MERGE_PASSES" in t and "ORDER BY" not in t else ("mysqld_exporter (top 250 by latency)" if "ORDER BY" in t else t[:40])
    print(f"   {who:<40} {q['count']:>6} {q['avg_ms']:>9.3f} {q['max_ms']:>9.3f} {q['rows_sent'] / q['count']:>10.1f}")
PY
for s in "${SANDBOXES[@]}"; do "$DBP" sandbox destroy "$s" >/dev/null; done
SANDBOXES=()
fi
echo "targets: throughput >= 99%; dbpilot CPU per instance <= 0.5x mysqld_exporter's; RSS <= 200 MB at 50 instances"
