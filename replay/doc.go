// Package replay replays a stretch of a binary log archive into a target
// server once per parallel replication setting, to find the fastest
// setting that applies the workload correctly.
//
// Each run brings the target to the stretch's start position (a restore of
// a dump, or of a snapshot replay took of the target itself), sets the
// parallel replication variables (MariaDB slave_parallel_mode,
// slave_parallel_threads, slave_parallel_max_queued), and has the target
// replicate the stretch from pitr's binlog source (the same server that
// point-in-time restore uses: the events exactly as archived, through the
// temporary multi-source connection Channel, START SLAVE UNTIL the stretch's
// end). It measures the time from START SLAVE to the end position, the
// transactions, events and rows per second, the retries and deadlocks of
// optimistic apply and the states of the worker threads, and checksums
// (CHECKSUM TABLE) the tables the stretch touched, to compare them with the
// single-threaded run's. The source's own serving rate, to a sink that
// discards, is measured once, to show that the source is not what limits
// the apply.
//
// Everything that can be checked is checked before anything is applied:
// a gap in the archive, a target or dump whose GTID position is not the
// stretch's start, a target that is part of a replication tree (has a
// source or replicas) unless Force. The run itself is MariaDB; the MySQL
// names of the settings and of the replica status are kept in flavor.go.
package replay
