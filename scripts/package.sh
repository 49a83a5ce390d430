#!/usr/bin/env bash
# package.sh builds dbpilot's .deb with nfpm (make package):
# $DIST/dbpilot_<DEB_VERSION>_<GOARCH>.deb from packaging/nfpm.yaml.
#
# It stages in $DIST/stage-<GOARCH>: the binary (built like `make build`:
# -trimpath, LDFLAGS with -s -w and the version), the example configuration
# (serve --print-default-config with the state under /var/lib/dbpilot), man
# pages (cobra/doc, compiled in only here: tools/mandoc), bash/zsh/fish
# completions (dbpilot completion), and the copyright file (the licences of
# every module compiled into the binary, from the module cache).
#
# nfpm (pinned in tools/go.mod) and cobra/doc (tools/mandoc/go.mod) live in
# tools modules of their own: dbpilot's go.mod and binary do not change.
#
# Environment: GO (go), VERSION (git describe), LDFLAGS (the Makefile's),
# GOARCH (amd64 or arm64; default the host's), DIST (dist).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
GO=${GO:-go}
VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
LDFLAGS=${LDFLAGS:-"-s -w -X main.version=$VERSION"}
GOARCH=${GOARCH:-$($GO env GOARCH)}
DIST=${DIST:-dist}
hostarch=$($GO env GOHOSTARCH)
case $GOARCH in
amd64 | arm64) ;;
*)
	echo "package: GOARCH=$GOARCH: the package is built for amd64 or arm64" >&2
	exit 2
	;;
esac
mkdir -p "$DIST"
DIST=$(cd "$DIST" && pwd)
STAGE=$DIST/stage-$GOARCH
rm -rf "$STAGE"
mkdir -p "$STAGE/man" "$STAGE/completion"

# debVersion is VERSION as a Debian version: no leading v, a commit
# without a tag sorts below any release (0.0.0~git<hash>), and git
# describe's -N-gHASH[-dirty] become +N+gHASH[+dirty] (after the release).
debVersion() {
	local v=${1#v}
	if ! [[ $v =~ ^[0-9]+\.[0-9] ]]; then
		v="0.0.0~git$v"
	fi
	printf '%s' "${v//-/+}"
}
DEB_VERSION=$(debVersion "$VERSION")

echo "== package: dbpilot $VERSION ($DEB_VERSION) for linux/$GOARCH in $DIST"
CGO_ENABLED=0 GOOS=linux GOARCH=$GOARCH $GO build -trimpath -ldflags "$LDFLAGS" -o "$STAGE/dbpilot" ./cmd/dbpilot
bin=$STAGE/dbpilot
if [ "$GOARCH" != "$hostarch" ]; then
	# The files generated from the commands come from a binary that runs here.
	CGO_ENABLED=0 GOARCH=$hostarch $GO build -trimpath -ldflags "$LDFLAGS" -o "$STAGE/dbpilot-host" ./cmd/dbpilot
	bin=$STAGE/dbpilot-host
fi

# The example configuration: every key at its default, the state and
# metrics in the service's state directory.
{
	echo "# /etc/dbpilot/dbpilot.yml.example (package dbpilot $VERSION). Copy it to"
	echo "# /etc/dbpilot/dbpilot.yml (install -m 0640 -g dbpilot), set the accounts and"
	echo "# clusters, check it with 'dbpilot serve --config /etc/dbpilot/dbpilot.yml"
	echo "# --check-config', then 'systemctl enable --now dbpilot' (docs/deployment.md)."
	env -u DBPILOT_USER DBPILOT_HOME=/var/lib/dbpilot HOME=/var/lib/dbpilot "$bin" serve --print-default-config
} >"$STAGE/dbpilot.yml.example"

# Shell completions, from cobra's completion command.
"$bin" completion bash >"$STAGE/completion/dbpilot.bash"
"$bin" completion zsh >"$STAGE/completion/_dbpilot"
"$bin" completion fish >"$STAGE/completion/dbpilot.fish"

# Man pages: dbpilot built from tools/mandoc with one more file in
# cmd/dbpilot (an overlay) that writes them with cobra/doc.
cat >"$STAGE/mandoc-overlay.json" <<JSON
{"Replace": {"$root/cmd/dbpilot/zz_mandoc.go": "$root/tools/mandoc/cmd_dbpilot_mandoc.go.in"}}
JSON
CGO_ENABLED=0 GOARCH=$hostarch $GO -C tools/mandoc build -trimpath -ldflags "-X main.version=$VERSION" \
	-overlay "$STAGE/mandoc-overlay.json" -o "$STAGE/dbpilot-mandoc" github.com/dbpilot/dbpilot/cmd/dbpilot
DBPILOT_MANDOC_DIR=$STAGE/man "$STAGE/dbpilot-mandoc"
gzip -9n "$STAGE"/man/*.1

# The copyright file: dbpilot's, then the licence of every module
# compiled into the binary (the go.mod replacements in third_party/ are
# patched copies whose licences are kept there).
modcache=$($GO env GOMODCACHE)
# modDir is a module's directory in the module cache (upper case is !lower).
declare -A seen
modDir() { printf '%s/%s@%s' "$modcache" "$(printf '%s' "$1" | sed 's/[A-Z]/!\L&/g')" "$2"; }
{
	cat packaging/copyright
	printf '\n------------------------------------------------------------------------\n'
	printf 'Compiled into /usr/bin/dbpilot: the Go runtime and standard library (%s)\n\n' "$($GO env GOVERSION)"
	cat "$($GO env GOROOT)/LICENSE"
	$GO version -m "$bin" | awk '$1 == "dep" { dep = $2; ver = $3; print dep, ver, "" } $1 == "=>" { print dep, ver, $2 }' |
		sed 's/ \(.*\) $/ \1 -/' |
		while read -r mod ver repl; do
			if [ "$repl" != - ]; then
				dir=$root/${repl#./}
			else
				dir=$(modDir "$mod" "$ver")
			fi
			lic=$(find "$dir" -maxdepth 1 -type f \( -iname 'LICEN[CS]E*' -o -iname 'COPYING*' -o -iname 'NOTICE*' \) 2>/dev/null | sort)
			if [ -z "$lic" ]; then
				echo "package: no licence file for $mod $ver in $dir (is it in the module cache? go mod download)" >&2
				exit 2
			fi
			printf '\n------------------------------------------------------------------------\n'
			printf 'Compiled into /usr/bin/dbpilot: %s %s%s\n\n' "$mod" "$ver" "$([ "$repl" != - ] && echo " (patched copy in dbpilot's $repl)")"
			# A licence text given before is named, not repeated.
			for f in $lic; do
				sum=$(md5sum <"$f" | cut -c1-32)
				if [ -n "${seen[$sum]:-}" ]; then
					printf '%s: the same text as %s above.\n' "$(basename "$f")" "${seen[$sum]}"
				else
					seen[$sum]="$mod's $(basename "$f")"
					cat "$f"
				fi
			done
		done
	printf '\n------------------------------------------------------------------------\n'
	printf 'Embedded in /usr/bin/dbpilot (the web console): Preact, htm, uPlot\n\n'
	cat web/static/vendor/preact-htm/LICENSE-preact web/static/vendor/preact-htm/LICENSE-htm web/static/vendor/uplot/LICENSE
} >"$STAGE/copyright"

# nfpm itself, built from its pinned module.
GOARCH=$hostarch $GO -C tools build -o "$STAGE/nfpm" github.com/goreleaser/nfpm/v2/cmd/nfpm
rm -f "$DIST"/dbpilot_*_"$GOARCH".deb
DEB_VERSION=$DEB_VERSION GOARCH=$GOARCH STAGE=$STAGE "$STAGE/nfpm" package --config packaging/nfpm.yaml --packager deb --target "$DIST/"
ls "$DIST"/dbpilot_*_"$GOARCH".deb
