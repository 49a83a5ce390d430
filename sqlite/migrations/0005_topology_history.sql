-- The topology history (the time machine): every change serve observed in
-- a cluster's shape and state, as compact change records. A cluster at an
-- instant is the newest record of each instance and the newest cluster
-- record at or before it. Times are UTC Unix nanoseconds.

CREATE TABLE topology_changes (
	id        INTEGER PRIMARY KEY AUTOINCREMENT,
	time      INTEGER NOT NULL,
	cluster   TEXT    NOT NULL,
	kind      TEXT    NOT NULL, -- instance, left, cluster
	-- The instance changed ('' and 0 for a cluster record); norm_host is
	-- its normalized host (InstanceKey.Normalized), host as given.
	norm_host TEXT    NOT NULL,
	host      TEXT    NOT NULL,
	port      INTEGER NOT NULL,
	state     TEXT, -- kind instance: JSON of Instance.Shape; NULL otherwise
	-- kind cluster: JSON {"primary": InstanceKey, "problems": [Problem]};
	-- NULL otherwise.
	cluster_state TEXT,
	summary   TEXT    NOT NULL
);
-- The newest record of each instance (and of the cluster: '', 0) at or
-- before an instant.
CREATE INDEX topology_changes_instance_time ON topology_changes (cluster, norm_host, port, time);
-- A cluster's changes over a span.
CREATE INDEX topology_changes_cluster_time ON topology_changes (cluster, time);

-- Where a cluster's history starts after a prune: the instant from which
-- the records kept rebuild it exactly (without a row: its oldest record).
CREATE TABLE topology_history_start (
	cluster TEXT    PRIMARY KEY,
	since   INTEGER NOT NULL
);
