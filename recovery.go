package dbpilot

import (
	"context"
	"time"
)

// PromotionRule is a per-instance preference for becoming primary, as in
// orchestrator.
type PromotionRule string

// Promotion rules, most to least preferred.
const (
	PromotePrefer    PromotionRule = "prefer"
	PromoteNeutral   PromotionRule = "neutral"
	PromotePreferNot PromotionRule = "prefer_not"
	PromoteMustNot   PromotionRule = "must_not"
)

// Valid reports whether r is a known rule ("" counts as neutral).
func (r PromotionRule) Valid() bool {
	switch r {
	case "", PromotePrefer, PromoteNeutral, PromotePreferNot, PromoteMustNot:
		return true
	}
	return false
}

// Recovery kinds.
const (
	RecoveryFailoverAuto   = "failover-auto"
	RecoveryFailoverManual = "failover-manual"
	RecoverySwitchover     = "switchover"
	RecoveryRelocate       = "relocate"
	// RecoveryRejoin attaches a detached server (a fenced old primary)
	// below the cluster's primary: OldPrimary is the server attached,
	// NewPrimary the primary it replicates from.
	RecoveryRejoin = "rejoin"
)

// Recovery is one topology change dbpilot made or tried: an automatic or
// manual failover, a switchover, a relocation or a rejoin.
type Recovery struct {
	ID         int64       `json:"id"`
	Cluster    string      `json:"cluster"`
	Kind       string      `json:"kind"`
	OldPrimary InstanceKey `json:"old_primary"`
	NewPrimary InstanceKey `json:"new_primary,omitzero"`
	// DetectedAt is when the failure was first seen (zero for planned work);
	// Started when recovery began; Ended when it finished.
	DetectedAt time.Time `json:"detected_at,omitzero"`
	Started    time.Time `json:"started"`
	Ended      time.Time `json:"ended,omitzero"`
	// WritesOpen is when the new primary became writable: from DetectedAt
	// to it is what clients saw of the failure (detection included).
	WritesOpen time.Time `json:"writes_open,omitzero"`
	Success    bool      `json:"success"`
	Error      string    `json:"error,omitempty"`
	// Plan is the human-readable plan with the reason for each decision.
	Plan string `json:"plan,omitempty"`
	// LostReplicas could not be repointed to the new primary.
	LostReplicas []InstanceKey `json:"lost_replicas,omitzero"`
	Acked        bool          `json:"acked"`
	AckedAt      time.Time     `json:"acked_at,omitzero"`
	AckedBy      string        `json:"acked_by,omitempty"`
	AckComment   string        `json:"ack_comment,omitempty"`
}

// AuditEvent is one step or decision, kept in the audit log.
type AuditEvent struct {
	ID         int64       `json:"id"`
	Time       time.Time   `json:"time"`
	Cluster    string      `json:"cluster,omitempty"`
	RecoveryID int64       `json:"recovery_id,omitempty"`
	Instance   InstanceKey `json:"instance,omitzero"`
	Event      string      `json:"event"` // one of the Audit* kinds

	Message string            `json:"message"` // one human line
	Detail  map[string]string `json:"detail,omitempty"`
}

// Audit event kinds: what an AuditEvent records. Serve's watch loop and
// operations write them, the recovery executor writes the steps, and drill
// and the CLI read them.
const (
	// Detection and decisions (serve).
	AuditDetect          = "detect"           // a dead primary confirmed; a recovery starts
	AuditPlan            = "plan"             // the plan and why its candidate won
	AuditCandidateFailed = "candidate-failed" // a candidate died before promotion; planning again
	AuditHook            = "hook"             // a hook ran
	AuditRecovered       = "recovered"        // a failover ended with a new primary
	AuditFence           = "fence"            // a returning old primary was fenced, or a finding about it
	AuditRejoin          = "rejoin"           // an old primary became a replica of the new one
	AuditReclone         = "reclone"          // a server about to be re-provisioned from another: the errant GTIDs it discards, then the copy
	AuditForget          = "forget"           // an instance not seen for long left the cluster
	AuditAck             = "ack"              // recoveries acknowledged
	AuditOperation       = "operation"        // a person's request (failover, switchover, relocate, rejoin, ack) and its outcome, refusals included
	AuditForced          = "forced"           // a person forced a failover of a primary not confirmed dead
	AuditResume          = "resume"           // a recovery left running by a serve that stopped is closed by the next one
	AuditCoordination    = "coordination"     // serves' coordination: a recovery taken over, a leadership lost, a forced action
	AuditWatchdog        = "watchdog"         // the query watchdog matched a session, and what it did (logged, killed, dry-run, rate-limited)
	AuditBinlogBackup    = "binlog_backup"    // serve's binlog backup started on a primary, stopped, or found a gap it cannot fill

	// Steps of a recovery (the executor).
	AuditApplyRelayLog = "apply-relay-log" // a candidate applied what it received
	AuditCatchUp       = "catch-up"        // a candidate fetched what others received
	AuditPromote       = "promote"         // a candidate became writable, replication removed
	AuditRepoint       = "repoint"         // a replica now replicates from the new primary
	AuditSemiSync      = "semi-sync"       // a semi-sync primary side turned off during a recovery, or on again after it
	AuditLost          = "lost"            // a replica cannot follow the new primary
	AuditReadOnly      = "read-only"       // switchover: the old primary refuses writes
	AuditKill          = "kill"            // switchover: client connections ended
	AuditWriteWindow   = "write-window"    // switchover: how long writes were refused
	AuditRollback      = "rollback"        // a failed change was undone
	AuditRelocate      = "relocate"        // a replica moved below another server
	AuditDone          = "done"            // the recovery or operation succeeded
	AuditFailed        = "failed"          // the recovery or operation failed
)

// Auditor records audit events.
type Auditor interface {
	Audit(ctx context.Context, e AuditEvent) error
}

// AuditFilter selects audit events; zero fields match everything.
type AuditFilter struct {
	Cluster    string
	RecoveryID int64
	Since      time.Time
	Limit      int // the latest Limit events (0: 1000), still returned oldest first
}

// RecoveryFilter selects recoveries; zero fields match everything.
type RecoveryFilter struct {
	Cluster string
	// ID selects one recovery by its id (0: any).
	ID    int64
	Limit int // 0: a default of 100
}

// Pruner is a StateStore that can forget history: serve prunes by age
// (config retention).
type Pruner interface {
	// Prune deletes audit events, recoveries, resolved alerts and
	// topology changes older than before; the newest recovery of each
	// cluster is always kept (its acknowledgement and the anti-flapping
	// block depend on it), and so are the newest topology change of each
	// instance still in its cluster and the newest cluster change before
	// it (the cluster as it was at before can still be rebuilt).
	Prune(ctx context.Context, before time.Time) (Pruned, error)
}

// Pruned counts what one Prune deleted.
type Pruned struct {
	Audit      int `json:"audit"`
	Recoveries int `json:"recoveries"`
	Alerts     int `json:"alerts"`
	Changes    int `json:"changes"` // topology changes
}

// StateStore keeps what serve knows across restarts: instances seen,
// recoveries and the audit log. The sqlite package implements it.
type StateStore interface {
	Auditor
	// SaveInstances records the latest observation of each instance of a
	// cluster (first_seen kept, last_seen updated).
	SaveInstances(ctx context.Context, cluster string, instances []*Instance) error
	// KnownInstances returns the instances of a cluster seen since since.
	KnownInstances(ctx context.Context, cluster string, since time.Time) ([]*Instance, error)
	// ForgetInstance removes an instance that left the cluster.
	ForgetInstance(ctx context.Context, cluster string, key InstanceKey) error

	CreateRecovery(ctx context.Context, r *Recovery) error // sets r.ID
	// UpdateRecovery stores r; an acknowledgement made meanwhile is kept
	// (never undone) and copied into r.
	UpdateRecovery(ctx context.Context, r *Recovery) error
	Recoveries(ctx context.Context, f RecoveryFilter) ([]*Recovery, error) // newest first
	// AckRecoveries acknowledges every unacknowledged recovery of cluster and
	// returns how many were acknowledged.
	AckRecoveries(ctx context.Context, cluster, by, comment string) (int, error)

	AuditEvents(ctx context.Context, f AuditFilter) ([]AuditEvent, error) // oldest first
	Close() error
}
