#!/usr/bin/env bash
# Installs what dbpilot needs and the machine lacks, with apt-get on
# Debian/Ubuntu. Idempotent: does nothing when all are found.
#
#   bash scripts/install-deps.sh          # the demo: MariaDB server and client
#   bash scripts/install-deps.sh --test   # and what the tests use
#
# The demo (`make demo`, `make deps`) needs only the MariaDB server and
# client (packages mariadb-server and mariadb-client). The tests (`make test`,
# `.ci/run`) and the bench scripts that use them also need, with --test:
# Prometheus (package prometheus, a test scrapes dbpilot's /metrics), tmux
# (the `dbpilot top` test), Chromium (package chromium: the web console is
# tested in a real headless browser; NSS's certutil, package libnss3-tools,
# makes it trust a test CA for the HTTPS console), etcd (package etcd-server: coordination
# of several serves), VictoriaMetrics (package victoria-metrics: a
# remote-write receiver), zstd (the reference decoder dump files are checked
# against) and, for Galera sandboxes, the Galera provider (package galera-4)
# with the state transfer tools: rsync, mariabackup (package mariadb-backup)
# and socat. The package test (packaging/, `make package`) uses dpkg-deb,
# systemd-analyze (package systemd) and bash-completion.
set -euo pipefail

test_deps=false
case "${1:-}" in
--test) test_deps=true ;;
"") ;;
*)
	echo "install-deps: unknown argument $1; usage: bash scripts/install-deps.sh [--test]" >&2
	exit 2
	;;
esac

if ! command -v go >/dev/null 2>&1; then
	echo "install-deps: Go is not installed; install Go 1.26 or newer, as go.mod names (https://go.dev/doc/install)" >&2
	exit 1
fi

have_server() {
	command -v mariadbd >/dev/null 2>&1 || command -v mysqld >/dev/null 2>&1 ||
		[ -x /usr/sbin/mariadbd ] || [ -x /usr/sbin/mysqld ]
}
have_client() {
	command -v mariadb >/dev/null 2>&1 || command -v mysql >/dev/null 2>&1
}

have_prometheus() { command -v prometheus >/dev/null 2>&1; }
have_tmux() { command -v tmux >/dev/null 2>&1; }
have_chromium() { command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ]; }
have_etcd() { command -v etcd >/dev/null 2>&1; }
have_victoria() { command -v victoria-metrics >/dev/null 2>&1; }
have_galera() {
	[ -f /usr/lib/galera/libgalera_smm.so ] || [ -f /usr/lib/galera-4/libgalera_smm.so ] ||
		[ -f /usr/lib/libgalera_smm.so ] || [ -f /usr/lib64/galera-4/libgalera_smm.so ]
}
have_rsync() { command -v rsync >/dev/null 2>&1; }
have_mariabackup() { command -v mariabackup >/dev/null 2>&1 || command -v mariadb-backup >/dev/null 2>&1; }
have_socat() { command -v socat >/dev/null 2>&1; }
have_zstd() { command -v zstd >/dev/null 2>&1; }
have_dpkg_deb() { command -v dpkg-deb >/dev/null 2>&1; }
have_systemd_analyze() { command -v systemd-analyze >/dev/null 2>&1; }
have_bash_completion() { [ -f /usr/share/bash-completion/bash_completion ]; }
have_certutil() { command -v certutil >/dev/null 2>&1; }

have_test_deps() {
	have_prometheus && have_tmux && have_chromium && have_etcd && have_victoria &&
		have_galera && have_rsync && have_mariabackup && have_socat && have_zstd &&
		have_dpkg_deb && have_systemd_analyze && have_bash_completion && have_certutil
}

if have_server && have_client && { ! $test_deps || have_test_deps; }; then
	exit 0
fi

if ! command -v apt-get >/dev/null 2>&1 && have_server && have_client; then
	echo "install-deps: some test tools (prometheus, chromium, etcd, victoria-metrics, galera-4, ...) are missing and this is not a Debian/Ubuntu system; install them with your package manager: the tests that need them skip (they fail with CI=true)" >&2
	exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
	echo "install-deps: mariadbd not found and this is not a Debian/Ubuntu system;" >&2
	echo "install MariaDB server and client (10.3 or newer) with your package manager, or pass --basedir to 'dbpilot sandbox deploy'" >&2
	exit 1
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1; then
		SUDO="sudo"
	else
		echo "install-deps: need root to install packages (no sudo found); run this script as root, or: apt-get install mariadb-server mariadb-client" >&2
		exit 1
	fi
fi

pkgs=()
{ have_server && have_client; } || pkgs+=(mariadb-server mariadb-client)
if $test_deps; then
	# prometheus: the tests check that a real Prometheus server scrapes /metrics.
	have_prometheus || pkgs+=(prometheus)
	# tmux: `dbpilot top` is tested in a real terminal.
	have_tmux || pkgs+=(tmux)
	# chromium: the web console's pages are tested in headless Chromium.
	have_chromium || pkgs+=(chromium)
	# libnss3-tools: certutil adds the HTTPS test's CA to Chromium's trust.
	have_certutil || pkgs+=(libnss3-tools)
	# etcd-server: coordinated serves are tested against a real 3-member etcd.
	have_etcd || pkgs+=(etcd-server)
	# victoria-metrics: remote write is tested against a real VictoriaMetrics.
	have_victoria || pkgs+=(victoria-metrics)
	# Galera sandboxes: the provider, and the tools of both state transfer
	# methods the tests exercise (rsync; mariabackup streams through socat).
	have_galera || pkgs+=(galera-4)
	have_rsync || pkgs+=(rsync)
	have_mariabackup || pkgs+=(mariadb-backup)
	have_socat || pkgs+=(socat)
	# zstd: the reference decoder that dump files are checked against.
	have_zstd || pkgs+=(zstd)
	# The .deb's test: its contents and fields (dpkg-deb), its unit
	# (systemd-analyze verify) and its bash completion (bash-completion).
	have_dpkg_deb || pkgs+=(dpkg)
	have_systemd_analyze || pkgs+=(systemd)
	have_bash_completion || pkgs+=(bash-completion)
fi
echo "install-deps: installing ${pkgs[*]} with apt-get"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
if [[ " ${pkgs[*]} " == *" prometheus "* ]] && command -v systemctl >/dev/null 2>&1; then
	# The package starts a system Prometheus on :9090; dbpilot's tests run
	# their own, so leave the machine as it was.
	$SUDO systemctl disable --now prometheus >/dev/null 2>&1 || true
fi
if [[ " ${pkgs[*]} " == *" victoria-metrics "* ]] && command -v systemctl >/dev/null 2>&1; then
	# Likewise the system VictoriaMetrics on :8428: the tests start their own.
	$SUDO systemctl disable --now victoria-metrics >/dev/null 2>&1 || true
fi
if ! have_server; then
	echo "install-deps: mariadb-server installed but mariadbd is still not found" >&2
	exit 1
fi
echo "install-deps: $(/usr/sbin/mariadbd --version 2>/dev/null || mariadbd --version)"
