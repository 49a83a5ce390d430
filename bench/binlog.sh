#!/usr/bin/env bash
# bench/binlog.sh — binary log streaming: `dbpilot binlog stream` side by
# side with `mariadb-binlog --read-from-remote-server --raw`, the peer DBAs
# run by hand, on the same server and the same sysbench write load; then
# the other figures of issue 14 through their own scripts.
#
# 1. Backlog: sysbench oltp_write_only runs DURATION seconds on a sandbox
#    primary; then each tool copies every binary log from the first file to
#    the end, alone, one after the other: dbpilot with --stop-at-end
#    (events checked, finished files zstd-compressed, sha256 and index
#    written, fsynced), mariadb-binlog with --raw --to-last-log (bytes
#    written as received). Wall seconds, MB/s of binary log, CPU seconds
#    (user+sys) and peak RSS of each.
# 2. Live: both stream while sysbench runs DURATION seconds again
#    (mariadb-binlog --raw --stop-never, dbpilot binlog stream); CPU seconds
#    of each during the load, and how long after the load stopped each had
#    the server's last byte (polled every 100 ms).
# 3. SECTIONS may add: pitr (bash bench/pitr.sh: replay rate vs
#    mariadb-binlog | mariadb), copy (bash bench/copy.sh: copy lag p50/p99),
#    backup (bash bench/backup.sh: compressed dumps and restores vs
#    mydumper/myloader).
#
# Usage: [ROWS=100000] [TABLES=4] [DURATION=30] [THREADS=4] [SECTIONS="stream"] bash bench/binlog.sh
#        SECTIONS="stream pitr copy backup" runs everything (backup takes long).
# Needs: mariadb-server, mariadb-client (mariadb-binlog), sysbench, GNU time (installed if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS="${ROWS:-100000}"
TABLES="${TABLES:-4}"
DURATION="${DURATION:-30}"
THREADS="${THREADS:-4}"
SECTIONS="${SECTIONS:-stream}"
want() { [[ " $SECTIONS " == *" $1 "* ]]; }
log() { echo "bench: $*" >&2; }

bash scripts/install-deps.sh --test
bash scripts/install-bench-deps.sh
if [ -n "${DBPILOT_BIN:-}" ]; then
	DBP="$DBPILOT_BIN"
else
	make build >/dev/null
	DBP="$PWD/bin/dbpilot"
fi

if want stream; then
export DBPILOT_HOME="$(mktemp -d "${TMPDIR:-/tmp}/dbpbinlog.XXXXXX")"
WORK="$DBPILOT_HOME/work"
mkdir -p "$WORK"
BG=()
cleanup() {
	for p in "${BG[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	"$DBP" sandbox destroy blsrc >/dev/null 2>&1 || true
	rm -rf "$DBPILOT_HOME"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log "deploying sandbox blsrc"
"$DBP" sandbox deploy blsrc --topology single --option innodb_buffer_pool_size=256M >"$WORK/deploy.log" 2>&1 || { cat "$WORK/deploy.log" >&2; exit 1; }
read -r PORT PW DATADIR < <(python3 - "$DBPILOT_HOME/sandboxes/blsrc/sandbox.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
n = d["nodes"][0]
print(n["port"], d["admin"]["password"], n["datadir"])
PY
)
USER_=dbpilot
q() { mariadb -N -B -h127.0.0.1 -P"$PORT" -u"$USER_" -p"$PW" "$@"; }
q -e "CREATE DATABASE sbtest"
SB=(sysbench oltp_write_only --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$PORT" --mysql-user="$USER_" --mysql-password="$PW"
	--mysql-db=sbtest --tables="$TABLES" --table-size="$ROWS" --threads="$THREADS" --report-interval=0)
log "preparing sbtest: $TABLES tables x $ROWS rows"
"${SB[@]}" prepare >"$WORK/prepare.log" 2>&1 || { tail -20 "$WORK/prepare.log" >&2; exit 1; }
log "backlog: sysbench oltp_write_only ${DURATION}s"
"${SB[@]}" --time="$DURATION" run >"$WORK/load1.log" 2>&1
q -e "FLUSH BINARY LOGS"
FIRST=$(q -e "SHOW BINARY LOGS" | head -1 | cut -f1)
BINLOG_MB=$(q -e "SHOW BINARY LOGS" | awk '{s+=$2} END {printf "%.1f", s/1048576}')
log "backlog: ${BINLOG_MB} MB of binary log from $FIRST"

# timed LABEL CMD... → "wall user sys maxrss_kb" of the command
timed() {
	local label=$1; shift
	/usr/bin/time -f "%e %U %S %M" -o "$WORK/time-$label" "$@" >"$WORK/out-$label" 2>&1 || { cat "$WORK/out-$label" >&2; exit 1; }
	cat "$WORK/time-$label"
}
sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true
read -r DW DU DS DM < <(timed dbpilot "$DBP" binlog stream --sandbox blsrc --out "$WORK/dbp-archive" --stop-at-end -q)
sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true
mkdir -p "$WORK/peer-archive"
read -r PW_ PU PS PM < <(cd "$WORK/peer-archive" && timed peer mariadb-binlog --read-from-remote-server --raw --to-last-log \
	-h127.0.0.1 -P"$PORT" -u"$USER_" -p"$PW" "$FIRST")
DBP_MB=$(du -sm "$WORK/dbp-archive" | cut -f1)
PEER_MB=$(du -sm "$WORK/peer-archive" | cut -f1)
"$DBP" binlog verify "$WORK/dbp-archive" >"$WORK/verify.log" 2>&1 || { cat "$WORK/verify.log" >&2; exit 1; }

echo "dbpilot binlog benchmark — $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, $(/usr/sbin/mariadbd --version | awk '{print $3}'), dbpilot $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
echo
echo "1. backlog copy: ${BINLOG_MB} MB of binary log (sysbench oltp_write_only ${DURATION}s, $THREADS threads), each tool alone"
python3 - "$BINLOG_MB" "$DW" "$DU" "$DS" "$DM" "$DBP_MB" "$PW_" "$PU" "$PS" "$PM" "$PEER_MB" <<'PY'
import sys
mb = float(sys.argv[1])
rows = [("dbpilot binlog stream", *map(float, sys.argv[2:7])), ("mariadb-binlog --raw", *map(float, sys.argv[7:12]))]
print(f"   {'tool':<24} {'wall s':>8} {'MB/s':>8} {'cpu s':>8} {'cpu s/GB':>9} {'RSS MB':>8} {'on disk MB':>11}")
for name, w, u, s, m, disk in rows:
    print(f"   {name:<24} {w:>8.2f} {mb / w:>8.1f} {u + s:>8.2f} {(u + s) / mb * 1024:>9.2f} {m / 1024:>8.1f} {disk:>11.0f}")
d, p = rows[0], rows[1]
print(f"   dbpilot/peer: wall {d[1] / p[1]:.2f}x, CPU {(d[2] + d[3]) / (p[2] + p[3]):.2f}x (dbpilot also checks every event's CRC, compresses finished files, writes sha256 and the index, fsyncs)")
PY

# ---- 2. live --------------------------------------------------------------
log "live: both stream during sysbench ${DURATION}s"
rm -rf "$WORK/dbp-live" "$WORK/peer-live"
mkdir -p "$WORK/peer-live"
START=$(q -e "SHOW MASTER STATUS" | cut -f1)
"$DBP" binlog stream --sandbox blsrc --out "$WORK/dbp-live" --from-gtid "$(q -e 'SELECT @@gtid_binlog_pos')" -q >"$WORK/dbp-live.log" 2>&1 &
DLIVE=$!; BG+=($DLIVE)
(cd "$WORK/peer-live" && exec mariadb-binlog --read-from-remote-server --raw --stop-never -h127.0.0.1 -P"$PORT" -u"$USER_" -p"$PW" "$START") >"$WORK/peer-live.log" 2>&1 &
PLIVE=$!; BG+=($PLIVE)
sleep 2
ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
d0=$(ticks "$DLIVE"); p0=$(ticks "$PLIVE")
"${SB[@]}" --time="$DURATION" run >"$WORK/load2.log" 2>&1
TPS=$(awk '/transactions:/ {gsub(/\(/,"",$3); print $3}' "$WORK/load2.log")
ended=$(date +%s.%N)
d1=$(ticks "$DLIVE"); p1=$(ticks "$PLIVE")
GOAL=$(q -e "SELECT @@gtid_binlog_pos")
LASTFILE=$(q -e "SHOW MASTER STATUS" | cut -f1); LASTSIZE=$(q -e "SHOW MASTER STATUS" | cut -f2)
dcaught="" pcaught=""
for _ in $(seq 1 300); do
	now=$(date +%s.%N)
	if [ -z "$dcaught" ] && "$DBP" binlog ls "$WORK/dbp-live" --json 2>/dev/null | python3 -c "
import json,sys
fs=json.load(sys.stdin); print(fs[-1]['gtid_end'] if fs else '')" | grep -qx "$GOAL"; then dcaught=$(python3 -c "print($now - $ended)"); fi
	if [ -z "$pcaught" ] && [ -f "$WORK/peer-live/$LASTFILE" ] && [ "$(stat -c %s "$WORK/peer-live/$LASTFILE")" -ge "$LASTSIZE" ]; then pcaught=$(python3 -c "print($now - $ended)"); fi
	[ -n "$dcaught" ] && [ -n "$pcaught" ] && break
	sleep 0.1
done
HZ=$(getconf CLK_TCK)
echo
echo "2. live: both streaming while sysbench oltp_write_only runs ${DURATION}s ($TPS tps; caught up: polled every 100 ms)"
python3 - "$d0" "$d1" "$p0" "$p1" "$HZ" "${dcaught:-nan}" "${pcaught:-nan}" <<'PY'
import sys
d0, d1, p0, p1, hz = map(float, sys.argv[1:6])
fmt = lambda v: "not within 30 s" if v == "nan" else f"{float(v):.3f}"
dc, pc = fmt(sys.argv[6]), fmt(sys.argv[7])
print(f"   {'tool':<24} {'cpu s':>8} {'caught up s after the load':>28}")
print(f"   {'dbpilot binlog stream':<24} {(d1 - d0) / hz:>8.2f} {dc:>28}")
print(f"   {'mariadb-binlog --raw':<24} {(p1 - p0) / hz:>8.2f} {pc:>28}")
PY
kill "$DLIVE" "$PLIVE" 2>/dev/null || true
wait "$DLIVE" "$PLIVE" 2>/dev/null || true
cleanup
trap - EXIT
fi

if want pitr; then echo; bash bench/pitr.sh; fi
if want copy; then echo; bash bench/copy.sh; fi
if want backup; then echo; bash bench/backup.sh; fi
