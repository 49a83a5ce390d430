#!/bin/sh
# dbpilot postrm: on purge only, the state (/var/lib/dbpilot) and the
# dbpilot user and group go (the administrator's /etc/dbpilot/dbpilot.yml
# stays, its group root); a plain remove keeps all, for a reinstall.
set -e
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null || true
fi
if [ "$1" = purge ]; then
	rm -rf /var/lib/dbpilot
	# The administrator's files in /etc/dbpilot (dbpilot.yml, secrets) are
	# kept, but not readable by a group whose id may be given again.
	if [ -d /etc/dbpilot ]; then
		chgrp -R root /etc/dbpilot
	fi
	if getent passwd dbpilot >/dev/null; then
		if command -v deluser >/dev/null; then
			deluser --system --quiet dbpilot >/dev/null 2>&1 || true
		else
			userdel dbpilot || true
		fi
	fi
	if getent group dbpilot >/dev/null; then
		if command -v delgroup >/dev/null; then
			delgroup --system --quiet dbpilot >/dev/null 2>&1 || true
		else
			groupdel dbpilot || true
		fi
	fi
	rmdir /etc/dbpilot 2>/dev/null || true
fi
