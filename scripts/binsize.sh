#!/usr/bin/env bash
# binsize.sh prints what dbpilot's binary weighs and which modules the bytes
# come from.
#
#   bash scripts/binsize.sh                  # top 30 modules
#   TOP=60 bash scripts/binsize.sh           # more rows
#   TAGS=grpcnotrace bash scripts/binsize.sh # try build tags
#
# It builds ./cmd/dbpilot twice: once as `make build` does (-trimpath,
# -ldflags "-s -w -X main.version=...", the Makefile's CGO_ENABLED), whose
# file size is the figure that ships, and once unstripped, whose symbol table
# (`go tool nm -size`) it sums per module: each symbol goes to its package
# (`go list -deps` maps packages to modules). Only code and initialised data
# are attributed: the function table (.gopclntab), type descriptors and
# strings have no per-package symbol, so the sum is smaller than the file;
# a module's share of them is roughly proportional to its code. Figures are
# bytes. Needs GNU awk (gawk).
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
TOP=${TOP:-30}
TAGS=${TAGS:-}
CGO=${CGO_ENABLED:-$(sed -n 's/^CGO_ENABLED *?\{0,1\}= *//p' Makefile)}
CGO=${CGO:-$($GO env CGO_ENABLED)}

if ! command -v gawk >/dev/null 2>&1; then
	echo "binsize: needs GNU awk (gawk)" >&2
	exit 2
fi
version=$(git describe --tags --always --dirty 2>/dev/null || echo dev)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

CGO_ENABLED=$CGO $GO build -tags "$TAGS" -trimpath -ldflags "-s -w -X main.version=$version" -o "$tmp/stripped" ./cmd/dbpilot
CGO_ENABLED=$CGO $GO build -tags "$TAGS" -o "$tmp/full" ./cmd/dbpilot
CGO_ENABLED=$CGO $GO list -tags "$TAGS" -deps \
	-f '{{.ImportPath}} {{with .Module}}{{.Path}}{{else}}std{{end}}' ./cmd/dbpilot >"$tmp/pkgs"
$GO tool nm -size "$tmp/full" >"$tmp/nm"

size=$(wc -c <"$tmp/stripped")
nmods=$($GO version -m "$tmp/stripped" | awk '$1 == "dep"' | wc -l)
echo "binary (make build flags, tags \"$TAGS\", CGO_ENABLED=$CGO): $size bytes, $nmods dependency modules"
echo

gawk -v top="$TOP" -v total="$size" '
FNR == NR { mod[$1] = $2; next }
# Bounds of the zero-filled sections, which take no room in the file.
$4 == "runtime.bss" { bss = strtonum("0x" $1) }
$4 == "runtime.enoptrbss" { ebss = strtonum("0x" $1) }
{ sym[NR] = $0 }
END {
	for (i in sym) {
		n = split(sym[i], f, " ")
		addr = strtonum("0x" f[1]); sz = f[2] + 0
		if (sz == 0 || (addr >= bss && addr < ebss)) continue
		name = f[4]; for (j = 5; j <= n; j++) name = name " " f[j]
		# type:.eq.T, go:itab.*T,I, [N]T: the package is the one of T.
		sub(/^type:\.(eq|hash)\./, "", name); sub(/^type:/, "", name)
		sub(/^go:itab\./, "", name)
		while (name ~ /^(\*|\[[0-9]*\])/) sub(/^(\*|\[[0-9]*\])/, "", name)
		sub(/[\[,].*/, "", name)        # generic arguments, itab interface
		slash = match(name, /\/[^\/]*$/) # last path element
		rest = slash ? substr(name, slash + 1) : name
		dot = index(rest, ".")
		pkg = (slash ? substr(name, 1, slash) : "") (dot ? substr(rest, 1, dot - 1) : rest)
		if (pkg ~ /^vendor\//) m = "std"
		else if (pkg in mod) m = mod[pkg]
		else if (name ~ /^go:/ || pkg !~ /\./) m = "std"   # runtime tables, go:func.*
		else m = "other"
		sum[m] += sz; all += sz
	}
	printf "%-64s %10s %6s\n", "module", "bytes", "%"
	k = 0
	PROCINFO["sorted_in"] = "@val_num_desc"
	for (m in sum) {
		if (++k > top) { rest_b += sum[m]; rest_n++; continue }
		printf "%-64s %10d %5.1f%%\n", m, sum[m], 100 * sum[m] / all
	}
	if (rest_n) printf "%-64s %10d %5.1f%%\n", "(" rest_n " more modules)", rest_b, 100 * rest_b / all
	printf "%-64s %10d\n", "attributed (code and data symbols)", all
	print ""
	# Families pulled in by Prometheus config (remote-write auth, service
	# discovery) and util/logging (client-go), which dbpilot never calls.
	split("Kubernetes AWS Azure GCP gRPC/genproto OpenTelemetry", order, " ")
	for (m in sum) {
		g = ""
		if (m ~ /^(k8s\.io|sigs\.k8s\.io)\// || m ~ /^(gopkg\.in\/inf\.v0|github\.com\/fxamacker\/cbor|github\.com\/x448\/float16|github\.com\/json-iterator\/go|github\.com\/modern-go\/)/) g = "Kubernetes"
		else if (m ~ /^github\.com\/aws\// || m == "github.com/prometheus/sigv4") g = "AWS"
		else if (m ~ /^github\.com\/(Azure|AzureAD)\// || m == "github.com/pkg/browser") g = "Azure"
		else if (m ~ /^(cloud\.google\.com\/|google\.golang\.org\/api|github\.com\/googleapis\/|github\.com\/google\/s2a-go)/) g = "GCP"
		else if (m ~ /^google\.golang\.org\/(grpc|genproto)/) g = "gRPC/genproto"
		else if (m ~ /^go\.opentelemetry\.io\//) g = "OpenTelemetry"
		if (g != "") { fam[g] += sum[m]; famall += sum[m] }
	}
	printf "%-64s %10s\n", "cloud/k8s family (modules by path)", "bytes"
	for (i = 1; i <= 6; i++) printf "%-64s %10d\n", order[i], fam[order[i]]
	printf "%-64s %10d %5.1f%% of attributed\n", "total", famall, 100 * famall / all
}' "$tmp/pkgs" "$tmp/nm"
