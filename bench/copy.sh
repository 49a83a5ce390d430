#!/usr/bin/env bash
# bench/copy.sh — `dbpilot copy`: bulk copy, then change data capture under
# a sysbench write load at a fixed rate, then cut-over.
#
# 1. A source and a target sandbox (single servers); the source gets a
#    sysbench dataset: TABLES tables of ROWS rows in database sbtest.
# 2. sysbench oltp_write_only runs against the source at --rate=RATE
#    transactions/s (THREADS connections, an account without SUPER), from
#    before the copy starts until DURATION seconds of change capture are
#    measured.
# 3. `dbpilot copy --heartbeat 100ms` copies sbtest while the load runs and
#    applies the binary log; after DURATION s it gets SIGINT and prints its
#    report: bulk rows and time, applied rows/s and transactions/s, lag
#    p50/p99/max (commit on the source → commit on the target, measured
#    with the heartbeat rows to the microsecond).
# 4. The load stops; `dbpilot copy --resume --cutover --set-read-only`
#    continues from the position recorded on the target, cuts over and
#    compares CHECKSUM TABLE of every table.
#
# Usage: [ROWS=100000] [TABLES=4] [RATE=300] [THREADS=4] [DURATION=30] bash bench/copy.sh
# Other knobs: PORT_BASE (source; target at +10), DBPILOT_BIN.
# Needs: mariadb-server, mariadb-client, sysbench (installed if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS="${ROWS:-100000}"
TABLES="${TABLES:-4}"
RATE="${RATE:-300}"
THREADS="${THREADS:-4}"
DURATION="${DURATION:-30}"
PORT_BASE="${PORT_BASE:-}"

log() { echo "bench: $*" >&2; }

bash scripts/install-deps.sh
bash scripts/install-bench-deps.sh
if [ -n "${DBPILOT_BIN:-}" ]; then
	DBP="$DBPILOT_BIN"
else
	make build >/dev/null || { log "make build failed"; exit 1; }
	DBP="$PWD/bin/dbpilot"
fi

export DBPILOT_HOME="$(mktemp -d "${TMPDIR:-/tmp}/dbpcopy.XXXXXX")"
WORK="$DBPILOT_HOME/work"
mkdir -p "$WORK"
SBPID="" CPID=""
cleanup() {
	[ -n "$SBPID" ] && kill "$SBPID" 2>/dev/null || true
	[ -n "$CPID" ] && kill "$CPID" 2>/dev/null || true
	for s in $("$DBP" sandbox list --json 2>/dev/null | python3 -c 'import json,sys; print(" ".join(d["name"] for d in json.load(sys.stdin)))' 2>/dev/null); do
		"$DBP" sandbox destroy "$s" >/dev/null 2>&1 || true
	done
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

SRC=cpsrc DST=cpdst
deploy() {
	local pb=()
	[ -n "${2:-}" ] && pb=(--port-base "$2")
	"$DBP" sandbox deploy "$1" --topology single "${pb[@]}" >"$WORK/deploy-$1.log" 2>&1 || {
		cat "$WORK/deploy-$1.log" >&2
		exit 1
	}
}
field() {
	python3 - "$DBPILOT_HOME/sandboxes/$1/sandbox.json" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(d["nodes"][0]["port"] if sys.argv[2] == "port" else d["admin"]["password"])
PY
}

log "deploying sandboxes $SRC and $DST"
deploy "$SRC" "$PORT_BASE"
deploy "$DST" "${PORT_BASE:+$((PORT_BASE + 10))}"
SP=$(field "$SRC" port) SPW=$(field "$SRC" password)
sq() { mariadb -N -B -h127.0.0.1 -P"$SP" -udbpilot -p"$SPW" "$@"; }

sq -e "CREATE DATABASE sbtest; CREATE USER 'sb'@'127.0.0.1' IDENTIFIED BY 'sb-pw'; GRANT ALL ON sbtest.* TO 'sb'@'127.0.0.1'"
SB=(sysbench --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$SP" --mysql-user=sb --mysql-password=sb-pw --mysql-db=sbtest --tables="$TABLES" --table-size="$ROWS")
log "preparing sbtest: $TABLES tables x $ROWS rows"
"${SB[@]}" --threads=2 oltp_write_only prepare >"$WORK/prepare.log" 2>&1 || { tail -20 "$WORK/prepare.log" >&2; exit 1; }

log "sysbench oltp_write_only at --rate=$RATE, $THREADS threads"
"${SB[@]}" --threads="$THREADS" --rate="$RATE" --time=$((DURATION + 600)) --report-interval=5 oltp_write_only run >"$WORK/sysbench.log" 2>&1 &
SBPID=$!
sleep 3

log "dbpilot copy (change capture measured for ${DURATION}s after the bulk copy)"
"$DBP" copy --from-sandbox "$SRC" --to-sandbox "$DST" --databases sbtest --heartbeat 100ms --json --progress-interval 5s \
	>"$WORK/copy.json" 2>"$WORK/copy.err" &
CPID=$!
# Wait for the bulk copy to end, then measure DURATION seconds.
for _ in $(seq 1 600); do
	grep -q "bulk copy done" "$WORK/copy.err" 2>/dev/null && break
	kill -0 "$CPID" 2>/dev/null || break
	sleep 0.5
done
sleep "$DURATION"
kill -INT "$CPID" 2>/dev/null || true
copy_rc=0
wait "$CPID" || copy_rc=$?
CPID=""
kill "$SBPID" 2>/dev/null || true # sysbench --rate ignores SIGINT
wait "$SBPID" 2>/dev/null || true
SBPID=""
cat "$WORK/copy.err" >&2
[ "$copy_rc" -eq 0 ] || { log "dbpilot copy failed (exit $copy_rc)"; exit 1; }

log "cut-over: dbpilot copy --resume --cutover --set-read-only"
cut_rc=0
"$DBP" copy --from-sandbox "$SRC" --to-sandbox "$DST" --databases sbtest --resume --cutover --set-read-only --json -q \
	>"$WORK/cutover.json" 2>"$WORK/cutover.err" || cut_rc=$?
cat "$WORK/cutover.err" >&2

python3 - "$WORK/copy.json" "$WORK/cutover.json" "$WORK/sysbench.log" "$RATE" "$THREADS" "$TABLES" "$ROWS" "$cut_rc" <<'PY'
import json, re, sys
cp = json.load(open(sys.argv[1]))
try:
    cut = json.load(open(sys.argv[2]))
except Exception:
    cut = None
sb = open(sys.argv[3]).read()
rate, threads, tables, rows, cut_rc = sys.argv[4:9]
tps = re.findall(r"tps: ([0-9.]+)", sb)
tps = [float(x) for x in tps]
ms = lambda ns: ns / 1e6
b, a = cp.get("bulk") or {}, cp["apply"]
print()
print(f"dbpilot copy under sysbench oltp_write_only --rate={rate} ({threads} threads), sbtest {tables} x {rows} rows")
print(f"  sysbench achieved       {sum(tps)/len(tps) if tps else 0:8.0f} tx/s (mean of 5 s reports)")
print(f"  bulk copy               {b.get('rows',0):8d} rows in {b.get('elapsed_ns',0)/1e9:.1f} s = {b.get('rows',0)/max(b.get('elapsed_ns',1)/1e9,1e-9):,.0f} rows/s ({b.get('lock','')} held {ms(b.get('lock_held_ns',0)):.2f} ms)")
print(f"  change capture          {a['transactions']:8d} tx, {a['rows']} rows in {a['elapsed_ns']/1e9:.1f} s = {a['tx_per_sec']:.0f} tx/s, {a['rows_per_sec']:.0f} rows/s")
print(f"  backlog of the bulk     applied in {a.get('catch_up_ns',0)/1e9:.2f} s")
print(f"  lag once caught up ({a['lag_source']}): p50 {ms(a['lag_p50_ns']):7.1f} ms   p99 {ms(a['lag_p99_ns']):7.1f} ms   max {ms(a['lag_max_ns']):7.1f} ms   ({a['lag_samples']} samples)")
if cut:
    c = cut.get("cutover") or {}
    cks = c.get("checksums") or []
    eq = sum(1 for x in cks if x["equal"])
    print(f"  cut-over (--resume)     {cut['apply']['transactions']} tx to final GTID {c.get('final_gtid')!r}; checksums equal {eq}/{len(cks)} (exit {cut_rc})")
else:
    print(f"  cut-over FAILED (exit {cut_rc})")
PY
[ "$cut_rc" -eq 0 ]
