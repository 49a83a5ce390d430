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
	// Newest takes the newest Limit changes instead of the oldest, still
	// returned oldest first (as a tail does): the change before a moment
	// is the newest with To just before it.
	Newest bool
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

// HistoryService answers from the topology history: serve's daemon
// implements it, and so does httpapi.Client (GET
// /api/clusters/{name}/at and /changes).
type HistoryService interface {
	// ClusterAt returns cluster as it was at t; it fails with ENOTFOUND
	// for an unknown cluster.
	ClusterAt(ctx context.Context, cluster string, t time.Time) (*ClusterAt, error)
	// TopologyChanges returns the changes f selects (f.Cluster is
	// required), oldest first.
	TopologyChanges(ctx context.Context, f ChangeFilter) ([]TopologyChange, error)
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
	// within 5 minutes before At is absent (queries/s is the rate over the
	// minute up to At: absent without two samples in it). Empty without a
	// metrics store.
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

// SameShape reports whether i and o are equal in what Shape keeps (keys
// and sources compared normalized), without copying either: serve
// compares every observation with the last one recorded.
func (i *Instance) SameShape(o *Instance) bool {
	if i == nil || o == nil {
		return i == o
	}
	if !i.Key.Equal(o.Key) || i.Reachable != o.Reachable || i.RefusedErrno != o.RefusedErrno ||
		i.Flavor != o.Flavor || i.Version != o.Version || i.ServerID != o.ServerID || i.ServerUUID != o.ServerUUID ||
		i.ReadOnly != o.ReadOnly || i.SuperReadOnly != o.SuperReadOnly || i.LogBin != o.LogBin ||
		i.LogReplicaUpdates != o.LogReplicaUpdates || i.SemiSync != o.SemiSync ||
		len(i.Channels) != len(o.Channels) || (i.Galera == nil) != (o.Galera == nil) {
		return false
	}
	for n := range i.Channels {
		a, b := &i.Channels[n], &o.Channels[n]
		if a.Name != b.Name || !a.Source.Equal(b.Source) || a.UsingGTID != b.UsingGTID ||
			a.IORunning != b.IORunning || a.SQLRunning != b.SQLRunning ||
			a.LastIOErrno != b.LastIOErrno || a.LastIOError != b.LastIOError ||
			a.LastSQLErrno != b.LastSQLErrno || a.LastSQLError != b.LastSQLError {
			return false
		}
	}
	if g, h := i.Galera, o.Galera; g != nil {
		if g.LocalState != h.LocalState || g.LocalStateComment != h.LocalStateComment ||
			g.ClusterStatus != h.ClusterStatus || g.ClusterSize != h.ClusterSize ||
			g.Ready != h.Ready || g.Connected != h.Connected || g.DesyncCount != h.DesyncCount {
			return false
		}
	}
	return true
}
