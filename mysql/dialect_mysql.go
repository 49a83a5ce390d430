package mysql

import (
	"fmt"
	"math"
	"time"

	"github.com/dbpilot/dbpilot"
)

// mysqlDialect is MySQL's (and Percona Server's) vocabulary: channels, the
// REPLICA/SOURCE words of 8.0.22+ (SLAVE/MASTER before), GTID sets.
type mysqlDialect struct{ v dbpilot.Version }

// replicaWords reports whether START/STOP/SHOW REPLICA (8.0.22+) apply.
func (d mysqlDialect) replicaWords() bool { return d.v.AtLeast(8, 0, 22) }

// sourceWords reports whether CHANGE REPLICATION SOURCE TO (8.0.23+) applies.
func (d mysqlDialect) sourceWords() bool { return d.v.AtLeast(8, 0, 23) }

func (d mysqlDialect) changeSource(c ChangeSource) string {
	retry, hb := changeSourceTimes(c)
	channel := ""
	if c.Channel != "" {
		channel = " FOR CHANNEL " + Quote(c.Channel)
	}
	if d.sourceWords() {
		return fmt.Sprintf("CHANGE REPLICATION SOURCE TO SOURCE_HOST=%s, SOURCE_PORT=%d, SOURCE_USER=%s, SOURCE_PASSWORD=%s, SOURCE_AUTO_POSITION=1, SOURCE_CONNECT_RETRY=%d, SOURCE_HEARTBEAT_PERIOD=%s, GET_SOURCE_PUBLIC_KEY=1%s%s",
			Quote(c.Source.Host), c.Source.Port, Quote(c.User), Quote(c.Password), retry, hb, sslOptions("SOURCE", c.TLS), channel)
	}
	getKey := ""
	if d.v.AtLeast(8, 0, 0) {
		getKey = ", GET_MASTER_PUBLIC_KEY=1"
	}
	return fmt.Sprintf("CHANGE MASTER TO MASTER_HOST=%s, MASTER_PORT=%d, MASTER_USER=%s, MASTER_PASSWORD=%s, MASTER_AUTO_POSITION=1, MASTER_CONNECT_RETRY=%d, MASTER_HEARTBEAT_PERIOD=%s%s%s%s",
		Quote(c.Source.Host), c.Source.Port, Quote(c.User), Quote(c.Password), retry, hb, getKey, sslOptions("MASTER", c.TLS), channel)
}

// forChannel appends a channel: STOP REPLICA FOR CHANNEL 'name'.
func (mysqlDialect) forChannel(verb, channel string) string {
	if channel == "" {
		return verb
	}
	return verb + " FOR CHANNEL " + Quote(channel)
}

// slaveOrReplica picks the old or the 8.0.22+ word.
func (d mysqlDialect) slaveOrReplica(old, replica string) string {
	if d.replicaWords() {
		return replica
	}
	return old
}

func (d mysqlDialect) startReplica(channel string) string {
	return d.forChannel(d.slaveOrReplica("START SLAVE", "START REPLICA"), channel)
}

func (d mysqlDialect) stopReplica(channel string) string {
	return d.forChannel(d.slaveOrReplica("STOP SLAVE", "STOP REPLICA"), channel)
}

func (d mysqlDialect) resetReplicaAll(channel string) string {
	return d.forChannel(d.slaveOrReplica("RESET SLAVE ALL", "RESET REPLICA ALL"), channel)
}

func (d mysqlDialect) showReplicaStatus() string {
	return d.slaveOrReplica("SHOW SLAVE STATUS", "SHOW REPLICA STATUS")
}

func (d mysqlDialect) showReplicas() string {
	return d.slaveOrReplica("SHOW SLAVE HOSTS", "SHOW REPLICAS")
}

// startAll and stopAll: without a channel the statements cover every
// channel.
func (d mysqlDialect) startAll() string { return d.startReplica("") }

func (d mysqlDialect) stopAll() string { return d.stopReplica("") }

func (d mysqlDialect) stopReceivers() string { return d.stopReplica("") + " IO_THREAD" }

// resetAll: RESET REPLICA ALL covers every channel.
func (d mysqlDialect) resetAll([]string) []string {
	return []string{d.stopAll(), d.resetReplicaAll("")}
}

// domainFilter: MySQL has no GTID domains to ignore.
func (mysqlDialect) domainFilter(ignore []uint32) (string, bool) { return "", len(ignore) == 0 }

// readOnly: 5.7.8+ uses super_read_only (on: it implies read_only; off:
// both, super first).
func (d mysqlDialect) readOnly(on bool) []string {
	switch {
	case !d.v.AtLeast(5, 7, 8):
		return plainReadOnly(on)
	case on:
		return []string{"SET GLOBAL super_read_only=ON"}
	}
	return []string{"SET GLOBAL super_read_only=OFF", "SET GLOBAL read_only=OFF"}
}

// waitForGTID waits with WAIT_FOR_EXECUTED_GTID_SET (whole seconds, at
// least 1): 0 reached, 1 timed out.
func (mysqlDialect) waitForGTID(pos string, timeout time.Duration) (q, ok, timedOut string) {
	secs := int64(math.Ceil(timeout.Seconds()))
	if secs < 1 {
		secs = 1
	}
	return fmt.Sprintf("SELECT WAIT_FOR_EXECUTED_GTID_SET(%s, %d)", Quote(pos), secs), "0", "1"
}

func (mysqlDialect) appliedPosition() string { return "SELECT @@GLOBAL.gtid_executed" }

// semiSyncBuiltIn: semi-sync is a plugin that may be absent.
func (mysqlDialect) semiSyncBuiltIn() bool { return false }

func (mysqlDialect) consistencyLock() ConsistencyLock { return flushTablesWithReadLock() }

func (mysqlDialect) gtidPosition() string { return "SELECT @@GLOBAL.gtid_executed" }

func (mysqlDialect) parseGTIDPosition(vals []string) (dbpilot.GTIDState, bool) {
	if len(vals) != 1 {
		return dbpilot.GTIDState{}, false
	}
	return dbpilot.GTIDState{Executed: cleanGTIDSet(vals[0])}, true
}

// binlogStatus: 8.2 renamed SHOW MASTER STATUS (removed in 8.4).
func (d mysqlDialect) binlogStatus() string {
	if d.v.AtLeast(8, 2, 0) {
		return "SHOW BINARY LOG STATUS"
	}
	return "SHOW MASTER STATUS"
}

func (d mysqlDialect) setGTIDPosition(pos string) string {
	if d.setGTIDPositionNeedsEmptyState() {
		return "SET GLOBAL gtid_purged=" + Quote(pos)
	}
	return "SET GLOBAL gtid_purged=" + Quote("+"+pos)
}

func (d mysqlDialect) setGTIDPositionNeedsEmptyState() bool { return !d.v.AtLeast(8, 0, 0) }
