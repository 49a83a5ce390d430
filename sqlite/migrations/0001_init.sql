-- Initial schema. Times are UTC Unix nanoseconds (NULL for a zero time).

CREATE TABLE instances (
	cluster     TEXT    NOT NULL,
	-- norm_host is the normalized host (InstanceKey.Normalized), so that one
	-- server reached as localhost and as 127.0.0.1 is one row; host is as given.
	norm_host   TEXT    NOT NULL,
	host        TEXT    NOT NULL,
	port        INTEGER NOT NULL,
	first_seen  INTEGER NOT NULL,
	last_seen   INTEGER NOT NULL,
	observation TEXT    NOT NULL, -- JSON of dbpilot.Instance
	PRIMARY KEY (cluster, norm_host, port)
);
CREATE INDEX instances_cluster_last_seen ON instances (cluster, last_seen);

CREATE TABLE recoveries (
	id            INTEGER PRIMARY KEY AUTOINCREMENT,
	cluster       TEXT    NOT NULL,
	kind          TEXT    NOT NULL,
	old_host      TEXT    NOT NULL,
	old_port      INTEGER NOT NULL,
	new_host      TEXT    NOT NULL,
	new_port      INTEGER NOT NULL,
	detected_at   INTEGER,
	started       INTEGER,
	ended         INTEGER,
	success       INTEGER NOT NULL,
	error         TEXT    NOT NULL,
	plan          TEXT    NOT NULL,
	lost_replicas TEXT, -- JSON array of dbpilot.InstanceKey; NULL for nil
	acked         INTEGER NOT NULL,
	acked_at      INTEGER,
	acked_by      TEXT    NOT NULL,
	ack_comment   TEXT    NOT NULL
);
CREATE INDEX recoveries_cluster_started ON recoveries (cluster, started);
CREATE INDEX recoveries_started ON recoveries (started);
CREATE INDEX recoveries_cluster_unacked ON recoveries (cluster) WHERE acked = 0;

-- recovery_id is deliberately not a foreign key: an audit write must never
-- fail because of what it refers to.
CREATE TABLE audit (
	id          INTEGER PRIMARY KEY AUTOINCREMENT,
	time        INTEGER NOT NULL,
	cluster     TEXT    NOT NULL,
	recovery_id INTEGER NOT NULL,
	host        TEXT    NOT NULL,
	port        INTEGER NOT NULL,
	event       TEXT    NOT NULL,
	message     TEXT    NOT NULL,
	detail      TEXT -- JSON object; NULL for nil
);
CREATE INDEX audit_time ON audit (time);
CREATE INDEX audit_cluster_time ON audit (cluster, time);
CREATE INDEX audit_recovery_time ON audit (recovery_id, time);
