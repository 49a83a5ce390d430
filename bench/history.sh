#!/usr/bin/env bash
# bench/history.sh — what recording the topology history costs (issue 27):
# the share of serve's CPU spent because of it, and the bytes it adds to
# the state file, extrapolated to MB per 1000 instances per week. Targets:
# <= 1% of serve's CPU, <= 50 MB per 1000 instances per week.
#
# Two fleets, one serve each (built with -tags pprof, DBPILOT_PPROF;
# auto_failover off):
#   sim      1000 simulated instances (bin/dbpilot-sim, clusters of one
#            primary and 4 replicas, as bench/scale.sh starts them), serve
#            without metrics collection by default (HIST_SIM_COLLECT=0:
#            discovery, liveness, detection and the history): the history's
#            share of that lighter serve is an upper bound of its share of a
#            collecting one, and a collecting serve at 1000 instances on 2
#            shared cores falls behind (clusters observed every 30-120 s,
#            measured), which hides the churn it is to record;
#            churn: every HIST_SIM_EVERY s one replica is killed (POST /kill
#            to the simulator: it is unreachable) and the one killed
#            HIST_SIM_DOWN s before it is revived, each step in another
#            cluster (down long enough to be observed: at 1000 instances a
#            loaded serve observes a cluster every few seconds, not every
#            second);
#   sandbox  10 replication sandboxes of a primary and 4 replicas (`dbpilot
#            sandbox deploy`, real MariaDB: 50 mariadbd) in a temporary
#            DBPILOT_HOME, serve with every collector at its default interval
#            (HIST_SANDBOX_COLLECT=1); churn: every HIST_SANDBOX_EVERY s STOP SLAVE
#            SQL_THREAD on one replica and START SLAVE SQL_THREAD on the one
#            stopped before it, each step in another cluster.
# An event is one instance changing (a kill, a revive, a stop, a start); a
# recorded event, one that serve recorded (an instance change in the
# history). Churn leaves what it stopped running again at the end.
#
# For each fleet: wait until every instance is discovered and reachable,
# let the first observations (every instance recorded as joined) settle,
# then two windows:
#   steady  HIST_QUIET s without churn: what an unchanged fleet records
#           (should be nothing) and what comparing each observation costs;
#   churn   HIST_WINDOW s of churn at the rate above.
# In each window:
#   - CPU: a CPU profile of serve over the window (pprof, 100 Hz). The
#     history's share is the samples whose stack holds the history's code:
#     daemon.(*Daemon).recordHistory (snapshot, diff, queueing; the first
#     read of a cluster's recorded state), daemon.(*changeBatcher) (the
#     once-a-second write: sqlite.(*DB).RecordChanges, its JSON and SQLite's
#     work) and sqlite.pruneChanges (hourly; in a window only by chance);
#     plus its part of the garbage collector's background work: the GC's
#     samples (runtime.gcBgMarkWorker) times the history's share of the
#     bytes allocated over the window (a heap delta profile). Against <= 1%.
#     serve's CPU in cores (utime+stime from /proc) beside it.
#   - storage: the changes recorded (rows of topology_changes whose time is
#     in the window) per second, what they were (their summaries, most
#     frequent first), and the bytes the history's table and indexes take
#     (SQLite's dbstat: whole pages) read by bench/histstat from serve's
#     live state file: bytes per change is the growth over the churn window
#     divided by the rows it added (when it added 100 or more: whole pages),
#     else the table's average. Changes per event: the churn window's rows
#     less the steady window's rate, per recorded event. Beside it, how
#     stale serve's observations were (age of the oldest cluster
#     observation, p50 and max over the clusters, at the end of each
#     window): a serve that observes late sees fewer events. Extrapolated to MB per 1000
#     instances per week (x 604800 s x 1000 / instances):
#       (a) at the measured churn (a stress rate, far above a real fleet's),
#       (b) in the steady state (the steady window's rate),
#       (c) at each of HIST_ASSUMED events per instance per day (default
#           "24 1": every instance stops, or starts again, once an hour;
#           once a day), with the changes per event measured;
#     each against <= 50 MB; and the events per instance per week that
#     50 MB allows.
#
# Usage: bash bench/history.sh
#   HIST_FLEETS="sim sandbox"  which fleets, in that order
#   HIST_INSTANCES=1000        simulated instances (a multiple of 5)
#   HIST_SANDBOXES=10          sandboxes of HIST_NODES=5 nodes (1 primary, 4 replicas)
#   HIST_QUIET=30              seconds of the steady window (no churn)
#   HIST_WINDOW=60             seconds of the churn window
#   HIST_SIM_EVERY=1           seconds between churn steps, simulated fleet
#   HIST_SIM_DOWN=30           seconds a killed simulated replica stays down
#   HIST_SANDBOX_EVERY=2       seconds between churn steps, sandboxes
#   HIST_SANDBOX_DOWN=2        seconds a replica's SQL thread stays stopped
#   HIST_ASSUMED="24 1"        events per instance per day assumed for (c), each
#   HIST_BASE_PORT=26000       the simulator's first port (below the ephemeral
#                              range: it listens on HIST_INSTANCES ports)
#   HIST_SANDBOX_PORT=         first sandbox's --port-base, the next ones +10
#                              (default: each sandbox takes a free block)
#   HIST_GOMEMLIMIT=1GiB       serve's GOMEMLIMIT, as bench/scale.sh ("default": unset)
#   HIST_SIM_COLLECT=0         1: metrics collection on for the simulated fleet
#   HIST_SANDBOX_COLLECT=1     0: metrics collection off (metrics.disabled) for the sandboxes
#   HIST_READY_TIMEOUT=120     seconds to wait for every instance to be reachable
#                              (past it, measured anyway)
#   HIST_KEEP=1                keep the work directory (logs, profiles, state files)
set -euo pipefail
cd "$(dirname "$0")/.."
FLEETS="${HIST_FLEETS:-sim sandbox}"
SIM_N="${HIST_INSTANCES:-1000}"
SANDBOXES_N="${HIST_SANDBOXES:-10}"
NODES="${HIST_NODES:-5}"
QUIET="${HIST_QUIET:-30}"
WINDOW="${HIST_WINDOW:-60}"
SIM_EVERY="${HIST_SIM_EVERY:-1}"
SIM_DOWN="${HIST_SIM_DOWN:-30}"
SB_EVERY="${HIST_SANDBOX_EVERY:-2}"
SB_DOWN="${HIST_SANDBOX_DOWN:-2}"
SIM_COLLECT="${HIST_SIM_COLLECT:-0}"
SB_COLLECT="${HIST_SANDBOX_COLLECT:-1}"
ASSUMED="${HIST_ASSUMED:-24 1}"
BASE_PORT="${HIST_BASE_PORT:-26000}"
SB_PORT="${HIST_SANDBOX_PORT:-}"
MEMLIMIT="${HIST_GOMEMLIMIT:-1GiB}"
READY_TIMEOUT="${HIST_READY_TIMEOUT:-120}"
SETTLE=15 # seconds after readiness: the first observations' joins written, collectors settled

make build >/dev/null
go build -trimpath -o bin/dbpilot-sim ./cmd/dbpilot-sim
go build -trimpath -tags pprof -o bin/dbpilot-pprof ./cmd/dbpilot
go build -trimpath -o bin/histstat ./bench/histstat
DBP="$PWD/bin/dbpilot"
SERVE_BIN="$PWD/bin/dbpilot-pprof"
SIM="$PWD/bin/dbpilot-sim"
HISTSTAT="$PWD/bin/histstat"
SERVE_ENV=()
[ "$MEMLIMIT" != default ] && SERVE_ENV+=("GOMEMLIMIT=$MEMLIMIT")
WORK="$(mktemp -d /tmp/dbphist.XXXXXX)"
export DBPILOT_HOME="$WORK/home" # the sandboxes live here
mkdir -p "$DBPILOT_HOME"
PIDS=()
SANDBOXES=()
# Each long-lived process runs in its own session (setsid): stop ends its group.
stop() { # PID...
	for p in "$@"; do kill -TERM -- "-$p" 2>/dev/null || kill -TERM "$p" 2>/dev/null || true; done
	for p in "$@"; do
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL -- "-$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
}
destroy_sandboxes() {
	for s in ${SANDBOXES[@]+"${SANDBOXES[@]}"}; do "$DBP" sandbox destroy "$s" >/dev/null 2>&1 || true; done
	SANDBOXES=()
}
REPORTED=0
cleanup() {
	[ ${#PIDS[@]} -gt 0 ] && stop "${PIDS[@]}"
	destroy_sandboxes
	if [ "$REPORTED" = 0 ] && [ -s "${RESULTS:-/nonexistent}" ]; then
		echo "(stopped early: the fleets measured so far)"
		report || true
	fi
	if [ "${HIST_KEEP:-0}" = 1 ]; then echo "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
cpu_ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
now_ns() { date +%s%N; }
HZ=$(getconf CLK_TCK)

echo "dbpilot topology history cost — $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores (load average $(cut -d" " -f1-3 /proc/loadavg) at start), $(awk '/MemTotal/{printf "%.0f GB", $2/1048576}' /proc/meminfo), serve $("$SERVE_BIN" --version) (-tags pprof), GOMEMLIMIT=$MEMLIMIT"
echo "per fleet: steady window ${QUIET}s (no churn), churn window ${WINDOW}s, auto_failover off; metrics collection: simulated fleet $([ "$SIM_COLLECT" = 1 ] && echo on || echo off), sandboxes $([ "$SB_COLLECT" = 1 ] && echo on || echo off)"
RESULTS="$WORK/results.jsonl"
: >"$RESULTS"

# wait_ready API N: until N instances are reachable in /api/clusters;
# prints the seconds it took, NaN past HIST_READY_TIMEOUT, "exited" when
# serve did.
wait_ready() {
	local t0 deadline seen
	t0=$(date +%s.%N)
	deadline=$(($(date +%s) + READY_TIMEOUT))
	while [ "$(date +%s)" -lt "$deadline" ]; do
		if ! kill -0 "$SERVE" 2>/dev/null; then
			echo "serve exited:" >&2
			tail -20 "$D/serve.log" >&2
			echo exited
			return
		fi
		seen=$(curl -s --max-time 10 "http://127.0.0.1:$1/api/clusters" | python3 -c 'import json,sys; print(sum(1 for c in json.load(sys.stdin) for i in c.get("instances") or [] if i.get("reachable")))' 2>/dev/null || echo 0)
		if [ "${seen:-0}" -ge "$2" ]; then
			python3 -c "print(round($(date +%s.%N) - $t0, 1))"
			return
		fi
		sleep 1
	done
	echo "$2 instances: only ${seen:-0} reachable after ${READY_TIMEOUT}s; measured anyway" >&2
	echo NaN
}

# profile NAME SECONDS: serve's CPU profile and heap delta profile over
# SECONDS, into $D/NAME.cpu and $D/NAME.heap (in the background: wait for
# ${PROF[@]}).
profile() {
	PROF=()
	curl -s --max-time $(($2 + 60)) -o "$D/$1.cpu" "http://127.0.0.1:$PPROF/debug/pprof/profile?seconds=$2" &
	PROF+=($!)
	curl -s --max-time $(($2 + 60)) -o "$D/$1.heap" "http://127.0.0.1:$PPROF/debug/pprof/heap?seconds=$2" &
	PROF+=($!)
}

# sleep_until MS: sleep until the Unix time MS (milliseconds).
sleep_until() {
	local d=$(($1 - $(date +%s%3N)))
	[ "$d" -gt 0 ] && sleep "$(awk -v d="$d" 'BEGIN{printf "%.3f", d/1000}')"
	return 0
}

# churn SECONDS EVERY DOWN TARGETS-FILE: every EVERY s the next target (a
# line of TARGETS-FILE, in order, round robin) is taken down and the one
# taken down DOWN s before brought back, until SECONDS have passed; each
# event is logged in $D/events (Unix ns, action, target), and the targets
# left down in $D/churn.down. down/up TARGET are the fleet's own.
churn() {
	local secs=$1 every=$2 targets=() i=0 lag start end next t
	mapfile -t targets <"$4"
	lag=$(awk -v d="$3" -v e="$every" 'BEGIN{l = int(d / e + 0.5); print (l < 1 ? 1 : l)}')
	start=$(date +%s%3N)
	end=$((start + secs * 1000))
	: >"$D/churn.down"
	while :; do
		next=$(awk -v s="$start" -v i="$i" -v e="$every" 'BEGIN{printf "%d", s + i*e*1000}')
		[ "$next" -ge "$end" ] && break
		sleep_until "$next"
		t=${targets[$((i % ${#targets[@]}))]}
		if down "$t"; then echo "$(now_ns) down $t" >>"$D/events"; fi
		if [ "$i" -ge "$lag" ]; then
			t=${targets[$(((i - lag) % ${#targets[@]}))]}
			if up "$t"; then echo "$(now_ns) up $t" >>"$D/events"; fi
		fi
		i=$((i + 1))
		for ((k = (i > lag ? i - lag : 0); k < i; k++)); do echo "${targets[$((k % ${#targets[@]}))]}"; done >"$D/churn.down"
	done
}

# staleness API: the age of each cluster's last observation, p50 and max
# in seconds.
staleness() {
	curl -s --max-time 30 "http://127.0.0.1:$1/api/clusters" | python3 -c '
import datetime, json, sys
now = datetime.datetime.now(datetime.timezone.utc)
ages = sorted((now - datetime.datetime.fromisoformat(c["observed_at"].replace("Z", "+00:00"))).total_seconds() for c in json.load(sys.stdin) if c.get("observed_at"))
print(f"{ages[len(ages) // 2]:.1f} {ages[-1]:.1f}" if ages else "nan nan")' 2>/dev/null || echo "nan nan"
}

# measure FLEET INSTANCES WHAT: the two windows on the running fleet (serve
# $SERVE, API $API, pprof $PPROF, state file $STATE), one line of results.
measure() {
	local fleet=$1 n=$2 what=$3 down=$4 tq0 tq1 tc0 tc1 c0 c1 c2 c3 s0 s1 s2 CH stq stc
	sleep "$SETTLE"
	: >"$D/events"
	# steady
	s0=$("$HISTSTAT" "$STATE")
	tq0=$(now_ns); c0=$(cpu_ticks "$SERVE")
	profile steady "$QUIET"
	wait "${PROF[@]}"
	tq1=$(now_ns); c1=$(cpu_ticks "$SERVE")
	stq=$(staleness "$API")
	s1=$("$HISTSTAT" "$STATE")
	# churn
	tc0=$(now_ns); c2=$(cpu_ticks "$SERVE")
	churn "$WINDOW" "$EVERY" "$down" "$D/targets" &
	CH=$!
	PIDS+=("$CH")
	profile churn "$WINDOW"
	wait "${PROF[@]}"
	tc1=$(now_ns); c3=$(cpu_ticks "$SERVE")
	stc=$(staleness "$API")
	wait "$CH" || true
	unset 'PIDS[${#PIDS[@]}-1]'
	sleep 3 # the last observations' changes written (once a second)
	s2=$("$HISTSTAT" -span "$tq0:$tq1" -span "$tc0:$tc1" "$STATE")
	while read -r t; do up "$t" || echo "$fleet: could not bring $t back"; done <"$D/churn.down"
	for p in steady churn; do
		go tool pprof -traces -unit=ms "$D/$p.cpu" >"$D/$p.cpu.txt" 2>"$D/pprof.err" || { echo "$fleet: no CPU profile ($p): $(head -1 "$D/pprof.err")"; : >"$D/$p.cpu.txt"; }
		go tool pprof -traces -sample_index=alloc_space -unit=B "$D/$p.heap" >"$D/$p.alloc.txt" 2>"$D/pprof.err" || { echo "$fleet: no heap profile ($p): $(head -1 "$D/pprof.err")"; : >"$D/$p.alloc.txt"; }
	done
	go tool pprof -top -cum -nodecount=25 -focus='daemon\.\(\*Daemon\)\.recordHistory|daemon\.\(\*changeBatcher\)' "$D/churn.cpu" >"$D/churn.history.top" 2>/dev/null || true
	python3 - "$fleet" "$n" "$what" "$HZ" "$tq0" "$tq1" "$tc0" "$tc1" "$c0" "$c1" "$c2" "$c3" "$s0" "$s1" "$s2" "$D" "$READY" "$stq" "$stc" "$COLLECTING" >>"$RESULTS" <<'PY'
import json, re, sys
(fleet, n, what, hz, tq0, tq1, tc0, tc1, c0, c1, c2, c3, s0, s1, s2, d, ready, stq, stc, collect) = sys.argv[1:]
n, hz = int(n), float(hz)
tq0, tq1, tc0, tc1 = (int(x) / 1e9 for x in (tq0, tq1, tc0, tc1))
s0, s1, s2 = json.loads(s0), json.loads(s1), json.loads(s2)

UNITS = {"ns": 1e-6, "us": 1e-3, "ms": 1, "s": 1e3, "m": 6e4, "min": 6e4, "h": 3.6e6,
         "": 1, "B": 1, "kB": 1024, "KB": 1024, "MB": 1024**2, "GB": 1024**3, "TB": 1024**4}
VAL = re.compile(r"^\s*(-?[0-9.]+)([A-Za-z]*)\s{2,}(\S.*)$")
RECORD = re.compile(r"daemon\.\(\*Daemon\)\.recordHistory(\.|$)")
WRITE = re.compile(r"daemon\.\(\*changeBatcher\)\.|sqlite\.\(\*DB\)\.RecordChanges(\.|$)|sqlite\.pruneChanges(\.|$)")
GC = re.compile(r"runtime\.gcBgMarkWorker(\.|$)")

def traces(path):
    """(value, [frames]) of each stack of a `pprof -traces` listing."""
    out, val, frames = [], None, []
    for line in open(path, errors="replace"):
        if line.startswith("-----------+"):
            if val is not None:
                out.append((val, frames))
            val, frames = None, []
            continue
        m = VAL.match(line)
        if m and val is None and m.group(2) in UNITS:
            val = float(m.group(1)) * UNITS[m.group(2)]
            frames.append(m.group(3).replace(" (inline)", "").strip())
        elif val is not None and line.strip():
            frames.append(line.strip().replace(" (inline)", ""))
    if val is not None:
        out.append((val, frames))
    return out

def cpu(window):
    tr = traces(f"{d}/{window}.cpu.txt")
    total = sum(v for v, _ in tr)
    rec = sum(v for v, f in tr if any(RECORD.search(x) for x in f))
    wr = sum(v for v, f in tr if not any(RECORD.search(x) for x in f) and any(WRITE.search(x) for x in f))
    gc = sum(v for v, f in tr if any(GC.search(x) for x in f))
    al = traces(f"{d}/{window}.alloc.txt")
    atotal = sum(v for v, _ in al)
    ahist = sum(v for v, f in al if any(RECORD.search(x) or WRITE.search(x) for x in f))
    ashare = ahist / atotal if atotal else 0.0
    return {"samples_ms": total, "record_ms": rec, "write_ms": wr, "gc_ms": gc,
            "alloc_share": ashare, "gc_part_ms": gc * ashare}

events = [l.split() for l in open(f"{d}/events") if l.strip()]
ev_churn = sum(1 for e in events if tc0 <= int(e[0]) / 1e9 < tc1)
print(json.dumps({
    "fleet": fleet, "instances": n, "what": what, "collect": collect == "1", "ready_s": float(ready),
    "quiet_s": tq1 - tq0, "window_s": tc1 - tc0,
    "cores_quiet": (int(c1) - int(c0)) / hz / (tq1 - tq0),
    "cores_churn": (int(c3) - int(c2)) / hz / (tc1 - tc0),
    "cpu_quiet": cpu("steady"), "cpu_churn": cpu("churn"),
    "events": ev_churn,
    "rows_quiet": s2["in_span"][0], "rows_churn": s2["in_span"][1],
    "inst_quiet": s2["in_span_by_kind"][0].get("instance", 0), "inst_churn": s2["in_span_by_kind"][1].get("instance", 0),
    "stale_quiet": [float(x) for x in stq.split()], "stale_churn": [float(x) for x in stc.split()],
    "rows_start": s0["rows"], "rows_before": s1["rows"], "rows_end": s2["rows"],
    "bytes_before": s1["page_bytes"], "bytes_end": s2["page_bytes"], "used_end": s2["used_bytes"],
    "by_kind": s2["by_kind"], "avg_state": s2["avg_state_bytes"], "avg_cluster_state": s2["avg_cluster_state_bytes"],
    "avg_summary": s2["avg_summary_bytes"],
    "kinds_quiet": s2["span_kinds"][0], "kinds_churn": s2["span_kinds"][1],
}))
PY
	# Alerts firing (MySQLDown of a killed replica) are no error of serve's.
	errs=$(grep 'level=ERROR' "$D/serve.log" | grep -vc 'msg=alert ' || true)
	if [ "${errs:-0}" -gt 0 ]; then
		echo "$fleet: serve logged $errs errors, the first ones:"
		grep 'level=ERROR' "$D/serve.log" | grep -v 'msg=alert ' | awk 'n < 3 { print "  " substr($0, 1, 220); n++ }'
	fi
	if grep -q 'level=WARN.*topology history' "$D/serve.log"; then
		echo "$fleet: serve warned about the topology history:"
		grep 'level=WARN.*topology history' "$D/serve.log" | head -3 | cut -c1-220 | sed 's/^/  /'
	fi
}

start_serve() { # CONFIG
	PPROF=$(free_port)
	env ${SERVE_ENV[@]+"${SERVE_ENV[@]}"} DBPILOT_PPROF="127.0.0.1:$PPROF" setsid "$SERVE_BIN" serve --config "$1" >"$D/serve.out" 2>"$D/serve.log" &
	SERVE=$!
	PIDS+=("$SERVE")
}

# ---- 1. simulated fleet -------------------------------------------------------
run_sim() {
	D="$WORK/sim"
	mkdir -p "$D"
	local simpid
	CTL=$(free_port)
	API=$(free_port)
	STATE="$D/state.db"
	setsid "$SIM" --instances "$SIM_N" --cluster-size 5 --base-port "$BASE_PORT" --control "127.0.0.1:$CTL" \
		--write-config "$D/serve.yaml" --serve-listen "127.0.0.1:$API" --serve-state "$STATE" >"$D/sim.out" 2>"$D/sim.log" &
	simpid=$!
	PIDS+=("$simpid")
	for _ in $(seq 100); do curl -sf "http://127.0.0.1:$CTL/stats" >/dev/null 2>&1 && break; sleep 0.1; done
	curl -sf "http://127.0.0.1:$CTL/stats" >/dev/null || { echo "dbpilot-sim did not start:"; cat "$D/sim.log"; exit 1; }
	[ "$SIM_COLLECT" = 1 ] || echo "metrics: {disabled: true}" >>"$D/serve.yaml"
	# The replicas, by replica index then cluster: each step in another cluster.
	curl -s "http://127.0.0.1:$CTL/clusters" | python3 -c '
import json, sys
cs = json.load(sys.stdin)
for i in range(max(len(c["replicas"]) for c in cs)):
    for c in cs:
        if i < len(c["replicas"]):
            print(c["replicas"][i]["port"])' >"$D/targets"
	down() { curl -sf -XPOST "http://127.0.0.1:$CTL/kill?port=$1" >/dev/null; }
	up() { curl -sf -XPOST "http://127.0.0.1:$CTL/revive?port=$1" >/dev/null; }
	EVERY=$SIM_EVERY
	start_serve "$D/serve.yaml"
	READY=$(wait_ready "$API" "$SIM_N")
	[ "$READY" = exited ] && exit 1
	echo "sim: $SIM_N simulated instances reachable after ${READY}s"
	COLLECTING=$SIM_COLLECT
	measure sim "$SIM_N" "every ${SIM_EVERY}s a replica killed, the one killed ${SIM_DOWN}s before revived" "$SIM_DOWN"
	stop "$SERVE" "$simpid"
	PIDS=()
	echo "sim: measured"
}

# ---- 2. sandbox fleet ---------------------------------------------------------
run_sandbox() {
	D="$WORK/sandbox"
	mkdir -p "$D"
	local user=bench pass=bench-history-pw i name pb=() port n avail
	avail=$(awk '/MemAvailable/{print int($2/1024)}' /proc/meminfo)
	# A 5-node sandbox takes about 0.6 GB (small buffers): refuse to start
	# what does not fit, and say so.
	n=$SANDBOXES_N
	while [ "$n" -gt 0 ] && [ $((n * NODES * 150)) -gt $((avail - 2048)) ]; do n=$((n - 1)); done
	if [ "$n" -lt "$SANDBOXES_N" ]; then
		echo "sandbox: $((SANDBOXES_N * NODES)) mariadbd do not fit in ${avail} MB available; $((n * NODES)) instead"
	fi
	API=$(free_port)
	STATE="$D/state.db"
	{
		echo "listen: 127.0.0.1:$API"
		echo "state: $STATE"
		echo "token: bench"
		echo "credentials: {user: $user, password: $pass}"
		echo "replication: {user: repl, password: unused}"
		[ "$SB_COLLECT" = 1 ] || echo "metrics: {disabled: true}"
		echo "clusters:"
	} >"$D/serve.yaml"
	: >"$D/replicas"
	for i in $(seq 0 $((n - 1))); do
		name="hist$i"
		pb=()
		[ -n "$SB_PORT" ] && pb=(--port-base $((SB_PORT + i * 10)))
		SANDBOXES+=("$name")
		"$DBP" sandbox deploy "$name" --topology replication --nodes "$NODES" ${pb[@]+"${pb[@]}"} >"$D/deploy-$name.log" 2>&1 || {
			echo "sandbox deploy $name failed:"; tail -5 "$D/deploy-$name.log"; exit 1; }
		# serve's account (what the heartbeat and SHOW SLAVE HOSTS need),
		# made on the primary: it replicates.
		"$DBP" sandbox sql "$name" node1 "CREATE USER '$user'@'127.0.0.1' IDENTIFIED BY '$pass'; GRANT ALL PRIVILEGES ON *.* TO '$user'@'127.0.0.1'" >/dev/null
		port=$("$DBP" sandbox status "$name" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["port"])')
		echo "  - {name: $name, seeds: ['127.0.0.1:$port'], auto_failover: false}" >>"$D/serve.yaml"
	done
	# The replicas, by node then sandbox: each step in another cluster.
	for k in $(seq 2 "$NODES"); do for s in "${SANDBOXES[@]}"; do echo "$s node$k"; done; done >"$D/targets"
	local rss
	rss=$(for s in "${SANDBOXES[@]}"; do
		"$DBP" sandbox status "$s" --json | python3 -c 'import json,sys; print("\n".join(str(n["pid"]) for n in json.load(sys.stdin)))'
	done | while read -r p; do awk '/^VmRSS:/{print $2}' "/proc/$p/status"; done | awk '{kb += $1} END {print int(kb / 1024)}')
	echo "sandbox: $((n * NODES)) mariadbd ($n sandboxes of $NODES nodes) running, ${rss} MB RSS together, $(awk '/MemAvailable/{print int($2/1048576)}' /proc/meminfo) GB still available"
	down() { "$DBP" sandbox sql $1 "STOP SLAVE SQL_THREAD" >/dev/null 2>&1; }
	up() { "$DBP" sandbox sql $1 "START SLAVE SQL_THREAD" >/dev/null 2>&1; }
	EVERY=$SB_EVERY
	start_serve "$D/serve.yaml"
	READY=$(wait_ready "$API" $((n * NODES)))
	[ "$READY" = exited ] && exit 1
	echo "sandbox: $((n * NODES)) instances reachable after ${READY}s"
	COLLECTING=$SB_COLLECT
	measure sandbox $((n * NODES)) "every ${SB_EVERY}s STOP SLAVE SQL_THREAD on a replica, START on the one stopped ${SB_DOWN}s before" "$SB_DOWN"
	stop "$SERVE"
	PIDS=()
	destroy_sandboxes
	echo "sandbox: measured"
}

report() {
	REPORTED=1
	[ -s "$RESULTS" ] || return 0
	python3 - "$RESULTS" "$ASSUMED" <<'PY'
import json, math, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
assumed = [float(x) for x in sys.argv[2].split()]
WEEK = 7 * 86400
CPU_TARGET, MB_TARGET = 1.0, 50.0
nan = math.nan

def share(c):
    t = c["samples_ms"]
    if not t:
        return nan, nan
    direct = (c["record_ms"] + c["write_ms"]) / t * 100
    return direct, direct + c["gc_part_ms"] / t * 100

def judged(v, target, text):
    if math.isnan(v):
        return text + " ?"
    return text + (" met" if v <= target else " MISSED")

cols = []
for r in rows:
    f = {}
    f["fleet"] = f"{r['instances']} {'simulated' if r['fleet'] == 'sim' else 'MariaDB'}" + ("" if r["collect"] else ", no collection")
    f["ready"] = f"{r['ready_s']:.0f} s"
    f["cores"] = f"{r['cores_quiet']:.2f} / {r['cores_churn']:.2f}"
    for w in ("quiet", "churn"):
        c = r[f"cpu_{w}"]
        d, tot = share(c)
        f[f"cpu_{w}"] = judged(tot, CPU_TARGET, f"{tot:.2f}% ({d:.2f}% + GC {tot - d:.2f}%)")
        f[f"split_{w}"] = f"{c['record_ms']:.0f} / {c['write_ms']:.0f} / {c['gc_part_ms']:.0f} of {c['samples_ms']:.0f}"
    ev_s = r["events"] / r["window_s"]
    q = r["rows_quiet"] / r["quiet_s"]
    ch = r["rows_churn"] / r["window_s"]
    # Recorded events: the churn window's instance changes beyond the
    # steady window's rate.
    seen = max(0.0, r["inst_churn"] - r["inst_quiet"] / r["quiet_s"] * r["window_s"])
    f["events"] = f"{r['events']} ({ev_s:.2f}/s) / {seen:.0f}"
    f["stale"] = "{:.1f}/{:.1f}, {:.1f}/{:.1f}".format(*r["stale_quiet"], *r["stale_churn"])
    f["rows_s"] = f"{q:.2f} / {ch:.2f}"
    # CPU per change: the write's samples over both windows per change
    # written in them (10 ms samples: few changes, coarse).
    written = r["rows_quiet"] + r["rows_churn"]
    wms = r["cpu_quiet"]["write_ms"] + r["cpu_churn"]["write_ms"]
    f["write_per_change"] = f"{wms / written:.3f} ({wms:.0f} ms / {written})" if written else "nan"
    per_event = max(0.0, r["rows_churn"] - q * r["window_s"]) / seen if seen else nan
    f["per_event"] = f"{per_event:.2f}"
    drows = r["rows_end"] - r["rows_before"]
    dbytes = r["bytes_end"] - r["bytes_before"]
    avg = r["bytes_end"] / r["rows_end"] if r["rows_end"] else nan
    if drows >= 100:
        per_change, how = dbytes / drows, "growth"
    else:
        per_change, how = avg, "table avg"
    f["bytes"] = f"{per_change:.0f} ({how}; avg {avg:.0f})"
    f["payload"] = f"{r['avg_state']:.0f} / {r['avg_cluster_state']:.0f} / {r['avg_summary']:.0f}"
    f["table"] = f"{r['rows_end']} rows, {r['bytes_end'] / 1e6:.2f} MB"
    k = 1000 / r["instances"]
    mb = lambda rows_per_s: rows_per_s * per_change * WEEK * k / 1e6
    f["a"] = judged(mb(ch), MB_TARGET, f"{mb(ch):.1f}")
    f["b"] = judged(mb(q), MB_TARGET, f"{mb(q):.1f}")
    for i, a in enumerate(assumed):
        v = mb(r["instances"] * a / 86400 * per_event)
        f[f"c{i}"] = judged(v, MB_TARGET, f"{v:.1f}")
    allowed = MB_TARGET * 1e6 / (1000 * per_event * per_change) if per_event > 0 and per_change > 0 else nan
    f["allowed"] = f"{allowed:.0f} ({allowed / 7:.1f} a day)"
    cols.append((r, f))

W = 34
print()
print(f"{'':<50} {'target':>6}  " + "".join(f"{f['fleet']:>{W}}" for _, f in cols))
lines = [
    ("all instances reachable after serve's start", "", "ready"),
    ("serve CPU, cores (steady / churn)", "", "cores"),
    ("history share of serve's CPU, steady", "<= 1%", "cpu_quiet"),
    ("history share of serve's CPU, churn", "<= 1%", "cpu_churn"),
    ("  ms record / write / GC part of ms (steady)", "", "split_quiet"),
    ("  ms record / write / GC part of ms (churn)", "", "split_churn"),
    ("  write CPU ms per change (both windows)", "", "write_per_change"),
    ("cluster observation age s, p50/max (steady, churn)", "", "stale"),
    ("churn events in the window: made / recorded", "", "events"),
    ("changes recorded per second (steady / churn)", "", "rows_s"),
    ("changes per recorded event (net of steady rate)", "", "per_event"),
    ("bytes per change (pages, dbstat)", "", "bytes"),
    ("record text B: state / cluster state / summary", "", "payload"),
    ("history at the end", "", "table"),
    ("MB/1000 instances/week: (a) measured churn", "<= 50", "a"),
    ("  (b) steady state, no churn", "<= 50", "b"),
]
for i, a in enumerate(assumed):
    lines.append((f"  (c) {a:g} event(s) per instance per day", "<= 50", f"c{i}"))
lines.append(("events per instance per week within 50 MB", "", "allowed"))
for label, target, key in lines:
    print(f"{label:<50} {target:>6}  " + "".join(f"{f[key]:>{W}}" for _, f in cols))
print()
for r, f in cols:
    print(f"{f['fleet']}: churn: {r['what']}; records at the end by kind {r['by_kind']}")
    for w, name in (("quiet", "steady window"), ("churn", "churn window")):
        ks = r[f"kinds_{w}"]
        print(f"  {name}: " + ("; ".join(f"{k['count']} x \"{k['summary']}\"" for k in ks) if ks else "nothing recorded"))
print("history share: CPU samples whose stack holds daemon.(*Daemon).recordHistory (record: snapshot, diff, queue) or daemon.(*changeBatcher),")
print("  sqlite RecordChanges, pruneChanges (write); plus the GC's background samples x the history's share of the bytes allocated (GC part); 10 ms a sample")
print("bytes per change: growth of the history's pages (table and both indexes) over the churn window / rows it added (100 or more), else the")
print("  table's average; MB/week: changes/s x bytes per change x 604800 s, scaled to 1000 instances")
print("targets (issue 27): <= 1% of serve's CPU; <= 50 MB per 1000 instances per week. (a) is a stress rate, not a fleet's; the last row is")
print("  the rate of events (an instance stops, or starts again) that 50 MB a week allows")
PY
}

for f in $FLEETS; do
	case "$f" in
	sim) run_sim ;;
	sandbox) run_sandbox ;;
	*) echo "HIST_FLEETS: unknown fleet $f (sim or sandbox)"; exit 2 ;;
	esac
done
echo "load average at the end: $(cut -d" " -f1-3 /proc/loadavg)"
report
