package topology

import (
	"cmp"
	"slices"
	"strings"

	"github.com/dbpilot/dbpilot"
)

// compareKeys orders keys by normalized host, then port.
func compareKeys(a, b dbpilot.InstanceKey) int {
	a, b = a.Normalized(), b.Normalized()
	return cmp.Or(strings.Compare(a.Host, b.Host), cmp.Compare(a.Port, b.Port))
}

// sortInstances sorts instances by key.
func sortInstances(in []*dbpilot.Instance) {
	slices.SortStableFunc(in, func(a, b *dbpilot.Instance) int { return compareKeys(a.Key, b.Key) })
}

// edge is replication from source to replica over one channel.
type edge struct {
	replica, source int                         // node indexes
	ch              *dbpilot.ReplicationChannel // nil for an inferred edge
}

// channelName returns the edge's channel name ("" for inferred edges).
func (e edge) channelName() string {
	if e.ch == nil {
		return ""
	}
	return e.ch.Name
}

// graph is the replication graph over observed instances.
type graph struct {
	nodes []*dbpilot.Instance         // sorted by key, one per normalized key
	index map[dbpilot.InstanceKey]int // normalized key → node
	up    [][]edge                    // up[i]: i's channels to observed sources
	down  [][]edge                    // down[i]: edges from observed replicas of i, sorted by replica

	comp     []int // strongly connected component of each node
	compSize []int
	rootComp []bool // no edge leaves the component

	group  []int   // Galera group of each node, -1 for none (galeraGroups)
	groups [][]int // members of each Galera group, sorted; nil for a dropped group
}

// newGraph builds the graph. Of several instances with one normalized key the
// first reachable one (else the first) is kept; nil instances are skipped.
func newGraph(instances []*dbpilot.Instance) *graph {
	g := &graph{index: map[dbpilot.InstanceKey]int{}}
	for _, in := range instances {
		if in == nil {
			continue
		}
		k := in.Key.Normalized()
		if i, ok := g.index[k]; ok {
			if !g.nodes[i].Reachable && in.Reachable {
				g.nodes[i] = in
			}
			continue
		}
		g.index[k] = len(g.nodes)
		g.nodes = append(g.nodes, in)
	}
	sortInstances(g.nodes)
	for i, in := range g.nodes {
		g.index[in.Key.Normalized()] = i
	}
	g.up = make([][]edge, len(g.nodes))
	g.down = make([][]edge, len(g.nodes))
	add := func(e edge) {
		g.up[e.replica] = append(g.up[e.replica], e)
		g.down[e.source] = append(g.down[e.source], e)
	}
	for r, in := range g.nodes {
		for c := range in.Channels {
			ch := &in.Channels[c]
			if s, ok := g.index[ch.Source.Normalized()]; ok && s != r {
				add(edge{replica: r, source: s, ch: ch})
			}
		}
	}
	// A source lists an unreachable replica we know nothing else about.
	for s, in := range g.nodes {
		for _, rk := range in.Replicas {
			r, ok := g.index[rk.Normalized()]
			if !ok || r == s || g.nodes[r].Reachable || len(g.nodes[r].Channels) > 0 {
				continue
			}
			if !slices.ContainsFunc(g.up[r], func(e edge) bool { return e.source == s }) {
				add(edge{replica: r, source: s})
			}
		}
	}
	for i := range g.down {
		slices.SortStableFunc(g.down[i], func(a, b edge) int { return cmp.Compare(a.replica, b.replica) })
	}
	g.components()
	g.galeraGroups()
	return g
}

// node returns the index of the instance with key k.
func (g *graph) node(k dbpilot.InstanceKey) (int, bool) {
	i, ok := g.index[k.Normalized()]
	return i, ok
}

// components computes the strongly connected components (Tarjan) and which
// of them are roots: components no replication edge leaves.
func (g *graph) components() {
	n := len(g.nodes)
	g.comp = make([]int, n)
	index := make([]int, n)
	low := make([]int, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i] = -1
	}
	var stack []int
	next, ncomp := 0, 0
	var visit func(v int)
	visit = func(v int) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		onStack[v] = true
		for _, e := range g.up[v] {
			w := e.source
			if index[w] < 0 {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			size := 0
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				g.comp[w] = ncomp
				size++
				if w == v {
					break
				}
			}
			g.compSize = append(g.compSize, size)
			ncomp++
		}
	}
	for v := range n {
		if index[v] < 0 {
			visit(v)
		}
	}
	g.rootComp = make([]bool, ncomp)
	for i := range g.rootComp {
		g.rootComp[i] = true
	}
	for v := range n {
		for _, e := range g.up[v] {
			if g.comp[e.source] != g.comp[v] {
				g.rootComp[g.comp[v]] = false
			}
		}
	}
}

// inRing reports whether node i is on a replication cycle.
func (g *graph) inRing(i int) bool { return g.compSize[g.comp[i]] > 1 }

// ringSize returns the number of members of i's ring (1 if none).
func (g *graph) ringSize(i int) int { return g.compSize[g.comp[i]] }

// isPrimary reports whether node i is a primary: a member of a root component.
func (g *graph) isPrimary(i int) bool { return g.rootComp[g.comp[i]] }

// hasReplicas reports whether i has observed replicas or reports any.
func (g *graph) hasReplicas(i int) bool { return len(g.down[i]) > 0 || len(g.nodes[i].Replicas) > 0 }

// replicaKeys returns the keys of i's observed replicas, sorted, without
// duplicates.
func (g *graph) replicaKeys(i int) []string {
	var out []string
	for _, e := range g.down[i] {
		k := g.nodes[e.replica].Key.String()
		if len(out) == 0 || out[len(out)-1] != k {
			out = append(out, k)
		}
	}
	return out
}

// weakComponents returns the connected components of the graph (ignoring
// edge direction), with the members of a Galera group in one component,
// each sorted by key, ordered by their first node.
func (g *graph) weakComponents() [][]int {
	sets := newDisjointSets(len(g.nodes))
	for v := range g.nodes {
		for _, e := range g.up[v] {
			sets.union(e.replica, e.source)
		}
	}
	for _, members := range g.groups {
		for _, v := range members[min(1, len(members)):] {
			sets.union(members[0], v)
		}
	}
	byRoot := map[int]int{}
	var out [][]int
	for v := range g.nodes { // nodes are sorted, so components come out sorted
		r := sets.find(v)
		c, ok := byRoot[r]
		if !ok {
			c = len(out)
			byRoot[r] = c
			out = append(out, nil)
		}
		out[c] = append(out[c], v)
	}
	return out
}
