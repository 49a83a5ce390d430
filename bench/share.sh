#!/usr/bin/env bash
# bench/share.sh — several serves sharing one fleet (coordination through
# etcd): what 3 serves cost together against 1 serve alone, on the same
# simulated fleet in the same run.
#
# The fleet is bin/dbpilot-sim (internal/simulator): N MariaDB 10.11
# instances impersonated on loopback ports, clusters of 5, counting every
# statement it answers (GET /stats: queries). Each run starts its serves,
# waits until every instance is collected (mysql_up for each, fleet-wide)
# and, with 3 serves, each by exactly one serve (/api/coordination:
# collecting sums to N), lets them settle, then measures over a window:
#   - serve CPU: utime+stime of every serve from /proc, in CPU-seconds
#     (summed over the serves) and in cores; etcd's CPU is shown apart;
#   - server-side statements per second: the simulator's count over the
#     window.
# Targets (issue 26): 3 serves x N within 1.1x of 1 serve x N for both.
# CPU-seconds are less sensitive to other load on the machine than
# wall-clock figures, but the serves share the cores with the simulator.
#
# Usage: bash bench/share.sh
#   SHARE_INSTANCES=600  fleet size       SHARE_WINDOW=60  seconds measured
#   SHARE_SERVES=3       serves sharing   SHARE_BASE_PORT=24000
#   SHARE_READY_TIMEOUT=180               SHARE_KEEP=1: keep the work directory
set -euo pipefail
cd "$(dirname "$0")/.."
N="${SHARE_INSTANCES:-600}"
WINDOW="${SHARE_WINDOW:-60}"
SERVES="${SHARE_SERVES:-3}"
BASE_PORT="${SHARE_BASE_PORT:-24000}"
READY_TIMEOUT="${SHARE_READY_TIMEOUT:-180}"

make build >/dev/null
go build -trimpath -o bin/dbpilot-sim ./cmd/dbpilot-sim
DBP="$PWD/bin/dbpilot"
SIM="$PWD/bin/dbpilot-sim"
command -v etcd >/dev/null || { echo "etcd is not installed (scripts/install-deps.sh --test installs etcd-server)"; exit 2; }
WORK="$(mktemp -d /tmp/dbpshare.XXXXXX)"
PIDS=()
stop() { # PID...: each runs in its own session (setsid)
	for p in "$@"; do kill -TERM -- "-$p" 2>/dev/null || kill -TERM "$p" 2>/dev/null || true; done
	for p in "$@"; do
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL -- "-$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
}
cleanup() {
	[ ${#PIDS[@]} -gt 0 ] && stop "${PIDS[@]}"
	if [ "${SHARE_KEEP:-0}" = 1 ]; then echo "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
cpu_ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
HZ=$(getconf CLK_TCK)
queries() { curl -sf "http://127.0.0.1:$CTL/stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["queries"])'; }

echo "dbpilot shared-fleet benchmark — $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores (load average $(cut -d" " -f1-3 /proc/loadavg) at start), $("$DBP" --version), etcd $(etcd --version | head -1 | awk '{print $3}')"
echo "simulated MariaDB 10.11 fleet (bin/dbpilot-sim): $N instances in clusters of 5; 1 serve alone vs $SERVES serves through etcd (lease_ttl 5s, the default); window ${WINDOW}s"

CTL=$(free_port)
setsid "$SIM" --instances "$N" --cluster-size 5 --base-port "$BASE_PORT" --control "127.0.0.1:$CTL" \
	--write-config "$WORK/base.yaml" >"$WORK/sim.out" 2>"$WORK/sim.log" &
SIMPID=$!
PIDS+=("$SIMPID")
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$CTL/stats" >/dev/null 2>&1 && break; sleep 0.1; done
curl -sf "http://127.0.0.1:$CTL/stats" >/dev/null || { echo "dbpilot-sim did not start:"; cat "$WORK/sim.log"; exit 1; }

EC=$(free_port)
EP=$(free_port)
setsid etcd --name share --data-dir "$WORK/etcd" --listen-client-urls "http://127.0.0.1:$EC" --advertise-client-urls "http://127.0.0.1:$EC" \
	--listen-peer-urls "http://127.0.0.1:$EP" --initial-advertise-peer-urls "http://127.0.0.1:$EP" --initial-cluster "share=http://127.0.0.1:$EP" \
	>"$WORK/etcd.log" 2>&1 &
ETCD=$!
PIDS+=("$ETCD")
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$EC/health" >/dev/null 2>&1 && break; sleep 0.1; done

RESULTS="$WORK/results.tsv"
: >"$RESULTS"

# run NAME COUNT: start COUNT serves (coordinated when COUNT > 1), wait,
# measure, stop them; appends a line to RESULTS.
run() {
	local name=$1 count=$2 apis=() pids=() i
	for i in $(seq "$count"); do
		local api d
		api=$(free_port)
		d="$WORK/$name-$i"
		mkdir -p "$d"
		sed "s|^listen: .*|listen: 127.0.0.1:$api|" "$WORK/base.yaml" >"$d/serve.yaml"
		printf 'state: %s\nmetrics: {dir: %s}\n' "$d/state.db" "$d/metrics" >>"$d/serve.yaml"
		if [ "$count" -gt 1 ]; then
			printf 'coordination:\n  id: s%d\n  etcd: {endpoints: [http://127.0.0.1:%d], prefix: /%s}\n' "$i" "$EC" "$name" >>"$d/serve.yaml"
		fi
		GOMEMLIMIT=1GiB setsid "$DBP" serve --config "$d/serve.yaml" >"$d/serve.out" 2>"$d/serve.log" &
		pids+=("$!")
		PIDS+=("$!")
		apis+=("$api")
	done
	local t0 ready="" deadline=$(($(date +%s) + READY_TIMEOUT))
	t0=$(date +%s)
	while [ "$(date +%s)" -lt "$deadline" ]; do
		sleep 2
		ready=$(python3 - "$N" "${apis[@]}" <<'PY' || true
import json, sys, urllib.request, urllib.parse
n, apis = int(sys.argv[1]), sys.argv[2:]
try:
    q = urllib.parse.quote("count(count_over_time(mysql_up[3s]) > 0)")
    r = json.load(urllib.request.urlopen(f"http://127.0.0.1:{apis[0]}/api/metrics/query?expr={q}", timeout=20))
    res = r["data"]["result"]
    up = int(float(res[0]["value"][1])) if res else 0
    collecting = 0
    if len(apis) > 1:
        for a in apis:
            collecting += json.load(urllib.request.urlopen(f"http://127.0.0.1:{a}/api/coordination", timeout=10))["collecting"]
    else:
        collecting = up
    print("yes" if up >= n and collecting == n else f"no up={up} collecting={collecting}")
except Exception as e:
    print("no", e)
PY
)
		[ "${ready%% *}" = yes ] && break
	done
	local took=$(($(date +%s) - t0))
	[ "${ready%% *}" = yes ] || echo "$name: not ready after ${READY_TIMEOUT}s (${ready#no }); measured anyway"
	sleep 15 # collectors settle; leadership handovers end
	local c0=0 c1=0 e0 e1 q0 q1 t1 t2 p
	for p in "${pids[@]}"; do c0=$((c0 + $(cpu_ticks "$p"))); done
	e0=$(cpu_ticks "$ETCD"); q0=$(queries); t1=$(date +%s.%N)
	sleep "$WINDOW"
	for p in "${pids[@]}"; do c1=$((c1 + $(cpu_ticks "$p"))); done
	e1=$(cpu_ticks "$ETCD"); q1=$(queries); t2=$(date +%s.%N)
	local per=""
	if [ "$count" -gt 1 ]; then
		for a in "${apis[@]}"; do
			per+="$(curl -sf "http://127.0.0.1:$a/api/coordination" | python3 -c 'import json,sys; s=json.load(sys.stdin); print(s["member"]+"="+str(s["collecting"]))') "
		done
	fi
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$count" "$took" "$((c1 - c0))" "$((e1 - e0))" "$((q1 - q0))" "$(awk -v a="$t1" -v b="$t2" 'BEGIN{print b-a}')" "$per" >>"$RESULTS"
	stop "${pids[@]}"
}

run single 1
run shared "$SERVES"

python3 - "$RESULTS" "$HZ" "$N" <<'PY'
import sys
hz, n = float(sys.argv[2]), int(sys.argv[3])
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
print()
print(f"{'run':<22} {'ready s':>7} {'serve CPU-s':>11} {'cores':>6} {'etcd CPU-s':>10} {'statements/s':>12} {'CPU ratio':>9} {'stmt ratio':>10}  collecting")
base = None
for name, count, took, cpu, ecpu, q, win, per in rows:
    win = float(win)
    cpus, qps = int(cpu) / hz, int(q) / win
    if base is None:
        base = (cpus, qps)
    label = f"{count} serve{'s' if int(count) > 1 else ''} x {n}"
    print(f"{label:<22} {took:>7} {cpus:>11.1f} {cpus / win:>6.2f} {int(ecpu) / hz:>10.1f} {qps:>12.0f} {cpus / base[0]:>8.2f}x {qps / base[1]:>9.2f}x  {per.strip() or '-'}")
cpu_r, q_r = int(rows[-1][3]) / hz / base[0], int(rows[-1][5]) / float(rows[-1][6]) / base[1]
print()
print("serve CPU-s: utime+stime of every serve over the window; statements/s: what the simulated servers answered; etcd apart")
print("target: total serve CPU and statements/s of the shared run within 1.1x of one serve: "
      + ("met" if cpu_r <= 1.1 and q_r <= 1.1 else "MISSED") + f" (CPU {cpu_r:.2f}x, statements {q_r:.2f}x)")
PY
