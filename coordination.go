package dbpilot

import (
	"context"
	"errors"
	"time"
)

// ErrLeadershipLost is in the chain of every error of a fencing check that
// failed: the serve is no longer (or cannot prove it is) the cluster's
// leader, and must not change it.
var ErrLeadershipLost = errors.New("not the cluster's leader any more: stopped before changing it")

// Coordinator lets several serve processes watch the same clusters while
// exactly one of them, the cluster's leader, changes its topology
// (failover, switchover, relocate, fencing, rejoin). The coord package
// implements it with etcd elections; without it a serve acts alone.
//
// Leadership is proven by a Fence: its token is the election key's
// revision, and Check confirms with the coordination service, before each
// mutating statement, that the key still exists with that revision. A serve
// that lost its lease (paused, partitioned) fails the check and stops
// before it changes anything.
type Coordinator interface {
	// Member is this serve's member id (serve --id).
	Member() string
	// Lead returns this serve's fence for cluster when it is the cluster's
	// leader. Otherwise it fails with ECONFLICT naming the leader (see
	// LeaderOf), or with EUNAVAIL when coordination is unavailable.
	Lead(cluster string) (Fence, error)
	// Check confirms that f still holds, with a linearizable read of the
	// leader key; it fails with ECONFLICT when leadership was lost and
	// EUNAVAIL when the coordination service does not answer.
	Check(ctx context.Context, f Fence) error
	// LeaderOf returns the member leading cluster and the API address it
	// advertises ("" when there is no leader or it is this serve).
	LeaderOf(cluster string) (member, api string)
	// Owner returns the member that observes cluster and collects the
	// metrics of its instances, and the API address it advertises: the
	// cluster's leader, or while nobody leads it the live member that
	// rendezvous hashing of the cluster's name ranks first. member is ""
	// once coordination has been unavailable for a few lease TTLs (every
	// serve then observes and collects everything, as a serve alone does);
	// a shorter loss keeps the owners last known.
	Owner(cluster string) (member, api string)
	// Peers are the other live serves (their member ids and API
	// addresses), for the fleet-wide reads that ask each of them.
	Peers() []CoordMember

	// BeginRecovery records, before its first mutating step, that f's
	// holder starts rec on cluster; it assigns rec.ID from a counter shared
	// by every serve when rec.ID is 0.
	BeginRecovery(ctx context.Context, f Fence, rec *SharedRecovery) error
	// UpdateRecovery records the recovery's progress (steps, the new
	// primary, the end), guarded by f like every write of the leader.
	UpdateRecovery(ctx context.Context, f Fence, rec *SharedRecovery) error
	// Recovery returns the cluster's last shared recovery, nil when none.
	Recovery(ctx context.Context, cluster string) (*SharedRecovery, error)
	// Ack marks the cluster's last recovery acknowledged for every serve.
	Ack(ctx context.Context, cluster, by, comment string) error

	// Status is what GET /api/coordination shows.
	Status(ctx context.Context) *CoordinationStatus
}

// CoordinationReporter is implemented by a ClusterService that can tell
// how serves coordinate (serve's daemon): GET /api/coordination.
type CoordinationReporter interface {
	CoordinationStatus(ctx context.Context) *CoordinationStatus
}

// Fence is a leader's proof of leadership of one cluster.
type Fence struct {
	Cluster string `json:"cluster"`
	Member  string `json:"member"`
	// Token is the election key's create revision: it grows with every new
	// leader, so a stale leader's token never matches again.
	Token int64 `json:"token"`
}

// SharedRecovery is the state of a cluster's recovery that every serve
// sees: the leader writes it as it goes, and a serve that becomes leader
// finishes or plans again a recovery it finds running.
type SharedRecovery struct {
	ID         int64       `json:"id"`
	Cluster    string      `json:"cluster"`
	Kind       string      `json:"kind"`
	OldPrimary InstanceKey `json:"old_primary"`
	// Candidate is the instance being promoted (failover, switchover).
	Candidate InstanceKey `json:"candidate,omitzero"`
	Member    string      `json:"member"` // the leader running it
	Token     int64       `json:"token"`  // its fence token
	// State is running, done or failed.
	State   string    `json:"state"`
	Steps   []string  `json:"steps,omitempty"`
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended,omitzero"`
	Error   string    `json:"error,omitempty"`
	// ResumedBy lists members that took the recovery over.
	ResumedBy  []string  `json:"resumed_by,omitempty"`
	Acked      bool      `json:"acked,omitempty"`
	AckedBy    string    `json:"acked_by,omitempty"`
	AckedAt    time.Time `json:"acked_at,omitzero"`
	AckComment string    `json:"ack_comment,omitempty"`
}

// Shared recovery states.
const (
	SharedRunning = "running"
	SharedDone    = "done"
	SharedFailed  = "failed"
)

// Coordination modes in CoordinationStatus.
const (
	CoordinationSingle      = "single"      // no coordination configured: this serve acts alone
	CoordinationOK          = "ok"          // connected, lease alive
	CoordinationUnavailable = "unavailable" // etcd unreachable or without quorum: monitoring only
)

// CoordinationStatus describes the coordination of serves.
type CoordinationStatus struct {
	State     string   `json:"state"`
	Reason    string   `json:"reason,omitempty"`
	Member    string   `json:"member"`
	Endpoints []string `json:"endpoints,omitempty"`
	// LeaseID and LeaseTTL are this serve's etcd session; LastKeepAlive is
	// when etcd last confirmed it.
	LeaseID       int64     `json:"lease_id,omitempty"`
	LeaseTTL      float64   `json:"lease_ttl_seconds,omitempty"`
	LastKeepAlive time.Time `json:"last_keepalive,omitzero"`
	// Collecting is how many instances this serve collects metrics from
	// (those of the clusters it owns, ClusterLeader.Owner).
	Collecting int               `json:"collecting"`
	Members    []CoordMember     `json:"members"`
	Leaders    []ClusterLeader   `json:"leaders"`
	Recoveries []*SharedRecovery `json:"recoveries,omitempty"`
}

// CoordMember is one serve registered with the coordination service.
type CoordMember struct {
	ID      string    `json:"id"`
	API     string    `json:"api,omitempty"`
	Version string    `json:"version,omitempty"`
	Started time.Time `json:"started"`
	Self    bool      `json:"self,omitempty"`
}

// ClusterLeader is the leader of one cluster.
type ClusterLeader struct {
	Cluster string `json:"cluster"`
	Member  string `json:"member,omitempty"` // "" while nobody leads
	Token   int64  `json:"token,omitempty"`
	// Since is when this serve saw the leader take over.
	Since time.Time `json:"since,omitzero"`
	Self  bool      `json:"self,omitempty"`
	// Owner is the member that observes the cluster and collects its
	// metrics (Coordinator.Owner): the leader, or while nobody leads it
	// the member rendezvous hashing ranks first.
	Owner string `json:"owner,omitempty"`
}
