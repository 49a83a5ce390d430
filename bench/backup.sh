#!/usr/bin/env bash
# bench/backup.sh — logical backup: `dbpilot dump` / `dbpilot restore` side by
# side with mydumper/myloader and mariadb-dump/mariadb, same data, same
# servers, same thread count, in one run.
#
# 1. A source sandbox gets a sysbench dataset: TABLES tables of ROWS rows in
#    database sbtest, one table of BIG_ROWS rows in database sbbig, and
#    sbtest.nokey, a copy of sbtest.sbtest1 without any key.
# 2. Each tool dumps both databases from the source and restores them into a
#    target sandbox (sbtest and sbbig dropped on the target before each
#    restore, binary logging off during every restore):
#      dbpilot       dump --threads T (zstd, the default) and --compress none;
#                    restore --threads T --no-binlog
#      mydumper      -t T --rows=MYDUMPER_ROWS (chunked: parallel within a
#                    table, its best configuration), uncompressed and -c;
#                    myloader -t T -o
#      mariadb-dump  --single-transaction (one thread by nature); restored by
#                    piping into the mariadb client
#    For every dump and restore: wall seconds, MB/s and rows/s (source data
#    size and rows over wall time), size on disk, peak RSS of the tool. A
#    dump's time includes a syncfs of its output (dbpilot's dump is durable
#    when it exits, the peers' are not); before each step both servers flush
#    their dirty pages and the page cache is synced, off the clock, so no
#    tool pays for the one before it.
# 3. After each restore, CHECKSUM TABLE of every table, source vs target.
# 4. A summary table and the ratios against the issue's targets (dbpilot
#    >= 1.2x mydumper/myloader speed, peak RSS <= 256 MB).
#
# A failing dbpilot command (for example while dump/restore are still being
# built) is reported as FAILED with its error; the peers are measured anyway.
#
# Usage: [ROWS=1000000] [TABLES=8] [BIG_ROWS=5000000] [THREADS=4] bash bench/backup.sh
# Other knobs: BUFFER_POOL=2G and REDO_LOG=1G (both sandboxes), MYDUMPER_ROWS=100000,
#   PEER_COMPRESS=1 (also run mydumper -c / myloader), NOKEY=1 (the keyless table),
#   PORT_BASE (source; target at +10; default: free ports), TOOL_TIMEOUT=7200 (s per command),
#   DBPILOT_BIN (a dbpilot binary to use instead of bin/dbpilot).
# Needs: mariadb-server, mariadb-client, mydumper, sysbench, GNU time (installed if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS="${ROWS:-1000000}"
TABLES="${TABLES:-8}"
BIG_ROWS="${BIG_ROWS:-5000000}"
THREADS="${THREADS:-4}"
BUFFER_POOL="${BUFFER_POOL:-2G}"
REDO_LOG="${REDO_LOG:-1G}"
MYDUMPER_ROWS="${MYDUMPER_ROWS:-100000}"
PEER_COMPRESS="${PEER_COMPRESS:-1}"
NOKEY="${NOKEY:-1}"
PORT_BASE="${PORT_BASE:-}"
TOOL_TIMEOUT="${TOOL_TIMEOUT:-7200}"

log() { echo "bench: $*" >&2; }

bash scripts/install-deps.sh --test
bash scripts/install-bench-deps.sh
if [ -n "${DBPILOT_BIN:-}" ]; then
	DBP="$DBPILOT_BIN"
else
	[ -x bin/dbpilot ] || make build >/dev/null
	DBP="$PWD/bin/dbpilot"
	# A binary built before dump/restore existed: try a rebuild, keep the old
	# one when the tree does not build (dbpilot is then reported as failed).
	if ! "$DBP" dump --help >/dev/null 2>&1; then
		log "bin/dbpilot has no dump command; rebuilding"
		make build >/dev/null 2>&1 || log "make build failed; measuring with the existing bin/dbpilot"
	fi
fi

export DBPILOT_HOME="$(mktemp -d "${TMPDIR:-/tmp}/dbpbackup.XXXXXX")"
WORK="$DBPILOT_HOME/work"
mkdir -p "$WORK"
cleanup() {
	for s in $("$DBP" sandbox list --json 2>/dev/null | python3 -c 'import json,sys; print(" ".join(d["name"] for d in json.load(sys.stdin)))' 2>/dev/null); do
		"$DBP" sandbox destroy "$s" >/dev/null 2>&1 || true
	done
	# Servers that destroy could not stop: only ours, by their pid files.
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

SRC=bksrc DST=bkdst
DBS=(sbtest sbbig)
OPTS=(--option "innodb_buffer_pool_size=$BUFFER_POOL" --option "innodb_log_file_size=$REDO_LOG")

# deploy NAME [PORT_BASE]
deploy() {
	local pb=()
	[ -n "${2:-}" ] && pb=(--port-base "$2")
	"$DBP" sandbox deploy "$1" --topology single "${pb[@]}" "${OPTS[@]}" >"$WORK/deploy-$1.log" 2>&1 || {
		cat "$WORK/deploy-$1.log" >&2
		exit 1
	}
}
# field NAME port|password → from the sandbox descriptor
field() {
	python3 - "$DBPILOT_HOME/sandboxes/$1/sandbox.json" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(d["nodes"][0]["port"] if sys.argv[2] == "port" else d["admin"]["password"])
PY
}

log "deploying sandboxes $SRC and $DST (innodb_buffer_pool_size=$BUFFER_POOL, innodb_log_file_size=$REDO_LOG)"
deploy "$SRC" "$PORT_BASE"
deploy "$DST" "${PORT_BASE:+$((PORT_BASE + 10))}"
SP=$(field "$SRC" port) SPW=$(field "$SRC" password)
DP=$(field "$DST" port) DPW=$(field "$DST" password)
USER_=dbpilot
sq() { mariadb -N -B -h127.0.0.1 -P"$SP" -u"$USER_" -p"$SPW" "$@"; } # source
dq() { mariadb -N -B -h127.0.0.1 -P"$DP" -u"$USER_" -p"$DPW" "$@"; } # target

# ---- dataset -----------------------------------------------------------------
t0=$(date +%s)
sq -e "CREATE DATABASE sbtest; CREATE DATABASE sbbig"
SB=(sysbench oltp_read_write --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$SP" --mysql-user="$USER_" --mysql-password="$SPW" --threads=2)
log "preparing sbtest: $TABLES tables x $ROWS rows"
"${SB[@]}" --mysql-db=sbtest --tables="$TABLES" --table-size="$ROWS" prepare >"$WORK/prepare-sbtest.log" 2>&1 || { tail -20 "$WORK/prepare-sbtest.log" >&2; exit 1; }
log "preparing sbbig: 1 table x $BIG_ROWS rows"
"${SB[@]}" --mysql-db=sbbig --tables=1 --table-size="$BIG_ROWS" prepare >"$WORK/prepare-sbbig.log" 2>&1 || { tail -20 "$WORK/prepare-sbbig.log" >&2; exit 1; }
if [ "$NOKEY" = 1 ]; then
	log "creating sbtest.nokey (no primary or unique key, no index at all)"
	sq -e "CREATE TABLE sbtest.nokey ENGINE=InnoDB AS SELECT id AS n, k, c, pad FROM sbtest.sbtest1"
fi
# The dataset's binary logs are not part of what is measured.
sq -e "FLUSH BINARY LOGS; PURGE BINARY LOGS BEFORE NOW()" || true
TABLE_LIST=$(sq -e "SELECT GROUP_CONCAT(CONCAT('\`',table_schema,'\`.\`',table_name,'\`') ORDER BY table_schema, table_name) FROM information_schema.tables WHERE table_schema IN ('sbtest','sbbig')")
sq -e "ANALYZE TABLE $TABLE_LIST" >/dev/null # exact data_length below
NTABLES=$(echo "$TABLE_LIST" | tr ',' '\n' | wc -l)
ROWS_TOTAL=0
for t in ${TABLE_LIST//,/ }; do ROWS_TOTAL=$((ROWS_TOTAL + $(sq -e "SELECT COUNT(*) FROM $t"))); done
DATA_BYTES=$(sq -e "SELECT SUM(data_length) FROM information_schema.tables WHERE table_schema IN ('sbtest','sbbig')")
INDEX_BYTES=$(sq -e "SELECT SUM(index_length) FROM information_schema.tables WHERE table_schema IN ('sbtest','sbbig')")
# checksums PORT PASSWORD → "db.table checksum" lines; also warms the source's buffer pool.
checksums() { mariadb -N -B -h127.0.0.1 -P"$1" -u"$USER_" -p"$2" -e "CHECKSUM TABLE $TABLE_LIST" 2>&1 | awk -F'\t' '{print $1, $2}'; }
checksums "$SP" "$SPW" >"$WORK/checksum.src"
log "dataset ready in $(($(date +%s) - t0)) s"

echo "dbpilot backup benchmark — $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GB RAM"
echo "tools: $("$DBP" --version 2>&1 | head -1); mydumper $(dpkg-query -W -f '${Version}' mydumper 2>/dev/null || mydumper --version) ($(mydumper --version 2>&1 | head -1)); $(mariadb-dump --version | sed 's/, for.*//')"
echo "server: $(sq -e "SELECT CONCAT(VERSION(), ', innodb_buffer_pool_size=', @@innodb_buffer_pool_size DIV 1048576, 'M, innodb_log_file_size=', @@innodb_log_file_size DIV 1048576, 'M, sync_binlog=', @@sync_binlog, ', innodb_flush_log_at_trx_commit=', @@innodb_flush_log_at_trx_commit, ', innodb_flush_method=', @@innodb_flush_method)") (source and target alike)"
python3 - "$TABLES" "$ROWS" "$BIG_ROWS" "$NOKEY" "$NTABLES" "$ROWS_TOTAL" "$DATA_BYTES" "$INDEX_BYTES" "$THREADS" <<'PY'
import sys
tables, rows, big, nokey, ntab, total, data, index, threads = sys.argv[1:]
print(f"dataset: sbtest {tables} x {int(rows):,} rows + sbbig 1 x {int(big):,} rows"
      + (f" + sbtest.nokey {int(rows):,} rows (no key)" if nokey == "1" else "")
      + f" = {ntab} tables, {int(total):,} rows, data {int(data)/1e6:.1f} MB (+ indexes {int(index)/1e6:.1f} MB)")
print(f"threads: {threads} for every parallel tool; MB/s and rows/s below are source data MB and rows over wall seconds;")
print("a dump's time runs until its files are on disk (syncfs), a restore's until the last commit (sync_binlog=1, flush at commit)")
PY
echo

# ---- measuring -------------------------------------------------------------------
RESULTS="$WORK/results.tsv"
: >"$RESULTS"
# measure KEY PHASE LABEL SIZE_PATH STDIN STDOUT CMD... — runs CMD under
# /usr/bin/time (peak RSS) and a timeout, records a line in $RESULTS, prints
# it; returns CMD's status. SIZE_PATH, STDIN, STDOUT: a path or "-".
measure() {
	local key="$1" phase="$2" label="$3" size_path="$4" in="$5" out="$6"
	shift 6
	local logf="$WORK/$key.$phase.log" rssf="$WORK/$key.$phase.rss" rc=0
	[ "$in" = - ] && in=/dev/null
	settle
	log "$label ..."
	# The server's CPU during the step: the source's for a dump, the target's for a restore.
	local spid srv0 srv1
	if [ "$phase" = dump ]; then spid=$(server_pid "$SRC"); else spid=$(server_pid "$DST"); fi
	srv0=$(proc_cpu "$spid")
	local t0 t1
	t0=$(date +%s%N)
	if [ "$out" = - ]; then
		/usr/bin/time -f '%M %U %S' -o "$rssf" timeout -k 10 "$TOOL_TIMEOUT" "$@" <"$in" >"$logf" 2>&1 || rc=$?
	else
		/usr/bin/time -f '%M %U %S' -o "$rssf" timeout -k 10 "$TOOL_TIMEOUT" "$@" <"$in" >"$out" 2>"$logf" || rc=$?
	fi
	srv1=$(proc_cpu "$spid")
	# A dump counts until it is durable: dbpilot syncs its files itself,
	# mydumper and mariadb-dump do not, so every dump's time includes a
	# syncfs(2) of the output's file system.
	if [ "$rc" -eq 0 ] && [ "$phase" = dump ] && [ -e "$size_path" ]; then sync -f "$size_path" || true; fi
	t1=$(date +%s%N)
	local secs rss size=0 note=""
	secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", (b-a)/1e9}')
	local tcpu scpu
	read -r rss tcpu <<<"$(tail -1 "$rssf" 2>/dev/null | awk 'NF==3 && $1 ~ /^[0-9]+$/ {printf "%s %.2f", $1, $2+$3; next} {print "0 0"}')"
	scpu=$(awk -v a="$srv0" -v b="$srv1" 'BEGIN{printf "%.2f", b-a}')
	local files=1
	if [ "$size_path" != - ] && [ -e "$size_path" ]; then
		size=$(du -sb "$size_path" | cut -f1)
		files=$(find "$size_path" -type f | wc -l)
	fi
	if [ "$rc" -ne 0 ]; then
		[ "$rc" -eq 124 ] && note="timed out after ${TOOL_TIMEOUT}s; "
		note="${note}exit $rc: $(grep -v '^[[:space:]]*$' "$logf" | tail -3 | tr '\t\n' '  ' | cut -c1-300)"
	fi
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$key" "$phase" "$label" "$rc" "$secs" "$rss" "$size" "$note" "$tcpu" "$scpu" >>"$RESULTS"
	python3 - "$DATA_BYTES" "$ROWS_TOTAL" "$label" "$rc" "$secs" "$rss" "$size" "$note" "$phase" "$files" "$tcpu" "$scpu" <<'PY'
import sys
data, rows, label, rc, secs, rss, size, note, phase, files, tcpu, scpu = sys.argv[1:]
secs = float(secs)
if rc != "0":
    print(f"  {label:<34} FAILED after {secs:.1f} s — {note}")
else:
    size = f"size {int(size)/1e6:>8.1f} MB" if phase == "dump" else " " * 16
    files = f" ({files} file{'' if files == '1' else 's'})" if phase == "dump" else ""
    print(f"  {label:<34} {secs:>8.2f} s {int(data)/1e6/secs:>8.1f} MB/s {int(rows)/secs:>10,.0f} rows/s"
          f"  {size}  peak RSS {int(rss)/1024:>7.1f} MB  CPU tool {float(tcpu):>6.1f} s server {float(scpu):>6.1f} s{files}")
PY
	return "$rc"
}
# server_pid NAME: the pid of the sandbox's mysqld; proc_cpu PID: its user+system CPU seconds so far.
server_pid() { cat "$DBPILOT_HOME/sandboxes/$1/node1/mysqld.pid" 2>/dev/null || echo 0; }
proc_cpu() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14+$15)/hz}' "/proc/$1/stat" 2>/dev/null || echo 0; }
# settle: before each measured step, let the previous one finish its
# writes — dump files still in the page cache, dirty InnoDB pages on either
# server — so that no tool pays for the one before it.
# The page cleaner is let loose (io_capacity raised) only meanwhile.
settle() {
	sync
	local q saved d i pct cap capmax
	for q in sq dq; do
		saved=$($q -e "SELECT @@innodb_max_dirty_pages_pct, @@innodb_io_capacity, @@innodb_io_capacity_max" 2>/dev/null) || continue
		read -r pct cap capmax <<<"$saved"
		$q -e "SET GLOBAL innodb_io_capacity_max=100000; SET GLOBAL innodb_io_capacity=50000; SET GLOBAL innodb_max_dirty_pages_pct=0" 2>/dev/null || continue
		for i in $(seq 1500); do
			d=$($q -e "SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_pages_dirty'" 2>/dev/null | cut -f2)
			[ "${d:-0}" -lt 50 ] && break
			sleep 0.2
		done
		$q -e "SET GLOBAL innodb_max_dirty_pages_pct=$pct; SET GLOBAL innodb_io_capacity=$cap; SET GLOBAL innodb_io_capacity_max=$capmax" 2>/dev/null || true
	done
	sync
}
drop_target() { dq -e "DROP DATABASE IF EXISTS sbtest; DROP DATABASE IF EXISTS sbbig"; }
# verify KEY: CHECKSUM TABLE on the target against the source.
verify() {
	checksums "$DP" "$DPW" >"$WORK/checksum.$1"
	local bad
	bad=$(diff "$WORK/checksum.src" "$WORK/checksum.$1" | awk '/^</{print $2}' | tr '\n' ' ' || true)
	if [ -z "$bad" ]; then
		printf '%s\tcheck\tmatch\n' "$1" >>"$RESULTS"
		echo "  checksum: all $NTABLES tables match"
	else
		printf '%s\tcheck\tMISMATCH: %s\n' "$1" "$bad" >>"$RESULTS"
		echo "  checksum: MISMATCH in $bad"
		diff "$WORK/checksum.src" "$WORK/checksum.$1" | sed 's/^/    /' || true
	fi
}
MYSQL_ARGS=(-h 127.0.0.1 -P "$SP" -u "$USER_" -p "$SPW")
MYSQL_DST=(-h 127.0.0.1 -P "$DP" -u "$USER_" -p "$DPW")

# 1. dbpilot: zstd (the default) and uncompressed.
echo "dbpilot"
for comp in zstd none; do
	key="dbpilot-$comp" dir="$WORK/dbpilot-$comp"
	cargs=()
	[ "$comp" = none ] && cargs=(--compress none)
	if measure "$key" dump "dbpilot dump ($comp)" "$dir" - - \
		"$DBP" dump --sandbox "$SRC" --out "$dir" --threads "$THREADS" --databases sbtest,sbbig "${cargs[@]}"; then
		drop_target
		if measure "$key" restore "dbpilot restore ($comp dump)" - - - \
			"$DBP" restore "$dir" --sandbox "$DST" --threads "$THREADS" --no-binlog; then
			verify "$key"
		fi
	else
		printf '%s\trestore\tdbpilot restore (%s dump)\tskipped\t0\t0\t0\tdump failed\n' "$key" "$comp" >>"$RESULTS"
		echo "  dbpilot restore ($comp dump)         skipped: the dump failed"
	fi
	rm -rf "$dir"
done

# 2. mydumper/myloader: uncompressed (and -c when PEER_COMPRESS=1).
# 0.10.x takes one database with -B, so both go through --regex.
echo "mydumper/myloader"
variants=(plain)
[ "$PEER_COMPRESS" = 1 ] && variants+=(c)
for v in "${variants[@]}"; do
	key="mydumper" suffix="" cargs=()
	[ "$v" = c ] && key="mydumper-c" suffix=" -c" cargs=(-c)
	dir="$WORK/$key"
	if measure "$key" dump "mydumper$suffix --rows=$MYDUMPER_ROWS" "$dir" - - \
		mydumper "${MYSQL_ARGS[@]}" -t "$THREADS" --rows="$MYDUMPER_ROWS" --regex '^(sbtest|sbbig)\.' -o "$dir" "${cargs[@]}"; then
		drop_target
		if measure "$key" restore "myloader -o ($key dump)" - - - \
			myloader "${MYSQL_DST[@]}" -t "$THREADS" -o -d "$dir"; then
			verify "$key"
		fi
	fi
	rm -rf "$dir"
done

# 3. mariadb-dump | mariadb (one thread).
echo "mariadb-dump/mariadb"
key=mariadb-dump file="$WORK/mariadb-dump.sql"
if measure "$key" dump "mariadb-dump --single-transaction" "$file" - "$file" \
	mariadb-dump -h127.0.0.1 -P"$SP" -u"$USER_" -p"$SPW" --single-transaction --databases "${DBS[@]}"; then
	drop_target
	if measure "$key" restore "mariadb < dump" - "$file" - \
		mariadb -h127.0.0.1 -P"$DP" -u"$USER_" -p"$DPW" --init-command="SET SESSION sql_log_bin=0"; then
		verify "$key"
	fi
fi
rm -f "$file"
drop_target

# ---- summary -----------------------------------------------------------------------
echo
python3 - "$RESULTS" "$DATA_BYTES" "$ROWS_TOTAL" "$THREADS" <<'PY'
import sys
path, data, rows, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
res, checks, order = {}, {}, []
for line in open(path):
    f = line.rstrip("\n").split("\t")
    if f[1] == "check":
        checks[f[0]] = f[2]
        continue
    key, phase, label, rc, secs, rss, size, note, tcpu, scpu = (f + [""] * 10)[:10]
    res[(key, phase)] = dict(label=label, rc=rc, secs=float(secs), rss=int(rss) / 1024, size=int(size) / 1e6, note=note,
                             tcpu=float(tcpu or 0), scpu=float(scpu or 0))
    order.append((key, phase))
mb = data / 1e6
print(f"summary: {mb:.1f} MB of data, {rows:,} rows, {threads} threads")
print(f"{'tool':<34} {'seconds':>9} {'MB/s':>8} {'rows/s':>11} {'size MB':>9} {'RSS MB':>8} {'tool CPU':>9} {'srv CPU':>8}  check")
for k in order:
    r = res[k]
    chk = checks.get(k[0], "-") if k[1] == "restore" else ""
    if r["rc"] != "0":
        status = "skipped" if r["rc"] == "skipped" else "FAILED"
        print(f"{r['label']:<34} {status:>9}  {r['note'][:90]}")
        continue
    size = f"{r['size']:>9.1f}" if k[1] == "dump" else f"{'':>9}"
    print(f"{r['label']:<34} {r['secs']:>9.2f} {mb/r['secs']:>8.1f} {rows/r['secs']:>11,.0f} {size} {r['rss']:>8.1f} {r['tcpu']:>9.1f} {r['scpu']:>8.1f}  {chk}")

def ok(k):
    return k in res and res[k]["rc"] == "0"
print()
print("ratios (speed = source MB / wall s; > 1 means dbpilot is faster)       target")
pairs = [
    ("dump:    dbpilot (zstd) / mydumper", ("dbpilot-zstd", "dump"), ("mydumper", "dump"), 1.2),
    ("dump:    dbpilot (none) / mydumper", ("dbpilot-none", "dump"), ("mydumper", "dump"), 1.2),
    ("dump:    dbpilot (zstd) / mydumper -c", ("dbpilot-zstd", "dump"), ("mydumper-c", "dump"), None),
    ("dump:    dbpilot (zstd) / mariadb-dump", ("dbpilot-zstd", "dump"), ("mariadb-dump", "dump"), None),
    ("restore: dbpilot (zstd dump) / myloader", ("dbpilot-zstd", "restore"), ("mydumper", "restore"), 1.2),
    ("restore: dbpilot (none dump) / myloader", ("dbpilot-none", "restore"), ("mydumper", "restore"), 1.2),
    ("restore: dbpilot (zstd dump) / myloader (-c dump)", ("dbpilot-zstd", "restore"), ("mydumper-c", "restore"), None),
    ("restore: dbpilot (zstd dump) / mariadb", ("dbpilot-zstd", "restore"), ("mariadb-dump", "restore"), None),
]
for name, a, b, target in pairs:
    if b not in res:
        continue
    if not ok(a) or not ok(b):
        print(f"  {name:<52} {'n/a':>7}  ({'dbpilot' if not ok(a) else 'peer'} failed)")
        continue
    ratio = res[b]["secs"] / res[a]["secs"]
    t = f">= {target}x {'ok' if ratio >= target else 'MISSED'}" if target else ""
    print(f"  {name:<52} {ratio:>6.2f}x  {t}")
for phase in ("dump", "restore"):
    rs = [res[(k, phase)]["rss"] for k in ("dbpilot-zstd", "dbpilot-none") if ok((k, phase))]
    if rs:
        m = max(rs)
        print(f"  {'peak RSS: dbpilot ' + phase + ' (MB)':<52} {m:>7.1f}  <= 256 MB {'ok' if m <= 256 else 'MISSED'}")
    else:
        print(f"  {'peak RSS: dbpilot ' + phase + ' (MB)':<52} {'n/a':>7}  (dbpilot failed)")
bad = [k for k, v in checks.items() if v != "match"]
restores = sum(1 for k in order if k[1] == "restore")
verdict = (f"all match ({len(checks)} of {restores} restores checked)" if not bad
           else "MISMATCH: " + ", ".join(f"{k} ({checks[k]})" for k in bad))
print(f"  {'data check (CHECKSUM TABLE, every table)':<52} {verdict}")
failed = sorted({k[0] for k in order if res[k]["rc"] not in ("0", "skipped")})
if failed:
    print(f"\nFAILED: {', '.join(failed)} — see the lines above")
PY
