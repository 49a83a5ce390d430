package topology

import (
	"fmt"
	"strings"

	"github.com/dbpilot/dbpilot"
)

// writable reports whether the instance was read and accepts writes from
// ordinary clients (read_only=OFF). A Galera node is excluded: every member
// of a Galera cluster is writable by design.
func writable(in *dbpilot.Instance) bool {
	return in.Reachable && !in.ReadOnly && !in.IsGalera()
}

// multipleWritable names every ring with more than one writable member
// (MultipleWritable, critical): two members that both take writes in a
// ring conflict on every key they share. A ring kept for failover has one
// writer and every other member read_only.
func (a *analyzer) multipleWritable() {
	rings := map[int][]int{}
	for i := range a.g.nodes {
		if a.g.inRing(i) && writable(a.g.nodes[i]) {
			rings[a.g.comp[i]] = append(rings[a.g.comp[i]], i)
		}
	}
	for _, members := range rings {
		if len(members) < 2 {
			continue
		}
		keys := make([]string, len(members))
		for j, i := range members {
			keys[j] = a.g.nodes[i].Key.String()
		}
		for _, i := range members {
			in := a.g.nodes[i]
			a.add(in, dbpilot.ProblemMultipleWritable, dbpilot.SeverityCritical, "",
				map[string]string{"writable": strings.Join(keys, ",")},
				"%d members of one replication ring are writable (%s): writes on both conflict and diverge; keep one writer and SET GLOBAL read_only=ON on the others",
				len(members), strings.Join(keys, ", "))
		}
	}
}

// DetachedWritable names each instance seen beside a cluster but outside
// its replication tree that is writable and replicates from none of the
// cluster's members — typically an old primary that came back after a
// failover before it was fenced — as MultipleWritable (critical): clients
// that still reach it write where no replica will ever see it.
func DetachedWritable(primary dbpilot.InstanceKey, members, detached []*dbpilot.Instance) []dbpilot.Problem {
	in := map[dbpilot.InstanceKey]bool{}
	for _, m := range members {
		in[m.Key.Normalized()] = true
	}
	var out []dbpilot.Problem
	for _, d := range detached {
		if !writable(d) {
			continue
		}
		replica := false
		for _, ch := range d.Channels {
			if in[ch.Source.Normalized()] {
				replica = true
			}
		}
		if replica {
			continue // a writable replica: ReplicaNotReadOnly, not a second primary
		}
		who := "the cluster's primary"
		if !primary.IsZero() {
			who = "primary " + primary.String()
		}
		out = append(out, dbpilot.Problem{Code: dbpilot.ProblemMultipleWritable, Severity: dbpilot.SeverityCritical, Instance: d.Key,
			Detail: map[string]string{"primary": primary.String(), "gtid_binlog_pos": d.GTID.BinlogPos},
			Message: fmt.Sprintf("%s is writable outside the cluster's replication tree, beside %s: two servers take writes; fence it (SET GLOBAL read_only=ON) and rejoin it with 'dbpilot rejoin %s'",
				d.Key, who, d.Key)})
	}
	return out
}
