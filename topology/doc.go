// Package topology discovers replication topologies, names their problems and
// draws them.
//
// Discover crawls from seed instances through an [dbpilot.Inspector], up
// through every channel's source and down through every reported replica.
// Clusters groups the observed instances into clusters. Analyze is a pure
// function from observed instances to problems; RenderText and RenderJSON
// draw clusters with their problems.
//
// # The replication graph
//
// Every observed instance is a node, named by its normalized key. Every
// replication channel is an edge replica → source. An unreachable instance
// that we know nothing about except that a reachable source lists it among
// its replicas gets an inferred edge to that source, so that a dead replica
// stays in its cluster and is not mistaken for a primary.
//
// A cluster is a connected component of that graph. Its primaries are the
// members of its root strongly connected components, the components no edge
// leaves: an instance without channels (the usual primary), every source of
// a multi-source replica, and every member of a ring (co-primaries, each a
// writer). An instance is a ring member when it is on a replication cycle.
//
// # Galera clusters
//
// A Galera node (dbpilot.Instance.Galera set) is a writer among writers:
// Galera nodes are grouped by their cluster state uuid and by the client
// addresses of their component's members (wsrep_incoming_addresses) and of
// former members their inspector remembers, which also brings in a member
// that is now unreachable. A group and the servers replicating from its
// nodes asynchronously are one cluster (Cluster.Galera summarizes it); its
// primaries are its Galera nodes. Discover crawls the members'
// addresses too. Analysis names no replication problem between Galera nodes
// (no DeadPrimary, no "multiple writers"), and Galera problems of its own.
//
// # Errant GTIDs
//
// For a reachable replica whose sources are all observed and reachable, the
// replica's GTID state is compared with the union of its sources' states
// (MariaDB: gtid_binlog_state, highest sequence number per (domain, server);
// MySQL: gtid_executed). What the replica has and no source has is errant,
// with two exceptions:
//
//   - Snapshot skew. Instances are observed one after another, so a replica
//     observed after its source may already hold transactions written after
//     the source was observed. When the replica was observed later than a
//     source, entries of an origin the sources do know (MariaDB: the same
//     (domain, server) pair; MySQL: the same server uuid) are not reported if
//     that origin is a current writer (a reachable primary or ring member) and
//     not the replica itself. Transactions of a former primary that the
//     current one lacks (lost in a failover) are still reported.
//   - Rings. Every ring member is a writer by design and its own
//     transactions reach its source only after going round the ring. For a
//     ring member, entries of its own origin (MariaDB: its server_id in its
//     own gtid_domain_id; MySQL: its server_uuid) are not errant. Writes of a
//     ring member in another domain (for example domain 0) still are.
//
// A multi-source replica is a replica, not a writer: its own transactions are
// errant, and it should be read_only.
//
// # Topology history
//
// A Snapshot is a cluster as serve's topology history keeps it: primary,
// members and problems. Diff gives the change records from one snapshot to
// the next, each with a one-line summary (joined, left, unreachable, a
// thread stopped with its error, read_only, semi-sync, a relocation, a new
// primary, problems raised or cleared); members compare by their shape
// (dbpilot.Instance.SameShape: no positions, counters or lag) and problems
// by code, severity, instance and channel, so a busy cluster whose shape
// holds still records nothing. Rebuild turns the records back into a
// snapshot. All three are pure.
package topology
