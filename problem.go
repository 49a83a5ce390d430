package dbpilot

// ProblemCode names one kind of problem analysis can find.
type ProblemCode string

// Problems found by analysis. Names follow orchestrator's where one exists.
const (
	ProblemDeadPrimary              ProblemCode = "DeadPrimary"
	ProblemUnreachablePrimary       ProblemCode = "UnreachablePrimary"
	ProblemUnreachable              ProblemCode = "Unreachable"
	ProblemReplicationIOStopped     ProblemCode = "ReplicationIOStopped"
	ProblemReplicationSQLStopped    ProblemCode = "ReplicationSQLStopped"
	ProblemReplicaLagging           ProblemCode = "ReplicaLagging"
	ProblemErrantGTID               ProblemCode = "ErrantGTID"
	ProblemReplicaNotReadOnly       ProblemCode = "ReplicaNotReadOnly"
	ProblemPrimaryReadOnly          ProblemCode = "PrimaryReadOnly"
	ProblemNoBinlog                 ProblemCode = "NoBinlog"
	ProblemNoLogReplicaUpdates      ProblemCode = "NoLogReplicaUpdates"
	ProblemSemiSyncNoReplicas       ProblemCode = "SemiSyncNoReplicas"
	ProblemSemiSyncPrimaryOnReplica ProblemCode = "SemiSyncPrimaryOnReplica"
	ProblemSlowFailureDetection     ProblemCode = "SlowFailureDetection"
	ProblemNoGTID                   ProblemCode = "NoGTID"
	// ProblemRefusesDbpilot: the server answers but refuses dbpilot's user
	// (access denied, account locked, too many connections, host blocked).
	// It is alive: never a reason to fail over.
	ProblemRefusesDbpilot ProblemCode = "RefusesDbpilot"
	// ProblemMultipleWritable: more than one writable server in a cluster
	// (two primaries, a ring with two writable members, a writable old
	// primary beside the new one). Always critical.
	ProblemMultipleWritable ProblemCode = "MultipleWritable"
	// ProblemClusterOverlap: a server discovered in two configured
	// clusters; automatic recovery is suspended for both.
	ProblemClusterOverlap ProblemCode = "ClusterOverlap"
	// ProblemFencedOldPrimary: a former primary that answers again after a
	// failover, read_only (fenced) and outside the cluster; warning, or
	// critical when it has errant transactions (Detail["errant"]: the GTIDs
	// it has that the cluster's primary lacks). 'dbpilot rejoin' attaches
	// it below the primary, with --reclone when it has errant transactions.
	ProblemFencedOldPrimary ProblemCode = "FencedOldPrimary"
	// ProblemSmallCommitGroups (advice, info): replicas lag while the
	// primary's binary log groups carry about one commit each, so a
	// parallel replica has little to apply at once; the message gives
	// what binlog_commit_wait_count/_usec would buy and cost, from the
	// measured commit rate (serve with metrics, MariaDB).
	ProblemSmallCommitGroups ProblemCode = "SmallCommitGroups"
	// ProblemOptimisticRetries (advice, info): a replica's optimistic (or
	// aggressive) parallel apply retries many transactions
	// (Slave_retried_transactions); conservative mode does not retry.
	ProblemOptimisticRetries ProblemCode = "OptimisticRetries"

	// Galera.
	ProblemNonPrimaryComponent ProblemCode = "NonPrimaryComponent"
	ProblemClusterSizeMismatch ProblemCode = "ClusterSizeMismatch"
	ProblemNodeDesynced        ProblemCode = "NodeDesynced"
	ProblemFlowControlActive   ProblemCode = "FlowControlActive"
	ProblemRecvQueueGrowing    ProblemCode = "RecvQueueGrowing"
	ProblemNodeNotSynced       ProblemCode = "NodeNotSynced"
	ProblemSSTInProgress       ProblemCode = "SSTInProgress"
	ProblemDesyncLeftOn        ProblemCode = "DesyncLeftOn"
)

// Severity ranks problems.
type Severity string

// Severities, most to least urgent.
const (
	SeverityCritical Severity = "critical"
	SeverityWarning  Severity = "warning"
	SeverityInfo     Severity = "info"
)

// Problem is one finding of analysis on one instance (and channel, if any).
type Problem struct {
	Code     ProblemCode `json:"code"`
	Severity Severity    `json:"severity"`
	Instance InstanceKey `json:"instance"`
	Channel  string      `json:"channel,omitempty"`
	// Message is one human line: what is wrong and the evidence.
	Message string `json:"message"`
	// Detail carries machine-readable evidence, e.g. {"errant": "0-2-5"}.
	Detail map[string]string `json:"detail,omitempty"`
}
