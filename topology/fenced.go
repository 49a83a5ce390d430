package topology

import (
	"errors"
	"fmt"
	"strings"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/gtid"
)

// Errant returns the GTIDs in has that primary lacks ("" when none): on
// MariaDB the entries of in's gtid_binlog_state beyond primary's, per
// domain and server; on MySQL in's gtid_executed minus primary's. These
// are the transactions a former primary committed that never reached the
// cluster: attached as it is, it would keep them (and conflict with, or
// miss, what the cluster wrote in their place).
func Errant(in, primary *dbpilot.Instance) (string, error) {
	switch {
	case in.Flavor == dbpilot.FlavorMariaDB:
		return gtid.ErrantMariaDBStrings(in.GTID.BinlogState, primary.GTID.BinlogState)
	case in.Flavor.IsMySQLFamily():
		return gtid.ErrantMySQLStrings(in.GTID.Executed, primary.GTID.Executed)
	}
	return "", errors.New("unknown flavor")
}

// FencedOf describes old, outside the cluster whose primary is primary
// (nil when there is none), as a fenced former primary: its state, and
// its errant GTIDs when both answer.
func FencedOf(old, primary *dbpilot.Instance) dbpilot.FencedInstance {
	f := dbpilot.FencedInstance{Key: old.Key, Reachable: old.Reachable, ReadOnly: old.ReadOnly}
	if primary == nil {
		return f
	}
	f.Primary = primary.Key
	if old.Reachable && primary.Reachable {
		if e, err := Errant(old, primary); err == nil {
			f.Compared, f.Errant = true, e
		}
	}
	return f
}

// FencedProblems names each fenced former primary that answers read_only
// as FencedOldPrimary: a warning when it can rejoin as it is, critical
// when it has errant transactions (Detail["errant"]), a warning when they
// are unknown (the primary cannot be read). One that answers writable is
// DetachedWritable's (MultipleWritable); one that does not answer is not a
// problem until it does.
func FencedProblems(fenced []dbpilot.FencedInstance) []dbpilot.Problem {
	var out []dbpilot.Problem
	for _, f := range fenced {
		if !f.Reachable || !f.ReadOnly {
			continue
		}
		p := dbpilot.Problem{Code: dbpilot.ProblemFencedOldPrimary, Severity: dbpilot.SeverityWarning, Instance: f.Key,
			Detail: map[string]string{"primary": f.Primary.String()}}
		primary := "the cluster's primary"
		if !f.Primary.IsZero() {
			primary = "primary " + f.Primary.String()
		}
		switch {
		case !f.Compared:
			p.Message = fmt.Sprintf("former primary %s is fenced (read_only) outside the cluster; whether it has errant transactions is unknown until %s can be read; then attach it with 'dbpilot rejoin %s'",
				f.Key, primary, f.Key)
		case f.Errant != "":
			p.Severity = dbpilot.SeverityCritical
			p.Detail["errant"] = f.Errant
			p.Message = fmt.Sprintf("former primary %s is fenced (read_only) outside the cluster with errant transactions %s lacks: %s; re-provision and attach it with 'dbpilot rejoin %s --reclone' (they are discarded, and recorded in the audit)",
				f.Key, primary, f.Errant, f.Key)
		default:
			p.Detail["errant"] = ""
			p.Message = fmt.Sprintf("former primary %s is fenced (read_only) outside the cluster, with no errant transactions: attach it below %s with 'dbpilot rejoin %s'",
				f.Key, primary, f.Key)
		}
		out = append(out, p)
	}
	return out
}

// FencedText says what a fenced former primary is, for the line drawn
// below its cluster's tree: "former primary, fenced, errant: none" (or
// the GTIDs), "former primary, NOT fenced: writable", or "former primary,
// down: fenced when it answers".
func FencedText(f dbpilot.FencedInstance) string {
	switch {
	case !f.Reachable:
		return "former primary, down: fenced when it answers"
	case !f.ReadOnly:
		return "former primary, NOT fenced: writable"
	case !f.Compared:
		return "former primary, fenced, errant: unknown (primary not read)"
	case f.Errant == "":
		return "former primary, fenced, errant: none"
	}
	return "former primary, fenced, errant: " + f.Errant
}

// Detach finds, among clusters discovered without serve, each lone server
// that is a former primary of another cluster — no source and no replica,
// and transactions of its own in that cluster's primary's history (its
// server_id in the primary's gtid_binlog_state on MariaDB, its server_uuid
// in the primary's gtid_executed on MySQL): an old primary after a
// failover, started again. It is moved out of the list into that
// cluster's Detached, and Fenced (errant GTIDs compared with the
// primary). Detach returns the clusters left and the problems of the
// servers moved: FencedOldPrimary when read_only, MultipleWritable when
// writable. A cluster's primary is taken only when it is the one writable
// primary of its cluster, so two lone servers cannot claim each other.
func Detach(clusters []*dbpilot.Cluster) ([]*dbpilot.Cluster, []dbpilot.Problem) {
	owner := make([]int, len(clusters))
	for i, c := range clusters {
		owner[i] = -1
		lone := loneServer(c)
		if lone == nil {
			continue
		}
		for j, o := range clusters {
			if i == j {
				continue
			}
			if p := writablePrimary(o); p != nil && formerPrimaryOf(lone, p) {
				owner[i] = j
				break
			}
		}
	}
	var out []*dbpilot.Cluster
	var problems []dbpilot.Problem
	for i, c := range clusters {
		if owner[i] < 0 || owner[owner[i]] >= 0 {
			continue
		}
		o := clusters[owner[i]]
		lone, p := c.Instances[0], writablePrimary(o)
		o.Detached = append(o.Detached, lone)
		f := FencedOf(lone, p)
		o.Fenced = append(o.Fenced, f)
		problems = append(problems, FencedProblems([]dbpilot.FencedInstance{f})...)
		problems = append(problems, DetachedWritable(p.Key, o.Instances, []*dbpilot.Instance{lone})...)
	}
	for i, c := range clusters {
		if owner[i] < 0 || owner[owner[i]] >= 0 {
			out = append(out, c)
		}
	}
	return out, problems
}

// loneServer returns the one server of c when it is reachable, has no
// source and no replica, and is not a Galera node; else nil.
func loneServer(c *dbpilot.Cluster) *dbpilot.Instance {
	if len(c.Instances) != 1 || c.Galera != nil {
		return nil
	}
	in := c.Instances[0]
	if !in.Reachable || in.IsGalera() || len(in.Channels) > 0 || len(in.Replicas) > 0 {
		return nil
	}
	return in
}

// writablePrimary returns c's primary when c has one, reachable and
// writable, and is not a Galera cluster; else nil.
func writablePrimary(c *dbpilot.Cluster) *dbpilot.Instance {
	if len(c.Primaries) != 1 || c.Galera != nil {
		return nil
	}
	p := c.Instance(c.Primaries[0])
	if p == nil || !p.Reachable || p.ReadOnly || p.IsGalera() {
		return nil
	}
	return p
}

// formerPrimaryOf reports whether lone wrote transactions that primary
// has: its server_id in primary's gtid_binlog_state (MariaDB), its
// server_uuid in primary's gtid_executed (MySQL).
func formerPrimaryOf(lone, primary *dbpilot.Instance) bool {
	if lone.Key.Equal(primary.Key) || lone.Flavor.IsMySQLFamily() != primary.Flavor.IsMySQLFamily() {
		return false
	}
	if lone.Flavor == dbpilot.FlavorMariaDB {
		if lone.ServerID == 0 || lone.ServerID == primary.ServerID {
			return false
		}
		state, err := gtid.ParseMariaList(primary.GTID.BinlogState)
		if err != nil {
			return false
		}
		for _, g := range state {
			if g.Server == lone.ServerID && g.Seq > 0 {
				return true
			}
		}
		return false
	}
	if lone.ServerUUID == "" || strings.EqualFold(lone.ServerUUID, primary.ServerUUID) {
		return false
	}
	set, err := gtid.ParseMySQLSet(primary.GTID.Executed)
	if err != nil {
		return false
	}
	for _, c := range gtid.CompareMySQLSets(set, gtid.MySQLSet{}) {
		if strings.EqualFold(c.UUID, lone.ServerUUID) {
			return true
		}
	}
	return false
}
