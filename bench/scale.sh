#!/usr/bin/env bash
# bench/scale.sh — what one `dbpilot serve` costs watching 100, 500 and 1000
# instances at 1 s resolution, and whether failure detection stays fast.
#
# The instances are simulated by bin/dbpilot-sim (internal/simulator): MariaDB
# 10.11 impersonated over the wire protocol on loopback ports, in clusters of
# one primary and 4 replicas, answering every statement serve sends (all
# collectors at their default intervals, the liveness session, discovery).
# It measures scale, not correctness: no SQL engine behind it.
#
# For each fleet size: start the simulator and one serve (auto_failover off:
# detection only), wait until every instance is discovered and monitored,
# then over a window measure
#   - serve's CPU (utime+stime from /proc) per instance per second and in cores,
#   - RSS (VmRSS at the end, VmHWM peak),
#   - discovery cycle: dbpilot_discovery_seconds, the time one observation of
#     a cluster takes (crawl, analysis, state save), p50/p99/max over all
#     clusters; and the oldest observed_at in /api/clusters (every cluster is
#     observed each poll_interval when it stays near 1 s),
#   - TSDB: head series, samples/s, WAL growth extrapolated to a day, and the
#     blocks a day would take at 1.3 bytes per sample (Prometheus' typical
#     compressed size),
#   - server-side cost: statements the simulated servers answered per
#     instance-second over the window (the simulator counts them),
# then kill primaries one after the other (POST /kill to the simulator: every
# socket reset at once) and take the detection time as serve's log line
# "primary ... is unreachable and all N reachable replicas lost it" minus the
# kill, both wall clock on this machine; each killed primary is revived.
# False alerts: MySQLDown alerts that fired, from serve's start to its stop,
# for an instance that was never killed (every instance of the simulator is
# up unless killed); CollectionLagging (serve behind, not the server) is
# counted beside them.
#
# serve runs with GOMEMLIMIT=1GiB, the target's memory budget: serve's own
# default soft limit (170 MB, set when GOMEMLIMIT is unset) is below the live
# heap of a 100-instance fleet, where the garbage collector then runs
# without pause (SCALE_GOMEMLIMIT=default measures that).
#
# Usage: bash bench/scale.sh
#   SCALE_SIZES="100 500 1000"  fleet sizes     SCALE_WINDOW=60   seconds measured
#   SCALE_KILLS=20              kills per size  SCALE_BASE_PORT=23000 (below the
#                               ephemeral port range: the simulator listens on N ports)
#   SCALE_NICE=0                niceness of the simulator and serve (e.g. -10 on a
#                               machine other work shares: what is measured is serve's
#                               own CPU time, but detection and readiness need the cores)
#   SCALE_SHARE=1               after the sizes, 1 serve x 600 vs 3 serves x 600 with
#                               etcd (bench/share.sh), when etcd is installed
#   SCALE_GOMEMLIMIT=1GiB       serve's GOMEMLIMIT ("default": unset)
#   SCALE_READY_TIMEOUT=180     seconds to wait for every instance to be discovered
#                               and monitored; past it, measured anyway ("ready" NaN)
#   SCALE_COLLECT=0             metrics collection off (metrics.disabled): discovery,
#                               liveness and detection alone
#   SCALE_KEEP=1                keep the work directory (logs, profiles)
#   SCALE_PROFILE=1             build serve with -tags pprof and print its top
#                               CPU and heap costs (a 20 s profile after each window)
#   SCALE_SERVE=PATH            the serve binary measured (default: this tree's), e.g.
#                               an older commit's for a before/after in the same
#                               conditions; built with -tags pprof for SCALE_PROFILE=1
set -euo pipefail
cd "$(dirname "$0")/.."
SIZES="${SCALE_SIZES:-100 500 1000}"
WINDOW="${SCALE_WINDOW:-60}"
KILLS="${SCALE_KILLS:-20}"
NICE="${SCALE_NICE:-0}"
SHARE="${SCALE_SHARE:-1}"
BASE_PORT="${SCALE_BASE_PORT:-23000}"
MEMLIMIT="${SCALE_GOMEMLIMIT:-1GiB}"
READY_TIMEOUT="${SCALE_READY_TIMEOUT:-180}"
PROFILE="${SCALE_PROFILE:-0}"
COLLECT="${SCALE_COLLECT:-1}"

make build >/dev/null
go build -trimpath -o bin/dbpilot-sim ./cmd/dbpilot-sim
DBP="$PWD/bin/dbpilot"
SERVE_BIN="$DBP"
if [ -n "${SCALE_SERVE:-}" ]; then
	SERVE_BIN="$(realpath "$SCALE_SERVE")"
elif [ "$PROFILE" = 1 ]; then
	go build -trimpath -tags pprof -o bin/dbpilot-pprof ./cmd/dbpilot
	SERVE_BIN="$PWD/bin/dbpilot-pprof"
fi
SERVE_ENV=()
[ "$MEMLIMIT" != default ] && SERVE_ENV+=("GOMEMLIMIT=$MEMLIMIT")
SIM="$PWD/bin/dbpilot-sim"
WORK="$(mktemp -d /tmp/dbpscale.XXXXXX)"
PIDS=()
# Each process runs in its own session (setsid): cleanup ends its group.
stop() { # PID...
	for p in "$@"; do kill -TERM -- "-$p" 2>/dev/null || kill -TERM "$p" 2>/dev/null || true; done
	for p in "$@"; do
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL -- "-$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
}
REPORTED=0
cleanup() {
	[ ${#PIDS[@]} -gt 0 ] && stop "${PIDS[@]}"
	if [ "$REPORTED" = 0 ] && [ -n "${RESULTS:-}" ]; then
		echo "(stopped early: the sizes measured so far)"
		report || true
	fi
	if [ "${SCALE_KEEP:-0}" = 1 ]; then echo "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
cpu_ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
status_kb() { awk -v k="$2:" '$1==k{print $2}' "/proc/$1/status"; }
HZ=$(getconf CLK_TCK)

echo "dbpilot scale benchmark — $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores (load average $(cut -d" " -f1-3 /proc/loadavg) at start), $(awk '/MemTotal/{printf "%.0f GB", $2/1048576}' /proc/meminfo), serve $("$SERVE_BIN" --version)"
echo "simulated MariaDB 10.11 fleets (bin/dbpilot-sim), clusters of 5, $([ "$COLLECT" = 1 ] && echo 'every collector at its default interval' || echo 'no collection'), window ${WINDOW}s, ${KILLS} primary kills per size, serve GOMEMLIMIT=$MEMLIMIT$([ "$PROFILE" = 1 ] && echo ', profiled (-tags pprof)')"
RESULTS="$WORK/results.tsv"
: >"$RESULTS"

report() { # the table of every size measured so far, then the profiles
	REPORTED=1
	[ -s "$RESULTS" ] || return 0
python3 - "$RESULTS" "$HZ" <<'PY'
import sys, statistics, math
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
hz = float(sys.argv[2])
def pct(xs, q):
    if not xs:
        return math.nan
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, math.ceil(q * len(xs)) - 1))]
print()
print(f"{'instances':>9} {'ready s':>8} {'cores':>6} {'cpu ms/inst/s':>13} {'sim cores':>9} {'RSS MB':>7} {'peak MB':>7} "
      f"{'disc p50/p99/max ms':>20} {'stale s':>7} {'detect p50/p99/max ms (kills)':>30} {'false alerts':>12} {'lagging':>7} {'stmts/inst/s':>12} {'series':>9} {'samples/s':>9} {'WAL GB/day':>10} {'blocks GB/day':>13}")
verdicts = []
for r in rows:
    n, ready, win, cpu, simcpu, rss, hwm, disc, dets, series, sps, w0, w1, unknown, stmts, false = r
    n, win = int(n), float(win)
    cores = int(cpu) / hz / win
    simcores = int(simcpu) / hz / win
    p50, p99, mx, stale = disc.split()
    d = [float(x) for x in dets.split() if x != "NaN"]
    missed = len(dets.split()) - len(d)
    dp50, dp99, dmax = pct(d, 0.5), pct(d, 0.99), (max(d) if d else math.nan)
    fdown, flag = (int(x) for x in false.split())
    sps = float(sps)
    wal = (float(w1) - float(w0)) / win * 86400 / 1e9
    blocks = sps * 86400 * 1.3 / 1e9
    det = f"{dp50:.0f}/{dp99:.0f}/{dmax:.0f} ({len(d)}" + (f", {missed} missed)" if missed else ")")
    print(f"{n:>9} {float(ready):>8.1f} {cores:>6.2f} {cores*1000/n:>13.3f} {simcores:>9.2f} {int(rss)/1024:>7.0f} {int(hwm)/1024:>7.0f} "
          f"{p50+'/'+p99+'/'+mx:>20} {float(stale):>7.2f} {det:>30} {fdown:>12} {flag:>7} {float(stmts):>12.1f} {float(series):>9.0f} {sps:>9.0f} {wal:>10.2f} {blocks:>13.2f}")
    if int(unknown):
        print(f"{'':>9} ({unknown} statements the simulator did not know)")
    checks = [
        ("ready <= 30 s", float(ready) <= 30),
        ("detection p50 <= 20 ms", dp50 <= 20), ("p99 <= 100 ms", dp99 <= 100), ("max <= 250 ms", dmax <= 250),
        ("no missed detection", missed == 0), ("no false MySQLDown", fdown == 0),
    ]
    if n == 1000:
        checks += [("cores <= 0.5", cores <= 0.5), ("peak RSS <= 600 MB", int(hwm) / 1024 <= 600)]
    met = [c for c, ok in checks if ok]
    failed = [c for c, ok in checks if not ok]
    verdicts.append(f"{n} instances: " + ("every target met (" + ", ".join(met) + ")" if not failed else "MISSED: " + "; ".join(failed) + (" — met: " + ", ".join(met) if met else "")))
print()
print("ready: serve start until every instance is discovered and monitored (nan: not within SCALE_READY_TIMEOUT); cores: serve CPU / wall time; stale: oldest cluster observation;")
print("detect: kill of a primary until serve logs it dead; false alerts: instances never killed for which MySQLDown fired; lagging: instances CollectionLagging fired for (serve behind, not the server);")
print("stmts/inst/s: statements the simulated servers answered per instance-second; WAL GB/day: metrics dir growth over the window x 24 h; blocks GB/day: samples/s x 1.3 B x 86400")
print("targets (issue 26): ready <= 30 s; detection p50 <= 20 ms, p99 <= 100 ms, max <= 250 ms at every size; no false MySQLDown; at 1000 instances <= 0.5 core and <= 600 MB RSS")
for v in verdicts:
    print(v)
PY
if [ -f "$WORK/profiles.txt" ]; then cat "$WORK/profiles.txt"; fi
}

for N in $SIZES; do
	D="$WORK/$N"
	mkdir -p "$D"
	CTL=$(free_port)
	API=$(free_port)
	setsid nice -n "$NICE" "$SIM" --instances "$N" --cluster-size 5 --base-port "$BASE_PORT" --control "127.0.0.1:$CTL" \
		--write-config "$D/serve.yaml" --serve-listen "127.0.0.1:$API" --serve-state "$D/state.db" >"$D/sim.out" 2>"$D/sim.log" &
	SIMPID=$!
	PIDS+=("$SIMPID")
	for _ in $(seq 100); do curl -sf "http://127.0.0.1:$CTL/stats" >/dev/null 2>&1 && break; sleep 0.1; done
	[ "$COLLECT" = 1 ] || echo "metrics: {disabled: true}" >>"$D/serve.yaml"
	curl -sf "http://127.0.0.1:$CTL/stats" >/dev/null || { echo "dbpilot-sim did not start:"; cat "$D/sim.log"; exit 1; }
	T0=$(date +%s.%N)
	PPROF=$(free_port)
	env ${SERVE_ENV[@]+"${SERVE_ENV[@]}"} DBPILOT_PPROF="127.0.0.1:$PPROF" setsid nice -n "$NICE" "$SERVE_BIN" serve --config "$D/serve.yaml" >"$D/serve.out" 2>"$D/serve.log" &
	SERVE=$!
	PIDS+=("$SERVE")
	# Discovered: every instance in a cluster, reachable; monitored: mysql_up
	# for every instance.
	ready=""
	deadline=$(($(date +%s) + READY_TIMEOUT))
	while [ "$(date +%s)" -lt "$deadline" ]; do
		sleep 1
		kill -0 "$SERVE" 2>/dev/null || { echo "serve exited:"; tail -20 "$D/serve.log"; exit 1; }
		ready=$(python3 - "$API" "$N" "$COLLECT" <<'PY' || true
import json, sys, urllib.request, urllib.parse
api, n, collect = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
try:
    cs = json.load(urllib.request.urlopen(f"http://127.0.0.1:{api}/api/clusters", timeout=10))
    seen = sum(1 for c in cs for i in c.get("instances") or [] if i.get("reachable"))
    if not collect:
        print("yes" if seen >= n else f"no {seen} -")
        sys.exit()
    q = urllib.parse.quote("count(mysql_up == 1)")
    r = json.load(urllib.request.urlopen(f"http://127.0.0.1:{api}/api/metrics/query?expr={q}", timeout=10))
    res = r.get("data", r).get("result", r.get("series", []))
    up = 0
    if res:
        v = res[0].get("value") or res[0].get("points", [{}])[-1]
        up = int(float(v[1] if isinstance(v, list) else v.get("v", 0)))
    print("yes" if seen >= n and up >= n else f"no {seen} {up}")
except Exception as e:
    print("no", e)
PY
)
		[ "${ready%% *}" = yes ] && break
	done
	T1=$(date +%s.%N)
	if [ "${ready%% *}" != yes ]; then
		# Measure anyway: what a serve that cannot keep up costs is the result.
		echo "$N instances: not every instance discovered and monitored after ${READY_TIMEOUT}s (discovered, monitored: ${ready#no })"
		T1=NaN
	fi
	sleep 10 # collectors settle (global_variables and the 5 s collectors have run)

	# /metrics (every series, large) is read outside the CPU window.
	simq() { curl -s "http://127.0.0.1:$CTL/stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["queries"])'; }
	appended() { curl -s --max-time 120 "http://127.0.0.1:$API/metrics" >"$D/metrics.txt" || true; awk '$1=="dbpilot_tsdb_samples_appended_total"{print $2}' "$D/metrics.txt"; }
	a0=$(appended); ta0=$(date +%s.%N)
	q0=$(simq)
	c0=$(cpu_ticks "$SERVE"); s0=$(cpu_ticks "$SIMPID"); w0=$(du -sb "$D/metrics" 2>/dev/null | cut -f1 || true)
	t0=$(date +%s.%N)
	sleep "$WINDOW"
	c1=$(cpu_ticks "$SERVE"); s1=$(cpu_ticks "$SIMPID");
	q1=$(simq) w1=$(du -sb "$D/metrics" 2>/dev/null | cut -f1 || true)
	t1=$(date +%s.%N)
	rss=$(status_kb "$SERVE" VmRSS); hwm=$(status_kb "$SERVE" VmHWM)
	ta1=$(date +%s.%N); a1=$(appended)
	series=$(awk '$1=="dbpilot_tsdb_head_series"{print $2}' "$D/metrics.txt")
	sps=$(python3 -c "print((float('${a1:-nan}') - float('${a0:-nan}')) / ($ta1 - $ta0))")
	# Discovery pass durations over the window, and how stale the oldest
	# cluster observation is.
	disc=$(python3 - "$API" "$WINDOW" <<'PY'
import json, sys, urllib.request, urllib.parse, datetime
api, w = sys.argv[1], sys.argv[2]
def q(expr):
    u = f"http://127.0.0.1:{api}/api/metrics/query?expr=" + urllib.parse.quote(expr)
    try:
        r = json.load(urllib.request.urlopen(u, timeout=30))
    except Exception:  # no metrics store (SCALE_COLLECT=0), or serve too busy
        return float("nan")
    res = r.get("data", r).get("result", r.get("series", []))
    if not res:
        return float("nan")
    v = res[0].get("value") or res[0].get("points", [{}])[-1]
    return float(v[1] if isinstance(v, list) else v.get("v"))
p50 = q(f"quantile(0.5, quantile_over_time(0.5, dbpilot_discovery_seconds[{w}s]))")
p99 = q(f"quantile(0.99, quantile_over_time(0.99, dbpilot_discovery_seconds[{w}s]))")
mx = q(f"max(max_over_time(dbpilot_discovery_seconds[{w}s]))")
cs = json.load(urllib.request.urlopen(f"http://127.0.0.1:{api}/api/clusters", timeout=30))
now = datetime.datetime.now(datetime.timezone.utc)
ages = [(now - datetime.datetime.fromisoformat(c["observed_at"].replace("Z", "+00:00"))).total_seconds() for c in cs if c.get("observed_at")]
print(f"{p50*1000:.1f} {p99*1000:.1f} {mx*1000:.1f} {max(ages) if ages else float('nan'):.2f}")
PY
) 2>/dev/null || disc="nan nan nan nan"
	if [ "$PROFILE" = 1 ]; then
		go tool pprof -top -cum -nodecount=40 "http://127.0.0.1:$PPROF/debug/pprof/profile?seconds=20" >"$D/cpu.txt" 2>/dev/null || true
		go tool pprof -top -sample_index=inuse_space -nodecount=15 "http://127.0.0.1:$PPROF/debug/pprof/heap" >"$D/heap.txt" 2>/dev/null || true
		{
			echo
			echo "== profile at $N instances: CPU, cumulative (20 s)"
			sed -n '4,46p' "$D/cpu.txt"
			echo "== profile at $N instances: heap in use"
			sed -n '4,22p' "$D/heap.txt"
		} >>"$WORK/profiles.txt"
	fi
	# Detection: kill primaries of clusters spread over the fleet, one at a time.
	curl -s "http://127.0.0.1:$CTL/clusters" >"$D/clusters.json"
	dets=""
	killedports=""
	for k in $(seq "$KILLS"); do
		port=$(python3 -c "import json,sys; c=json.load(open('$D/clusters.json')); print(c[($k*len(c))//($KILLS+1) % len(c)]['primary']['port'])")
		killedports="$killedports $port"
		from=$(($(stat -c %s "$D/serve.log") + 1))
		killed=$(curl -s -XPOST "http://127.0.0.1:$CTL/kill?port=$port" | python3 -c 'import json,sys; print(json.load(sys.stdin)["unix_ms"])')
		det=""
		for _ in $(seq 100); do
			line=$(tail -c "+$from" "$D/serve.log" | grep -m1 "msg=\"primary 127.0.0.1:$port is unreachable and all" || true)
			if [ -n "$line" ]; then
				det=$(python3 -c "import datetime,sys; t=sys.argv[1].split()[0][5:]; print(int(datetime.datetime.fromisoformat(t.replace('Z','+00:00')).timestamp()*1000) - $killed)" "$line")
				break
			fi
			sleep 0.1
		done
		dets="$dets ${det:-NaN}"
		curl -s -XPOST "http://127.0.0.1:$CTL/revive?port=$port" >/dev/null
		sleep 1
	done
	unknown=$(curl -s "http://127.0.0.1:$CTL/stats" | python3 -c 'import json,sys; print(sum(json.load(sys.stdin)["unknown"].values()))')
	stop "$SERVE" "$SIMPID"
	PIDS=()
	# False alerts: MySQLDown fired for an instance never killed;
	# CollectionLagging (serve behind) beside them.
	false=$(python3 - "$D/serve.log" "$killedports" <<'PY'
import re, sys
killed = {f"127.0.0.1:{p}" for p in sys.argv[2].split()}
down, lag = set(), set()
for line in open(sys.argv[1], errors="replace"):
    if "msg=alert " not in line or "state=firing" not in line:
        continue
    m = re.search(r"alert=(\w+).* instance=(\S+)", line)
    if not m:
        continue
    if m.group(1) == "MySQLDown" and m.group(2) not in killed:
        down.add(m.group(2))
    elif m.group(1) == "CollectionLagging":
        lag.add(m.group(2))
print(len(down), len(lag))
PY
)
	printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n" "$N" "$(python3 -c "print(float('$T1')-$T0)")" \
		"$(python3 -c "print($t1-$t0)")" "$((c1 - c0))" "$((s1 - s0))" "$rss" "$hwm" "$disc" "$dets" "${series:-nan}" "$sps" "${w0:-nan}" "${w1:-nan}" "$unknown" \
		"$(python3 -c "print(($q1 - $q0) / ($t1 - $t0) / $N)")" "$false" >>"$RESULTS"
	errs=$(grep -c 'level=ERROR' "$D/serve.log" || true)
	if [ "${errs:-0}" -gt 0 ]; then
		echo "$N instances: serve logged $errs errors, the first ones:"
		awk '/level=ERROR/ && n < 3 { print "  " substr($0, 1, 220); n++ }' "$D/serve.log"
	fi
	echo "$N instances: measured"
done

report
if [ "$SHARE" = 1 ]; then
	if command -v etcd >/dev/null; then
		echo
		echo "== several serves sharing the fleet (bench/share.sh: 1 serve vs 3 through etcd)"
		bash bench/share.sh || echo "bench/share.sh failed (exit $?)"
	else
		echo "(3-serve figures skipped: etcd is not installed; scripts/install-deps.sh --test installs etcd-server)"
	fi
fi
exit 0
