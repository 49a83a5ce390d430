package dbpilot

import "context"

// Cluster is a primary and every server replicating from it, directly or
// through intermediates, as observed by one discovery crawl. A ring or a
// multi-source topology may have several primaries (writers).
//
// A Galera cluster is one Cluster: its nodes, every one a writer, are its
// primaries, and the servers replicating asynchronously from them are its
// replicas.
type Cluster struct {
	Name      string        `json:"name"`
	Primaries []InstanceKey `json:"primaries"`
	Instances []*Instance   `json:"instances"`
	// Galera summarizes the Galera group; nil for a replication topology.
	Galera *GaleraGroup `json:"galera,omitempty"`
}

// Instance returns the observed instance with key k, or nil.
func (c *Cluster) Instance(k InstanceKey) *Instance {
	k = k.Normalized()
	for _, i := range c.Instances {
		if i.Key.Normalized() == k {
			return i
		}
	}
	return nil
}

// Inspector reads the full state of one server. The mysql package implements
// it; topology discovery uses it.
type Inspector interface {
	Inspect(ctx context.Context, key InstanceKey) (*Instance, error)
}
