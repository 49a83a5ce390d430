#!/bin/sh
# dbpilot preinst: the dbpilot system user and group, before the files
# owned by them (/var/lib/dbpilot, /etc/dbpilot) are unpacked. Idempotent.
set -e
if ! getent group dbpilot >/dev/null; then
	if command -v addgroup >/dev/null; then
		addgroup --system --quiet dbpilot
	else
		groupadd --system dbpilot
	fi
fi
if ! getent passwd dbpilot >/dev/null; then
	if command -v adduser >/dev/null; then
		adduser --system --quiet --ingroup dbpilot --home /var/lib/dbpilot --no-create-home \
			--shell /usr/sbin/nologin --gecos "dbpilot serve" dbpilot
	else
		useradd --system --gid dbpilot --home-dir /var/lib/dbpilot --no-create-home \
			--shell /usr/sbin/nologin --comment "dbpilot serve" dbpilot
	fi
fi
