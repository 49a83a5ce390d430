package topology

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/gtid"
)

// Defaults of AnalyzeOptions.
const (
	DefaultLagThreshold = 10 * time.Second
	DefaultMaxDetection = 10 * time.Second
)

// AnalyzeOptions tune Analyze.
type AnalyzeOptions struct {
	// LagThreshold: a replica further behind its source (beyond any
	// configured SQL delay) is ReplicaLagging. 0 means DefaultLagThreshold.
	LagThreshold time.Duration
	// MaxDetection: a replica that would take longer than this to notice a
	// dead source is SlowFailureDetection. 0 means DefaultMaxDetection.
	MaxDetection time.Duration

	// FlowControlThreshold: a Galera cluster paused by flow control for a
	// larger share of the time (0..1) is FlowControlActive. 0 means
	// DefaultFlowControlThreshold.
	FlowControlThreshold float64
	// RecvQueueThreshold: a Galera node with more write sets waiting, and
	// more than at its previous sample, is RecvQueueGrowing. 0 means
	// DefaultRecvQueueThreshold.
	RecvQueueThreshold int64
	// Backups are the instances a backup is known to run on (dbpilot's own
	// dump, an operator's window): a desynced Galera node among them is
	// expected (NodeDesynced is info, no DesyncLeftOn).
	Backups []dbpilot.InstanceKey
}

func (o AnalyzeOptions) withDefaults() AnalyzeOptions {
	if o.FlowControlThreshold <= 0 {
		o.FlowControlThreshold = DefaultFlowControlThreshold
	}
	if o.RecvQueueThreshold <= 0 {
		o.RecvQueueThreshold = DefaultRecvQueueThreshold
	}
	if o.LagThreshold <= 0 {
		o.LagThreshold = DefaultLagThreshold
	}
	if o.MaxDetection <= 0 {
		o.MaxDetection = DefaultMaxDetection
	}
	return o
}

// Analyze names the problems of the observed instances. It is pure: it reads
// nothing but its arguments. Problems are sorted by instance key, code and
// channel.
//
// Rules, per instance (an unreachable instance only gets Unreachable):
//
//   - Unreachable (critical): Reachable is false.
//   - DeadPrimary (critical): an unreachable primary (it has replicas, and no
//     observed source) that every reachable replica of it lost too
//     (AssessPrimary): serve fails it over.
//   - UnreachablePrimary (critical): an unreachable primary that some replica
//     still replicates from, or whose replicas cannot be read: not confirmed
//     dead, no failover.
//   - ReplicationIOStopped, per channel: the IO thread is "No" (critical with
//     an error, warning without: stopped by an operator), or "Connecting"
//     with a Last_IO_Error (critical).
//   - ReplicationSQLStopped, per channel: the SQL thread is not running
//     (critical with an error, warning without).
//   - ReplicaLagging (warning), per channel with both threads running:
//     Seconds_Behind_Master minus SQL_Delay exceeds LagThreshold. An unknown
//     (NULL) lag is not a problem.
//   - ErrantGTID (warning): the replica has GTIDs none of its sources has;
//     see the package documentation for rings, multi-source and snapshot skew.
//   - ReplicaNotReadOnly (warning): a replica, not a ring member, with
//     read_only=OFF.
//   - PrimaryReadOnly (critical): an instance without channels that has
//     replicas and read_only=ON.
//   - NoBinlog (warning): a replica with log_bin=OFF.
//   - NoLogReplicaUpdates: a replica with log_bin=ON and log_slave_updates=OFF;
//     warning, critical when it has replicas or is in a ring of 3 or more
//     (they miss its sources' transactions).
//   - SemiSyncNoReplicas (warning): an instance with replicas or without
//     channels, semi-sync primary side enabled and 0 semi-sync clients.
//   - SemiSyncPrimaryOnReplica (warning): a replica without replicas of its
//     own that writes what it applies to its binary log, with the semi-sync
//     primary side enabled: each commit it applies may wait the semi-sync
//     timeout for an acknowledgement nobody sends (MariaDB with
//     rpl_semi_sync_master_wait_no_slave=ON), which slows a failover that
//     waits for it to apply its relay log.
//   - SlowFailureDetection (warning), per channel: slave_net_timeout exceeds
//     MaxDetection, or the heartbeat is off or not below slave_net_timeout (an
//     idle, healthy link then times out too).
//   - NoGTID (warning), per channel: no GTID positioning (MariaDB
//     Using_Gtid=No; MySQL gtid_mode other than ON or Auto_Position=0).
//
// Galera nodes (Instance.Galera) form groups of writers (see the package
// documentation): they are not primaries or replicas of each other, an
// unreachable member is Unreachable (never DeadPrimary), and a Galera node
// replicating asynchronously from elsewhere is not ReplicaNotReadOnly. Per
// reachable node, from its observation (with the previous sample and the
// since-when its inspector kept, when it has them):
//
//   - NonPrimaryComponent (critical): wsrep_cluster_status is not Primary;
//     the other rules are skipped for it.
//   - SSTInProgress (warning): Joining (receiving a state transfer), or
//     Donor/Desynced with wsrep_desync=OFF and wsrep_desync_count > 0
//     (donating one; the likely joiners are named).
//   - NodeDesynced: Donor/Desynced with wsrep_desync=ON, with how long and
//     the receive queue; warning, info when Backups lists the node or
//     wsrep_desync_count > 1 (a backup's lock holds it too).
//   - DesyncLeftOn (warning): wsrep_desync=ON and neither.
//   - NodeNotSynced (warning): any other state than Synced (Joined,
//     Donor/Desynced with nothing holding it: catching up), or wsrep_ready=OFF.
//   - RecvQueueGrowing (warning): wsrep_local_recv_queue above
//     RecvQueueThreshold and above the previous sample's (without one: a
//     Synced node above the threshold); not for a desynced node.
//
// Per Galera cluster:
//
//   - ClusterSizeMismatch (warning), on the first reachable node of the
//     Primary component: its wsrep_cluster_size is below the number of
//     members the cluster has (the most any node's wsrep_cluster_address
//     lists, or the nodes of the group), naming the missing known nodes.
//   - FlowControlActive (warning): the share of time paused by flow control
//     (the window since the previous sample: wsrep_flow_control_paused_ns;
//     without one, wsrep_flow_control_paused since start) exceeds
//     FlowControlThreshold on some node; reported on each node whose
//     wsrep_flow_control_sent grew in its window (it sends it), else on the
//     most paused node.
//
// Channel problems carry Detail["source"], the channel's source key; Galera
// problems Detail["cluster"], the cluster's wsrep_cluster_name.
func Analyze(instances []*dbpilot.Instance, opt AnalyzeOptions) []dbpilot.Problem {
	a := &analyzer{g: newGraph(instances), opt: opt.withDefaults()}
	for i := range a.g.nodes {
		a.instance(i)
	}
	a.multipleWritable()
	for gi, members := range a.g.groups {
		if members != nil {
			a.galera(gi)
		}
	}
	sortProblems(a.out)
	return a.out
}

// sortProblems sorts by instance key, code, channel, then source.
func sortProblems(ps []dbpilot.Problem) {
	slices.SortStableFunc(ps, func(x, y dbpilot.Problem) int {
		return cmp.Or(compareKeys(x.Instance, y.Instance),
			strings.Compare(string(x.Code), string(y.Code)),
			strings.Compare(x.Channel, y.Channel),
			strings.Compare(x.Detail["source"], y.Detail["source"]))
	})
}

type analyzer struct {
	g   *graph
	opt AnalyzeOptions
	out []dbpilot.Problem
}

func (a *analyzer) add(in *dbpilot.Instance, code dbpilot.ProblemCode, sev dbpilot.Severity, channel string, detail map[string]string, format string, args ...any) {
	a.out = append(a.out, dbpilot.Problem{
		Code:     code,
		Severity: sev,
		Instance: in.Key,
		Channel:  channel,
		Message:  fmt.Sprintf(format, args...),
		Detail:   detail,
	})
}

// role names what node i is in its topology.
func (a *analyzer) role(i int) string {
	up, down := len(a.g.up[i]) > 0, a.g.hasReplicas(i)
	switch {
	case a.g.isGalera(i):
		return "galera node"
	case a.g.inRing(i):
		return "ring member"
	case up && down:
		return "intermediate replica"
	case up:
		return "replica"
	case down:
		return "primary"
	}
	return "server"
}

func (a *analyzer) instance(i int) {
	in := a.g.nodes[i]
	if !in.Reachable {
		a.unreachable(i)
		return
	}
	for c := range in.Channels {
		a.channel(in, &in.Channels[c])
	}
	a.errantGTID(i)
	a.readOnly(i)
	a.binlog(i)
	a.semiSync(i)
}

func (a *analyzer) unreachable(i int) {
	in := a.g.nodes[i]
	role := a.role(i)
	if in.RefusedErrno != 0 {
		detail := map[string]string{"error": in.LastError, "role": role, "errno": strconv.Itoa(int(in.RefusedErrno))}
		a.add(in, dbpilot.ProblemRefusesDbpilot, dbpilot.SeverityCritical, "", detail,
			"%s %s answers but refuses dbpilot: %s; it is alive, so dbpilot will not fail it over, but cannot monitor or recover it until this is fixed", role, in.Key, in.LastError)
		return
	}
	detail := map[string]string{"error": in.LastError, "role": role}
	msg := fmt.Sprintf("%s %s is unreachable: %s", role, in.Key, in.LastError)
	if reps := a.g.replicaKeys(i); len(reps) > 0 {
		detail["replicas"] = strings.Join(reps, ",")
		msg += fmt.Sprintf("; %s replicate from it (%s)", plural(len(reps), "replica", "replicas"), strings.Join(reps, ", "))
	}
	a.add(in, dbpilot.ProblemUnreachable, dbpilot.SeverityCritical, "", detail, "%s", msg)
	if role == "primary" {
		a.primaryDown(i)
	}
}

// primaryDown names an unreachable primary DeadPrimary or
// UnreachablePrimary from what its replicas observed (AssessPrimary, the
// rule serve recovers by).
func (a *analyzer) primaryDown(i int) {
	in := a.g.nodes[i]
	var replicas []*dbpilot.Instance
	for j, e := range a.g.down[i] {
		if j > 0 && a.g.down[i][j-1].replica == e.replica {
			continue
		}
		replicas = append(replicas, a.g.nodes[e.replica])
	}
	if p, ok := AssessPrimary(in, replicas).Problem(in.Key); ok {
		a.out = append(a.out, p)
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// channelDesc describes a channel for messages: "from 127.0.0.1:21001" or
// "'m1' from 127.0.0.1:21001".
func channelDesc(ch *dbpilot.ReplicationChannel) string {
	if ch.Name == "" {
		return "from " + ch.Source.String()
	}
	return fmt.Sprintf("'%s' from %s", ch.Name, ch.Source)
}

func (a *analyzer) channel(in *dbpilot.Instance, ch *dbpilot.ReplicationChannel) {
	src := ch.Source.String()
	base := func() map[string]string { return map[string]string{"source": src} }
	v := vocab{in}

	// IO thread.
	switch {
	case ch.IORunning == dbpilot.IOStopped && ch.LastIOErrno != 0:
		d := base()
		d["io_running"], d["last_io_errno"], d["last_io_error"] = string(ch.IORunning), strconv.Itoa(ch.LastIOErrno), ch.LastIOError
		a.add(in, dbpilot.ProblemReplicationIOStopped, dbpilot.SeverityCritical, ch.Name, d,
			"replication IO thread stopped with error %d: %s (channel %s)", ch.LastIOErrno, ch.LastIOError, channelDesc(ch))
	case ch.IORunning == dbpilot.IOStopped:
		d := base()
		d["io_running"] = string(ch.IORunning)
		a.add(in, dbpilot.ProblemReplicationIOStopped, dbpilot.SeverityWarning, ch.Name, d,
			"replication IO thread is stopped without an error (Slave_IO_Running=%s; stopped by an operator?): nothing is received %s", ch.IORunning, channelDesc(ch))
	case ch.IORunning == dbpilot.IOConnecting && ch.LastIOErrno != 0:
		d := base()
		d["io_running"], d["last_io_errno"], d["last_io_error"] = string(ch.IORunning), strconv.Itoa(ch.LastIOErrno), ch.LastIOError
		a.add(in, dbpilot.ProblemReplicationIOStopped, dbpilot.SeverityCritical, ch.Name, d,
			"replication IO thread cannot connect to its source (Slave_IO_Running=Connecting), error %d: %s (channel %s)", ch.LastIOErrno, ch.LastIOError, channelDesc(ch))
	}

	// SQL thread.
	if !ch.SQLRunning {
		d := base()
		d["sql_running"] = "No"
		if ch.LastSQLErrno != 0 || ch.LastSQLError != "" {
			d["last_sql_errno"], d["last_sql_error"] = strconv.Itoa(ch.LastSQLErrno), ch.LastSQLError
			a.add(in, dbpilot.ProblemReplicationSQLStopped, dbpilot.SeverityCritical, ch.Name, d,
				"replication SQL thread stopped with error %d: %s (channel %s)", ch.LastSQLErrno, ch.LastSQLError, channelDesc(ch))
		} else {
			a.add(in, dbpilot.ProblemReplicationSQLStopped, dbpilot.SeverityWarning, ch.Name, d,
				"replication SQL thread is stopped without an error (stopped by an operator?): received transactions are not applied (channel %s)", channelDesc(ch))
		}
	}

	// Lag, only while both threads run: otherwise the lag is NULL or stale
	// and the stopped thread is the problem.
	if ch.Healthy() && ch.SecondsBehind != nil {
		lag := time.Duration(*ch.SecondsBehind) * time.Second
		delay := time.Duration(ch.SQLDelay) * time.Second
		if lag-delay > a.opt.LagThreshold {
			d := base()
			d["seconds_behind"], d["threshold"] = strconv.FormatInt(*ch.SecondsBehind, 10), seconds(a.opt.LagThreshold)
			extra := ""
			if ch.SQLDelay > 0 {
				d["sql_delay"] = strconv.Itoa(ch.SQLDelay)
				extra = fmt.Sprintf(", %s beyond its configured delay of %s", seconds(lag-delay), seconds(delay))
			}
			a.add(in, dbpilot.ProblemReplicaLagging, dbpilot.SeverityWarning, ch.Name, d,
				"replica is %s behind its source%s (threshold %s; channel %s)", seconds(lag), extra, seconds(a.opt.LagThreshold), channelDesc(ch))
		}
	}

	// Failure detection.
	if snt := in.SlaveNetTimeout; snt > 0 {
		hb := ch.HeartbeatPeriod
		slow := snt > a.opt.MaxDetection
		// An unknown heartbeat period (MySQL without performance_schema
		// access) is judged on slave_net_timeout alone.
		idleDrops := !ch.HeartbeatUnknown && (hb <= 0 || hb >= snt)
		if slow || idleDrops {
			targetS := max(int(a.opt.MaxDetection/time.Second), 2)
			d := base()
			d[v.netTimeout()], d["heartbeat_period"], d["max_detection"] = seconds(snt), seconds(hb), seconds(a.opt.MaxDetection)
			var why, fix string
			if slow {
				why = fmt.Sprintf("a dead source is noticed only after %s=%s, more than %s", v.netTimeout(), seconds(snt), seconds(a.opt.MaxDetection))
				fix = fmt.Sprintf("SET GLOBAL %s=%d; %s", v.netTimeout(), targetS, v.changeSource(ch.Name, "HEARTBEAT_PERIOD", num(time.Duration(targetS)*time.Second/2)))
			} else {
				fix = v.changeSource(ch.Name, "HEARTBEAT_PERIOD", num(snt/2))
			}
			switch {
			case ch.HeartbeatUnknown:
				why += " (heartbeat period unknown)"
			case hb <= 0:
				why = strings.TrimPrefix(why+fmt.Sprintf("; the heartbeat is off, so an idle healthy link also times out after %s", seconds(snt)), "; ")
			case hb >= snt:
				why = strings.TrimPrefix(why+fmt.Sprintf("; the heartbeat period %s is not below %s=%s, so an idle healthy link times out", seconds(hb), v.netTimeout(), seconds(snt)), "; ")
			default:
				why += fmt.Sprintf(" (heartbeat period %s)", seconds(hb))
			}
			a.add(in, dbpilot.ProblemSlowFailureDetection, dbpilot.SeverityWarning, ch.Name, d,
				"%s; fix: %s, with replication stopped (channel %s)", why, fix, channelDesc(ch))
		}
	}

	// GTID positioning.
	switch {
	case in.Flavor == dbpilot.FlavorMariaDB && strings.EqualFold(ch.UsingGTID, "No"):
		d := base()
		d["using_gtid"] = ch.UsingGTID
		a.add(in, dbpilot.ProblemNoGTID, dbpilot.SeverityWarning, ch.Name, d,
			"channel %s replicates by binlog file and position (Using_Gtid=No): failover cannot re-point it by GTID; set %s",
			channelDesc(ch), v.changeSource(ch.Name, "USE_GTID", "slave_pos"))
	case in.Flavor.IsMySQLFamily() && !strings.EqualFold(in.GTID.Mode, "ON"):
		d := base()
		d["gtid_mode"] = in.GTID.Mode
		a.add(in, dbpilot.ProblemNoGTID, dbpilot.SeverityWarning, ch.Name, d,
			"gtid_mode=%s: channel %s replicates by binlog file and position and failover cannot use GTID auto-positioning",
			cmp.Or(in.GTID.Mode, "OFF"), channelDesc(ch))
	case in.Flavor.IsMySQLFamily() && strings.EqualFold(ch.UsingGTID, "No"):
		d := base()
		d["auto_position"] = "0"
		a.add(in, dbpilot.ProblemNoGTID, dbpilot.SeverityWarning, ch.Name, d,
			"channel %s replicates by binlog file and position (Auto_Position=0) although gtid_mode=ON: failover cannot use GTID auto-positioning; set %s",
			channelDesc(ch), v.changeSource(ch.Name, "AUTO_POSITION", 1))
	}
}

// sources returns the observed, reachable sources of every channel of node
// i, or false when one of them is not observed or not reachable.
func (a *analyzer) sources(i int) ([]*dbpilot.Instance, bool) {
	in := a.g.nodes[i]
	var out []*dbpilot.Instance
	for _, ch := range in.Channels {
		s, ok := a.g.node(ch.Source)
		if !ok || s == i || !a.g.nodes[s].Reachable {
			return nil, false
		}
		if !slices.Contains(out, a.g.nodes[s]) {
			out = append(out, a.g.nodes[s])
		}
	}
	return out, len(out) > 0
}

func (a *analyzer) errantGTID(i int) {
	in := a.g.nodes[i]
	srcs, ok := a.sources(i)
	if !ok {
		return
	}
	// Snapshot skew is possible unless the replica's inspection ended
	// before a source's began: the replica's GTIDs may then be newer than
	// the source's read (a replica inspected alongside its source, its read
	// finishing first, had the source's last heartbeat and read as errant).
	skew := false
	var srcKeys []string
	for _, s := range srcs {
		srcStart := s.ReadStartedAt
		if srcStart.IsZero() {
			srcStart = s.ObservedAt
		}
		if in.ObservedAt.IsZero() || srcStart.IsZero() || in.ObservedAt.After(srcStart) {
			skew = true
		}
		if s.Flavor.IsMySQLFamily() != in.Flavor.IsMySQLFamily() {
			return // cross-flavor replication: GTIDs do not compare
		}
		srcKeys = append(srcKeys, s.Key.String())
	}
	ring := a.g.inRing(i)
	w := a.writers()
	var errant, origin string
	if in.Flavor.IsMySQLFamily() {
		errant, origin = errantMySQL(in, srcs, ring, skew, w)
	} else {
		errant, origin = errantMariaDB(in, srcs, ring, skew, w)
	}
	if errant == "" {
		return
	}
	lacking := "which its source " + srcKeys[0] + " lacks"
	if len(srcs) > 1 {
		lacking = "which none of its sources (" + strings.Join(srcKeys, ", ") + ") has"
	}
	msg := fmt.Sprintf("errant transactions: gtid_binlog_state has %s, %s; %s", errant, lacking, origin)
	fix := "review them and reconcile the data, or rebuild the replica, before it is promoted or repointed"
	if in.Flavor.IsMySQLFamily() {
		msg = fmt.Sprintf("errant transactions: gtid_executed has %s, %s; %s", errant, lacking, origin)
		fix = "review them, then inject empty transactions with these GTIDs on the source or rebuild the replica"
	}
	a.add(in, dbpilot.ProblemErrantGTID, dbpilot.SeverityWarning, "",
		map[string]string{"errant": errant, "sources": strings.Join(srcKeys, ",")},
		"%s. A failover to or through this replica would spread them: %s", msg, fix)
}

// writerSet holds the identities of the observed writers: the reachable
// primaries (which include ring members). Only a writer produces transactions
// that can reach a replica between the observations of its source and of it.
type writerSet struct {
	ids   map[uint32]bool
	uuids map[string]bool
}

func (a *analyzer) writers() writerSet {
	w := writerSet{ids: map[uint32]bool{}, uuids: map[string]bool{}}
	for i, in := range a.g.nodes {
		if in.Reachable && a.g.isPrimary(i) {
			w.ids[in.ServerID] = true
			if in.ServerUUID != "" {
				w.uuids[strings.ToLower(in.ServerUUID)] = true
			}
		}
	}
	return w
}

// errantMariaDB compares gtid_binlog_state lists. It returns the errant list
// and a phrase naming its origin.
func errantMariaDB(in *dbpilot.Instance, srcs []*dbpilot.Instance, ring, skew bool, w writerSet) (string, string) {
	if !in.LogBin {
		return "", ""
	}
	rs, err := gtid.ParseMariaList(in.GTID.BinlogState)
	if err != nil {
		return "", ""
	}
	var union gtid.MariaList
	for _, s := range srcs {
		if !s.LogBin {
			return "", ""
		}
		l, err := gtid.ParseMariaList(s.GTID.BinlogState)
		if err != nil {
			return "", ""
		}
		union = union.Union(l)
	}
	known := func(d, srv uint32) bool {
		return slices.ContainsFunc(union, func(g gtid.MariaGTID) bool { return g.Domain == d && g.Server == srv })
	}
	var keep gtid.MariaList
	var others []string
	for _, e := range gtid.ErrantMariaDB(rs, union) {
		own := e.Server == in.ServerID
		switch {
		case ring && own && e.Domain == in.GTID.DomainID:
			continue // a ring member's own writes, on their way round
		case !own && skew && w.ids[e.Server] && known(e.Domain, e.Server):
			continue // arrived after the source was observed
		}
		keep = append(keep, e)
		if !own {
			others = append(others, strconv.FormatUint(uint64(e.Server), 10))
		}
	}
	if len(keep) == 0 {
		return "", ""
	}
	slices.Sort(others)
	others = slices.Compact(others)
	if len(others) == 0 {
		return keep.String(), fmt.Sprintf("they were written on this replica (server_id %d)", in.ServerID)
	}
	return keep.String(), fmt.Sprintf("they were written by server_id %s, not on this replica (lost in a failover or from an old source?)", strings.Join(others, ", "))
}

// errantMySQL compares gtid_executed sets. It returns the errant set and a
// phrase naming its origin.
func errantMySQL(in *dbpilot.Instance, srcs []*dbpilot.Instance, ring, skew bool, w writerSet) (string, string) {
	rs, err := gtid.ParseMySQLSet(in.GTID.Executed)
	if err != nil {
		return "", ""
	}
	var union gtid.MySQLSet
	for _, s := range srcs {
		set, err := gtid.ParseMySQLSet(s.GTID.Executed)
		if err != nil {
			return "", ""
		}
		union = union.Union(set)
	}
	var keep gtid.MySQLSet
	foreign := false
	for _, c := range gtid.CompareMySQLSets(gtid.ErrantMySQL(rs, union), union) {
		if c.OnlyA.IsEmpty() {
			continue
		}
		own := in.ServerUUID != "" && strings.EqualFold(c.UUID, in.ServerUUID)
		switch {
		case ring && own:
			continue
		case !own && skew && w.uuids[strings.ToLower(c.UUID)] && c.Order != gtid.OrderOnlyA:
			continue
		}
		keep = keep.Union(c.OnlyA)
		foreign = foreign || !own
	}
	if keep.IsEmpty() {
		return "", ""
	}
	if !foreign {
		return keep.String(), fmt.Sprintf("they were written on this replica (server_uuid %s)", in.ServerUUID)
	}
	return keep.String(), "they were written by other servers, not on this replica (lost in a failover or from an old source?)"
}

func (a *analyzer) readOnly(i int) {
	in := a.g.nodes[i]
	switch {
	case in.IsReplica() && !a.g.inRing(i) && !a.g.isGalera(i) && !in.ReadOnly:
		fix := "SET GLOBAL read_only=ON"
		if in.Flavor.IsMySQLFamily() {
			fix = "SET GLOBAL super_read_only=ON"
		}
		srcs := make([]string, 0, len(in.Channels))
		for _, ch := range in.Channels {
			srcs = append(srcs, ch.Source.String())
		}
		a.add(in, dbpilot.ProblemReplicaNotReadOnly, dbpilot.SeverityWarning, "",
			map[string]string{"read_only": "OFF", "sources": strings.Join(srcs, ",")},
			"replica of %s is writable (read_only=OFF): a write here makes it diverge from its source (errant transactions); %s",
			strings.Join(srcs, ", "), fix)
	case !in.IsReplica() && a.g.hasReplicas(i) && in.ReadOnly:
		ro := "read_only=ON"
		if in.SuperReadOnly {
			ro = "read_only=ON, super_read_only=ON"
		}
		n := max(len(a.g.replicaKeys(i)), len(in.Replicas))
		a.add(in, dbpilot.ProblemPrimaryReadOnly, dbpilot.SeverityCritical, "",
			map[string]string{"read_only": "ON", "super_read_only": onOff(in.SuperReadOnly)},
			"primary with %s is read-only (%s): applications cannot write to it; if it is the intended writer, SET GLOBAL read_only=OFF",
			plural(n, "replica", "replicas"), ro)
	}
}

func (a *analyzer) binlog(i int) {
	in := a.g.nodes[i]
	if !in.IsReplica() {
		return
	}
	v := vocab{in}
	if !in.LogBin {
		a.add(in, dbpilot.ProblemNoBinlog, dbpilot.SeverityWarning, "",
			map[string]string{"log_bin": "OFF"},
			"replica has no binary log (log_bin=OFF): it cannot be promoted, serve replicas or show errant transactions; enable log_bin (restart needed)")
		return
	}
	if in.LogReplicaUpdates {
		return
	}
	d := map[string]string{"log_bin": "ON", v.logReplicaUpdates(): "OFF"}
	switch {
	case a.g.inRing(i) && a.g.ringSize(i) > 2:
		a.add(in, dbpilot.ProblemNoLogReplicaUpdates, dbpilot.SeverityCritical, "", d,
			"ring member has %s=OFF: transactions it receives are not written to its binary log, so the other members' writes stop here and never go round the ring of %d; enable %s (restart needed)",
			v.logReplicaUpdates(), a.g.ringSize(i), v.logReplicaUpdates())
	case len(a.g.down[i]) > 0 && !a.g.inRing(i):
		reps := a.g.replicaKeys(i)
		a.add(in, dbpilot.ProblemNoLogReplicaUpdates, dbpilot.SeverityCritical, "", d,
			"intermediate replica has %s=OFF: its replicas (%s) receive none of its source's transactions; enable %s (restart needed)",
			v.logReplicaUpdates(), strings.Join(reps, ", "), v.logReplicaUpdates())
	case !a.g.inRing(i):
		a.add(in, dbpilot.ProblemNoLogReplicaUpdates, dbpilot.SeverityWarning, "", d,
			"replica has log_bin=ON but %s=OFF: replicated transactions are not in its binary log, so it cannot serve as an intermediate and after a promotion its replicas would miss them; enable %s (restart needed)",
			v.logReplicaUpdates(), v.logReplicaUpdates())
	}
}

func (a *analyzer) semiSync(i int) {
	in := a.g.nodes[i]
	ss := in.SemiSync
	if !ss.PrimaryEnabled || ss.PrimaryClients > 0 {
		return
	}
	v := vocab{in}
	if in.IsReplica() && !a.g.hasReplicas(i) {
		if in.LogBin && in.LogReplicaUpdates {
			a.add(in, dbpilot.ProblemSemiSyncPrimaryOnReplica, dbpilot.SeverityWarning, "",
				map[string]string{v.semiPrimary() + "_enabled": "ON", v.semiPrimary() + "_timeout": seconds(ss.PrimaryTimeout)},
				"replica with the semi-sync primary side enabled (%s_enabled=ON) and no replica of its own: each transaction it applies into its binary log may wait %s_timeout=%s for an acknowledgement no replica sends; a recovery would pay that wait (dbpilot's failover and switchover turn the side off first on the candidate and on every replica they move, and back on once they follow the new primary); disable it here unless you rely on that",
				v.semiPrimary(), v.semiPrimary(), seconds(ss.PrimaryTimeout))
		}
		return
	}
	d := map[string]string{
		v.semiPrimary() + "_enabled":       "ON",
		v.semiPrimaryStatus() + "_clients": "0",
		v.semiPrimaryStatus() + "_status":  onOff(ss.PrimaryActive),
	}
	state := fmt.Sprintf("it has fallen back to asynchronous replication (%s_status=OFF): commits are acknowledged without any replica holding them", v.semiPrimaryStatus())
	if ss.PrimaryActive {
		d[v.semiPrimary()+"_timeout"] = seconds(ss.PrimaryTimeout)
		state = fmt.Sprintf("%s_status is still ON: the next commit waits %s_timeout=%s for an acknowledgement, then falls back to asynchronous replication",
			v.semiPrimaryStatus(), v.semiPrimary(), seconds(ss.PrimaryTimeout))
	}
	a.add(in, dbpilot.ProblemSemiSyncNoReplicas, dbpilot.SeverityWarning, "", d,
		"semi-sync is enabled on the primary side (%s_enabled=ON) but no semi-sync replica is connected (%s_clients=0); %s; enable %s_enabled on its replicas and restart their IO threads, or disable semi-sync here",
		v.semiPrimary(), v.semiPrimaryStatus(), state, v.semiReplica())
}

// ClusterHealth summarizes one cluster's problems.
type ClusterHealth struct {
	Name      string                `json:"name"`
	Primaries []dbpilot.InstanceKey `json:"primaries"`
	Instances int                   `json:"instances"`
	// Healthy is true when no problem of the cluster is critical or a warning.
	Healthy  bool              `json:"healthy"`
	Problems []dbpilot.Problem `json:"problems"`
	// Galera summarizes a Galera cluster's group; nil otherwise.
	Galera *dbpilot.GaleraGroup `json:"galera,omitempty"`
}

// Summarize returns the health of cluster c: the problems (of those given)
// on its instances and its detached servers, in their given order.
func Summarize(c *dbpilot.Cluster, problems []dbpilot.Problem) ClusterHealth {
	h := ClusterHealth{Name: c.Name, Primaries: c.Primaries, Instances: len(c.Instances), Healthy: true, Problems: []dbpilot.Problem{}, Galera: c.Galera}
	for _, p := range problems {
		if !holds(c, p.Instance) {
			continue
		}
		h.Problems = append(h.Problems, p)
		if p.Severity == dbpilot.SeverityCritical || p.Severity == dbpilot.SeverityWarning {
			h.Healthy = false
		}
	}
	return h
}

// holds reports whether k is one of c's instances or detached servers.
func holds(c *dbpilot.Cluster, k dbpilot.InstanceKey) bool {
	return c.Instance(k) != nil || c.DetachedInstance(k) != nil
}
