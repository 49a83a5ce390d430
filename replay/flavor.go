package replay

import (
	"fmt"
	"strings"

	"github.com/dbpilot/dbpilot"
)

// settingSQL is how a setting is made on a server of flavor, for the
// replication connection channel, with maxQueued (bytes; 0: left as it is)
// for MariaDB's slave_parallel_max_queued.
//
// MariaDB: slave_parallel_threads and slave_domain_parallel_threads are
// global (every replication connection must be stopped to change them);
// slave_parallel_mode is per connection.
// MySQL: replica_parallel_workers and replica_parallel_type are global
// (8.0.26+ names); its modes are LOGICAL_CLOCK (transactions that
// committed together on the source; with replica_preserve_commit_order,
// the order is kept, like MariaDB's conservative) and DATABASE (one worker
// per schema). replay runs against MariaDB only; the MySQL statements are
// here so that the setting is spelled right when it does.
func settingSQL(flavor dbpilot.Flavor, channel string, s Setting, maxQueued int64) ([]string, error) {
	switch flavor {
	case dbpilot.FlavorMySQL:
		workers := s.Threads
		var typ string
		switch s.Mode {
		case "", "conservative", "logical_clock":
			typ = "LOGICAL_CLOCK"
		case "database":
			typ = "DATABASE"
		default:
			return nil, dbpilot.Errorf(dbpilot.EUNSUPPORTED, "replay: MySQL has no parallel mode %q (LOGICAL_CLOCK: conservative, DATABASE: database)", s.Mode)
		}
		if s.DomainThreads > 0 {
			return nil, dbpilot.Errorf(dbpilot.EUNSUPPORTED, "replay: MySQL has no GTID domains (slave_domain_parallel_threads is MariaDB's)")
		}
		if workers == 0 {
			// MySQL 8.0.27+ has no single-threaded applier but one worker.
			workers = 1
		}
		return []string{
			fmt.Sprintf("SET GLOBAL replica_parallel_type = '%s'", typ),
			fmt.Sprintf("SET GLOBAL replica_parallel_workers = %d", workers),
			"SET GLOBAL replica_preserve_commit_order = ON",
		}, nil
	case dbpilot.FlavorMariaDB:
		// slave_domain_parallel_threads is set at every setting, 0 too,
		// so that no setting inherits the one before's.
		stmts := []string{fmt.Sprintf("SET GLOBAL slave_parallel_threads = %d", s.Threads), fmt.Sprintf("SET GLOBAL slave_domain_parallel_threads = %d", s.DomainThreads)}
		if maxQueued > 0 {
			stmts = append(stmts, fmt.Sprintf("SET GLOBAL slave_parallel_max_queued = %d", maxQueued))
		}
		mode := s.Mode
		if s.Threads == 0 {
			mode = "conservative" // not used without threads
		}
		stmts = append(stmts, fmt.Sprintf("SET GLOBAL `%s`.slave_parallel_mode = '%s'", channel, mode))
		return stmts, nil
	}
	return nil, dbpilot.Errorf(dbpilot.EUNSUPPORTED, "replay: flavor %s", flavor)
}

// applierState reads a replica status row of either flavor (SHOW ALL
// SLAVES STATUS on MariaDB, SHOW REPLICA STATUS on MySQL 8.0.22+, SHOW
// SLAVE STATUS before): whether the applier runs, its last error, the IO
// thread's, and the transactions retried (MariaDB's Retried_transactions;
// MySQL reports retries in performance_schema, not here: -1).
func applierState(row map[string]string) (sqlRunning bool, sqlErr, ioErr string, retried int64) {
	get := func(names ...string) string {
		for _, n := range names {
			if v, ok := row[n]; ok {
				return v
			}
		}
		return ""
	}
	sqlRunning = strings.EqualFold(get("Slave_SQL_Running", "Replica_SQL_Running"), "Yes")
	sqlErr = get("Last_SQL_Error")
	ioErr = get("Last_IO_Error")
	retried = -1
	if v, ok := row["Retried_transactions"]; ok {
		fmt.Sscan(v, &retried)
	}
	return
}
