package mysql

import (
	"time"

	"github.com/dbpilot/dbpilot"
)

// Dialect picks statement vocabulary for a flavor and version: MariaDB's
// CHANGE MASTER/SHOW ALL SLAVES STATUS with named connections, MySQL 8.0.22+'s
// REPLICA/SOURCE words and channels, the older MySQL SLAVE/MASTER words, and
// the statements of a consistent backup (consistency lock, GTID and binary
// log position, setting a replica's start position).
//
// Its methods are pure functions of Flavor and Version. Each flavor's
// statements live in a file of their own (dialect_mariadb.go,
// dialect_mysql.go, after vitess's flavor files); Percona Server and any
// flavor that is not MariaDB speak MySQL's.
type Dialect struct {
	Flavor  dbpilot.Flavor
	Version dbpilot.Version
}

// flavor builds the statements of one flavor at one version.
type flavor interface {
	// Replication control.
	changeSource(c ChangeSource) string
	startReplica(channel string) string
	stopReplica(channel string) string
	resetReplicaAll(channel string) string
	showReplicaStatus() string
	showReplicas() string
	startAll() string
	stopAll() string
	// stopReceivers stops the IO (receiver) thread of every channel; the
	// appliers go on.
	stopReceivers() string
	resetAll(names []string) []string
	domainFilter(ignore []uint32) (string, bool)
	readOnly(on bool) []string
	waitForGTID(pos string, timeout time.Duration) (q, ok, timedOut string)
	appliedPosition() string
	semiSyncBuiltIn() bool

	// Consistent backup.
	consistencyLock() ConsistencyLock
	gtidPosition() string
	parseGTIDPosition(vals []string) (dbpilot.GTIDState, bool)
	binlogStatus() string
	setGTIDPosition(pos string) string
	setGTIDPositionNeedsEmptyState() bool
}

func (d Dialect) flavor() flavor {
	if d.MariaDB() {
		return mariadbDialect{v: d.Version}
	}
	return mysqlDialect{v: d.Version}
}

// MariaDB reports whether the dialect is MariaDB's.
func (d Dialect) MariaDB() bool { return d.Flavor == dbpilot.FlavorMariaDB }

// ChangeSourceSQL returns the statement that points a channel at a source.
func (d Dialect) ChangeSourceSQL(c ChangeSource) string { return d.flavor().changeSource(c) }

// StartReplicaSQL starts one channel.
func (d Dialect) StartReplicaSQL(channel string) string { return d.flavor().startReplica(channel) }

// StopReplicaSQL stops one channel.
func (d Dialect) StopReplicaSQL(channel string) string { return d.flavor().stopReplica(channel) }

// ResetReplicaAllSQL forgets a channel entirely.
func (d Dialect) ResetReplicaAllSQL(channel string) string {
	return d.flavor().resetReplicaAll(channel)
}

// ShowReplicaStatusSQL returns the statement listing every channel.
func (d Dialect) ShowReplicaStatusSQL() string { return d.flavor().showReplicaStatus() }

// ShowReplicasSQL returns the statement listing registered replicas.
func (d Dialect) ShowReplicasSQL() string { return d.flavor().showReplicas() }

// ConsistencyLock is the lock under which a consistent dump opens the
// snapshots of all its connections and reads the server's position.
type ConsistencyLock struct {
	// Kind names the lock in messages and manifests: "BACKUP STAGE
	// BLOCK_COMMIT" or "FLUSH TABLES WITH READ LOCK".
	Kind string
	// Take are the statements that take the lock, in order.
	Take []string
	// Release releases it, on the session that took it.
	Release string
}

// ConsistencyLock returns the shortest lock that makes snapshots opened
// under it consistent with each other and with the binary log position:
// MariaDB 10.4.1+ BACKUP STAGE START and BACKUP STAGE BLOCK_COMMIT (blocks
// commits only, for milliseconds), released with BACKUP STAGE END;
// otherwise FLUSH TABLES WITH READ LOCK, released with UNLOCK TABLES.
func (d Dialect) ConsistencyLock() ConsistencyLock { return d.flavor().consistencyLock() }

// flushTablesWithReadLock is the consistency lock every flavor has.
func flushTablesWithReadLock() ConsistencyLock {
	return ConsistencyLock{Kind: "FLUSH TABLES WITH READ LOCK", Take: []string{"FLUSH TABLES WITH READ LOCK"}, Release: "UNLOCK TABLES"}
}

// GTIDPositionSQL returns the statement that reads the server's GTID
// position as one row, which ParseGTIDPosition reads: MariaDB
// @@GLOBAL.gtid_binlog_pos, gtid_slave_pos and gtid_current_pos; MySQL
// @@GLOBAL.gtid_executed.
func (d Dialect) GTIDPositionSQL() string { return d.flavor().gtidPosition() }

// ParseGTIDPosition reads the row GTIDPositionSQL returned: MariaDB's
// BinlogPos, SlavePos and CurrentPos, or MySQL's Executed with the line
// breaks the server puts into long sets removed. NULL reads as "".
func (d Dialect) ParseGTIDPosition(row []*string) (dbpilot.GTIDState, error) {
	vals := make([]string, len(row))
	for i, v := range row {
		if v != nil {
			vals[i] = *v
		}
	}
	st, ok := d.flavor().parseGTIDPosition(vals)
	if !ok {
		return dbpilot.GTIDState{}, dbpilot.Errorf(dbpilot.EINTERNAL, "mysql: read GTID position: %d values for %q", len(row), d.GTIDPositionSQL())
	}
	return st, nil
}

// BinlogStatusSQL returns the statement that shows the binary log file and
// position (first two columns): SHOW BINARY LOG STATUS on MySQL 8.2+, SHOW
// MASTER STATUS elsewhere.
func (d Dialect) BinlogStatusSQL() string { return d.flavor().binlogStatus() }

// SetGTIDPositionSQL returns the statement that makes pos the server's
// replication start position: MariaDB SET GLOBAL gtid_slave_pos (where
// CHANGE MASTER ... MASTER_USE_GTID=slave_pos starts); MySQL SET GLOBAL
// gtid_purged, on 8.0+ in the '+' form that adds pos to the server's GTID
// state (see SetGTIDPositionNeedsEmptyState).
func (d Dialect) SetGTIDPositionSQL(pos string) string { return d.flavor().setGTIDPosition(pos) }

// ResetBinaryLogSQL returns the statement that deletes the server's binary
// logs and empties its GTID state (MariaDB gtid_binlog_state, MySQL
// gtid_executed): RESET MASTER; MySQL 8.4+ RESET BINARY LOGS AND GTIDS.
func (d Dialect) ResetBinaryLogSQL() string {
	if !d.MariaDB() && d.Version.AtLeast(8, 4, 0) {
		return "RESET BINARY LOGS AND GTIDS"
	}
	return "RESET MASTER"
}

// SetGTIDPositionNeedsEmptyState reports whether SetGTIDPositionSQL works
// only on a server whose GTID state is empty (RESET MASTER): MySQL before
// 8.0, where gtid_purged can be set but not added to.
func (d Dialect) SetGTIDPositionNeedsEmptyState() bool {
	return d.flavor().setGTIDPositionNeedsEmptyState()
}
