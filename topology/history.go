package topology

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot"
)

// Snapshot is a cluster as the topology history keeps it: its primary,
// its members by normalized key, and its problems. Members are compared by
// their shape only (dbpilot.Instance.SameShape), so a snapshot may hold
// full observations (they are not copied) or shapes read back from the
// history.
type Snapshot struct {
	Primary  dbpilot.InstanceKey
	Members  map[dbpilot.InstanceKey]*dbpilot.Instance
	Problems []dbpilot.Problem
}

// NewSnapshot returns the snapshot of a cluster observed with primary,
// members and problems; nil members are skipped.
func NewSnapshot(primary dbpilot.InstanceKey, members []*dbpilot.Instance, problems []dbpilot.Problem) Snapshot {
	s := Snapshot{Primary: primary, Members: make(map[dbpilot.InstanceKey]*dbpilot.Instance, len(members)), Problems: problems}
	for _, m := range members {
		if m != nil {
			s.Members[m.Key.Normalized()] = m
		}
	}
	return s
}

// Instances returns the members ordered by host and port.
func (s Snapshot) Instances() []*dbpilot.Instance {
	out := make([]*dbpilot.Instance, 0, len(s.Members))
	for _, m := range s.Members {
		out = append(out, m)
	}
	sortInstances(out)
	return out
}

// Rebuild returns the cluster that changes make up, applied oldest first:
// each instance's newest ChangeInstance (its state) unless a ChangeLeft
// follows it, and the newest ChangeCluster's primary and problems. Given
// what dbpilot.TopologyHistory.ChangesAt returns, it is the cluster at
// that instant; given every change of a span from its start, the cluster at
// its end.
func Rebuild(changes []dbpilot.TopologyChange) Snapshot {
	s := Snapshot{Members: map[dbpilot.InstanceKey]*dbpilot.Instance{}}
	for _, c := range changes {
		switch c.Kind {
		case dbpilot.ChangeInstance:
			if c.State != nil {
				s.Members[c.Instance.Normalized()] = c.State
			}
		case dbpilot.ChangeLeft:
			delete(s.Members, c.Instance.Normalized())
		case dbpilot.ChangeCluster:
			s.Primary, s.Problems = c.Primary, c.Problems
		}
	}
	return s
}

// Diff returns the changes of cluster from prev to next, at time at: a
// ChangeInstance for each member that joined or whose shape changed (its
// State is the member's Shape), a ChangeLeft for each member gone, by key,
// then a ChangeCluster when the primary or the problems changed (problems
// compare by code, severity, instance and channel: their messages carry
// evidence that changes, a lag figure). Each has a one-line Summary. Nil
// when nothing changed; nothing is copied or formatted then.
func Diff(cluster string, at time.Time, prev, next Snapshot) []dbpilot.TopologyChange {
	var out []dbpilot.TopologyChange
	for k, n := range next.Members {
		p := prev.Members[k]
		if p != nil && p.SameShape(n) {
			continue
		}
		out = append(out, dbpilot.TopologyChange{Time: at, Cluster: cluster, Kind: dbpilot.ChangeInstance,
			Instance: n.Key, State: n.Shape(), Summary: instanceSummary(p, n, next.Primary)})
	}
	for k, p := range prev.Members {
		if _, ok := next.Members[k]; !ok {
			out = append(out, dbpilot.TopologyChange{Time: at, Cluster: cluster, Kind: dbpilot.ChangeLeft,
				Instance: p.Key, Summary: p.Key.String() + " left the cluster"})
		}
	}
	slices.SortFunc(out, func(a, b dbpilot.TopologyChange) int { return compareKeys(a.Instance, b.Instance) })
	raised, cleared := problemsDiff(prev.Problems, next.Problems)
	if !prev.Primary.Equal(next.Primary) || len(raised) > 0 || len(cleared) > 0 {
		out = append(out, dbpilot.TopologyChange{Time: at, Cluster: cluster, Kind: dbpilot.ChangeCluster,
			Primary: next.Primary, Problems: slices.Clone(next.Problems), Summary: clusterSummary(prev.Primary, next.Primary, raised, cleared)})
	}
	return out
}

// problemKey is what tells one problem from another.
type problemKey struct {
	code     dbpilot.ProblemCode
	severity dbpilot.Severity
	instance dbpilot.InstanceKey
	channel  string
}

func keyOf(p dbpilot.Problem) problemKey {
	return problemKey{p.Code, p.Severity, p.Instance.Normalized(), p.Channel}
}

// problemsDiff returns the problems of next that prev lacks (raised) and
// those of prev that next lacks (cleared).
func problemsDiff(prev, next []dbpilot.Problem) (raised, cleared []dbpilot.Problem) {
	if len(prev) == len(next) {
		same := true
		for i := range prev {
			if keyOf(prev[i]) != keyOf(next[i]) {
				same = false
				break
			}
		}
		if same {
			return nil, nil // the usual case, without maps
		}
	}
	count := make(map[problemKey]int, len(prev))
	for _, p := range prev {
		count[keyOf(p)]++
	}
	for _, p := range next {
		k := keyOf(p)
		if count[k] > 0 {
			count[k]--
			continue
		}
		raised = append(raised, p)
	}
	for i := len(prev) - 1; i >= 0; i-- {
		k := keyOf(prev[i])
		if count[k] > 0 {
			count[k]--
			cleared = append(cleared, prev[i])
		}
	}
	slices.Reverse(cleared)
	return raised, cleared
}

// summaryProblems is how many problems a summary names before "and N more".
const summaryProblems = 5

func clusterSummary(prev, next dbpilot.InstanceKey, raised, cleared []dbpilot.Problem) string {
	var parts []string
	switch {
	case prev.Equal(next):
	case prev.IsZero():
		parts = append(parts, "primary "+next.String())
	case next.IsZero():
		parts = append(parts, "no primary (was "+prev.String()+")")
	default:
		parts = append(parts, "primary "+prev.String()+" → "+next.String())
	}
	list := func(verb string, ps []dbpilot.Problem) {
		if len(ps) == 0 {
			return
		}
		var names []string
		for i, p := range ps {
			if i == summaryProblems {
				names = append(names, fmt.Sprintf("and %d more", len(ps)-i))
				break
			}
			s := string(p.Code)
			if !p.Instance.IsZero() {
				s += " on " + p.Instance.String()
			}
			if p.Channel != "" {
				s += " channel '" + p.Channel + "'"
			}
			names = append(names, s+" ("+string(p.Severity)+")")
		}
		noun := "problem"
		if len(ps) > 1 {
			noun = "problems"
		}
		parts = append(parts, noun+" "+verb+": "+strings.Join(names, ", "))
	}
	list("raised", raised)
	list("cleared", cleared)
	return strings.Join(parts, "; ")
}

// instanceSummary says what changed from p (nil: it joined) to n, a member
// of the cluster whose primary is primary.
func instanceSummary(p, n *dbpilot.Instance, primary dbpilot.InstanceKey) string {
	var parts []string
	add := func(format string, args ...any) { parts = append(parts, fmt.Sprintf(format, args...)) }
	if p == nil {
		var role string
		switch {
		case len(n.Channels) > 0:
			var srcs []string
			for _, c := range n.Channels {
				srcs = append(srcs, c.Source.String())
			}
			role = "replica of " + strings.Join(srcs, ", ")
		case n.Galera != nil:
			role = "Galera node"
		case n.Key.Equal(primary):
			role = "primary"
		default:
			role = "not replicating"
		}
		s := n.Key.String() + " joined as " + role
		if !n.Reachable {
			s += ", unreachable"
		}
		return s
	}
	onOff := func(what string, was, is bool) {
		if was != is {
			add("%s %s", what, map[bool]string{true: "on", false: "off"}[is])
		}
	}
	switch {
	case p.Reachable && !n.Reachable:
		if n.RefusedErrno != 0 {
			add("refuses dbpilot (error %d)", n.RefusedErrno)
		} else {
			add("became unreachable")
		}
	case !p.Reachable && n.Reachable:
		add("reachable again")
	case !n.Reachable && p.RefusedErrno != n.RefusedErrno:
		if n.RefusedErrno != 0 {
			add("refuses dbpilot (error %d)", n.RefusedErrno)
		} else {
			add("no longer answers")
		}
	}
	// What an unreachable server seems to say (read_only off, no
	// semi-sync) is not news: only its place in the tree is compared.
	both := p.Reachable && n.Reachable
	if both {
		if p.ServerID != n.ServerID || p.ServerUUID != n.ServerUUID {
			add("server_id %d → %d (another server at this address)", p.ServerID, n.ServerID)
		}
		if p.Flavor != n.Flavor || p.Version != n.Version {
			add("version %s → %s", versionOf(p), versionOf(n))
		}
	}
	parts = append(parts, channelChanges(p.Channels, n.Channels, both)...)
	if both {
		onOff("read_only", p.ReadOnly, n.ReadOnly)
		onOff("super_read_only", p.SuperReadOnly, n.SuperReadOnly)
		onOff("log_bin", p.LogBin, n.LogBin)
		onOff("log_slave_updates", p.LogReplicaUpdates, n.LogReplicaUpdates)
		a, b := p.SemiSync, n.SemiSync
		onOff("semi-sync primary side", a.PrimaryEnabled, b.PrimaryEnabled)
		if a.PrimaryEnabled && b.PrimaryEnabled && a.PrimaryActive != b.PrimaryActive {
			if b.PrimaryActive {
				add("semi-sync active again")
			} else {
				add("semi-sync fell back to asynchronous")
			}
		}
		if a.PrimaryClients != b.PrimaryClients {
			add("semi-sync replicas %d → %d", a.PrimaryClients, b.PrimaryClients)
		}
		if a.PrimaryTimeout != b.PrimaryTimeout {
			add("semi-sync timeout %s → %s", a.PrimaryTimeout, b.PrimaryTimeout)
		}
		onOff("semi-sync replica side", a.ReplicaEnabled, b.ReplicaEnabled)
		if a.ReplicaEnabled && b.ReplicaEnabled && a.ReplicaActive != b.ReplicaActive {
			add("semi-sync replica %s", map[bool]string{true: "active", false: "inactive"}[b.ReplicaActive])
		}
		parts = append(parts, galeraChanges(p.Galera, n.Galera)...)
	}
	if len(parts) == 0 {
		parts = append(parts, "state changed")
	}
	return n.Key.String() + ": " + strings.Join(parts, "; ")
}

func versionOf(i *dbpilot.Instance) string {
	v := i.Version.Raw
	if v == "" {
		v = fmt.Sprintf("%d.%d.%d", i.Version.Major, i.Version.Minor, i.Version.Patch)
	}
	if i.Flavor != "" {
		v = string(i.Flavor) + " " + v
	}
	return v
}

// channelChanges says what changed in a member's replication channels;
// threads only when both observations read the server (threads).
func channelChanges(prev, next []dbpilot.ReplicationChannel, threads bool) []string {
	var parts []string
	multi := len(prev) > 1 || len(next) > 1
	name := func(c *dbpilot.ReplicationChannel) string {
		if !multi && c.Name == "" {
			return ""
		}
		return "channel '" + c.Name + "': "
	}
	find := func(cs []dbpilot.ReplicationChannel, n string) *dbpilot.ReplicationChannel {
		for i := range cs {
			if cs[i].Name == n {
				return &cs[i]
			}
		}
		return nil
	}
	switch {
	case len(prev) > 0 && len(next) == 0:
		var srcs []string
		for _, c := range prev {
			srcs = append(srcs, c.Source.String())
		}
		return []string{"replication from " + strings.Join(srcs, ", ") + " removed"}
	case len(prev) == 0 && len(next) > 0:
		var srcs []string
		for _, c := range next {
			srcs = append(srcs, c.Source.String())
		}
		return []string{"now replicates from " + strings.Join(srcs, ", ")}
	}
	for i := range next {
		n := &next[i]
		p := find(prev, n.Name)
		if p == nil {
			parts = append(parts, fmt.Sprintf("%snew channel from %s", name(n), n.Source))
			continue
		}
		if !p.Source.Equal(n.Source) {
			parts = append(parts, fmt.Sprintf("%ssource %s → %s (relocated)", name(n), p.Source, n.Source))
		}
		if !threads {
			continue
		}
		if s := threadChange("IO", string(p.IORunning), string(n.IORunning), p.LastIOErrno, n.LastIOErrno, p.LastIOError, n.LastIOError); s != "" {
			parts = append(parts, name(n)+s)
		}
		if s := threadChange("SQL", runState(p.SQLRunning), runState(n.SQLRunning), p.LastSQLErrno, n.LastSQLErrno, p.LastSQLError, n.LastSQLError); s != "" {
			parts = append(parts, name(n)+s)
		}
		if p.UsingGTID != n.UsingGTID {
			parts = append(parts, fmt.Sprintf("%sGTID positioning %s → %s", name(n), orNone(p.UsingGTID), orNone(n.UsingGTID)))
		}
	}
	for i := range prev {
		if find(next, prev[i].Name) == nil {
			parts = append(parts, fmt.Sprintf("%sremoved (was from %s)", name(&prev[i]), prev[i].Source))
		}
	}
	return parts
}

func runState(running bool) string {
	if running {
		return string(dbpilot.IORunning)
	}
	return string(dbpilot.IOStopped)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// threadChange says how a replication thread changed: its state (Yes,
// No, Connecting, Preparing) and its error.
func threadChange(thread, was, is string, wasErrno, isErrno int, wasErr, isErr string) string {
	var s string
	switch {
	case was != is:
		switch dbpilot.IOState(is) {
		case dbpilot.IORunning:
			s = thread + " thread started"
		case dbpilot.IOStopped:
			s = thread + " thread stopped"
		default:
			s = thread + " thread " + strings.ToLower(is)
		}
	case wasErrno != isErrno || wasErr != isErr:
		if isErrno == 0 && isErr == "" {
			return thread + " thread error cleared"
		}
		s = thread + " thread error"
	default:
		return ""
	}
	if isErrno != 0 || isErr != "" {
		s += fmt.Sprintf(" (error %d: %s)", isErrno, oneLine(isErr, 120))
	}
	return s
}

// oneLine returns s on one line, cut to at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func galeraChanges(p, n *dbpilot.GaleraState) []string {
	switch {
	case p == nil && n == nil:
		return nil
	case p == nil:
		return []string{"Galera on"}
	case n == nil:
		return []string{"Galera off"}
	}
	var parts []string
	state := func(g *dbpilot.GaleraState) string {
		if g.LocalStateComment != "" {
			return g.LocalStateComment
		}
		return g.LocalState.String()
	}
	if p.LocalState != n.LocalState || p.LocalStateComment != n.LocalStateComment {
		parts = append(parts, "Galera state "+state(p)+" → "+state(n))
	}
	if p.ClusterStatus != n.ClusterStatus {
		parts = append(parts, "Galera component "+orNone(p.ClusterStatus)+" → "+orNone(n.ClusterStatus))
	}
	if p.ClusterSize != n.ClusterSize {
		parts = append(parts, fmt.Sprintf("Galera cluster size %d → %d", p.ClusterSize, n.ClusterSize))
	}
	if p.Ready != n.Ready {
		parts = append(parts, map[bool]string{true: "Galera ready", false: "Galera not ready"}[n.Ready])
	}
	if p.Connected != n.Connected {
		parts = append(parts, map[bool]string{true: "Galera connected", false: "Galera disconnected"}[n.Connected])
	}
	if p.DesyncCount != n.DesyncCount {
		parts = append(parts, fmt.Sprintf("Galera desync count %d → %d", p.DesyncCount, n.DesyncCount))
	}
	return parts
}
