#!/usr/bin/env bash
# bench/remotewrite.sh — what remote write costs and sustains.
#
# Starts a real Prometheus (Debian package prometheus, with
# --web.enable-remote-write-receiver) and a real VictoriaMetrics (package
# victoria-metrics) on loopback, each with fresh data, and drives dbpilot's
# remote-write sink (bench/remotewritebench) at each as fast as the
# receiver takes it, with the queue never overflowing: INSTANCES instances
# x SERIES series x STEPS one-second steps (default 50 x 1000 x 100 = 5M
# samples, serve's shape for 50 servers), at the default batch size (2000
# samples per request) and at 10000. It prints, per receiver: samples/s
# sustained, the sink's CPU seconds per million samples (Write, protobuf,
# snappy, HTTP), the receiver's, bytes per sample on the wire, requests;
# then VictoriaMetrics' figures relative to Prometheus'.
#
# Usage: bash bench/remotewrite.sh [INSTANCES] [SERIES] [STEPS]
# Needs: prometheus and victoria-metrics (make test-deps installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
INSTANCES="${1:-50}"
SERIES="${2:-1000}"
STEPS="${3:-100}"
bash scripts/install-deps.sh --test >/dev/null
for b in prometheus victoria-metrics; do
	command -v "$b" >/dev/null || { echo "remotewrite.sh: $b is not installed (make test-deps)" >&2; exit 2; }
done
WORK="$(mktemp -d /tmp/dbprw.XXXXXX)"
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$WORK"
}
trap cleanup EXIT
go build -o "$WORK/remotewritebench" ./bench/remotewritebench

PROM=127.0.0.1:17191
VM=127.0.0.1:17428
printf 'global: {scrape_interval: 15s}\n' >"$WORK/prom.yml"
prometheus --config.file="$WORK/prom.yml" --storage.tsdb.path="$WORK/prom" --web.listen-address="$PROM" \
	--web.enable-remote-write-receiver >"$WORK/prom.log" 2>&1 &
PIDS+=($!)
PROM_PID=$!
victoria-metrics -storageDataPath="$WORK/vm" -httpListenAddr="$VM" >"$WORK/vm.log" 2>&1 &
PIDS+=($!)
VM_PID=$!
for addr in "$PROM" "$VM"; do
	for _ in $(seq 1 100); do
		curl -fsS "http://$addr/api/v1/query?query=1" >/dev/null 2>&1 && break
		sleep 0.2
	done
	curl -fsS "http://$addr/api/v1/query?query=1" >/dev/null || { echo "remotewrite.sh: receiver at $addr did not start" >&2; cat "$WORK"/*.log >&2; exit 1; }
done

echo "dbpilot remote-write benchmark — $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, $(go version | awk '{print $3}'), $(prometheus --version 2>&1 | head -1 | awk '{print "prometheus", $3}'), victoria-metrics $(dpkg-query -W -f='${Version}' victoria-metrics 2>/dev/null || echo '?')"
echo "shape: $INSTANCES instances x $SERIES series x $STEPS steps of 1 s, queue capacity 500000, one request in flight per target"
echo
"$WORK/remotewritebench" -header | tee "$WORK/table"
for per in 2000 10000; do
	"$WORK/remotewritebench" -name prometheus -url "http://$PROM/api/v1/write" -receiver-pid "$PROM_PID" \
		-instances "$INSTANCES" -series "$SERIES" -steps "$STEPS" -max-samples-per-send "$per" | tee -a "$WORK/table"
	"$WORK/remotewritebench" -name victoria-metrics -url "http://$VM/api/v1/write" -receiver-pid "$VM_PID" \
		-instances "$INSTANCES" -series "$SERIES" -steps "$STEPS" -max-samples-per-send "$per" | tee -a "$WORK/table"
done
echo
echo "VictoriaMetrics relative to Prometheus (same batch size):"
awk 'NR > 1 { k = $2; if ($1 == "prometheus") { p[k] = $5; pc[k] = $6; pr[k] = $7 } else { v[k] = $5; vc[k] = $6; vr[k] = $7 } }
END { for (k in p) printf "  per_send %-6s samples/s x%.2f   sink CPU/M x%.2f   receiver CPU/M x%.2f\n", k, v[k] / p[k], vc[k] / pc[k], vr[k] / pr[k] }' "$WORK/table" | sort -k2 -n
