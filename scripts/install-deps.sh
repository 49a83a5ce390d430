#!/usr/bin/env bash
# Installs what dbpilot's build, demo and tests need and the machine lacks:
# the MariaDB server and client (Debian/Ubuntu packages mariadb-server and
# mariadb-client). Idempotent: does nothing when mariadbd is found.
set -euo pipefail

if ! command -v go >/dev/null 2>&1; then
	echo "install-deps: Go is not installed; install Go 1.24 or newer (https://go.dev/doc/install)" >&2
	exit 1
fi

have_server() {
	command -v mariadbd >/dev/null 2>&1 || command -v mysqld >/dev/null 2>&1 ||
		[ -x /usr/sbin/mariadbd ] || [ -x /usr/sbin/mysqld ]
}
have_client() {
	command -v mariadb >/dev/null 2>&1 || command -v mysql >/dev/null 2>&1
}

if have_server && have_client; then
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
		echo "install-deps: need root to install mariadb-server (no sudo found); run: apt-get install mariadb-server mariadb-client" >&2
		exit 1
	fi
fi

echo "install-deps: installing mariadb-server and mariadb-client with apt-get"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends mariadb-server mariadb-client >/dev/null
if ! have_server; then
	echo "install-deps: mariadb-server installed but mariadbd is still not found" >&2
	exit 1
fi
echo "install-deps: $(/usr/sbin/mariadbd --version 2>/dev/null || mariadbd --version)"
