package topology

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot"
)

// Defaults of the Galera thresholds of AnalyzeOptions.
const (
	// DefaultFlowControlThreshold: replication paused by flow control for
	// more than this share of the time is FlowControlActive.
	DefaultFlowControlThreshold = 0.1
	// DefaultRecvQueueThreshold is Galera's default gcs.fc_limit: a synced
	// node with more write sets waiting sends flow control.
	DefaultRecvQueueThreshold = 16
)

// galeraGroups finds the Galera clusters among the nodes: Galera nodes
// sharing a cluster state uuid, and every node one of them lists among the
// members of its component (wsrep_incoming_addresses) or its former members
// (an unreachable node that left). It sets g.group (-1 for a node in no
// group) and g.groups (members of each group, sorted by key).
func (g *graph) galeraGroups() {
	n := len(g.nodes)
	sets := newDisjointSets(n)
	in := make([]bool, n)
	byUUID := map[string]int{}
	for i, node := range g.nodes {
		gs := node.Galera
		if gs == nil {
			continue
		}
		in[i] = true
		if u := gs.ClusterStateUUID; u != "" {
			if j, ok := byUUID[u]; ok {
				sets.union(i, j)
			} else {
				byUUID[u] = i
			}
		}
		for _, k := range slices.Concat(gs.IncomingAddresses, gs.FormerMembers) {
			j, ok := g.node(k)
			if !ok || j == i {
				continue
			}
			// A reachable server without Galera has left the cluster.
			if other := g.nodes[j]; other.Galera != nil || !other.Reachable {
				in[j] = true
				sets.union(i, j)
			}
		}
	}
	g.group = make([]int, n)
	byRoot := map[int]int{}
	for i := range g.nodes {
		g.group[i] = -1
		if !in[i] {
			continue
		}
		r := sets.find(i)
		gi, ok := byRoot[r]
		if !ok {
			gi = len(g.groups)
			byRoot[r] = gi
			g.groups = append(g.groups, nil)
		}
		g.group[i] = gi
		g.groups[gi] = append(g.groups[gi], i)
	}
	// A group is Galera only with a Galera node in it (an unreachable node
	// alone is not).
	for gi, members := range g.groups {
		if !slices.ContainsFunc(members, func(i int) bool { return g.nodes[i].Galera != nil }) {
			for _, i := range members {
				g.group[i] = -1
			}
			g.groups[gi] = nil
		}
	}
}

// isGalera reports whether node i is a member of a Galera cluster (a
// Galera node, or an unreachable node that was one of its members).
func (g *graph) isGalera(i int) bool { return g.group[i] >= 0 }

// galeraSummary describes group gi.
func (g *graph) galeraSummary(gi int) *dbpilot.GaleraGroup {
	s := &dbpilot.GaleraGroup{Nodes: []dbpilot.InstanceKey{}}
	for _, i := range g.groups[gi] {
		in := g.nodes[i]
		s.Nodes = append(s.Nodes, in.Key)
		gs := in.Galera
		if gs == nil {
			continue
		}
		s.Configured = max(s.Configured, len(gs.ConfiguredMembers()))
		if s.Name == "" {
			s.Name = gs.ClusterName
		}
		if s.StateUUID == "" {
			s.StateUUID = gs.ClusterStateUUID
		}
		if in.Reachable && gs.InPrimary() {
			s.Primary = true
			s.Size = max(s.Size, gs.ClusterSize)
		}
	}
	return s
}

// galeraWindow is what two observations of one node tell.
type galeraWindow struct {
	span time.Duration // 0: no earlier sample; the values are since start
	// paused is the share of the window (or of the time since the server
	// started or FLUSH STATUS) replication was paused by flow control.
	paused     float64
	sent, recv uint64 // flow-control messages in the window (or in total)
	queueWas   int64  // the receive queue at the earlier sample
	hasPrev    bool
}

// window measures node in's flow control between its previous sample and
// this observation.
func window(in *dbpilot.Instance) galeraWindow {
	gs := in.Galera
	w := galeraWindow{paused: gs.FlowControlPaused, sent: gs.FlowControlSent, recv: gs.FlowControlRecv}
	p := gs.Previous
	if p == nil || !p.At.Before(in.ObservedAt) || gs.FlowControlPausedNS < p.FlowControlPausedNS ||
		gs.FlowControlSent < p.FlowControlSent || gs.FlowControlRecv < p.FlowControlRecv {
		return w
	}
	w.span = in.ObservedAt.Sub(p.At)
	w.paused = min(float64(gs.FlowControlPausedNS-p.FlowControlPausedNS)/float64(w.span), 1)
	w.sent, w.recv = gs.FlowControlSent-p.FlowControlSent, gs.FlowControlRecv-p.FlowControlRecv
	w.queueWas, w.hasPrev = p.LocalRecvQueue, true
	return w
}

// windowText says what a window covers: "the last 5s" or "since the server
// started (no earlier sample)".
func (w galeraWindow) text() string {
	if w.span == 0 {
		return "since the server started or FLUSH STATUS (no earlier sample to measure a window)"
	}
	return "over the last " + roundDuration(w.span).String()
}

func roundDuration(d time.Duration) time.Duration {
	if d >= 10*time.Second {
		return d.Round(time.Second)
	}
	return d.Round(100 * time.Millisecond)
}

// pct formats a fraction as a percentage: "12.5%".
func pct(f float64) string { return strconv.FormatFloat(f*100, 'f', 1, 64) + "%" }

// fnum formats a number with at most 1 decimal.
func fnum(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// galera names the problems of Galera group gi. See Analyze.
func (a *analyzer) galera(gi int) {
	g := a.g
	members := g.groups[gi]
	sum := g.galeraSummary(gi)
	name := sum.Name
	if name == "" {
		name = g.nodes[members[0]].Key.String()
	}
	backups := map[dbpilot.InstanceKey]bool{}
	for _, k := range a.opt.Backups {
		backups[k.Normalized()] = true
	}

	// Per node.
	var reporter *dbpilot.Instance // the first reachable node of the Primary component
	for _, i := range members {
		in := g.nodes[i]
		gs := in.Galera
		if !in.Reachable || gs == nil {
			continue
		}
		if reporter == nil && gs.InPrimary() {
			reporter = in
		}
		a.galeraNode(in, name, backups[in.Key.Normalized()], g.groups[gi])
	}

	// The cluster: members missing from the Primary component.
	if reporter != nil {
		a.clusterSize(reporter, gi, sum, name)
	}
	a.flowControl(gi, name)
}

// since says since when node in is in its state: "for 1m30s (since
// 10:15:00)", "for at least 20s", or "(first observed now)".
func since(in *dbpilot.Instance) (string, map[string]string) {
	gs := in.Galera
	d := map[string]string{}
	if gs.StateSince.IsZero() || !gs.StateSince.Before(in.ObservedAt) {
		if gs.StateChangeSeen {
			return "(entered it since the previous observation)", d
		}
		return "(no earlier observation: since when is not known)", d
	}
	dur := roundDuration(in.ObservedAt.Sub(gs.StateSince))
	d["state_since"] = gs.StateSince.UTC().Format(time.RFC3339)
	d["state_for"] = num(dur)
	if gs.StateChangeSeen {
		return fmt.Sprintf("for %s (since %s)", dur, gs.StateSince.UTC().Format(time.RFC3339)), d
	}
	return fmt.Sprintf("for at least %s (observed so since %s)", dur, gs.StateSince.UTC().Format(time.RFC3339)), d
}

func merge(dst map[string]string, src map[string]string) map[string]string {
	for k, v := range src {
		dst[k] = v
	}
	return dst
}

// galeraNode names the problems of one reachable Galera node.
func (a *analyzer) galeraNode(in *dbpilot.Instance, cluster string, backup bool, members []int) {
	g := galeraCheck{in: in, gs: in.Galera, cluster: cluster}
	if !g.gs.InPrimary() {
		a.galeraNonPrimary(g)
		return // the other states are meaningless outside the Primary component
	}
	a.galeraState(g, backup, members)
	a.galeraRecvQueue(g)
}

// galeraCheck is one Galera node under analysis.
type galeraCheck struct {
	in      *dbpilot.Instance
	gs      *dbpilot.GaleraState
	cluster string
}

// base is the details every problem of the node has.
func (g galeraCheck) base() map[string]string {
	return map[string]string{"cluster": g.cluster, "local_state": g.gs.LocalState.String(),
		"local_recv_queue": strconv.FormatInt(g.gs.LocalRecvQueue, 10)}
}

// queue describes the node's receive queue.
func (g galeraCheck) queue() string {
	return fmt.Sprintf("receive queue %d write sets (average %s)", g.gs.LocalRecvQueue, fnum(g.gs.LocalRecvQueueAvg))
}

// galeraNonPrimary names a node outside the Primary component.
func (a *analyzer) galeraNonPrimary(g galeraCheck) {
	gs := g.gs
	d := g.base()
	d["cluster_status"], d["cluster_size"] = cmp.Or(gs.ClusterStatus, "unknown"), strconv.Itoa(gs.ClusterSize)
	configured := len(gs.ConfiguredMembers())
	of := ""
	if configured > 0 {
		of = fmt.Sprintf(" of %d configured", configured)
		d["configured"] = strconv.Itoa(configured)
	}
	a.add(g.in, dbpilot.ProblemNonPrimaryComponent, dbpilot.SeverityCritical, "", d,
		"Galera node is in a %s component (wsrep_cluster_status=%s, %s%s, wsrep_ready=%s): it lost quorum and refuses queries; "+
			"restore the other members, or, only if they are gone for good and this node has the latest data, "+
			"SET GLOBAL wsrep_provider_options='pc.bootstrap=YES' on it",
		cmp.Or(gs.ClusterStatus, "non-Primary"), cmp.Or(gs.ClusterStatus, "unknown"),
		plural(gs.ClusterSize, "member", "members"), of, onOff(gs.Ready))
}

// galeraState names a node of the Primary component that is not simply
// Synced: joining, donating, desynced, or catching up.
func (a *analyzer) galeraState(g galeraCheck, backup bool, members []int) {
	in, gs := g.in, g.gs
	// Donor/Desynced has three causes: wsrep_desync=ON (counted in
	// wsrep_desync_count with any other), a state transfer it donates or a
	// FLUSH TABLES WITH READ LOCK (counted, wsrep_desync=OFF), or none left:
	// the desync was lifted and the node catches up before it turns Synced.
	donorSST := gs.LocalState == dbpilot.GaleraDonor && !gs.Desync && gs.DesyncCount > 0
	catchingUp := gs.LocalState == dbpilot.GaleraDonor && !gs.Desync && gs.DesyncCount == 0
	comment := cmp.Or(gs.LocalStateComment, gs.LocalState.String())
	switch {
	case gs.LocalState == dbpilot.GaleraJoining:
		when, sd := since(in)
		d := merge(g.base(), sd)
		d["role"] = "joiner"
		a.add(in, dbpilot.ProblemSSTInProgress, dbpilot.SeverityWarning, "", d,
			"Galera node is receiving a state transfer (%s) %s: it serves no queries until it is Synced; %s",
			comment, when, g.queue())
	case donorSST:
		a.galeraDonor(g, members)
	case gs.LocalState == dbpilot.GaleraDonor && gs.Desync:
		a.galeraDesynced(g, backup)
	case gs.LocalState != dbpilot.GaleraSynced || !gs.Ready:
		when, sd := since(in)
		d := merge(g.base(), sd)
		d["ready"] = onOff(gs.Ready)
		d["connected"] = onOff(gs.Connected)
		var what string
		switch {
		case catchingUp:
			what = "is catching up after its desync was lifted (wsrep_desync=OFF, wsrep_desync_count=0), and sends flow control while it does"
			d["desync_count"] = "0"
		case gs.LocalState == dbpilot.GaleraJoined:
			what = "is catching up after a state transfer"
		default:
			what = "is not synced with the cluster"
		}
		if !gs.Ready {
			what += " and refuses queries (wsrep_ready=OFF)"
		}
		a.add(in, dbpilot.ProblemNodeNotSynced, dbpilot.SeverityWarning, "", d,
			"Galera node is %s (wsrep_local_state=%d) %s: it %s; %s", comment, int(gs.LocalState), when, what, g.queue())
	}
}

// galeraDonor names a node Donor/Desynced with wsrep_desync=OFF: it
// donates a state transfer (or is held by a global read lock).
func (a *analyzer) galeraDonor(g galeraCheck, members []int) {
	in, gs := g.in, g.gs
	when, sd := since(in)
	d := merge(g.base(), sd)
	d["role"] = "donor"
	d["desync_count"] = strconv.Itoa(gs.DesyncCount)
	joiners := a.joiners(in, members)
	who := "to a joining node"
	if len(joiners) > 0 {
		who = "to " + strings.Join(joiners, ", ")
		d["joiners"] = strings.Join(joiners, ",")
	}
	method := ""
	if gs.SSTMethod != "" {
		method = " (wsrep_sst_method=" + gs.SSTMethod + ")"
	}
	a.add(in, dbpilot.ProblemSSTInProgress, dbpilot.SeverityWarning, "", d,
		"Galera node is Donor/Desynced with wsrep_desync=OFF %s: it donates a state transfer%s %s (or a FLUSH TABLES WITH READ LOCK or backup holds it desynced); "+
			"it falls behind meanwhile and is left out of flow control; %s",
		when, method, who, g.queue())
}

// galeraDesynced names a node desynced with wsrep_desync=ON, and the
// desync left on when nothing else explains it.
func (a *analyzer) galeraDesynced(g galeraCheck, backup bool) {
	in, gs := g.in, g.gs
	when, sd := since(in)
	d := merge(g.base(), sd)
	d["wsrep_desync"] = "ON"
	d["desync_count"] = strconv.Itoa(gs.DesyncCount)
	sev := dbpilot.SeverityWarning
	why := "it applies at its own pace, left out of flow control, and may fall far behind"
	// Another holder of the desync (a backup's FLUSH TABLES WITH READ
	// LOCK, a state transfer) says why it is on.
	held := gs.DesyncCount > 1
	switch {
	case backup:
		sev = dbpilot.SeverityInfo
		why = "a backup is known to run on it"
		d["backup"] = "running"
	case held:
		sev = dbpilot.SeverityInfo
		why = fmt.Sprintf("wsrep_desync_count=%d: something besides wsrep_desync holds it desynced too (a backup's FLUSH TABLES WITH READ LOCK or a state transfer)", gs.DesyncCount)
	}
	a.add(in, dbpilot.ProblemNodeDesynced, sev, "", d,
		"Galera node is desynced (Donor/Desynced, wsrep_desync=ON) %s: %s; %s", when, why, g.queue())
	if !backup && !held {
		a.add(in, dbpilot.ProblemDesyncLeftOn, dbpilot.SeverityWarning, "", map[string]string{"cluster": g.cluster, "wsrep_desync": "ON"},
			"wsrep_desync=ON with no state transfer and no known backup on this node: left on after a backup? "+
				"It falls behind unnoticed by flow control, and once it is turned off the node throttles the whole cluster by flow control until it has applied its receive queue (%d write sets now); "+
				"SET GLOBAL wsrep_desync=OFF when the cluster can afford the catch-up",
			gs.LocalRecvQueue)
	}
}

// galeraRecvQueue names a receive queue that grows: the node cannot apply
// as fast as the cluster writes. A desynced node's queue is NodeDesynced's.
func (a *analyzer) galeraRecvQueue(g galeraCheck) {
	in, gs := g.in, g.gs
	desynced := gs.LocalState == dbpilot.GaleraDonor && (gs.Desync || gs.DesyncCount > 0)
	if desynced || gs.LocalRecvQueue <= a.opt.RecvQueueThreshold {
		return
	}
	w := window(in)
	// Without an earlier sample, only a synced node's queue over the
	// threshold says something (a joining node's drains).
	if w.hasPrev && gs.LocalRecvQueue <= w.queueWas || !w.hasPrev && gs.LocalState != dbpilot.GaleraSynced {
		return
	}
	d := g.base()
	d["threshold"] = strconv.FormatInt(a.opt.RecvQueueThreshold, 10)
	growth := "no earlier sample tells whether it grows"
	if w.hasPrev {
		d["previous_recv_queue"] = strconv.FormatInt(w.queueWas, 10)
		d["window"] = num(w.span)
		growth = fmt.Sprintf("up from %d %s", w.queueWas, w.text())
	}
	limit := ""
	if gs.FCLimit > 0 {
		limit = fmt.Sprintf("; gcs.fc_limit=%d", gs.FCLimit)
	}
	a.add(in, dbpilot.ProblemRecvQueueGrowing, dbpilot.SeverityWarning, "", d,
		"Galera receive queue is %d write sets (threshold %d), %s: the node applies slower than the cluster writes and will throttle it by flow control%s; "+
			"look at its applier threads (wsrep_slave_threads) and its disk",
		gs.LocalRecvQueue, a.opt.RecvQueueThreshold, growth, limit)
}

// joiners returns the members of in's component that are not reachable or
// are joining: the likely receivers of a state transfer it donates.
func (a *analyzer) joiners(in *dbpilot.Instance, members []int) []string {
	var out []string
	for _, j := range members {
		m := a.g.nodes[j]
		if m == in {
			continue
		}
		listed := slices.ContainsFunc(in.Galera.IncomingAddresses, m.Key.Equal)
		if listed && (!m.Reachable || m.Galera != nil && m.Galera.LocalState == dbpilot.GaleraJoining) {
			out = append(out, m.Key.String())
		}
	}
	return out
}

// clusterSize names ClusterSizeMismatch on reporter, the first reachable
// node of the Primary component, when the component has fewer members than
// the cluster has: the members wsrep_cluster_address lists, or the group's
// nodes dbpilot knows (a node that was seen in the cluster).
func (a *analyzer) clusterSize(reporter *dbpilot.Instance, gi int, sum *dbpilot.GaleraGroup, name string) {
	gs := reporter.Galera
	size := sum.Size
	want := max(sum.Configured, len(a.g.groups[gi]))
	if size >= want {
		return
	}
	// The known nodes missing from the Primary component.
	var missing []string
	for _, i := range a.g.groups[gi] {
		in := a.g.nodes[i]
		if in.Galera != nil && in.Reachable && in.Galera.InPrimary() {
			continue
		}
		why := "not in the Primary component"
		if !in.Reachable {
			why = "unreachable"
		}
		missing = append(missing, in.Key.String()+" ("+why+")")
	}
	d := map[string]string{"cluster": name, "cluster_size": strconv.Itoa(size), "expected": strconv.Itoa(want)}
	if sum.Configured > 0 {
		d["configured"] = strconv.Itoa(sum.Configured)
		d["cluster_address"] = gs.ClusterAddress
	}
	msg := fmt.Sprintf("Galera cluster %s has %d of its %d members in the Primary component (wsrep_cluster_size=%d", name, size, want, size)
	if sum.Configured > 0 {
		msg += fmt.Sprintf("; wsrep_cluster_address lists %d", sum.Configured)
	}
	msg += ")"
	if len(missing) > 0 {
		d["missing"] = strings.Join(missing, ",")
		msg += "; missing: " + strings.Join(missing, ", ")
	}
	if size-1 <= want/2 {
		msg += fmt.Sprintf("; one more failure loses quorum (%d of %d is not a majority)", size-1, want)
	}
	a.add(reporter, dbpilot.ProblemClusterSizeMismatch, dbpilot.SeverityWarning, "", d, "%s", msg)
}

// flowControl names FlowControlActive when flow control paused the
// cluster's replication for more than the threshold: on the nodes that sent
// flow-control messages in the window (they cannot keep up), else on the
// most paused node.
func (a *analyzer) flowControl(gi int, name string) {
	type nodeWin struct {
		in *dbpilot.Instance
		w  galeraWindow
	}
	var nodes []nodeWin
	worst := -1
	for _, i := range a.g.groups[gi] {
		in := a.g.nodes[i]
		if !in.Reachable || in.Galera == nil || !in.Galera.InPrimary() {
			continue
		}
		nodes = append(nodes, nodeWin{in, window(in)})
		if n := len(nodes) - 1; worst < 0 || nodes[n].w.paused > nodes[worst].w.paused {
			worst = n
		}
	}
	if worst < 0 || nodes[worst].w.paused <= a.opt.FlowControlThreshold {
		return
	}
	paused := nodes[worst]
	var senders []nodeWin
	for _, n := range nodes {
		// Without a window, totals since start say who sent flow control
		// at some time; only a window says who sends it now.
		if n.w.sent > 0 && n.w.hasPrev {
			senders = append(senders, n)
		}
	}
	base := func(w galeraWindow) map[string]string {
		d := map[string]string{"cluster": name, "paused": strconv.FormatFloat(paused.w.paused, 'f', 4, 64),
			"threshold": fnum(a.opt.FlowControlThreshold)}
		if w.span > 0 {
			d["window"] = num(w.span)
		}
		return d
	}
	head := fmt.Sprintf("flow control paused replication in Galera cluster %s %s of the time %s (threshold %s): every write waits",
		name, pct(paused.w.paused), paused.w.text(), pct(a.opt.FlowControlThreshold))
	if len(senders) == 0 {
		d := base(paused.w)
		who := "no earlier sample tells which node sends it now"
		if paused.w.hasPrev {
			who = "no node sent flow-control messages in the window (it came from a node dbpilot does not observe?)"
		}
		var totals []string
		for _, n := range nodes {
			if n.in.Galera.FlowControlSent > 0 {
				totals = append(totals, fmt.Sprintf("%s sent %d", n.in.Key, n.in.Galera.FlowControlSent))
			}
		}
		if len(totals) > 0 && !paused.w.hasPrev {
			who += "; since start " + strings.Join(totals, ", ")
		}
		a.add(paused.in, dbpilot.ProblemFlowControlActive, dbpilot.SeverityWarning, "", d, "%s; %s", head, who)
		return
	}
	for _, s := range senders {
		gs := s.in.Galera
		d := base(s.w)
		d["flow_control_sent"] = strconv.FormatUint(s.w.sent, 10)
		d["local_recv_queue"] = strconv.FormatInt(gs.LocalRecvQueue, 10)
		a.add(s.in, dbpilot.ProblemFlowControlActive, dbpilot.SeverityWarning, "", d,
			"%s; this node sends it: %d flow-control messages (%s/s) %s, receive queue %d (%s): it applies slower than the cluster writes",
			head, s.w.sent, strconv.FormatFloat(float64(s.w.sent)/s.w.span.Seconds(), 'f', 1, 64), s.w.text(), gs.LocalRecvQueue, gs.LocalState)
	}
}
