package dbpilot

import (
	"context"
	"strings"
	"time"
)

// ChangeSourceOptions qualifies a ReplicationController.ChangeSource call.
type ChangeSourceOptions struct {
	Channel string // "" for the default connection/channel
	// IgnoreDomains (MariaDB) are GTID domains not to replicate.
	IgnoreDomains []uint32
}

// ReplicationController changes replication on servers: what failover,
// switchover, relocation, fencing and clone need. The mysql package
// implements it; every call is bounded by ctx and the implementation's
// statement timeout. It is the single place through which dbpilot mutates a
// topology, so a check that must precede every mutating step (a leader's
// fencing token) wraps it.
type ReplicationController interface {
	Inspector
	// StopReplica stops every replication channel of key.
	StopReplica(ctx context.Context, key InstanceKey) error
	// StartReplica starts every replication channel of key.
	StartReplica(ctx context.Context, key InstanceKey) error
	// ResetReplicaAll removes every replication channel of key.
	ResetReplicaAll(ctx context.Context, key InstanceKey) error
	// ChangeSource points a channel of key at source with GTID positioning
	// (MariaDB MASTER_USE_GTID=slave_pos, MySQL auto-position) and the
	// replication credentials the controller holds. Replication is not started.
	ChangeSource(ctx context.Context, key, source InstanceKey, opt ChangeSourceOptions) error
	// SetReadOnly sets read_only (and super_read_only on MySQL when turning on;
	// both off when turning off).
	SetReadOnly(ctx context.Context, key InstanceKey, readOnly bool) error
	// WaitForGTID waits until key has applied every transaction of pos
	// (MariaDB MASTER_GTID_WAIT, MySQL WAIT_FOR_EXECUTED_GTID_SET).
	WaitForGTID(ctx context.Context, key InstanceKey, pos string, timeout time.Duration) error
	// KillClientConnections ends every client connection of key except
	// replication threads and the controller's own; it returns how many.
	KillClientConnections(ctx context.Context, key InstanceKey) (int, error)
	// SetSemiSync enables or disables the semi-sync primary and replica sides.
	SetSemiSync(ctx context.Context, key InstanceKey, primary, replica bool) error
}

// ReceiverStopper is implemented by controllers that can stop a replica's
// IO (receiver) threads alone. A failover stops them on every replica it
// moves, in parallel, first: an IO thread connected or connecting to a hung
// primary can make each later STOP SLAVE wait seconds, one replica after
// the other.
type ReceiverStopper interface {
	// StopReceivers stops the IO (receiver) thread of every replication
	// channel of key; the appliers go on applying what was received.
	StopReceivers(ctx context.Context, key InstanceKey) error
}

// ReplicaPositioner is an optional ReplicationController extension for
// MariaDB (the mysql package's controller implements it): it sets
// gtid_slave_pos, the position a replica asks its source for. The recovery
// executor uses it where the position must differ from what replication
// left:
//
//   - a former primary about to replicate (switchover) gets its own binlog
//     position, or it would ask its new source for its own transactions;
//   - during a catch-up, a candidate ahead of the catch-up source in an
//     ignored domain temporarily takes the source's position in that domain:
//     MariaDB (10.11 at least) checks the replica's whole position against
//     its binlog, ignored domains included, and refuses with error 1236
//     ("connecting slave requested to start from GTID ..., which is not in
//     the master's binlog") a replica that is ahead in any domain. The
//     candidate's own position is put back after the catch-up.
//
// Without it, a switchover relies on the new primary's binlogs reaching back
// to the start of the old primary's history, and such catch-ups fail.
type ReplicaPositioner interface {
	SetReplicaPosition(ctx context.Context, key InstanceKey, pos string) error
}

// ApplierThread is one replication applier thread of a replica (the SQL
// thread or a parallel worker) as the server's processlist shows it.
type ApplierThread struct {
	ID    uint64 `json:"id"`
	State string `json:"state,omitempty"`
	// Wait names the lock the thread waits for ("" when it waits for none):
	// its state when that says so (LockWaitState), or "an InnoDB row lock"
	// when its transaction is in LOCK WAIT.
	Wait string `json:"wait,omitempty"`
}

// ApplierInspector is an optional ReplicationController extension (the
// mysql package's controller implements it): it reads a replica's applier
// threads, so that a switchover can tell an applier stuck on a lock held by
// a session on the replica from one that is busy. A server that keeps the
// threads from it (no privilege) answers no threads and no error.
type ApplierInspector interface {
	ApplierThreads(ctx context.Context, key InstanceKey) ([]ApplierThread, error)
}

// LockWaitState reports whether a processlist state (or
// Slave_SQL_Running_State) says that the thread waits for a lock: a table
// metadata lock, a table-level, global read, commit or backup lock, or a
// table flush ("Waiting for table metadata lock", "Waiting for global read
// lock", "Waiting for table flush", ...).
func LockWaitState(state string) bool {
	s := strings.ToLower(state)
	if !strings.HasPrefix(s, "waiting for ") {
		return false
	}
	return strings.HasSuffix(s, " lock") || strings.Contains(s, " lock ") || strings.HasPrefix(s, "waiting for table flush")
}

// Recloner re-provisions a server from another of its cluster: target's
// databases are replaced by a consistent copy of source's, its binary log
// and GTID state are reset (its own transactions, errant ones included,
// are discarded), and it replicates from source from the copy's GTID
// position. The backup package's clone does it (wired by daemon.Wire); the
// recovery executor uses it for 'dbpilot rejoin --reclone'. Target must
// not replicate (ResetReplicaAll first).
type Recloner interface {
	Reclone(ctx context.Context, source, target InstanceKey) (*RecloneResult, error)
}

// RecloneResult sums up a Reclone.
type RecloneResult struct {
	// Position is the GTID position of the copy, where target started
	// replicating from source.
	Position string `json:"position"`
	Tables   int    `json:"tables"`
	Rows     int64  `json:"rows"`
	// Dropped are target's databases that source does not have, dropped
	// so that target holds what source holds and nothing else.
	Dropped []string `json:"dropped,omitempty"`
}
