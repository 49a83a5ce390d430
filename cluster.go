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
	// Detached are servers seen beside the cluster but outside its
	// replication tree (a former primary after a failover), and Fenced
	// what is known of its former primaries among them (serve's status, or
	// topology.Detach from their GTIDs).
	Detached []*Instance      `json:"detached,omitempty"`
	Fenced   []FencedInstance `json:"fenced,omitempty"`
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

// DetachedInstance returns the detached instance with key k, or nil.
func (c *Cluster) DetachedInstance(k InstanceKey) *Instance {
	k = k.Normalized()
	for _, i := range c.Detached {
		if i.Key.Normalized() == k {
			return i
		}
	}
	return nil
}

// FencedInstance returns what is known of the former primary k, or nil.
func (c *Cluster) FencedInstance(k InstanceKey) *FencedInstance {
	for n := range c.Fenced {
		if c.Fenced[n].Key.Equal(k) {
			return &c.Fenced[n]
		}
	}
	return nil
}

// Inspector reads the full state of one server. The mysql package implements
// it; topology discovery uses it.
type Inspector interface {
	Inspect(ctx context.Context, key InstanceKey) (*Instance, error)
}
