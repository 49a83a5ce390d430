package mysql

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot"
)

// mariadbDialect is MariaDB's vocabulary: CHANGE MASTER with named
// connections, SLAVE words, GTID lists and BACKUP STAGE.
type mariadbDialect struct{ v dbpilot.Version }

func (d mariadbDialect) changeSource(c ChangeSource) string {
	retry, hb := changeSourceTimes(c)
	conn := ""
	if c.Channel != "" {
		conn = Quote(c.Channel) + " "
	}
	return fmt.Sprintf("CHANGE MASTER %sTO MASTER_HOST=%s, MASTER_PORT=%d, MASTER_USER=%s, MASTER_PASSWORD=%s, MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=%d, MASTER_HEARTBEAT_PERIOD=%s%s",
		conn, Quote(c.Source.Host), c.Source.Port, Quote(c.User), Quote(c.Password), retry, hb, sslOptions("MASTER", c.TLS))
}

// connection appends a named connection: START SLAVE 'name'.
func (mariadbDialect) connection(verb, channel string) string {
	if channel == "" {
		return verb
	}
	return verb + " " + Quote(channel)
}

func (d mariadbDialect) startReplica(channel string) string {
	return d.connection("START SLAVE", channel)
}

func (d mariadbDialect) stopReplica(channel string) string {
	return d.connection("STOP SLAVE", channel)
}

func (mariadbDialect) resetReplicaAll(channel string) string {
	if channel != "" {
		return "RESET SLAVE " + Quote(channel) + " ALL"
	}
	return "RESET SLAVE ALL"
}

func (mariadbDialect) showReplicaStatus() string { return "SHOW ALL SLAVES STATUS" }

func (mariadbDialect) showReplicas() string { return "SHOW SLAVE HOSTS" }

func (mariadbDialect) startAll() string { return "START ALL SLAVES" }

func (mariadbDialect) stopAll() string { return "STOP ALL SLAVES" }

// resetAll needs one RESET SLAVE 'name' ALL per connection (names from SHOW
// ALL SLAVES STATUS).
func (d mariadbDialect) resetAll(names []string) []string {
	stmts := []string{d.stopAll()}
	for _, n := range names {
		stmts = append(stmts, d.resetReplicaAll(n))
	}
	return stmts
}

// domainFilter sets IGNORE_DOMAIN_IDS always (to () when ignore is empty,
// since the setting persists across CHANGE MASTER) and clears DO_DOMAIN_IDS,
// which cannot be set at the same time, when ignore is not empty.
func (mariadbDialect) domainFilter(ignore []uint32) (string, bool) {
	ids := slices.Clone(ignore)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.FormatUint(uint64(id), 10)
	}
	filter := ""
	if len(ids) > 0 {
		filter = ", DO_DOMAIN_IDS=()"
	}
	return filter + ", IGNORE_DOMAIN_IDS=(" + strings.Join(parts, ",") + ")", true
}

func (mariadbDialect) readOnly(on bool) []string { return plainReadOnly(on) }

// waitForGTID waits with MASTER_GTID_WAIT, on gtid_slave_pos: 0 reached, -1
// timed out.
func (mariadbDialect) waitForGTID(pos string, timeout time.Duration) (q, ok, timedOut string) {
	return fmt.Sprintf("SELECT MASTER_GTID_WAIT(%s, %s)", Quote(pos), seconds(timeout, time.Second)), "0", "-1"
}

func (mariadbDialect) appliedPosition() string { return "SELECT @@GLOBAL.gtid_current_pos" }

// semiSyncBuiltIn: MariaDB 10.3+ has semi-sync built in, its variables
// always exist.
func (d mariadbDialect) semiSyncBuiltIn() bool { return d.v.AtLeast(10, 3, 0) }

// consistencyLock: BACKUP STAGE BLOCK_COMMIT (10.4.1+) blocks commits only:
// reads and writes go on, DDL too until the commit block.
func (d mariadbDialect) consistencyLock() ConsistencyLock {
	if !d.v.AtLeast(10, 4, 1) {
		return flushTablesWithReadLock()
	}
	return ConsistencyLock{Kind: "BACKUP STAGE BLOCK_COMMIT", Take: []string{"BACKUP STAGE START", "BACKUP STAGE BLOCK_COMMIT"}, Release: "BACKUP STAGE END"}
}

func (mariadbDialect) gtidPosition() string {
	return "SELECT @@GLOBAL.gtid_binlog_pos, @@GLOBAL.gtid_slave_pos, @@GLOBAL.gtid_current_pos"
}

func (mariadbDialect) parseGTIDPosition(vals []string) (dbpilot.GTIDState, bool) {
	if len(vals) != 3 {
		return dbpilot.GTIDState{}, false
	}
	return dbpilot.GTIDState{BinlogPos: vals[0], SlavePos: vals[1], CurrentPos: vals[2]}, true
}

func (mariadbDialect) binlogStatus() string { return "SHOW MASTER STATUS" }

func (mariadbDialect) setGTIDPosition(pos string) string {
	return "SET GLOBAL gtid_slave_pos=" + Quote(pos)
}

func (mariadbDialect) setGTIDPositionNeedsEmptyState() bool { return false }

// stopReceivers: STOP ALL SLAVES IO_THREAD stops every connection's IO
// thread; the SQL threads apply what was received.
func (mariadbDialect) stopReceivers() string { return "STOP ALL SLAVES IO_THREAD" }
