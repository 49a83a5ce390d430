#!/usr/bin/env bash
# bench/queries.sh — query analytics and the query watchdog, measured on a
# single MariaDB sandbox (performance_schema on, the sandbox's sizing):
#
# 1. Watchdog reaction, side by side with pt-kill (percona-toolkit) on the
#    same rule: kill a SELECT SLEEP(60) busy for more than BUSY seconds,
#    evaluated every second. ROUNDS sessions each, started at random offsets
#    to the evaluation clock; the reaction is the time from the threshold
#    crossing (start + BUSY) to the client getting its answer back.
#    Target: <= 1.5 s at a 1 s interval.
# 2. Digest collection overhead: sysbench oltp_point_select (THREADS
#    threads, SECONDS_ s per run, RUNS runs each, alternating) under
#    `dbpilot serve --sandbox` with its statements collector off
#    (queries.disabled) and on (the digest table read every 10 s, deltas
#    stored, per-digest series): the same serve otherwise, so the difference
#    is the collector's. Target: throughput with >= 99% of without.
#
# Usage: bash bench/queries.sh
#   ROUNDS=10 BUSY=2 THREADS=4 SECONDS_=30 RUNS=3 SECTIONS="watchdog overhead"
# Needs mariadb-server, sysbench, percona-toolkit (installed if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS="${ROUNDS:-10}"
BUSY="${BUSY:-2}"
THREADS="${THREADS:-4}"
SECONDS_="${SECONDS_:-30}"
RUNS="${RUNS:-3}"
SECTIONS="${SECTIONS:-watchdog overhead}"
want() { [[ " $SECTIONS " == *" $1 "* ]]; }
log() { echo "bench: $*" >&2; }

bash scripts/install-deps.sh
bash scripts/install-bench-deps.sh
make build >/dev/null
DBP="$PWD/bin/dbpilot"
export DBPILOT_HOME="$(mktemp -d "${TMPDIR:-/tmp}/dbpqueries.XXXXXX")"
WORK="$DBPILOT_HOME/work"
mkdir -p "$WORK"
BG=()
cleanup() {
	for p in "${BG[@]}"; do kill "$p" 2>/dev/null || true; done
	"$DBP" sandbox destroy qb >/dev/null 2>&1 || true
	rm -rf "$DBPILOT_HOME"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "dbpilot queries/watchdog benchmark — $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, $(/usr/sbin/mariadbd --version | awk '{print $3}'), $(pt-kill --version 2>/dev/null | head -1), dbpilot $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
log "deploying qb (single)"
"$DBP" sandbox deploy qb --topology single >"$WORK/deploy.log" 2>&1 || { cat "$WORK/deploy.log" >&2; exit 1; }
read -r PORT APW < <(python3 - "$DBPILOT_HOME/sandboxes/qb/sandbox.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(d["nodes"][0]["port"], d["admin"]["password"])
PY
)
M=(mariadb -h127.0.0.1 -P"$PORT" -udbpilot -p"$APW")

# rounds TOOL: ROUNDS sleeping sessions, one at a time; prints the reactions
rounds() {
	local tool="$1"
	python3 - "$ROUNDS" "$BUSY" "$tool" "$PORT" "$APW" <<'PY'
import random, subprocess, sys, time
rounds, busy, tool, port, pw = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
out = []
for i in range(rounds):
    time.sleep(random.uniform(0.2, 1.2))  # a random phase to the evaluation clock
    t0 = time.monotonic()
    subprocess.run(["mariadb", "--comments", "-h127.0.0.1", "-P" + port, "-udbpilot", "-p" + pw, "-N", "-e", "SELECT SLEEP(60) /* wdbench */"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=90)
    out.append(time.monotonic() - t0 - busy)
out.sort()
p50 = out[len(out) // 2]
print("%-8s %6d %10.3f %10.3f %10.3f %10.3f" % (tool, rounds, out[0], p50, out[-1], sum(out) / len(out)))
PY
}

if want watchdog; then
echo
echo "== watchdog reaction: kill SELECT SLEEP(60) busy > ${BUSY}s, 1 s interval, $ROUNDS sessions each (s after the threshold)"
printf '%-8s %6s %10s %10s %10s %10s\n' tool rounds min p50 max mean
cat >"$WORK/rules.yaml" <<EOF
rules:
  - name: long-sleep
    info: 'SLEEP\(60\) /\* wdbench'
    busy: ${BUSY}s
    action: kill_query
    dry_run: false
    max_kills_per_minute: 100
EOF
"$DBP" watchdog run --rules "$WORK/rules.yaml" --sandbox qb --interval 1s >"$WORK/wd.log" 2>&1 &
BG+=($!)
sleep 2
rounds dbpilot
kill "${BG[-1]}" 2>/dev/null || true
pt-kill --host 127.0.0.1 --port "$PORT" --user dbpilot --password "$APW" --busy-time "$BUSY" \
	--match-info 'SLEEP\(60\) /\* wdbench' --interval 1 --kill-query --victims all --print >"$WORK/ptkill.log" 2>&1 &
BG+=($!)
sleep 2
rounds pt-kill
kill "${BG[-1]}" 2>/dev/null || true
echo "(pt-kill matches on the processlist Time in whole seconds, dbpilot on TIME_MS; both evaluate every second)"
fi

if want overhead; then
echo
log "preparing sbtest (4 tables x 100000 rows)"
"$DBP" bench prepare --sandbox qb --workload oltp_read_write --tables 4 --table-size 100000 >"$WORK/prepare.log" 2>&1 || { cat "$WORK/prepare.log" >&2; exit 1; }
echo "== digest collection overhead: sysbench oltp_point_select, $THREADS threads, ${SECONDS_}s per run, $RUNS runs each (alternating)"
SB=(sysbench --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$PORT" --mysql-user=dbpilot_bench --mysql-password=bench-client-pw
	--mysql-db=sbtest --tables=4 --table-size=100000 oltp_point_select --threads="$THREADS" --time="$SECONDS_" --report-interval=0 run)
tps() { "${SB[@]}" 2>&1 | awk '/transactions:/ {gsub(/\(/, "", $3); print $3}'; }
"$DBP" serve --sandbox qb --print-config >"$WORK/serve.yaml"
sed -i 's/^listen: .*/listen: 127.0.0.1:17071/' "$WORK/serve.yaml"
cp "$WORK/serve.yaml" "$WORK/serve-off.yaml"
echo "queries: {disabled: true}" >>"$WORK/serve-off.yaml"
echo "queries: {interval: 10s}" >>"$WORK/serve.yaml"
serve_tps() { # CONFIG → tps of one run under that serve
	"$DBP" serve --config "$1" >/dev/null 2>"$WORK/serve.log" &
	local sv=$!
	BG+=($sv)
	sleep 12 # connected, the collector's baseline read
	tps
	kill "$sv" 2>/dev/null || true
	wait "$sv" 2>/dev/null || true
}
tps >/dev/null # warm-up, not counted: buffer pool, adaptive hash index
printf '%-32s %s\n' run tps
sum_off=0 sum_on=0
# ABBA order: drift over the runs falls on both sides alike.
for r in $(seq 1 "$RUNS"); do
	order="off on"
	[ $((r % 2)) -eq 0 ] && order="on off"
	for side in $order; do
		if [ "$side" = off ]; then
			t=$(serve_tps "$WORK/serve-off.yaml")
			printf '%-32s %s\n' "serve, queries off ($r)" "$t"
			sum_off=$(echo "$sum_off + $t" | bc -l)
		else
			t=$(serve_tps "$WORK/serve.yaml")
			printf '%-32s %s\n' "serve, queries every 10 s ($r)" "$t"
			sum_on=$(echo "$sum_on + $t" | bc -l)
		fi
	done
done
printf 'throughput with / without: %.4f (target >= 0.99)\n' "$(echo "$sum_on / $sum_off" | bc -l)"
fi
