package topology

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dbpilot/dbpilot"
)

// RenderText draws each cluster as a tree, in the manner of orchestrator's
// "-c topology", clusters separated by a blank line:
//
//	127.0.0.1:21001   [-,ok,10.11.19,rw,ROW,GTID,semi:primary]
//	+ 127.0.0.1:21002 [0s,ok,10.11.19,ro,ROW,GTID,semi:replica]
//	+ 127.0.0.1:21003 [null,broken,10.11.19,ro,ROW,GTID,semi:replica] ReplicationSQLStopped
//
// A replica is drawn under its source, "+ " prefixed and indented two spaces
// per level. The bracket holds: the lag of the channel from the parent
// ("-" for a primary without channels, "null" when the server reports NULL;
// for the first line of a ring, the largest over its channels), "ok" or
// "broken" for that channel's threads, the server version, rw or ro
// (read_only), the binlog format (nobinlog without log_bin), GTID or nogtid
// (GTID positioning on that channel), and the semi-sync role (semi:primary,
// semi:replica, semi:both) or nosemi. A line reached through a named channel
// adds [channel NAME]. Then come the codes of the instance's problems (those
// of other channels left out), comma separated.
//
// An unreachable instance is drawn as "HOST:PORT [unreachable: ERROR]".
// Rings are drawn from their lowest key; the edge that closes the cycle is a
// line "+ (ring → HOST:PORT)" instead of a second visit. A multi-source
// replica appears under each of its sources, each line with that channel's
// state; its own replicas are drawn under the first appearance only, and later
// appearances say "(replicas shown above)".
//
// A Galera cluster starts with a line "galera NAME [Primary,size 2/3]" (the
// Primary component's size of the cluster's members), then each node, by
// key, as "= HOST:PORT" with galeraStatus's bracket, its asynchronous
// replicas drawn under it as in a tree.
//
// Below the tree, each detached server of the cluster (Cluster.Detached:
// seen beside it, outside its replication tree) is a line "- HOST:PORT"
// with its bracket and problem codes, then what it is: for a former
// primary (Cluster.Fenced) FencedText's "former primary, fenced, errant:
// GTIDS" (or "none"), else "detached".
func RenderText(w io.Writer, clusters []*dbpilot.Cluster, problems []dbpilot.Problem) error {
	var b strings.Builder
	for n, c := range clusters {
		if n > 0 {
			b.WriteByte('\n')
		}
		renderTree(&b, c, problems)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// textLine is one line of a tree before alignment.
type textLine struct {
	head   string // indentation, "+ " and key
	status string // "" for a ring back-edge line
	rest   string // problem codes and notes

	unreachable bool // its long status does not set the column width
}

func renderTree(b *strings.Builder, c *dbpilot.Cluster, problems []dbpilot.Problem) {
	g := newGraph(c.Instances)
	byNode := make([][]dbpilot.Problem, len(g.nodes))
	for _, p := range problems {
		if i, ok := g.node(p.Instance); ok {
			byNode[i] = append(byNode[i], p)
		}
	}
	var lines []textLine
	visited := make([]bool, len(g.nodes))
	onPath := make([]bool, len(g.nodes))
	var walk func(v, depth int, via *edge)
	walk = func(v, depth int, via *edge) {
		l := textLine{head: prefix(depth) + g.nodes[v].Key.String(), status: status(g.nodes[v], via), unreachable: !g.nodes[v].Reachable}
		if via == nil && c.Galera != nil && g.isGalera(v) {
			// A Galera node: one of the group, its replicas under it.
			depth = 1
			l.head, l.status = "= "+g.nodes[v].Key.String(), galeraStatus(g.nodes[v])
		}
		var rest []string
		if codes := lineCodes(g.nodes[v], byNode[v], via); codes != "" {
			rest = append(rest, codes)
		}
		again := visited[v]
		if again && len(g.down[v]) > 0 {
			rest = append(rest, "(replicas shown above)")
		}
		l.rest = strings.Join(rest, " ")
		lines = append(lines, l)
		if again {
			return
		}
		visited[v] = true
		onPath[v] = true
		for _, e := range g.down[v] {
			if onPath[e.replica] {
				lines = append(lines, textLine{head: prefix(depth+1) + "(ring → " + g.nodes[e.replica].Key.String() + ")"})
				continue
			}
			walk(e.replica, depth+1, &e)
		}
		onPath[v] = false
	}
	roots := make([]int, 0, len(c.Primaries))
	if c.Galera != nil {
		lines = append(lines, textLine{head: galeraHeader(c)})
		for _, k := range c.Galera.Nodes { // by key, whatever their state
			if i, ok := g.node(k); ok {
				roots = append(roots, i)
			}
		}
	}
	for _, k := range c.Primaries {
		if i, ok := g.node(k); ok {
			roots = append(roots, i)
		}
	}
	for v := range g.nodes { // anything the primaries do not reach
		roots = append(roots, v)
	}
	for _, v := range roots {
		if !visited[v] {
			walk(v, 0, nil)
		}
	}
	lines = append(lines, detachedLines(c, problems)...)

	headW, statusW := 0, 0
	for _, l := range lines {
		if l.status != "" {
			headW = max(headW, utf8.RuneCountInString(l.head))
		}
		if l.status != "" && !l.unreachable {
			statusW = max(statusW, utf8.RuneCountInString(l.status))
		}
	}
	for _, l := range lines {
		s := l.head
		if l.status != "" {
			s = fmt.Sprintf("%-*s %-*s %s", headW, l.head, statusW, l.status, l.rest)
		}
		b.WriteString(strings.TrimRight(s, " "))
		b.WriteByte('\n')
	}
}

// detachedLines are the lines of c's detached servers, by key, then of
// former primaries known but not observed.
func detachedLines(c *dbpilot.Cluster, problems []dbpilot.Problem) []textLine {
	det := slices.Clone(c.Detached)
	sortInstances(det)
	var lines []textLine
	what := func(k dbpilot.InstanceKey) string {
		if f := c.FencedInstance(k); f != nil {
			return FencedText(*f)
		}
		return "detached"
	}
	for _, in := range det {
		var mine []dbpilot.Problem
		for _, p := range problems {
			if p.Instance.Equal(in.Key) {
				mine = append(mine, p)
			}
		}
		rest := what(in.Key)
		if codes := lineCodes(in, mine, nil); codes != "" {
			rest = codes + " " + rest
		}
		lines = append(lines, textLine{head: "- " + in.Key.String(), status: status(in, nil), rest: rest, unreachable: !in.Reachable})
	}
	for _, f := range c.Fenced {
		if c.DetachedInstance(f.Key) == nil {
			lines = append(lines, textLine{head: "- " + f.Key.String(), status: "[not observed]", rest: what(f.Key), unreachable: true})
		}
	}
	return lines
}

func prefix(depth int) string {
	if depth == 0 {
		return ""
	}
	return strings.Repeat("  ", depth-1) + "+ "
}

// status returns the bracketed state of instance in reached through via
// (nil for a root), followed by the channel name for a named channel.
func status(in *dbpilot.Instance, via *edge) string {
	if !in.Reachable {
		return "[unreachable: " + in.LastError + "]"
	}
	var chans []*dbpilot.ReplicationChannel
	if via != nil && via.ch != nil {
		chans = append(chans, via.ch)
	} else {
		for c := range in.Channels {
			chans = append(chans, &in.Channels[c])
		}
	}
	lag, state := "-", "ok"
	if len(chans) > 0 {
		var worst int64
		null := false
		for _, ch := range chans {
			if !ch.Healthy() {
				state = "broken"
			}
			if ch.SecondsBehind == nil {
				null = true
			} else {
				worst = max(worst, *ch.SecondsBehind)
			}
		}
		lag = fmt.Sprintf("%ds", worst)
		if null {
			lag = "null"
		}
	}
	version := "?"
	if in.Version != (dbpilot.Version{}) {
		version = in.Version.String()
	}
	rw := "rw"
	if in.ReadOnly {
		rw = "ro"
	}
	format := "nobinlog"
	if in.LogBin {
		format = in.BinlogFormat
		if format == "" {
			format = "?"
		}
	}
	useGTID := "GTID"
	if in.Flavor.IsMySQLFamily() && !strings.EqualFold(in.GTID.Mode, "ON") {
		useGTID = "nogtid"
	}
	for _, ch := range chans {
		if strings.EqualFold(ch.UsingGTID, "No") {
			useGTID = "nogtid"
		}
	}
	semi := "nosemi"
	if r := in.SemiSync.Role(); r != "" {
		semi = "semi:" + r
	}
	s := "[" + strings.Join([]string{lag, state, version, rw, format, useGTID, semi}, ",") + "]"
	if via != nil && via.ch != nil && via.ch.Name != "" {
		s += " [channel " + via.ch.Name + "]"
	}
	return s
}

// lineCodes returns the comma-separated codes of in's problems that belong on
// a line reached through via: instance problems, and the problems of that
// channel (all channels for a root line). Unreachable is left out: the
// bracket says it.
func lineCodes(in *dbpilot.Instance, problems []dbpilot.Problem, via *edge) string {
	var codes []string
	for _, p := range problems {
		if p.Code == dbpilot.ProblemUnreachable {
			continue
		}
		if src := p.Detail["source"]; src != "" && via != nil && via.ch != nil &&
			(src != via.ch.Source.String() || p.Channel != via.ch.Name) {
			continue
		}
		if !slices.Contains(codes, string(p.Code)) {
			codes = append(codes, string(p.Code))
		}
	}
	return strings.Join(codes, ",")
}

// galeraHeader is the first line of a Galera cluster: "galera NAME
// [Primary,size 2/3]" (size: the Primary component's members of the
// cluster's; "non-Primary" when no observed node is in a Primary
// component).
func galeraHeader(c *dbpilot.Cluster) string {
	gg := c.Galera
	name := cmp.Or(gg.Name, c.Name)
	want := max(gg.Configured, len(gg.Nodes))
	if !gg.Primary {
		return fmt.Sprintf("galera %s [non-Primary,size 0/%d]", name, want)
	}
	return fmt.Sprintf("galera %s [Primary,size %d/%d]", name, gg.Size, want)
}

// galeraStatus returns the bracketed state of a Galera node: its state,
// component (Primary, non-Primary) and size, receive and send queues, the
// share of time paused by flow control and the flow-control messages it
// sent and received (over the window since its previous sample, "/5s";
// else since the server started), the cert deps distance, then version,
// rw/ro and binlog format as for other servers.
func galeraStatus(in *dbpilot.Instance) string {
	if !in.Reachable {
		return "[unreachable: " + in.LastError + "]"
	}
	gs := in.Galera
	if gs == nil { // a former member that answers without Galera
		return "[no wsrep," + in.Version.String() + "]"
	}
	w := window(in)
	per, sign := "", ""
	if w.span > 0 {
		per, sign = "/"+roundDuration(w.span).String(), "+"
	}
	version := "?"
	if in.Version != (dbpilot.Version{}) {
		version = in.Version.String()
	}
	rw := "rw"
	if in.ReadOnly {
		rw = "ro"
	}
	format := "nobinlog"
	if in.LogBin {
		format = cmp.Or(in.BinlogFormat, "?")
	}
	parts := []string{
		gs.LocalState.String(), cmp.Or(gs.ClusterStatus, "?"), "size " + strconv.Itoa(gs.ClusterSize),
		"recvq " + strconv.FormatInt(gs.LocalRecvQueue, 10), "sendq " + strconv.FormatInt(gs.LocalSendQueue, 10),
		"fc " + pct(w.paused) + per, "fc_sent " + sign + strconv.FormatUint(w.sent, 10), "fc_recv " + sign + strconv.FormatUint(w.recv, 10),
		"cdd " + strconv.FormatFloat(gs.CertDepsDistance, 'f', 1, 64), version, rw, format,
	}
	if gs.Desync {
		parts = append(parts, "desync")
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// Document is the JSON shape RenderJSON writes:
//
//	{"clusters": [{"name", "primaries", "healthy", "instances", "edges", "problems", "detached", "fenced"}],
//	 "other_problems": [...]}
//
// Instances are dbpilot.Instance values sorted by key; edges are the
// replication graph; problems are sorted as Analyze sorts them. Problems
// whose instance is in no given cluster go to other_problems (omitted when
// empty).
type Document struct {
	Clusters      []ClusterDocument `json:"clusters"`
	OtherProblems []dbpilot.Problem `json:"other_problems,omitempty"`
}

// ClusterDocument is one cluster in a Document.
type ClusterDocument struct {
	Name      string                `json:"name"`
	Primaries []dbpilot.InstanceKey `json:"primaries"`
	// Healthy is true when no problem of the cluster is critical or a warning.
	Healthy   bool                `json:"healthy"`
	Instances []*dbpilot.Instance `json:"instances"`
	Edges     []Edge              `json:"edges"`
	Problems  []dbpilot.Problem   `json:"problems"`
	// Galera summarizes a Galera cluster's group (its nodes' own state is
	// in their instances' galera); absent for a replication topology.
	Galera *dbpilot.GaleraGroup `json:"galera,omitempty"`
	// Detached are the servers seen beside the cluster, outside its
	// tree (sorted by key); Fenced what is known of the former primaries
	// among them (fenced, errant GTIDs).
	Detached []*dbpilot.Instance      `json:"detached,omitempty"`
	Fenced   []dbpilot.FencedInstance `json:"fenced,omitempty"`
}

// Edge is replication from Source to Replica over one channel, sorted by
// source then replica.
type Edge struct {
	Source  dbpilot.InstanceKey `json:"source"`
	Replica dbpilot.InstanceKey `json:"replica"`
	Channel string              `json:"channel,omitempty"`
	// Inferred: the replica is unreachable and known only from the source's
	// list of replicas.
	Inferred bool `json:"inferred,omitempty"`
	// Ring: source and replica are on one replication cycle.
	Ring bool `json:"ring,omitempty"`
}

// Edges returns the replication edges among the cluster's instances.
func Edges(c *dbpilot.Cluster) []Edge {
	g := newGraph(c.Instances)
	out := []Edge{}
	for s := range g.nodes {
		for _, e := range g.down[s] {
			out = append(out, Edge{
				Source:   g.nodes[e.source].Key,
				Replica:  g.nodes[e.replica].Key,
				Channel:  e.channelName(),
				Inferred: e.ch == nil,
				Ring:     g.comp[e.source] == g.comp[e.replica],
			})
		}
	}
	return out
}

// NewDocument builds the Document for clusters and their problems.
func NewDocument(clusters []*dbpilot.Cluster, problems []dbpilot.Problem) Document {
	d := Document{Clusters: []ClusterDocument{}}
	placed := make([]bool, len(problems))
	for _, c := range clusters {
		h := Summarize(c, problems)
		instances := slices.Clone(c.Instances)
		sortInstances(instances)
		detached := slices.Clone(c.Detached)
		sortInstances(detached)
		d.Clusters = append(d.Clusters, ClusterDocument{
			Name:      c.Name,
			Primaries: c.Primaries,
			Healthy:   h.Healthy,
			Instances: instances,
			Edges:     Edges(c),
			Problems:  h.Problems,
			Galera:    c.Galera,
			Detached:  detached,
			Fenced:    c.Fenced,
		})
		for n, p := range problems {
			if holds(c, p.Instance) {
				placed[n] = true
			}
		}
	}
	for n, p := range problems {
		if !placed[n] {
			d.OtherProblems = append(d.OtherProblems, p)
		}
	}
	return d
}

// RenderJSON writes NewDocument(clusters, problems) as indented JSON.
func RenderJSON(w io.Writer, clusters []*dbpilot.Cluster, problems []dbpilot.Problem) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(NewDocument(clusters, problems))
}
