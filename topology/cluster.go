package topology

import (
	"slices"

	"github.com/dbpilot/dbpilot"
)

// Clusters groups instances into clusters: the connected components of the
// replication graph (see the package documentation). A cluster's primaries
// are the members of its root strongly connected components: instances
// without channels to another member, every source of a multi-source replica,
// and every member of a ring. Primaries and instances are sorted by key; the
// cluster is named by its first primary's key. Clusters are sorted by name.
func Clusters(instances []*dbpilot.Instance) []*dbpilot.Cluster {
	g := newGraph(instances)
	var out []*dbpilot.Cluster
	for _, members := range g.weakComponents() {
		c := &dbpilot.Cluster{}
		for _, v := range members {
			c.Instances = append(c.Instances, g.nodes[v])
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
	slices.SortStableFunc(out, func(a, b *dbpilot.Cluster) int { return compareKeys(a.Primaries[0], b.Primaries[0]) })
	return out
}
