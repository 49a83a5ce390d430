#!/usr/bin/env bash
# bench/galera.sh — a Galera cluster losing a node, and the flow-control
# cost of a dump, measured on a 3-node MariaDB Galera sandbox.
#
# 1. Node loss: `dbpilot drill galera-node-loss` over ROUNDS rounds — a
#    client per node writes numbered rows at RATE/s in all, one node (a
#    different one each round) is killed with SIGKILL and restarted AFTER
#    later. Per round: the longest write stall a surviving node's client saw,
#    the time to its first acknowledged write sent after the kill, failed
#    writes on the survivors, the restart to Synced and whether by IST, and
#    acknowledged writes missing on any node.
# 2. Desynced dump: a writer (dbpilot bench, oltp_write_only open loop at
#    WRITE_RATE tx/s, a rate this 3-node cluster on 2 cores sustains: at 250
#    flow control pauses it with or without a dump) on node1 while `dbpilot dump` of node2 runs DUMP_AT s
#    in, once without and once with --desync. Printed: the writer's achieved
#    rate and p99 before, during and after the dump, and node2's flow control
#    (messages it sent, time the cluster was paused) from the dump's start
#    to 10 s after it; REPEATS times each, alternating.
#
# Usage: bash bench/galera.sh
#   ROUNDS=10 RATE=100 AFTER=5s TABLES=4 ROWS=400000 WRITE_RATE=80
#   WRITE_SECONDS=30 DUMP_AT=8 REPEATS=3 SECTIONS="drill desync"
# Needs mariadb-server, galera-4, rsync (installed if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS="${ROUNDS:-10}"
RATE="${RATE:-100}"
AFTER="${AFTER:-5s}"
TABLES="${TABLES:-4}"
ROWS="${ROWS:-400000}"
WRITE_RATE="${WRITE_RATE:-80}"
WRITE_SECONDS="${WRITE_SECONDS:-30}"
DUMP_AT="${DUMP_AT:-8}"
REPEATS="${REPEATS:-3}"
SECTIONS="${SECTIONS:-drill desync}"
want() { [[ " $SECTIONS " == *" $1 "* ]]; }
log() { echo "bench: $*" >&2; }

bash scripts/install-deps.sh --test
make build >/dev/null
DBP="$PWD/bin/dbpilot"
export DBPILOT_HOME="$(mktemp -d "${TMPDIR:-/tmp}/dbpgalera.XXXXXX")"
WORK="$DBPILOT_HOME/work"
mkdir -p "$WORK"
trap '"$DBP" sandbox destroy gbench >/dev/null 2>&1 || true; rm -rf "$DBPILOT_HOME"' EXIT
trap 'exit 130' INT TERM

echo "dbpilot Galera benchmark — $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, $(/usr/sbin/mariadbd --version | awk '{print $3}'), galera $(dpkg-query -W -f '${Version}' galera-4 2>/dev/null || echo '?'), dbpilot $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
log "deploying gbench: galera, 3 nodes, rsync SST"
"$DBP" sandbox deploy gbench --topology galera --nodes 3 >"$WORK/deploy.log" 2>&1 || { cat "$WORK/deploy.log" >&2; exit 1; }
read -r P1 P2 APW < <(python3 - "$DBPILOT_HOME/sandboxes/gbench/sandbox.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(d["nodes"][0]["port"], d["nodes"][1]["port"], d["admin"]["password"])
PY
)

# ---- 1. node loss ---------------------------------------------------------------
if want drill; then
echo
echo "== node loss: drill galera-node-loss, $ROUNDS rounds, $RATE writes/s over 3 nodes, node dead for $AFTER"
"$DBP" drill galera-node-loss --sandbox gbench --rounds "$ROUNDS" --rate "$RATE" --after "$AFTER" --json >"$WORK/drill.json" 2>"$WORK/drill.err" || true
python3 - "$WORK/drill.json" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:
    print("drill produced no JSON:", e); sys.exit(0)
print("%5s %7s %9s %11s %7s %10s %9s %7s %6s %5s %s" % ("round", "killed", "stall s", "first ack s", "failed", "size -1 s", "rejoin s", "by", "acked", "lost", "error"))
for x in r["rounds"]:
    print("%5d %7s %9.3f %11.3f %7d %10.3f %9.3f %7s %6d %5d %s" % (x["round"], x["killed"], x["write_stall_s"], x["first_ack_after_kill_s"],
        x["failed_writes_on_survivors"], x["cluster_size_reduced_s"], x["rejoin_s"], x["rejoin_method"], x["acked"], x["lost_acked"], x.get("error", "")))
s = r["summary"]
print("summary: %d rounds (%d failed); write stall p50 %.3f s max %.3f s; first ack p50 %.3f s max %.3f s; rejoin p50 %.3f s max %.3f s, %d of %d by IST; failed writes on survivors %d; lost acknowledged writes %d"
      % (s["rounds"], s["failed"], s["write_stall_p50_s"], s["write_stall_max_s"], s["first_ack_p50_s"], s["first_ack_max_s"],
         s["rejoin_p50_s"], s["rejoin_max_s"], s["rejoined_by_ist"], s["rounds"], s["failed_writes_on_survivors"], s["lost_acked"]))
PY
[ -s "$WORK/drill.err" ] && grep -i "error" "$WORK/drill.err" | tail -3 >&2 || true
fi

# ---- 2. desynced dump -----------------------------------------------------------
# wsrep VARIABLE on node N
wsrep() {
	local port="$1" name="$2"
	mariadb -h127.0.0.1 -P"$port" -udbpilot -p"$APW" -N -e "SHOW GLOBAL STATUS LIKE '$name'" | awk '{print $2}'
}
if want desync; then
echo
log "preparing $TABLES tables x $ROWS rows (dbpilot bench prepare on node1)"
"$DBP" bench prepare 127.0.0.1:"$P1" -u dbpilot -p "$APW" --workload oltp_read_write --tables "$TABLES" --table-size "$ROWS" >"$WORK/prepare.log" 2>&1 || { cat "$WORK/prepare.log" >&2; exit 1; }
echo "== desynced dump: writer oltp_write_only at $WRITE_RATE tx/s on node1 for ${WRITE_SECONDS}s; dump of node2 ($TABLES x $ROWS rows) at ${DUMP_AT}s"
printf '%-14s %9s %12s %12s %12s %12s %12s %10s %12s %s\n' dump "dump s" "tps before" "tps during" "tps after" "p99 during" "max during" "FC sent" "paused ms" "desync report"
for rep in $(seq 1 "$REPEATS"); do for mode in plain desync; do
	flags=()
	[ "$mode" = desync ] && flags=(--desync)
	"$DBP" bench run 127.0.0.1:"$P1" -u dbpilot -p "$APW" --workload oltp_write_only --tables "$TABLES" --table-size "$ROWS" \
		--rate "$WRITE_RATE" --duration "${WRITE_SECONDS}s" --json >"$WORK/w-$mode.json" 2>/dev/null &
	wp=$!
	sleep "$DUMP_AT"
	fc0=$(wsrep "$P2" wsrep_flow_control_sent)
	pz0=$(wsrep "$P1" wsrep_flow_control_paused_ns)
	t0=$(date +%s.%N)
	rm -rf "$WORK/dump-$mode"
	"$DBP" dump --sandbox gbench --node 2 "${flags[@]}" --out "$WORK/dump-$mode" --json >"$WORK/dump-$mode.json" 2>"$WORK/dump-$mode.err" || { log "dump $mode failed"; tail -3 "$WORK/dump-$mode.err" >&2; }
	t1=$(date +%s.%N)
	sleep 10
	fc1=$(wsrep "$P2" wsrep_flow_control_sent)
	pz1=$(wsrep "$P1" wsrep_flow_control_paused_ns)
	wait "$wp" || true
	python3 - "$WORK/w-$mode.json" "$WORK/dump-$mode.json" "$mode" "$t0" "$t1" "$fc0" "$fc1" "$pz0" "$pz1" <<'PY'
import json, sys, datetime
w = json.load(open(sys.argv[1]))
mode, t0, t1 = sys.argv[3], float(sys.argv[4]), float(sys.argv[5])
fc = int(sys.argv[7]) - int(sys.argv[6])
paused_ms = (int(sys.argv[9]) - int(sys.argv[8])) / 1e6
def ts(iv):
    return datetime.datetime.fromisoformat(iv["start"].replace("Z", "+00:00")).timestamp()
def window(a, b):
    # the intervals that overlap [a, b]
    ivs = [iv for iv in w["intervals"] if ts(iv) < b and ts(iv) + iv["seconds"] > a]
    if not ivs:
        return float("nan"), float("nan"), float("nan")
    n = sum(iv["transactions"] for iv in ivs)
    secs = sum(iv["seconds"] for iv in ivs)
    return n / secs, max(iv["p99_ms"] for iv in ivs), max(iv["max_ms"] for iv in ivs)
before = window(t0 - 8, t0)
during = window(t0, t1)
after = window(t1, t1 + 10)
rep = ""
try:
    d = json.load(open(sys.argv[2]))
    r = d.get("desync")
    if r:
        rep = "desynced %.0f ms, recv queue max %s (%s at OFF)" % (r["desynced_ns"] / 1e6, r["max_recv_queue"], r["recv_queue_at_off"])
except Exception:
    pass
print("%-14s %9.2f %12.1f %12.1f %12.1f %12.2f %12.2f %10d %12.1f %s" % (mode, t1 - t0, before[0], during[0], after[0], during[1], during[2], fc, paused_ms, rep))
PY
done; done
fi
