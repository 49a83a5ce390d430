#!/bin/sh
# Records MariaDB outputs for collector/testdata from sandbox "rec" (ports 25401-25403).
set -e
export MYSQL_PWD=$(python3 -c "import json;print(json.load(open('/tmp/coll-rec-home/sandboxes/rec/sandbox.json'))['admin']['password'])")
P="mariadb -udbpilot -h127.0.0.1 -P25401"
R="mariadb -udbpilot -h127.0.0.1 -P25402"
T=${T:-collector/testdata}
$P -e "CREATE DATABASE IF NOT EXISTS app; CREATE TABLE IF NOT EXISTS app.t(id INT PRIMARY KEY AUTO_INCREMENT, v VARCHAR(20)); INSERT INTO app.t(v) VALUES ('a'),('b'),('c'); UPDATE app.t SET v='x' WHERE id=1; FLUSH BINARY LOGS"
$P -e "SELECT * FROM app.t; INSERT INTO app.t(v) VALUES ('e')" >/dev/null
$P -e "SHOW GLOBAL STATUS\G" > $T/status/mariadb-10.11.txt
$P -e "SHOW GLOBAL VARIABLES\G" > $T/variables/mariadb-10.11.txt
$P -e "SHOW BINARY LOGS\G" > $T/binlog/mariadb-10.11-binary-logs.txt
$P -e "SHOW GLOBAL STATUS WHERE Variable_name IN ('Binlog_commits','Binlog_group_commits')\G" > $T/binlog/mariadb-10.11-commits.txt
SEMI="SELECT 'status' AS KIND, VARIABLE_NAME, VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME LIKE 'RPL\_SEMI\_SYNC\_%' UNION ALL SELECT 'variable', VARIABLE_NAME, VARIABLE_VALUE FROM information_schema.GLOBAL_VARIABLES WHERE VARIABLE_NAME LIKE 'RPL\_SEMI\_SYNC\_%'"
$P -e "$SEMI\G" > $T/semisync/mariadb-10.11-primary.txt
$R -e "$SEMI\G" > $T/semisync/mariadb-10.11-replica.txt
$P -e "SHOW GLOBAL STATUS LIKE 'wsrep%'\G" > $T/galera/mariadb-10.11-no-galera.txt
($P -e "SELECT SLEEP(8)" >/dev/null &)
($P -e "BEGIN; INSERT INTO app.t(v) VALUES('trx'); SELECT SLEEP(8); ROLLBACK" >/dev/null &)
sleep 3
$P -e "SELECT USER, SUBSTRING_INDEX(HOST, ':', 1) AS HOST, COALESCE(COMMAND,'') AS COMMAND, COALESCE(STATE,'') AS STATE, COUNT(*) AS THREADS, SUM(TIME) AS SECONDS, MAX(IF(COMMAND IN ('Query','Execute'), TIME_MS/1000, NULL)) AS OLDEST_QUERY FROM information_schema.PROCESSLIST WHERE ID != CONNECTION_ID() GROUP BY 1,2,3,4\G" > $T/processlist/mariadb-10.11-threads.txt
$R -e "SELECT USER, SUBSTRING_INDEX(HOST, ':', 1) AS HOST, COALESCE(COMMAND,'') AS COMMAND, COALESCE(STATE,'') AS STATE, COUNT(*) AS THREADS, SUM(TIME) AS SECONDS, MAX(IF(COMMAND IN ('Query','Execute'), TIME_MS/1000, NULL)) AS OLDEST_QUERY FROM information_schema.PROCESSLIST WHERE ID != CONNECTION_ID() GROUP BY 1,2,3,4\G" > $T/processlist/mariadb-10.11-replica-threads.txt
$P -e "SELECT COUNT(*) AS TRX, COALESCE(MAX(TIMESTAMPDIFF(SECOND, trx_started, NOW())), 0) AS OLDEST FROM information_schema.INNODB_TRX\G" > $T/processlist/mariadb-10.11-trx.txt
sleep 6
# Semi-sync falls back to async: no replica acknowledges within 300 ms.
$P -e "SET GLOBAL rpl_semi_sync_master_timeout=300"
for p in 25402 25403; do mariadb -udbpilot -h127.0.0.1 -P$p -e "STOP SLAVE"; done
$P -e "INSERT INTO app.t(v) VALUES ('async')"
$P -e "$SEMI\G" > $T/semisync/mariadb-10.11-fell-back.txt
for p in 25402 25403; do mariadb -udbpilot -h127.0.0.1 -P$p -e "START SLAVE"; done
$P -e "SET GLOBAL rpl_semi_sync_master_timeout=10000"
