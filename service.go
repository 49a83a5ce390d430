package dbpilot

import (
	"context"
	"time"
)

// Cluster states as serve sees them.
const (
	ClusterOK          = "ok"          // the primary is reachable
	ClusterUnreachable = "unreachable" // dbpilot cannot reach the primary, but its replicas still replicate from it
	ClusterDead        = "dead"        // the primary is unreachable and every replica lost it
	ClusterRecovering  = "recovering"  // a recovery runs
	ClusterUnknown     = "unknown"     // not observed yet
)

// ClusterStatus is serve's view of one cluster.
type ClusterStatus struct {
	Name         string      `json:"name"`
	State        string      `json:"state"`
	Primary      InstanceKey `json:"primary"`
	AutoFailover bool        `json:"auto_failover"`
	Instances    []*Instance `json:"instances"`
	Problems     []Problem   `json:"problems"`
	// Detached are instances discovery still sees but that are outside
	// the cluster: an old primary after a failover (dead, or fenced and
	// read_only when it returns), a seed that does not replicate.
	Detached []*Instance `json:"detached,omitempty"`
	// Fenced are the cluster's former primaries that serve keeps out of
	// it after a failover (among Detached when they answer): read_only
	// when they return, until 'dbpilot rejoin' attaches them below the
	// primary.
	Fenced     []FencedInstance `json:"fenced,omitempty"`
	ObservedAt time.Time        `json:"observed_at"`
	// BlockedUntil is set while automatic recovery is blocked by a recent
	// unacknowledged recovery (anti-flapping).
	BlockedUntil time.Time `json:"blocked_until,omitzero"`
	// LastRecovery is the newest recovery of the cluster, if any.
	LastRecovery *Recovery `json:"last_recovery,omitempty"`
	// PromotionRules are the configured rules by HOST:PORT; an instance not
	// listed is neutral.
	PromotionRules map[string]PromotionRule `json:"promotion_rules,omitempty"`
	// Owner is, with several serves (coordination), the member that
	// observes the cluster and collects its metrics: its leader.
	Owner string `json:"owner,omitempty"`
	// ReplicaApply is every reachable replica's apply: backlog, apply
	// and commit rates, catch-up prediction (serve's observations of the
	// last minute; see docs/monitoring.md).
	ReplicaApply []ReplicaApply `json:"replica_apply,omitempty"`
	// GroupCommit is the primary's group commit over the last minute
	// (serve with metrics, MariaDB; nil otherwise).
	GroupCommit *GroupCommit `json:"group_commit,omitempty"`
}

// FencedInstance is a former primary kept out of its cluster after a
// failover: serve sets it read_only (fences it) when it answers again,
// and it stays detached until 'dbpilot rejoin' attaches it below the
// cluster's primary.
type FencedInstance struct {
	Key InstanceKey `json:"key"`
	// Reachable and ReadOnly are as last observed: a former primary that
	// does not answer is fenced when it does; one that answers writable
	// is fenced at once (MultipleWritable until then).
	Reachable bool `json:"reachable"`
	ReadOnly  bool `json:"read_only"`
	// Primary is the cluster's primary it was compared with.
	Primary InstanceKey `json:"primary,omitzero"`
	// Compared is set when both answered and their GTIDs were compared;
	// Errant then lists the GTIDs it has that Primary lacks ("" when it
	// has none: it can rejoin as it is).
	Compared bool   `json:"compared"`
	Errant   string `json:"errant,omitempty"`
	// Since is when the failover that replaced it ended, RecoveryID that
	// failover's (zero when unknown).
	Since      time.Time `json:"since,omitzero"`
	RecoveryID int64     `json:"recovery_id,omitempty"`
}

// Health is serve's own state.
type Health struct {
	Status   string    `json:"status"` // "ok"
	Version  string    `json:"version"`
	Started  time.Time `json:"started"`
	Clusters int       `json:"clusters"`
	// Monitored is how many instances serve collects metrics from.
	Monitored int `json:"monitored,omitempty"`
	// CollectionBacklog is how many collector runs wait now for serve's
	// own resources (a session, a connection slot): collection behind
	// because serve is, not because a server is.
	CollectionBacklog int64 `json:"collection_backlog,omitempty"`
}

// OperationOptions qualify a topology change requested by a person.
type OperationOptions struct {
	DryRun bool `json:"dry_run"`
	// To is the switchover target or the relocation target (--below). A
	// switchover chooses when it is zero; a failover ignores it.
	To InstanceKey `json:"to,omitzero"`
	// ForceWithoutCoordination lets a failover run while the serves'
	// coordination (etcd) is unavailable: audited, and at the risk that
	// another serve acts too.
	ForceWithoutCoordination bool `json:"force_without_coordination,omitempty"`
	// Force lets a manual failover run although the primary is not
	// confirmed dead (it refuses dbpilot, or dbpilot cannot reach it while
	// its replicas still can): the operator vouches that it is down or
	// fenced. Audited.
	Force bool `json:"force,omitempty"`
	// Forwarded marks a request another serve forwarded to this one (the
	// cluster's leader); it is not forwarded again.
	Forwarded bool `json:"forwarded,omitempty"`
	// MaxLag overrides the setting switchover.max_lag for this switchover
	// or relocation: the most a candidate (or a relocation's target) may
	// lag, or take to apply what it received. Zero: the setting.
	MaxLag time.Duration `json:"max_lag_ns,omitempty"`
	// DrainTimeout overrides the setting switchover.drain_timeout for this
	// switchover: how long writes stay refused on the old primary while the
	// candidate applies its last transactions before the switchover is
	// rolled back. Zero: the setting.
	DrainTimeout time.Duration `json:"drain_timeout_ns,omitempty"`
	// Reclone makes a rejoin re-provision the server from a replica of
	// the cluster (dump and restore: its data, binary log and errant
	// transactions discarded, the errant GTIDs recorded in the audit)
	// before attaching it; without it a server with errant transactions is
	// refused.
	Reclone bool `json:"reclone,omitempty"`
}

// ClusterWatcher is implemented by a ClusterService that can say when a
// cluster's status changes (serve's daemon), so that a client is told at
// once instead of polling: the console's live topology.
type ClusterWatcher interface {
	// ClusterChanged returns a channel closed at the cluster's next status
	// change (state, primary, members, problems, observation, recovery or
	// ack); it fails with ENOTFOUND for an unknown cluster.
	ClusterChanged(ctx context.Context, name string) (<-chan struct{}, error)
}

// RecoveryReporter is implemented by a ClusterService that writes
// incident reports (serve's daemon, and httpapi.Client through it): GET
// /api/recoveries/{id}/report, 'dbpilot report'.
type RecoveryReporter interface {
	// RecoveryReport returns the incident report of recovery id in format
	// (ReportHTML, ReportJSON). It fails with ENOTFOUND for an unknown
	// recovery.
	RecoveryReport(ctx context.Context, id int64, format string) ([]byte, error)
}

// Formats of an incident report.
const (
	// ReportHTML is one self-contained HTML page (package report).
	ReportHTML = "html"
	// ReportJSON is the data the page is made from, as serve gathered it
	// (report.Input).
	ReportJSON = "json"
)

// ClusterService is what the CLI asks of dbpilot, whether it acts directly
// or through a running `serve` (httpapi.Client implements it too).
type ClusterService interface {
	Health(ctx context.Context) (*Health, error)
	Clusters(ctx context.Context) ([]*ClusterStatus, error)
	// ClusterStatus fails with ENOTFOUND for an unknown cluster.
	ClusterStatus(ctx context.Context, name string) (*ClusterStatus, error)
	Recoveries(ctx context.Context, f RecoveryFilter) ([]*Recovery, error)
	AuditEvents(ctx context.Context, f AuditFilter) ([]AuditEvent, error)
	// Failover recovers a cluster whose primary is dead; with DryRun it
	// returns the plan (Recovery.Plan) and changes nothing. Failover,
	// Switchover and Relocate return the recovery record also when they fail
	// after starting, together with the error.
	Failover(ctx context.Context, cluster string, opt OperationOptions) (*Recovery, error)
	// Switchover replaces a healthy primary with a replica (opt.To or the
	// best candidate).
	Switchover(ctx context.Context, cluster string, opt OperationOptions) (*Recovery, error)
	// Relocate moves replica below opt.To.
	Relocate(ctx context.Context, replica InstanceKey, opt OperationOptions) (*Recovery, error)
	// Rejoin attaches instance, a server of cluster outside its
	// replication tree (a fenced old primary), below the cluster's primary
	// as a read_only replica with GTID positioning. It refuses (ECONFLICT,
	// naming them) a server with errant transactions unless opt.Reclone,
	// which re-provisions it from a replica first. opt.To is ignored.
	Rejoin(ctx context.Context, cluster string, instance InstanceKey, opt OperationOptions) (*Recovery, error)
	// Ack acknowledges a cluster's recoveries, unblocking automatic recovery.
	Ack(ctx context.Context, cluster, by, comment string) (int, error)
}
