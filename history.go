package dbpilot

import (
	"context"
	"time"
)

// Kinds of TopologyChange.
const (
	// ChangeInstance: an instance joined the cluster, or its shape or state
	// changed (role, source, thread states, read_only, semi-sync,
	// reachability). State is the instance as it is after the change.
	ChangeInstance = "instance"
	// ChangeLeft: an instance left the cluster (forgotten, or now outside
	// it). State is nil.
	ChangeLeft = "left"
	// ChangeCluster: the cluster's primary or its problems changed.
	// Primary and Problems are as they are after the change.
	ChangeCluster = "cluster"
)

// TopologyChange is one change serve observed in a cluster: the topology
// history (the time machine). A cluster as it was at any instant is the
// newest ChangeInstance or ChangeLeft of each instance and the newest
// ChangeCluster at or before that instant.
type TopologyChange struct {
	ID      int64     `json:"id"`
	Time    time.Time `json:"time"`
	Cluster string    `json:"cluster"`
	Kind    string    `json:"kind"`
	// Instance is the instance changed; zero for ChangeCluster.
	Instance InstanceKey `json:"instance,omitzero"`
	// State is the instance after a ChangeInstance, reduced to what the
	// history keeps (Instance.Shape): no positions, counters or lag.
	State *Instance `json:"state,omitempty"`
	// Primary and Problems: the cluster after a ChangeCluster.
	Primary  InstanceKey `json:"primary,omitzero"`
	Problems []Problem   `json:"problems,omitempty"`
	// Summary is one human line of what changed, e.g. "127.0.0.1:3307:
	// SQL thread stopped" or "primary 127.0.0.1:3306 → 127.0.0.1:3307".
	Summary string `json:"summary"`
}

// ChangeFilter selects topology changes of one cluster; zero times are
// open ends.
type ChangeFilter struct {
	Cluster string
	From    time.Time // inclusive
	To      time.Time // inclusive
	Limit   int       // 0: DefaultChangeLimit; the oldest first
}

// DefaultChangeLimit is how many changes a ChangeFilter without a Limit
// returns.
const DefaultChangeLimit = 1000

// TopologyHistory keeps the topology changes serve records (the sqlite
// package).
type TopologyHistory interface {
	// RecordChanges stores changes (their IDs are set by the store).
	RecordChanges(ctx context.Context, changes []TopologyChange) error
	// TopologyChanges returns the changes f selects, oldest first.
	TopologyChanges(ctx context.Context, f ChangeFilter) ([]TopologyChange, error)
	// ChangesAt returns what makes up cluster at t: the newest change at or
	// before t of each instance (ChangeInstance or ChangeLeft) and the
	// newest ChangeCluster; oldest first. Empty when t is before the
	// cluster's history.
	ChangesAt(ctx context.Context, cluster string, t time.Time) ([]TopologyChange, error)
	// HistoryStart returns the time of cluster's oldest change kept (zero:
	// none).
	HistoryStart(ctx context.Context, cluster string) (time.Time, error)
}

// ClusterAt is a cluster as it was at one instant, built from the topology
// history (GET /api/clusters/{name}/at?t=TIME). Its instances, primary and
// problems have the shape of ClusterStatus's, so that what draws the
// present draws the past.
type ClusterAt struct {
	Name string    `json:"name"`
	At   time.Time `json:"at"`
	// Recorded is false when At is before the cluster's history begins
	// (Since) or after now: nothing is known then.
	Recorded bool `json:"recorded"`
	// Since is when the cluster's history kept begins (zero: no history).
	Since     time.Time   `json:"since,omitzero"`
	Primary   InstanceKey `json:"primary,omitzero"`
	Instances []*Instance `json:"instances"`
	Problems  []Problem   `json:"problems"`
	// Alerts are the alerts of the cluster firing at At.
	Alerts []Alert `json:"alerts"`
	// Lag (seconds) and QueriesPerSecond of each instance at At, by
	// HOST:PORT, from the metrics store; an instance without a sample
	// within 5 minutes before At is absent.
	Lag              map[string]float64 `json:"lag"`
	QueriesPerSecond map[string]float64 `json:"queries_per_second"`
	// Changes are the changes in the second up to At (At-1s, At]; Prev is
	// the time of the newest change before At, Next of the oldest after it
	// (zero: none), for stepping from change to change.
	Changes []TopologyChange `json:"changes"`
	Prev    time.Time        `json:"prev,omitzero"`
	Next    time.Time        `json:"next,omitzero"`
}

// Shape returns the part of i the topology history keeps: identity, role,
// replication channels with their sources, thread states and errors,
// read_only, semi-sync state, reachability, Galera state. Positions,
// GTIDs, counters, lag, times and error texts of unreachable servers
// (which vary from one attempt to the next) are left out, so that an idle and a busy server of the
// same shape compare equal. It returns a copy; i is not changed.
func (i *Instance) Shape() *Instance {
	s := &Instance{
		Key: i.Key, Reachable: i.Reachable, RefusedErrno: i.RefusedErrno,
		Flavor: i.Flavor, Version: i.Version, ServerID: i.ServerID, ServerUUID: i.ServerUUID,
		ReadOnly: i.ReadOnly, SuperReadOnly: i.SuperReadOnly, LogBin: i.LogBin,
		LogReplicaUpdates: i.LogReplicaUpdates,
		SemiSync:          i.SemiSync,
	}
	for _, c := range i.Channels {
		s.Channels = append(s.Channels, ReplicationChannel{
			Name: c.Name, Source: c.Source, UsingGTID: c.UsingGTID,
			IORunning: c.IORunning, SQLRunning: c.SQLRunning,
			LastIOErrno: c.LastIOErrno, LastIOError: c.LastIOError,
			LastSQLErrno: c.LastSQLErrno, LastSQLError: c.LastSQLError,
		})
	}
	if g := i.Galera; g != nil {
		s.Galera = &GaleraState{
			LocalState: g.LocalState, LocalStateComment: g.LocalStateComment,
			ClusterStatus: g.ClusterStatus, ClusterSize: g.ClusterSize,
			Ready: g.Ready, Connected: g.Connected, DesyncCount: g.DesyncCount,
		}
	}
	return s
}
