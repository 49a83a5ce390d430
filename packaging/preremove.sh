#!/bin/sh
# dbpilot prerm: a removed package stops its service (an upgrade does not:
# postinst restarts it on the new binary).
set -e
if [ "$1" = remove ] && [ -d /run/systemd/system ]; then
	systemctl disable --now dbpilot >/dev/null 2>&1 || true
fi
