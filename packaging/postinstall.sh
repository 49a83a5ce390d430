#!/bin/sh
# dbpilot postinst: the user exists (preinst); its state directory is its
# own, 0750, and the service is enabled only by the administrator, once
# /etc/dbpilot/dbpilot.yml is written.
set -e
chown dbpilot:dbpilot /var/lib/dbpilot
chmod 0750 /var/lib/dbpilot
chown root:dbpilot /etc/dbpilot
chmod 0750 /etc/dbpilot
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null || true
	# An upgrade restarts a running serve on the new binary.
	if [ "$1" = configure ] && [ -n "$2" ] && systemctl is-active --quiet dbpilot; then
		systemctl restart dbpilot || true
	fi
fi
if [ ! -e /etc/dbpilot/dbpilot.yml ]; then
	echo "dbpilot: write /etc/dbpilot/dbpilot.yml (start from /etc/dbpilot/dbpilot.yml.example: accounts and clusters; install -m 0640 -g dbpilot), check it with 'dbpilot serve --config /etc/dbpilot/dbpilot.yml --check-config', then 'systemctl enable --now dbpilot'"
fi
