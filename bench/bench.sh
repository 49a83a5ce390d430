#!/usr/bin/env bash
# bench/bench.sh — `dbpilot bench` side by side with sysbench, same server,
# same data, one run:
#
# 1. Dataset: `dbpilot bench prepare` loads sysbench's schema (TABLES tables
#    of ROWS rows in database sbtest); sysbench runs on the same tables (the
#    dataset is sysbench-compatible).
# 2. Ceiling, closed loop: oltp_point_select with THREADS connections for
#    SECONDS, sysbench and dbpilot (--threads) alternately, ROUNDS times
#    each: throughput, and each tool's own CPU (user+sys from /usr/bin/time)
#    per 1000 transactions. Target: dbpilot >= 1.0x sysbench's throughput,
#    CPU per 1000 transactions <= sysbench's.
# 3. Rate accuracy, open loop: oltp_point_select at each of RATES for
#    RATE_SECONDS: achieved / target and p99. Target: within 1% up to the
#    server's knee (where p99 takes off).
# 4. Coordinated omission: oltp_write_only at CO_RATE tx/s for CO_SECONDS;
#    STALL_AT seconds in, another session holds FLUSH TABLES WITH READ LOCK
#    for STALL seconds. sysbench --rate and dbpilot --rate in turn, same
#    stall: p99, p99.9, max and the most transactions waiting (dbpilot's
#    latency runs from each transaction's intended start; sysbench 1.0's
#    --rate mode also counts the time an event queues).
# 5. Memory: dbpilot bench open loop at MEM_RATE tx/s for MEM_SECONDS; its RSS
#    every 10 s (flat: histograms, no per-request records).
#
# Usage: bash bench/bench.sh
#   TABLES=4 ROWS=100000 THREADS=4 SECONDS_=30 ROUNDS=2 RATES="500 1000 2000 4000 8000"
#   RATE_SECONDS=15 CO_RATE=200 CO_SECONDS=20 STALL_AT=8 STALL=2 MEM_RATE=2000
#   MEM_SECONDS=600 BUFFER_POOL=512M DBPILOT_BIN (a dbpilot binary to use)
#   SECTIONS="ceiling rate co memory" (the parts to run)
# Needs mariadb-server, mariadb-client, sysbench, GNU time (installed if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
TABLES="${TABLES:-4}"
ROWS="${ROWS:-100000}"
THREADS="${THREADS:-4}"
SECONDS_="${SECONDS_:-30}"
ROUNDS="${ROUNDS:-2}"
RATES="${RATES:-500 1000 2000 4000 8000}"
RATE_SECONDS="${RATE_SECONDS:-15}"
CO_RATE="${CO_RATE:-200}"
CO_SECONDS="${CO_SECONDS:-20}"
STALL_AT="${STALL_AT:-8}"
STALL="${STALL:-2}"
MEM_RATE="${MEM_RATE:-2000}"
MEM_SECONDS="${MEM_SECONDS:-600}"
SECTIONS="${SECTIONS:-ceiling rate co memory}"
want() { [[ " $SECTIONS " == *" $1 "* ]]; }
BUFFER_POOL="${BUFFER_POOL:-512M}"

log() { echo "bench: $*" >&2; }

bash scripts/install-deps.sh
bash scripts/install-bench-deps.sh
if [ -n "${DBPILOT_BIN:-}" ]; then
	DBP="$DBPILOT_BIN"
else
	make build >/dev/null
	DBP="$PWD/bin/dbpilot"
fi

export DBPILOT_HOME="$(mktemp -d "${TMPDIR:-/tmp}/dbpbench.XXXXXX")"
WORK="$DBPILOT_HOME/work"
mkdir -p "$WORK"
cleanup() {
	"$DBP" sandbox destroy bsb >/dev/null 2>&1 || true
	local f p
	for f in "$DBPILOT_HOME"/sandboxes/*/node*/mysqld.pid; do
		[ -f "$f" ] || continue
		p=$(cat "$f" 2>/dev/null) || continue
		if grep -qF "$DBPILOT_HOME" "/proc/$p/cmdline" 2>/dev/null; then kill -9 "$p" 2>/dev/null || true; fi
	done
	rm -rf "$DBPILOT_HOME"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log "deploying sandbox bsb (single, innodb_buffer_pool_size=$BUFFER_POOL, innodb_flush_log_at_trx_commit=2)"
"$DBP" sandbox deploy bsb --topology single --option "innodb_buffer_pool_size=$BUFFER_POOL" \
	--option innodb_flush_log_at_trx_commit=2 >"$WORK/deploy.log" 2>&1 || { cat "$WORK/deploy.log" >&2; exit 1; }
read -r PORT APW < <(python3 - "$DBPILOT_HOME/sandboxes/bsb/sandbox.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(d["nodes"][0]["port"], d["admin"]["password"])
PY
)
# The bench's application account (made by prepare): no SUPER.
BU=dbpilot_bench BPW=bench-client-pw

log "preparing $TABLES tables x $ROWS rows with dbpilot bench prepare"
t0=$(date +%s.%N)
"$DBP" bench prepare --sandbox bsb --workload oltp_read_write --tables "$TABLES" --table-size "$ROWS" --parallel 4 >"$WORK/prepare.log" 2>&1 || { cat "$WORK/prepare.log" >&2; exit 1; }
t1=$(date +%s.%N)
SB=(sysbench --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$PORT" --mysql-user="$BU" --mysql-password="$BPW" --mysql-db=sbtest --tables="$TABLES" --table-size="$ROWS")
DB=(--sandbox bsb --tables "$TABLES" --table-size "$ROWS")

# timed OUT CMD... : runs CMD with GNU time; OUT gets stdout, OUT.time "user sys maxrss_kb"
timed() {
	local out="$1"
	shift
	/usr/bin/time -f '%U %S %M' -o "$out.time" "$@" >"$out" 2>"$out.err" || { log "FAILED: $*"; tail -5 "$out.err" >&2; return 1; }
}
# sbfield FILE: "transactions per_sec p99 max"
sbfield() {
	python3 - "$1" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
tx = re.search(r"transactions:\s+(\d+)\s+\(([\d.]+) per sec", t)
pct = re.search(r"(\d+(?:\.\d+)?)th percentile:\s+([\d.]+)", t)
mx = re.search(r"max:\s+([\d.]+)", t)
print(tx.group(1) if tx else "nan", tx.group(2) if tx else "nan", pct.group(2) if pct else "nan", mx.group(1) if mx else "nan")
PY
}
# dbfield FILE KEY...: values from dbpilot bench's JSON summary
dbfield() {
	python3 - "$@" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["summary"]
print(" ".join(str(s.get(k, "nan")) for k in sys.argv[2:]))
PY
}

echo "dbpilot bench vs sysbench — $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, $(sysbench --version), $(mariadb --version | awk '{print $5}' | tr -d ,), dbpilot $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
printf 'dataset: dbpilot bench prepare, %s tables x %s rows, %.1f s\n\n' "$TABLES" "$ROWS" "$(echo "$t1 - $t0" | bc -l)"

# ---- 2. ceiling --------------------------------------------------------------
if want ceiling; then
echo "== ceiling: oltp_point_select, closed loop, $THREADS connections, ${SECONDS_} s, $ROUNDS rounds each (alternating)"
printf '%-9s %5s %12s %10s %16s %10s\n' tool round transactions tps "cpu ms/1000 tx" "RSS MB"
sum_s_tps=0 sum_d_tps=0 sum_s_cpu=0 sum_d_cpu=0
for r in $(seq 1 "$ROUNDS"); do
	timed "$WORK/sb-ceil-$r" "${SB[@]}" oltp_point_select --threads="$THREADS" --time="$SECONDS_" --report-interval=0 run
	read -r tx tps _ _ < <(sbfield "$WORK/sb-ceil-$r")
	read -r u s m < "$WORK/sb-ceil-$r.time"
	cpu=$(echo "($u + $s) * 1000000 / $tx" | bc -l)
	printf '%-9s %5s %12s %10.0f %16.3f %10.1f\n' sysbench "$r" "$tx" "$tps" "$cpu" "$(echo "$m/1024" | bc -l)"
	sum_s_tps=$(echo "$sum_s_tps + $tps" | bc -l) sum_s_cpu=$(echo "$sum_s_cpu + $cpu" | bc -l)

	timed "$WORK/db-ceil-$r" "$DBP" bench run "${DB[@]}" --workload oltp_point_select --threads "$THREADS" --duration "${SECONDS_}s" --json
	read -r tx tps < <(dbfield "$WORK/db-ceil-$r" transactions rate_achieved)
	read -r u s m < "$WORK/db-ceil-$r.time"
	cpu=$(echo "($u + $s) * 1000000 / $tx" | bc -l)
	printf '%-9s %5s %12s %10.0f %16.3f %10.1f\n' dbpilot "$r" "$tx" "$tps" "$cpu" "$(echo "$m/1024" | bc -l)"
	sum_d_tps=$(echo "$sum_d_tps + $tps" | bc -l) sum_d_cpu=$(echo "$sum_d_cpu + $cpu" | bc -l)
done
printf 'throughput dbpilot/sysbench %.2fx (target >= 1.0x); CPU per 1000 tx dbpilot/sysbench %.2fx (target <= 1.0x)\n\n' \
	"$(echo "$sum_d_tps / $sum_s_tps" | bc -l)" "$(echo "$sum_d_cpu / $sum_s_cpu" | bc -l)"
fi

# ---- 3. rate accuracy ----------------------------------------------------------
if want rate; then
echo "== rate accuracy: oltp_point_select, open loop, ${RATE_SECONDS} s per rate"
printf '%8s %10s %9s %9s %9s %12s\n' target achieved ratio p99_ms max_ms max_backlog
for rate in $RATES; do
	"$DBP" bench run "${DB[@]}" --workload oltp_point_select --rate "$rate" --duration "${RATE_SECONDS}s" --max-concurrency 64 --json >"$WORK/db-rate-$rate" 2>"$WORK/db-rate-$rate.err" || { log "rate $rate failed"; tail -3 "$WORK/db-rate-$rate.err" >&2; continue; }
	read -r ach p99 mx bl < <(dbfield "$WORK/db-rate-$rate" rate_achieved p99_ms max_ms max_backlog)
	printf '%8s %10.1f %9.4f %9.2f %9.2f %12s\n' "$rate" "$ach" "$(echo "$ach / $rate" | bc -l)" "$p99" "$mx" "$bl"
done
echo
fi

# ---- 4. coordinated omission ---------------------------------------------------------
stall() {
	sleep "$STALL_AT"
	mariadb -h127.0.0.1 -P"$PORT" -udbpilot -p"$APW" -e "FLUSH TABLES WITH READ LOCK; SELECT SLEEP($STALL); UNLOCK TABLES" >/dev/null
}
if want co; then
echo "== coordinated omission: oltp_write_only at $CO_RATE tx/s for ${CO_SECONDS} s; FLUSH TABLES WITH READ LOCK for ${STALL} s at ${STALL_AT} s"
stall &
sp=$!
# sysbench takes whole percentiles only: its p99 is compared.
"${SB[@]}" oltp_write_only --threads=16 --rate="$CO_RATE" --time="$CO_SECONDS" --report-interval=1 --percentile=99 run >"$WORK/sb-co" 2>&1 || { log "sysbench CO run failed: $(tail -1 "$WORK/sb-co")"; }
wait "$sp"
read -r _ sbtps sbp99 sbmax < <(sbfield "$WORK/sb-co")
# sysbench's interval lines with --rate carry "queue length" or "queue:".
sbqueue=$(grep -oE 'queue( length)?:? [0-9]+' "$WORK/sb-co" | grep -oE '[0-9]+$' | sort -n | tail -1 || true)
stall &
sp=$!
"$DBP" bench run "${DB[@]}" --workload oltp_write_only --rate "$CO_RATE" --max-concurrency 16 --duration "${CO_SECONDS}s" --json --out "$WORK/co-report" >"$WORK/db-co" 2>"$WORK/db-co.err" || { log "dbpilot CO run failed"; tail -5 "$WORK/db-co.err" >&2; }
wait "$sp"
read -r dbtps dbp99 dbp999 dbmax dbbl < <(dbfield "$WORK/db-co" rate_achieved p99_ms p999_ms max_ms max_backlog)
printf '%-9s %10s %10s %10s %10s %16s\n' tool tps p99_ms p99.9_ms max_ms most_waiting
printf '%-9s %10s %10s %10s %10s %16s\n' sysbench "$sbtps" "$sbp99" "-" "$sbmax" "${sbqueue:-?} (queue)"
printf '%-9s %10.1f %10.2f %10.2f %10.2f %16s\n' dbpilot "$dbtps" "$dbp99" "$dbp999" "$dbmax" "$dbbl (backlog)"
echo "the stall was ${STALL}000 ms: a client waiting behind it sees that much"
echo
fi

# ---- 5. memory ---------------------------------------------------------------
want memory || exit 0
echo "== memory: dbpilot bench open loop, oltp_point_select at $MEM_RATE tx/s for ${MEM_SECONDS} s, RSS every 10 s"
"$DBP" bench run "${DB[@]}" --workload oltp_point_select --rate "$MEM_RATE" --duration "${MEM_SECONDS}s" --json >"$WORK/db-mem" 2>/dev/null &
mp=$!
rss=()
while kill -0 "$mp" 2>/dev/null; do
	r=$(awk '/VmRSS/ {print $2}' "/proc/$mp/status" 2>/dev/null || true)
	[ -n "$r" ] && rss+=("$r")
	sleep 10
done
wait "$mp" || true
if [ ${#rss[@]} -gt 0 ]; then
	printf 'RSS MB: first %.1f, at the middle %.1f, last %.1f, max %.1f (%d samples)\n' \
		"$(echo "${rss[0]}/1024" | bc -l)" "$(echo "${rss[$((${#rss[@]} / 2))]}/1024" | bc -l)" \
		"$(echo "${rss[-1]}/1024" | bc -l)" "$(printf '%s\n' "${rss[@]}" | sort -n | tail -1 | awk '{print $1/1024}')" "${#rss[@]}"
fi
read -r ach tx < <(dbfield "$WORK/db-mem" rate_achieved transactions)
echo "achieved $ach tx/s, $tx transactions"
