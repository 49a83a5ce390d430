package daemon

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/dbpilot/dbpilot"
)

// owners records which configured cluster each observed server belongs
// to, by address and by identity (server_uuid, else server_id with the
// server's own host and port): one server belongs to one cluster. Two
// clusters of the configuration that discover one replication tree would
// both recover it, to different candidates.
type owners struct {
	mu sync.Mutex
	by map[string]map[string]bool // server id -> clusters claiming it
	of map[string][]string        // cluster -> the ids it claimed last
}

// serverIDs are the names one member is known by.
func serverIDs(i *dbpilot.Instance) []string {
	ids := []string{"addr:" + i.Key.Normalized().String()}
	if id := i.Identity(); id != "" {
		ids = append(ids, id)
	}
	return ids
}

// claim records members as cluster's and returns, for each member another
// cluster claims too, those other clusters (sorted), by member key.
func (o *owners) claim(cluster string, members []*dbpilot.Instance) map[dbpilot.InstanceKey][]string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.by == nil {
		o.by, o.of = map[string]map[string]bool{}, map[string][]string{}
	}
	for _, id := range o.of[cluster] {
		delete(o.by[id], cluster)
		if len(o.by[id]) == 0 {
			delete(o.by, id)
		}
	}
	var claimed []string
	var shared map[dbpilot.InstanceKey][]string
	for _, m := range members {
		for _, id := range serverIDs(m) {
			claimed = append(claimed, id)
			set := o.by[id]
			if set == nil {
				set = map[string]bool{}
				o.by[id] = set
			}
			set[cluster] = true
			for other := range set {
				if other == cluster || slices.Contains(shared[m.Key], other) {
					continue
				}
				if shared == nil {
					shared = map[dbpilot.InstanceKey][]string{}
				}
				shared[m.Key] = append(shared[m.Key], other)
			}
		}
	}
	for _, v := range shared {
		sort.Strings(v)
	}
	o.of[cluster] = claimed
	return shared
}

// overlapProblems names each member another configured cluster discovered
// too (ClusterOverlap, critical).
func overlapProblems(cluster string, shared map[dbpilot.InstanceKey][]string) []dbpilot.Problem {
	var out []dbpilot.Problem
	for k, others := range shared {
		out = append(out, dbpilot.Problem{Code: dbpilot.ProblemClusterOverlap, Severity: dbpilot.SeverityCritical, Instance: k,
			Detail: map[string]string{"clusters": strings.Join(append([]string{cluster}, others...), ",")},
			Message: fmt.Sprintf("%s is in cluster %s and in cluster %s of the configuration: one server belongs to one cluster; automatic recovery of both is suspended until the seeds are fixed",
				k, cluster, strings.Join(others, ", "))})
	}
	slices.SortFunc(out, func(a, b dbpilot.Problem) int { return strings.Compare(a.Instance.String(), b.Instance.String()) })
	return out
}

// CheckOverlap observes every cluster once, in parallel, and returns an
// EINVALID error when two clusters of the configuration discover one
// server: serve calls it before it starts, so that such a configuration is
// refused (exit 2) before anything may recover.
func (d *Daemon) CheckOverlap(ctx context.Context) error {
	if len(d.order) < 2 {
		return nil
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(1, d.cfg.DiscoveryBound))
	for _, name := range d.order {
		cs := d.clusters[name]
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			_, _, _ = d.observe(ctx, cs)
		}()
	}
	wg.Wait()
	for _, name := range d.order {
		cs := d.clusters[name]
		cs.mu.Lock()
		overlap := slices.Clone(cs.overlap)
		cs.mu.Unlock()
		if len(overlap) > 0 {
			p := overlap[0]
			return dbpilot.Errorf(dbpilot.EINVALID, "config: clusters %s all discover %s: one server belongs to one cluster; put the seeds of one replication tree in one cluster",
				strings.ReplaceAll(p.Detail["clusters"], ",", " and "), p.Instance)
		}
	}
	return nil
}
