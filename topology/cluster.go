package topology

import (
	"slices"

	"github.com/dbpilot/dbpilot"
)

// Clusters groups instances into clusters: the connected components of the
// replication graph (see the package documentation), the members of a
// Galera cluster together. A cluster's primaries are the members of its root
// strongly connected components: instances without channels to another
// member, every source of a multi-source replica, and every member of a
// ring. Primaries and instances are sorted by key; the cluster is named by
// its first primary's key. Clusters are sorted by name.
//
// A cluster with Galera nodes has Galera set, and its primaries are its
// Galera nodes (every one accepts writes): first those reachable in the
// Primary component, then the others, each part sorted by key. It is named
// by its lowest Galera node key, which does not change when a node fails.
func Clusters(instances []*dbpilot.Instance) []*dbpilot.Cluster {
	g := newGraph(instances)
	var out []*dbpilot.Cluster
	for _, members := range g.weakComponents() {
		c := &dbpilot.Cluster{}
		gi := -1
		for _, v := range members {
			c.Instances = append(c.Instances, g.nodes[v])
			if g.isGalera(v) && gi < 0 {
				gi = g.group[v]
			}
		}
		if gi >= 0 {
			c.Galera = g.galeraSummary(gi)
			var live, rest []dbpilot.InstanceKey
			for _, v := range g.groups[gi] {
				in := g.nodes[v]
				if in.Reachable && in.Galera != nil && in.Galera.InPrimary() {
					live = append(live, in.Key)
				} else {
					rest = append(rest, in.Key)
				}
			}
			c.Primaries = append(live, rest...)
			c.Name = g.nodes[g.groups[gi][0]].Key.String()
			out = append(out, c)
			continue
		}
		for _, v := range members {
			if g.isPrimary(v) {
				c.Primaries = append(c.Primaries, g.nodes[v].Key)
			}
		}
		// Every finite graph has a root component; this is only a safeguard.
		if len(c.Primaries) == 0 {
			c.Primaries = []dbpilot.InstanceKey{c.Instances[0].Key}
		}
		c.Name = c.Primaries[0].String()
		out = append(out, c)
	}
	slices.SortStableFunc(out, func(a, b *dbpilot.Cluster) int { return compareKeys(nameKey(a), nameKey(b)) })
	return out
}

// nameKey returns the key a cluster is named by.
func nameKey(c *dbpilot.Cluster) dbpilot.InstanceKey {
	if k, err := dbpilot.ParseInstanceKey(c.Name); err == nil {
		return k
	}
	return c.Primaries[0]
}
