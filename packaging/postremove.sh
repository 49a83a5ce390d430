#!/bin/sh
# dbpilot postrm: on purge only, the state (/var/lib/dbpilot) and the
# dbpilot user and group go; a plain remove keeps both, and the
# configuration, for a reinstall.
set -e
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null || true
fi
if [ "$1" = purge ]; then
	rm -rf /var/lib/dbpilot
	if getent passwd dbpilot >/dev/null; then
		if command -v deluser >/dev/null; then
			deluser --system --quiet dbpilot || true
		else
			userdel dbpilot || true
		fi
	fi
	if getent group dbpilot >/dev/null; then
		if command -v delgroup >/dev/null; then
			delgroup --system --quiet dbpilot || true
		else
			groupdel dbpilot || true
		fi
	fi
	rmdir /etc/dbpilot 2>/dev/null || true
fi
