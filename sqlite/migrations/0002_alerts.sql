-- Alerts: the pending and firing alerts of serve's evaluator, and the
-- resolved ones as history. Times are UTC Unix nanoseconds (NULL for a zero
-- time).

CREATE TABLE alerts (
	id          INTEGER PRIMARY KEY AUTOINCREMENT,
	rule        TEXT    NOT NULL,
	severity    TEXT    NOT NULL,
	state       TEXT    NOT NULL, -- pending, firing, resolved
	-- cluster is labels.cluster, kept apart for filtering.
	cluster     TEXT    NOT NULL,
	labels      TEXT    NOT NULL, -- JSON object
	summary     TEXT    NOT NULL,
	value       REAL    NOT NULL,
	active_at   INTEGER,
	fired_at    INTEGER,
	resolved_at INTEGER,
	suppressed  TEXT    NOT NULL
);
CREATE INDEX alerts_active_at ON alerts (active_at);
CREATE INDEX alerts_cluster_active_at ON alerts (cluster, active_at);
CREATE INDEX alerts_unresolved ON alerts (state) WHERE state != 'resolved';
