#!/usr/bin/env bash
# bench/pitr.sh — point-in-time restore replay rate: `dbpilot restore DUMP
# --binlogs DIR --until-gtid POS` (dbpilot serves the archive as a binlog
# source; the target applies it as a replica) side by side with
# `mariadb-binlog FILES | mariadb` on the same archive, same dump, same
# server configuration.
#
# 1. A source sandbox gets a sysbench dataset (TABLES x ROWS, oltp_write_only
#    prepare), is dumped with `dbpilot dump`, and its binary log is rotated
#    (FLUSH BINARY LOGS): the files after the dump hold exactly what follows
#    it.
# 2. sysbench oltp_write_only runs for DURATION seconds with LOAD_THREADS
#    threads; the binary log is rotated again and the files written since
#    the dump are copied into the archive directory. POS is the source's
#    gtid_binlog_pos at the end.
# 3. Two targets get the dump (`dbpilot restore --set-gtid-position`, not
#    timed). On the first, dbpilot applies the archive up to POS; its apply
#    time is the command's own apply_elapsed (the archive scan, which checks
#    every event's checksum first, is reported beside it). On the second,
#    `mariadb-binlog FILES | mariadb` applies the same files (GTIDs kept by
#    the SET gtid_* statements mariadb-binlog writes).
# 4. Rates: transactions/s and events/s (the archive's events of the applied
#    transactions, the same count for both), and CHECKSUM TABLE of every
#    table on source and both targets.
#
# The targets replicate with the sandbox defaults (slave_parallel_threads=2,
# dbpilot's connection in slave_parallel_mode=conservative, sync_binlog=1, innodb_flush_log_at_trx_commit=1,
# log_slave_updates=ON); PARALLEL changes slave_parallel_threads on dbpilot's
# target. The mariadb client applies in one session whatever that setting.
#
# Usage: [ROWS=100000] [TABLES=4] [DURATION=30] [LOAD_THREADS=4] [PARALLEL=2] bash bench/pitr.sh
# Other knobs: BUFFER_POOL=256M, DBPILOT_BIN (a binary instead of bin/dbpilot).
# Needs: mariadb-server, mariadb-client (mariadb-binlog), sysbench (installed if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS="${ROWS:-100000}"
TABLES="${TABLES:-4}"
DURATION="${DURATION:-30}"
LOAD_THREADS="${LOAD_THREADS:-4}"
PARALLEL="${PARALLEL:-2}"
BUFFER_POOL="${BUFFER_POOL:-256M}"

log() { echo "bench: $*" >&2; }

bash scripts/install-deps.sh
bash scripts/install-bench-deps.sh
if [ -n "${DBPILOT_BIN:-}" ]; then
	DBP="$DBPILOT_BIN"
else
	make build >/dev/null
	DBP="$PWD/bin/dbpilot"
fi

export DBPILOT_HOME="$(mktemp -d "${TMPDIR:-/tmp}/dbppitr.XXXXXX")"
WORK="$DBPILOT_HOME/work"
mkdir -p "$WORK/archive"
cleanup() {
	local s
	for s in pitrsrc pitrdbp pitrpeer; do "$DBP" sandbox destroy "$s" >/dev/null 2>&1 || true; done
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

deploy() {
	"$DBP" sandbox deploy "$1" --topology single --option "innodb_buffer_pool_size=$BUFFER_POOL" "${@:2}" >"$WORK/deploy-$1.log" 2>&1 || {
		cat "$WORK/deploy-$1.log" >&2
		exit 1
	}
}
# field NAME port|password|datadir → from the sandbox descriptor
field() {
	python3 - "$DBPILOT_HOME/sandboxes/$1/sandbox.json" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
n = d["nodes"][0]
print({"port": n["port"], "datadir": n["datadir"], "password": d["admin"]["password"]}[sys.argv[2]])
PY
}
USER_=dbpilot

log "deploying sandboxes pitrsrc, pitrdbp, pitrpeer (innodb_buffer_pool_size=$BUFFER_POOL)"
deploy pitrsrc
deploy pitrdbp --option "slave_parallel_threads=$PARALLEL"
deploy pitrpeer
SP=$(field pitrsrc port) SPW=$(field pitrsrc password) SDIR=$(field pitrsrc datadir)
q() { local port=$1 pw=$2; shift 2; mariadb -N -B -h127.0.0.1 -P"$port" -u"$USER_" -p"$pw" "$@"; }
sq() { q "$SP" "$SPW" "$@"; }

sq -e "CREATE DATABASE sbtest"
SB=(sysbench oltp_write_only --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$SP" --mysql-user="$USER_" --mysql-password="$SPW" --mysql-db=sbtest --tables="$TABLES" --table-size="$ROWS")
log "preparing sbtest: $TABLES tables x $ROWS rows"
"${SB[@]}" --threads=2 prepare >"$WORK/prepare.log" 2>&1 || { tail -20 "$WORK/prepare.log" >&2; exit 1; }
log "dumping"
"$DBP" dump --sandbox pitrsrc --out "$WORK/dump" -q >"$WORK/dump.log" 2>&1 || { cat "$WORK/dump.log" >&2; exit 1; }
sq -e "FLUSH BINARY LOGS"
FIRST=$(sq -e "SHOW MASTER STATUS" | cut -f1)
log "load: sysbench oltp_write_only, $LOAD_THREADS threads, ${DURATION}s"
"${SB[@]}" --threads="$LOAD_THREADS" --time="$DURATION" --report-interval=0 run >"$WORK/load.log" 2>&1 || { tail -20 "$WORK/load.log" >&2; exit 1; }
POS=$(sq -e "SELECT @@GLOBAL.gtid_binlog_pos")
sq -e "FLUSH BINARY LOGS"
FILES=()
for f in $(sq -e "SHOW BINARY LOGS" | cut -f1); do
	[[ "$f" < "$FIRST" ]] && continue
	cp "$SDIR/$f" "$WORK/archive/$f"
	FILES+=("$WORK/archive/$f")
done
ARCHIVE_MB=$(du -sm "$WORK/archive" | cut -f1)
log "archive: ${#FILES[@]} files, ${ARCHIVE_MB} MB, up to $POS"

# dbpilot restores the dump itself (its restore step is reported apart from
# the apply); the peer's target gets the same restore, untimed.
log "dbpilot: restore the dump, then apply the archive up to $POS"
t0=$(date +%s.%N)
"$DBP" restore "$WORK/dump" --sandbox pitrdbp --binlogs "$WORK/archive" --until-gtid "$POS" --json -q >"$WORK/dbpilot.json" 2>"$WORK/dbpilot.err" || { cat "$WORK/dbpilot.err" >&2; exit 1; }
t1=$(date +%s.%N)
read -r TRX EVENTS APPLY RESTORE < <(python3 - "$WORK/dbpilot.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(r["transactions"], r["events"], r["apply_elapsed_ns"] / 1e9, (r.get("restore") or {}).get("elapsed_ns", 0) / 1e9)
PY
)
DBP_WALL=$(python3 -c "print($t1 - $t0 - $RESTORE)")

log "peer: restore the dump, then mariadb-binlog | mariadb"
"$DBP" restore "$WORK/dump" --sandbox pitrpeer --set-gtid-position -q >"$WORK/restore-peer.log" 2>&1 || { cat "$WORK/restore-peer.log" >&2; exit 1; }
PP=$(field pitrpeer port) PPW=$(field pitrpeer password)
t0=$(date +%s.%N)
mariadb-binlog "${FILES[@]}" | q "$PP" "$PPW"
t1=$(date +%s.%N)
PEER=$(python3 -c "print($t1 - $t0)")

# Same data everywhere?
DP=$(field pitrdbp port) DPW=$(field pitrdbp password)
SAME=yes
for i in $(seq 1 "$TABLES"); do
	a=$(sq -e "CHECKSUM TABLE sbtest.sbtest$i EXTENDED" | cut -f2)
	b=$(q "$DP" "$DPW" -e "CHECKSUM TABLE sbtest.sbtest$i EXTENDED" | cut -f2)
	c=$(q "$PP" "$PPW" -e "CHECKSUM TABLE sbtest.sbtest$i EXTENDED" | cut -f2)
	if [ "$a" != "$b" ] || [ "$a" != "$c" ]; then SAME=no; log "sbtest$i differs: source $a, dbpilot $b, peer $c"; fi
done
[ "$(q "$DP" "$DPW" -e 'SELECT @@GLOBAL.gtid_slave_pos')" = "$POS" ] || { SAME=no; log "dbpilot target's gtid_slave_pos is not $POS"; }

python3 - "$TRX" "$EVENTS" "$APPLY" "$DBP_WALL" "$PEER" "$ARCHIVE_MB" "$SAME" "$PARALLEL" <<'PY'
import sys
trx, ev = int(sys.argv[1]), int(sys.argv[2])
apply_s, wall_s, peer_s = float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
print(f"\nPITR replay of {trx} transactions, {ev} events ({sys.argv[6]} MB of binary log, sysbench oltp_write_only)\n")
print("| tool | seconds | transactions/s | events/s |")
print("|---|---|---|---|")
print(f"| dbpilot (binlog source, replica applier, slave_parallel_threads={sys.argv[8]}) apply | {apply_s:.2f} | {trx/apply_s:.0f} | {ev/apply_s:.0f} |")
print(f"| dbpilot, command wall minus dump restore (archive scan + apply) | {wall_s:.2f} | {trx/wall_s:.0f} | {ev/wall_s:.0f} |")
print(f"| mariadb-binlog FILES \\| mariadb | {peer_s:.2f} | {trx/peer_s:.0f} | {ev/peer_s:.0f} |")
print(f"\ndbpilot apply / peer speed: {peer_s/apply_s:.2f}x (with the scan: {peer_s/wall_s:.2f}x); same CHECKSUM TABLE on source and both targets: {sys.argv[7]}")
PY
