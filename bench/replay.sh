#!/usr/bin/env bash
# bench/replay.sh — how fast a replica applies a recorded workload, per
# parallel replication setting: `dbpilot replay` over an archive recorded
# from `dbpilot bench`, for two mixes (sysbench's oltp_write_only and the
# LinkBench-like linkbench).
#
# Per workload:
# 1. A source sandbox gets the workload's tables (`dbpilot bench prepare`),
#    is dumped with `dbpilot dump`, and its binary log is rotated (FLUSH
#    BINARY LOGS): the files after the dump hold exactly what follows it.
# 2. `dbpilot bench run` writes for DURATION seconds with LOAD_THREADS
#    connections back to back (closed loop: as fast as the source commits,
#    so that group commit gives a replica something to parallelise); the
#    binary log is rotated again and the files written since the dump are
#    copied into the archive directory (a plain copy, which replay reads as
#    an archive like a `dbpilot binlog stream` one).
# 3. `dbpilot replay --binlogs ARCHIVE --dump DUMP --modes MODES --threads
#    THREADS` deploys a fresh sandbox, restores the dump before each setting,
#    replays the whole archive at full speed per setting and prints its
#    table: time, transactions/s, events/s, speed-up over single-threaded,
#    retries and deadlocks, busy workers, the data check (CHECKSUM TABLE equal
#    to the single-threaded run's), the source's own rate beside the fastest
#    apply (target: at least 3x, the source is never the bottleneck) and the
#    recommendation. The JSON and the HTML report are kept in OUT.
#
# Both sandboxes run the defaults (sync_binlog=1,
# innodb_flush_log_at_trx_commit=1, log_slave_updates=ON) with
# innodb_buffer_pool_size=BUFFER_POOL.
#
# Usage: [DURATION=10] [LOAD_THREADS=8] [TABLES=4] [TABLE_SIZE=20000] [NODES=20000]
#        [MODES=conservative,optimistic,aggressive] [THREADS=0,4,8,16] [WORKLOADS="oltp_write_only linkbench"]
#        [REPEAT=1] (runs of each setting; its median run is reported)
#        [OUT=bench-replay] bash bench/replay.sh
# Other knobs: BUFFER_POOL=256M, DBPILOT_BIN (a binary instead of bin/dbpilot).
# Needs: mariadb-server, mariadb-client.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION="${DURATION:-10}"
LOAD_THREADS="${LOAD_THREADS:-8}"
TABLES="${TABLES:-4}"
TABLE_SIZE="${TABLE_SIZE:-20000}"
NODES="${NODES:-20000}"
MODES="${MODES:-conservative,optimistic,aggressive}"
THREADS="${THREADS:-0,4,8,16}"
REPEAT="${REPEAT:-1}"
WORKLOADS="${WORKLOADS:-oltp_write_only linkbench}"
BUFFER_POOL="${BUFFER_POOL:-256M}"
OUT="${OUT:-bench-replay}"

log() { echo "bench: $*" >&2; }

bash scripts/install-deps.sh
if [ -n "${DBPILOT_BIN:-}" ]; then
	DBP="$DBPILOT_BIN"
else
	make build >/dev/null
	DBP="$PWD/bin/dbpilot"
fi
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"

export DBPILOT_HOME="$(mktemp -d "${TMPDIR:-/tmp}/dbpreplay.XXXXXX")"
WORK="$DBPILOT_HOME/work"
mkdir -p "$WORK"
cleanup() {
	local d f p
	for d in "$DBPILOT_HOME"/sandboxes/*/; do
		[ -d "$d" ] && "$DBP" sandbox destroy "$(basename "$d")" >/dev/null 2>&1 || true
	done
	for f in "$DBPILOT_HOME"/sandboxes/*/node*/mysqld.pid; do
		[ -f "$f" ] || continue
		p=$(cat "$f" 2>/dev/null) || continue
		if grep -qF "$DBPILOT_HOME" "/proc/$p/cmdline" 2>/dev/null; then kill -9 "$p" 2>/dev/null || true; fi
	done
	rm -rf "$DBPILOT_HOME"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

field() {
	python3 - "$DBPILOT_HOME/sandboxes/$1/sandbox.json" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
n = d["nodes"][0]
print({"port": n["port"], "datadir": n["datadir"], "password": d["admin"]["password"]}[sys.argv[2]])
PY
}

for W in $WORKLOADS; do
	S="rplsrc"
	log "$W: deploying the source sandbox (innodb_buffer_pool_size=$BUFFER_POOL)"
	"$DBP" sandbox deploy "$S" --topology single --option "innodb_buffer_pool_size=$BUFFER_POOL" >"$WORK/deploy-$W.log" 2>&1 || { cat "$WORK/deploy-$W.log" >&2; exit 1; }
	SP=$(field "$S" port) SPW=$(field "$S" password) SDIR=$(field "$S" datadir)
	sq() { mariadb -N -B -h127.0.0.1 -P"$SP" -udbpilot -p"$SPW" "$@"; }
	SIZE=(--tables "$TABLES" --table-size "$TABLE_SIZE")
	[ "$W" = linkbench ] && SIZE=(--nodes "$NODES")
	log "$W: prepare"
	"$DBP" bench prepare --sandbox "$S" --workload "$W" "${SIZE[@]}" >"$WORK/prepare-$W.log" 2>&1 || { tail -20 "$WORK/prepare-$W.log" >&2; exit 1; }
	log "$W: dump"
	rm -rf "$WORK/dump-$W" "$WORK/archive-$W"
	"$DBP" dump --sandbox "$S" --out "$WORK/dump-$W" -q >"$WORK/dump-$W.log" 2>&1 || { cat "$WORK/dump-$W.log" >&2; exit 1; }
	sq -e "FLUSH BINARY LOGS"
	FIRST=$(sq -e "SHOW MASTER STATUS" | cut -f1)
	log "$W: load, $LOAD_THREADS connections back to back, ${DURATION}s"
	"$DBP" bench run --sandbox "$S" --workload "$W" "${SIZE[@]}" --threads "$LOAD_THREADS" --duration "${DURATION}s" --json >"$WORK/load-$W.json" 2>"$WORK/load-$W.err" || { tail -20 "$WORK/load-$W.err" >&2; exit 1; }
	sq -e "FLUSH BINARY LOGS"
	mkdir -p "$WORK/archive-$W"
	for f in $(sq -e "SHOW BINARY LOGS" | cut -f1); do
		[[ "$f" < "$FIRST" ]] && continue
		cp "$SDIR/$f" "$WORK/archive-$W/$f"
	done
	log "$W: archive $(du -sm "$WORK/archive-$W" | cut -f1) MB; replaying across modes $MODES, threads $THREADS"
	"$DBP" sandbox destroy "$S" >/dev/null
	set +e
	"$DBP" replay --binlogs "$WORK/archive-$W" --dump "$WORK/dump-$W" --modes "$MODES" --threads "$THREADS" --repeat "$REPEAT" \
		--html "$OUT/replay-$W.html" >"$OUT/replay-$W.txt" 2>"$WORK/replay-$W.err"
	rc=$?
	set -e
	if [ $rc -ne 0 ] && [ $rc -ne 1 ]; then cat "$WORK/replay-$W.err" >&2; exit 1; fi
	echo
	echo "## $W (dbpilot bench run --workload $W --threads $LOAD_THREADS --duration ${DURATION}s)"
	echo
	grep -v '^report:' "$OUT/replay-$W.txt"
	[ $rc -eq 1 ] && echo "(exit 1: a setting failed or its data differed)"
done
log "reports in $OUT"
