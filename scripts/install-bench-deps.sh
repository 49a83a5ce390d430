#!/usr/bin/env bash
# Installs the peers and tools the backup benchmark (bench/backup.sh) needs
# and the machine lacks: mydumper (Debian package mydumper: mydumper and
# myloader), sysbench (the dataset), GNU time (/usr/bin/time -v, peak RSS) and
# percona-toolkit (pt-kill, the watchdog's peer in bench/queries.sh).
# Idempotent: does nothing when all are found.
set -euo pipefail

have() { command -v "$1" >/dev/null 2>&1; }

pkgs=()
{ have mydumper && have myloader; } || pkgs+=(mydumper)
have sysbench || pkgs+=(sysbench)
[ -x /usr/bin/time ] || pkgs+=(time)
have pt-kill || pkgs+=(percona-toolkit)
[ ${#pkgs[@]} -eq 0 ] && exit 0

if ! have apt-get; then
	echo "install-bench-deps: missing ${pkgs[*]} and this is not a Debian/Ubuntu system; install them with your package manager" >&2
	exit 1
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
	if have sudo; then
		SUDO="sudo"
	else
		echo "install-bench-deps: need root to install ${pkgs[*]} (no sudo found); run: apt-get install ${pkgs[*]}" >&2
		exit 1
	fi
fi
echo "install-bench-deps: installing ${pkgs[*]} with apt-get" >&2
export DEBIAN_FRONTEND=noninteractive
# Install from the current lists first; refresh them only when that fails.
if ! $SUDO apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null 2>&1; then
	$SUDO apt-get update -qq
	$SUDO apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
fi
for c in mydumper myloader sysbench; do
	have "$c" || { echo "install-bench-deps: $c still not found after installing ${pkgs[*]}" >&2; exit 1; }
done
[ -x /usr/bin/time ] || { echo "install-bench-deps: /usr/bin/time still not found" >&2; exit 1; }
