package dbpilot

// ReplicaApply is how a replica applies what its cluster's primary
// commits, as serve measures it from its observations (one a poll
// interval): the backlog, the rates over the last minute, and the
// prediction of its catch-up.
type ReplicaApply struct {
	Key InstanceKey `json:"key"`
	// BacklogTransactions are the transactions the cluster's primary has
	// committed that the replica has not applied, from GTID positions:
	// MariaDB, per domain the primary's gtid_binlog_pos seq_no minus the
	// replica's gtid_slave_pos seq_no, summed; MySQL, the transactions of
	// the primary's gtid_executed missing from the replica's.
	BacklogTransactions int64 `json:"backlog_transactions"`
	// BacklogBytes are the relay log bytes still to apply: the source
	// binary log bytes received but not executed (Read_Master_Log_Pos −
	// Exec_Master_Log_Pos) while both are in the same source file, else
	// Relay_Log_Space (all the relay logs: an upper bound).
	BacklogBytes int64 `json:"backlog_bytes"`
	// ApplyRate is the transactions the replica applied per second while
	// it had a backlog and its SQL thread ran, within the last minute: the
	// last 10 s of such apply (its pace now: a replica speeds up as it
	// warms), its speed, not capped by the primary's pace; 0 when not
	// measured yet (5 s of such apply are needed).
	ApplyRate float64 `json:"apply_rate"`
	// CommitRate is the primary's transactions per second over the last
	// minute.
	CommitRate float64 `json:"commit_rate"`
	// RateSeconds is how many seconds of apply ApplyRate was measured over.
	RateSeconds float64 `json:"rate_seconds"`
	// State is one of the CatchUp* states.
	State string `json:"state"`
	// CatchUpSeconds is the predicted time to catch up, in state
	// catching_up: BacklogTransactions / (ApplyRate − CommitRate).
	CatchUpSeconds float64 `json:"catchup_seconds,omitempty"`
	// FallingBehindBy is CommitRate − ApplyRate in state falling_behind
	// (transactions per second the backlog grows by).
	FallingBehindBy float64 `json:"falling_behind_by,omitempty"`

	// From serve's metrics (absent without them): the parallel applier
	// workers (latest reading) and, on MariaDB, the transactions that
	// optimistic parallel apply retried per second over the last minute
	// (Slave_retried_transactions). ParallelMode is MariaDB's
	// slave_parallel_mode of its first channel.
	WorkersBusy  int     `json:"workers_busy,omitempty"`
	WorkersTotal int     `json:"workers_total,omitempty"`
	RetryRate    float64 `json:"retry_rate,omitempty"`
	ParallelMode string  `json:"parallel_mode,omitempty"`
}

// GroupCommit is a primary's binary log group commit over the last
// minute, from MariaDB's status counters (serve's metrics): how many
// transactions each group carried and what closed the groups.
type GroupCommit struct {
	Key InstanceKey `json:"key"`
	// CommitRate is Binlog_commits per second, GroupRate
	// Binlog_group_commits per second.
	CommitRate float64 `json:"commit_rate"`
	GroupRate  float64 `json:"group_rate"`
	// CommitsPerGroup is CommitRate / GroupRate (0 with no group).
	CommitsPerGroup float64 `json:"commits_per_group"`
	// What closed the groups, per second: binlog_commit_wait_count
	// commits reached (Binlog_group_commit_trigger_count),
	// binlog_commit_wait_usec elapsed (_trigger_timeout), a transaction
	// that must not wait came (_trigger_lock_wait).
	TriggerCountRate    float64 `json:"trigger_count_rate"`
	TriggerTimeoutRate  float64 `json:"trigger_timeout_rate"`
	TriggerLockWaitRate float64 `json:"trigger_lock_wait_rate"`
	// The settings: binlog_commit_wait_count and binlog_commit_wait_usec
	// (-1 when not read).
	WaitCount int64 `json:"binlog_commit_wait_count"`
	WaitUsec  int64 `json:"binlog_commit_wait_usec"`
}

// Catch-up states of a ReplicaApply.
const (
	// CatchUpCaughtUp: the backlog is below one second of the primary's
	// commits (or empty).
	CatchUpCaughtUp = "caught_up"
	// CatchUpCatching: the replica applies faster than the primary
	// commits; CatchUpSeconds is the prediction.
	CatchUpCatching = "catching_up"
	// CatchUpFalling: the replica applies slower than the primary
	// commits: it will not catch up at this pace.
	CatchUpFalling = "falling_behind"
	// CatchUpStopped: the replica's SQL thread does not run.
	CatchUpStopped = "stopped"
	// CatchUpUnknown: not enough observations yet to measure the apply
	// rate (about 5 s of apply with a backlog), or no GTID positions.
	CatchUpUnknown = "unknown"
)

// Lagging reports whether the replica is behind (any state but caught
// up).
func (a *ReplicaApply) Lagging() bool { return a.State != CatchUpCaughtUp }
