package galera

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/dbpilot/dbpilot"
)

// Sources of a node's position, as the plan explains it.
const (
	SourceGrastate = "grastate.dat"
	SourceRecover  = "wsrep-recover"
	SourceRunning  = "running"
	SourceUnknown  = "unknown"
)

// NodeState is the evidence about one node that the planner weighs.
type NodeState struct {
	Name    string `json:"node"`
	Running bool   `json:"running"`
	Pid     int    `json:"pid,omitempty"`
	// UUID and Seqno are the node's cluster and last committed transaction:
	// from grastate.dat, or from --wsrep-recover when grastate.dat says -1.
	UUID  string `json:"uuid"`
	Seqno int64  `json:"seqno"`
	// GTID is the MariaDB GTID position --wsrep-recover logged, if any.
	GTID            string `json:"gtid,omitempty"`
	SafeToBootstrap bool   `json:"safe_to_bootstrap"`
	// GrastateSeqno is the seqno grastate.dat holds (-1 after a crash).
	GrastateSeqno int64  `json:"grastate_seqno"`
	Source        string `json:"source"` // grastate.dat, wsrep-recover, running, unknown
	// Problem says why the position is unknown (no grastate.dat, recovery failed).
	Problem  string `json:"problem,omitempty"`
	Excluded bool   `json:"excluded,omitempty"`
}

// known reports whether the node's position is known.
func (s NodeState) known() bool { return s.Seqno >= 0 && s.UUID != "" && s.UUID != ZeroUUID }

// empty reports whether the node holds no cluster state at all (never
// joined, or wiped): it has nothing to lose and joins by SST.
func (s NodeState) empty() bool { return s.UUID == "" || s.UUID == ZeroUUID }

// Plan is the planner's answer: which node to bootstrap, why, and in what
// order the others join.
type Plan struct {
	Cluster   string      `json:"cluster_uuid,omitempty"`
	Bootstrap string      `json:"bootstrap,omitempty"` // the node started with --wsrep-new-cluster
	Reason    string      `json:"reason,omitempty"`
	Join      []string    `json:"join,omitempty"` // the others, in start order
	Warnings  []string    `json:"warnings,omitempty"`
	Refused   string      `json:"refused,omitempty"` // why no plan is possible
	Nodes     []NodeState `json:"evidence"`
	// SetSafe is true when the chosen node's grastate.dat needs
	// safe_to_bootstrap: 1 before it can be bootstrapped.
	SetSafe bool `json:"set_safe_to_bootstrap"`
}

// PlanBootstrap picks the node to bootstrap a fully stopped cluster from:
// the one with the highest seqno (ties go to the node marked
// safe_to_bootstrap: 1, then to the first node). It refuses, with the reason
// in the returned error and in Plan.Refused, when a node is running, when
// nodes disagree on the cluster UUID, or when a node that belonged to the
// cluster has an unknown position (it might be the most advanced). Nodes
// with no cluster state at all (never joined, wiped) join by SST. The plan
// is returned in every case, so that its evidence can be shown.
func PlanBootstrap(states []NodeState) (*Plan, error) {
	p := &Plan{Nodes: append([]NodeState(nil), states...)}
	refuse := func(code, format string, args ...any) (*Plan, error) {
		p.Refused = fmt.Sprintf(format, args...)
		p.Bootstrap, p.Reason, p.Join, p.SetSafe = "", "", nil, false
		return p, dbpilot.Errorf(code, "galera: refusing to bootstrap: %s", p.Refused)
	}
	if len(states) == 0 {
		return refuse(dbpilot.EINVALID, "no nodes given")
	}
	var running []string
	for _, s := range states {
		if s.Running {
			r := s.Name
			if s.Pid > 0 {
				r += fmt.Sprintf(" (pid %d)", s.Pid)
			}
			running = append(running, r)
		}
	}
	if len(running) > 0 {
		verb := "is"
		if len(running) > 1 {
			verb = "are"
		}
		return refuse(dbpilot.ECONFLICT, "%s %s running: the cluster is not fully stopped; a running node is a live cluster to join, not one to bootstrap again (start the stopped nodes instead)", strings.Join(running, ", "), verb)
	}
	clusters := map[string][]string{}
	var candidates []NodeState
	var unknown []string
	for _, s := range states {
		if s.Excluded {
			continue
		}
		if !s.empty() {
			clusters[s.UUID] = append(clusters[s.UUID], s.Name)
		}
		switch {
		case s.known():
			candidates = append(candidates, s)
		case !s.empty():
			why := s.Problem
			if why == "" {
				why = "seqno -1"
			}
			unknown = append(unknown, fmt.Sprintf("%s (%s)", s.Name, why))
		}
	}
	if len(clusters) > 1 {
		var parts []string
		for uuid, names := range clusters {
			parts = append(parts, fmt.Sprintf("%s on %s", uuid, strings.Join(names, ",")))
		}
		sort.Strings(parts)
		return refuse(dbpilot.ECONFLICT, "nodes disagree on the cluster UUID (%s): they are not one cluster; decide which data to keep and wipe the others' datadirs", strings.Join(parts, "; "))
	}
	if len(unknown) > 0 {
		return refuse(dbpilot.ECONFLICT, "the position of %s is unknown and might be the most advanced; fix it (see its error log) or exclude it, and it will rejoin by SST", strings.Join(unknown, ", "))
	}
	if len(candidates) == 0 {
		return refuse(dbpilot.ENOTFOUND, "no node has a saved cluster position (grastate.dat with a cluster UUID): nothing to bootstrap from")
	}
	for uuid := range clusters {
		p.Cluster = uuid
	}
	best := candidates[0]
	for _, c := range candidates[1:] {
		if c.Seqno > best.Seqno || c.Seqno == best.Seqno && c.SafeToBootstrap && !best.SafeToBootstrap {
			best = c
		}
	}
	p.Bootstrap = best.Name
	p.SetSafe = !best.SafeToBootstrap
	var tied, safeOthers []string
	for _, c := range candidates {
		if c.Name == best.Name {
			continue
		}
		if c.Seqno == best.Seqno {
			tied = append(tied, c.Name)
		}
		if c.SafeToBootstrap {
			safeOthers = append(safeOthers, fmt.Sprintf("%s (seqno %d)", c.Name, c.Seqno))
		}
	}
	switch {
	case len(candidates) == 1:
		p.Reason = fmt.Sprintf("%s is the only node with a known position (seqno %d, from %s)", best.Name, best.Seqno, best.Source)
	case len(tied) > 0 && best.SafeToBootstrap:
		p.Reason = fmt.Sprintf("%s has the highest seqno (%d, tied with %s) and safe_to_bootstrap: 1 (it left the cluster last)", best.Name, best.Seqno, strings.Join(tied, ", "))
	case len(tied) > 0:
		p.Reason = fmt.Sprintf("%s has the highest seqno (%d, tied with %s; none marked safe_to_bootstrap, so the first)", best.Name, best.Seqno, strings.Join(tied, ", "))
	case best.SafeToBootstrap:
		p.Reason = fmt.Sprintf("%s has the highest seqno (%d) and safe_to_bootstrap: 1 (it left the cluster last)", best.Name, best.Seqno)
	default:
		p.Reason = fmt.Sprintf("%s has the highest seqno (%d, from %s)", best.Name, best.Seqno, best.Source)
	}
	if len(safeOthers) > 0 {
		p.Warnings = append(p.Warnings, fmt.Sprintf("%s marked safe_to_bootstrap: 1 but %s is ahead (seqno %d): bootstrapping the most advanced node instead", strings.Join(safeOthers, ", "), best.Name, best.Seqno))
	}
	if p.SetSafe {
		p.Warnings = append(p.Warnings, fmt.Sprintf("%s's grastate.dat says safe_to_bootstrap: 0 (no node left last cleanly); it will be set to 1", best.Name))
	}
	for _, s := range states {
		if s.Name != best.Name && !s.Excluded {
			p.Join = append(p.Join, s.Name)
		}
	}
	return p, nil
}

// Write prints the plan and its evidence for a person.
func (p *Plan) Write(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tSTATE\tUUID\tSEQNO\tSAFE_TO_BOOTSTRAP\tSOURCE")
	for _, s := range p.Nodes {
		state := "stopped"
		switch {
		case s.Running && s.Pid > 0:
			state = fmt.Sprintf("running (pid %d)", s.Pid)
		case s.Running:
			state = "running"
		case s.Excluded:
			state = "excluded"
		}
		uuid := s.UUID
		if uuid == "" {
			uuid = "-"
		}
		src := s.Source
		if s.Source == SourceRecover {
			src = fmt.Sprintf("wsrep-recover (grastate.dat seqno %d)", s.GrastateSeqno)
		}
		if s.GTID != "" {
			src += ", gtid " + s.GTID
		}
		if s.Problem != "" {
			src += ": " + s.Problem
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\n", s.Name, state, uuid, s.Seqno, b2i(s.SafeToBootstrap), src)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if p.Refused != "" {
		_, err := fmt.Fprintf(w, "refused: %s\n", p.Refused)
		return err
	}
	fmt.Fprintf(w, "bootstrap: %s (%s)\n", p.Bootstrap, p.Reason)
	for _, warn := range p.Warnings {
		fmt.Fprintf(w, "note: %s\n", warn)
	}
	if len(p.Join) > 0 {
		fmt.Fprintf(w, "then join, one at a time: %s\n", strings.Join(p.Join, ", "))
	}
	return nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
