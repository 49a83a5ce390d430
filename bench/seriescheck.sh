#!/usr/bin/env bash
# bench/seriescheck.sh — do two serve binaries expose the same series?
#
# Starts a small simulated fleet (bin/dbpilot-sim, MariaDB 10.11 clusters of
# 5, performance_schema on), runs each serve on it in turn with the same
# configuration for a while (every collector, the 60 s ones included, has
# run), reads its /metrics and compares the two: metric names with their
# label names (values differ between runs: digests, thread states). A name
# or label set only one of them has is printed; the exit status is 1 when
# the second lacks any the first has.
#
# Usage: bash bench/seriescheck.sh OLD_SERVE [NEW_SERVE]
#   NEW_SERVE defaults to this tree's (make build)
#   SERIES_INSTANCES=10  SERIES_SECONDS=75  SERIES_BASE_PORT=25500
set -euo pipefail
cd "$(dirname "$0")/.."
OLD="$(realpath "${1:?usage: bash bench/seriescheck.sh OLD_SERVE [NEW_SERVE]}")"
if [ -n "${2:-}" ]; then
	NEW="$(realpath "$2")"
else
	make build >/dev/null
	NEW="$PWD/bin/dbpilot"
fi
N="${SERIES_INSTANCES:-10}"
SECS="${SERIES_SECONDS:-75}"
BASE_PORT="${SERIES_BASE_PORT:-25500}"
go build -trimpath -o bin/dbpilot-sim ./cmd/dbpilot-sim
WORK="$(mktemp -d /tmp/dbpseries.XXXXXX)"
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill -TERM -- "-$p" 2>/dev/null || kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

CTL=$(free_port)
API=$(free_port)
setsid bin/dbpilot-sim --instances "$N" --cluster-size 5 --base-port "$BASE_PORT" --control "127.0.0.1:$CTL" \
	--write-config "$WORK/serve.yaml" --serve-listen "127.0.0.1:$API" --serve-state "$WORK/state.db" >"$WORK/sim.out" 2>"$WORK/sim.log" &
PIDS+=($!)
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$CTL/stats" >/dev/null 2>&1 && break; sleep 0.1; done

run() { # BINARY OUT: serve for SECS seconds, then its /metrics
	rm -rf "$WORK/state.db"* "$WORK/metrics"
	setsid "$1" serve --config "$WORK/serve.yaml" >"$WORK/serve.out" 2>"$WORK/serve.log" &
	local pid=$!
	sleep "$SECS"
	curl -sf --max-time 60 "http://127.0.0.1:$API/metrics" >"$2" || { echo "no /metrics from $1:"; tail -5 "$WORK/serve.log"; exit 1; }
	kill -TERM -- "-$pid" 2>/dev/null || kill "$pid"
	wait "$pid" 2>/dev/null || true
}
echo "series check — $(date -u +%Y-%m-%dT%H:%M:%SZ), $N simulated instances, ${SECS}s each: $("$OLD" --version) against $("$NEW" --version)"
run "$OLD" "$WORK/old.txt"
run "$NEW" "$WORK/new.txt"
python3 - "$WORK/old.txt" "$WORK/new.txt" <<'PY'
import re, sys
def shapes(path):
    out = set()
    for line in open(path):
        if not line.strip() or line.startswith("#"):
            continue
        m = re.match(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s', line)
        if not m:
            continue
        labels = sorted(set(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="', m.group(3) or "")))
        out.add(m.group(1) + "{" + ",".join(labels) + "}")
    return out
old, new = shapes(sys.argv[1]), shapes(sys.argv[2])
names = lambda s: {x.split("{")[0] for x in s}
print(f"old: {len(old)} name+label sets ({len(names(old))} names); new: {len(new)} ({len(names(new))} names)")
lost, gained = sorted(old - new), sorted(new - old)
for x in lost:
    print("  only old:", x)
for x in gained:
    print("  only new:", x)
print("same series names and labels" if not lost and not gained else f"{len(lost)} only in the old, {len(gained)} only in the new")
sys.exit(1 if lost else 0)
PY
