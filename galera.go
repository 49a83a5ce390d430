package dbpilot

import (
	"strconv"
	"strings"
	"time"
)

// GaleraNodeState is wsrep_local_state: where a Galera node is in its
// life cycle within the cluster.
type GaleraNodeState int

// Galera node states as wsrep_local_state numbers them. 0 is also what a
// node in a non-Primary component reports ("Initialized").
const (
	GaleraInitialized GaleraNodeState = 0
	GaleraJoining     GaleraNodeState = 1 // receiving a state transfer (SST or IST)
	GaleraDonor       GaleraNodeState = 2 // Donor/Desynced: serving a state transfer, or wsrep_desync=ON
	GaleraJoined      GaleraNodeState = 3 // state received, catching up with the cluster
	GaleraSynced      GaleraNodeState = 4
)

// String returns the state as wsrep_local_state_comment spells it.
func (s GaleraNodeState) String() string {
	switch s {
	case GaleraInitialized:
		return "Initialized"
	case GaleraJoining:
		return "Joining"
	case GaleraDonor:
		return "Donor/Desynced"
	case GaleraJoined:
		return "Joined"
	case GaleraSynced:
		return "Synced"
	}
	return strconv.Itoa(int(s))
}

// Galera cluster statuses (wsrep_cluster_status).
const (
	GaleraPrimary      = "Primary"
	GaleraNonPrimary   = "non-Primary"
	GaleraDisconnected = "Disconnected"
)

// GaleraCounters are the wsrep status values that analysis compares between
// two observations of one node: the counters (which only grow until a
// restart or FLUSH STATUS) and the receive queue.
type GaleraCounters struct {
	// FlowControlPausedNS is wsrep_flow_control_paused_ns: nanoseconds
	// replication was paused by flow control since the server started (or
	// FLUSH STATUS).
	FlowControlPausedNS uint64 `json:"flow_control_paused_ns"`
	// FlowControlSent and FlowControlRecv are wsrep_flow_control_sent and
	// _recv: flow-control messages this node sent (it could not keep up)
	// and received (from any node, itself included).
	FlowControlSent uint64 `json:"flow_control_sent"`
	FlowControlRecv uint64 `json:"flow_control_recv"`
	// LocalRecvQueue is wsrep_local_recv_queue: write sets received and
	// not yet applied.
	LocalRecvQueue int64 `json:"local_recv_queue"`
}

// GaleraSample is one earlier observation of a node, kept by the inspector
// that observed it, so that analysis can measure a window from two
// observations without history of its own.
type GaleraSample struct {
	At         time.Time       `json:"at"`
	LocalState GaleraNodeState `json:"local_state"`
	GaleraCounters
}

// GaleraState is a Galera node's replication state (MariaDB Galera Cluster,
// Percona XtraDB Cluster), from SHOW GLOBAL STATUS LIKE 'wsrep%' and SHOW
// GLOBAL VARIABLES LIKE 'wsrep%'.
type GaleraState struct {
	// LocalState is wsrep_local_state; LocalStateComment its text
	// (wsrep_local_state_comment), which says more while joining
	// ("Joining: receiving State Transfer").
	LocalState        GaleraNodeState `json:"local_state"`
	LocalStateComment string          `json:"local_state_comment,omitempty"`
	// ClusterStatus is wsrep_cluster_status: Primary, non-Primary (this
	// node's component lost quorum: it refuses queries) or Disconnected.
	ClusterStatus string `json:"cluster_status"`
	// ClusterSize is wsrep_cluster_size: the members of this node's
	// component.
	ClusterSize      int    `json:"cluster_size"`
	ClusterStateUUID string `json:"cluster_state_uuid,omitempty"`
	ClusterConfID    int64  `json:"cluster_conf_id"`
	LocalIndex       int    `json:"local_index"`
	// Ready is wsrep_ready (the node accepts queries); Connected is
	// wsrep_connected (it has a network connection to the group).
	Ready     bool `json:"ready"`
	Connected bool `json:"connected"`
	// IncomingAddresses are the client (SQL) addresses of the members of
	// this node's component (wsrep_incoming_addresses).
	IncomingAddresses []InstanceKey `json:"incoming_addresses,omitempty"`
	// DesyncCount is wsrep_desync_count: how many reasons hold the node
	// desynced (wsrep_desync=ON, a state transfer it donates, FTWRL).
	DesyncCount     int    `json:"desync_count"`
	LastCommitted   int64  `json:"last_committed"`
	ProviderName    string `json:"provider_name,omitempty"`
	ProviderVersion string `json:"provider_version,omitempty"`

	GaleraCounters
	// FlowControlPaused is wsrep_flow_control_paused: the fraction of time
	// (0..1) paused by flow control since the server started or FLUSH
	// STATUS. A window needs two observations (Previous).
	FlowControlPaused float64 `json:"flow_control_paused"`
	// LocalRecvQueueAvg and LocalSendQueue(Avg): wsrep_local_recv_queue_avg,
	// wsrep_local_send_queue, wsrep_local_send_queue_avg.
	LocalRecvQueueAvg float64 `json:"local_recv_queue_avg"`
	LocalSendQueue    int64   `json:"local_send_queue"`
	LocalSendQueueAvg float64 `json:"local_send_queue_avg"`
	// CertDepsDistance is wsrep_cert_deps_distance: how many write sets
	// could be applied in parallel on average.
	CertDepsDistance float64 `json:"cert_deps_distance"`

	// From the variables.
	ClusterName string `json:"cluster_name,omitempty"`
	// ClusterAddress is wsrep_cluster_address as configured, e.g.
	// "gcomm://10.0.0.1:4567,10.0.0.2,10.0.0.3": the group communication
	// addresses of the configured members, not their SQL ports.
	ClusterAddress      string `json:"cluster_address,omitempty"`
	NodeName            string `json:"node_name,omitempty"`
	NodeAddress         string `json:"node_address,omitempty"`
	NodeIncomingAddress string `json:"node_incoming_address,omitempty"`
	// Desync is wsrep_desync: the node was desynced on purpose (a backup).
	Desync    bool   `json:"desync"`
	SSTMethod string `json:"sst_method,omitempty"`
	// FCLimit is gcs.fc_limit from wsrep_provider_options: the receive
	// queue at which a synced node sends flow control; 0 when unknown.
	FCLimit int `json:"fc_limit,omitempty"`

	// History the observer kept (zero without one: a single inspection).
	//
	// Previous is the observer's earlier sample of this node, when it has
	// one of the same server run.
	Previous *GaleraSample `json:"previous,omitempty"`
	// StateSince is the first of the consecutive observations that saw the
	// node in LocalState. StateChangeSeen says the observer also saw the
	// state before (so the node entered it between that observation and
	// StateSince); without it the node was in LocalState at least since
	// StateSince.
	StateSince      time.Time `json:"state_since,omitzero"`
	StateChangeSeen bool      `json:"state_change_seen,omitempty"`
	// FormerMembers are client addresses of this cluster's members that
	// earlier observations saw in wsrep_incoming_addresses and the current
	// view lacks (a node that left or died).
	FormerMembers []InstanceKey `json:"former_members,omitempty"`
}

// InPrimary reports whether the node is in the Primary component.
func (g *GaleraState) InPrimary() bool { return strings.EqualFold(g.ClusterStatus, GaleraPrimary) }

// ConfiguredMembers returns the group communication addresses listed in
// wsrep_cluster_address (host, or host:port), in order, without options.
// An empty gcomm:// (bootstrap the cluster) lists none.
func (g *GaleraState) ConfiguredMembers() []string {
	s := strings.TrimSpace(g.ClusterAddress)
	if i := strings.Index(s, "://"); i >= 0 {
		s = s[i+3:]
	}
	if i := strings.IndexByte(s, '?'); i >= 0 {
		s = s[:i]
	}
	var out []string
	for _, m := range strings.Split(s, ",") {
		if m = strings.TrimSpace(m); m != "" {
			out = append(out, m)
		}
	}
	return out
}

// Member reports whether k is one of the addresses of the node's component
// or of former members.
func (g *GaleraState) Member(k InstanceKey) bool {
	for _, m := range g.IncomingAddresses {
		if m.Equal(k) {
			return true
		}
	}
	for _, m := range g.FormerMembers {
		if m.Equal(k) {
			return true
		}
	}
	return false
}

// GaleraGroup summarizes the Galera cluster of a Cluster: its nodes all
// accept writes, so it is a group, not a primary/replica tree.
type GaleraGroup struct {
	// Name is wsrep_cluster_name.
	Name      string `json:"name,omitempty"`
	StateUUID string `json:"state_uuid,omitempty"`
	// Nodes are the cluster's Galera nodes among the instances, reachable or
	// not, sorted by key.
	Nodes []InstanceKey `json:"nodes"`
	// Size is the largest wsrep_cluster_size of a node in the Primary
	// component (0 when no node is in one); Configured the number of
	// members wsrep_cluster_address lists (the largest over the nodes).
	Size       int `json:"size"`
	Configured int `json:"configured"`
	// Primary reports whether some node is in the Primary component.
	Primary bool `json:"primary"`
}
