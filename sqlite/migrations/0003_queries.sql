-- Query analytics: what serve's statements collectors read, per instance and
-- digest, summed into one-minute buckets. Times are UTC Unix seconds for
-- minutes, Unix nanoseconds otherwise. Latencies are picoseconds, as the
-- servers keep them.

-- The text of each digest, its last example and when it was first and last
-- seen running.
CREATE TABLE query_digests (
	instance    TEXT    NOT NULL, -- host:port
	schema_name TEXT    NOT NULL,
	digest      TEXT    NOT NULL,
	digest_text TEXT    NOT NULL,
	example     TEXT    NOT NULL,
	first_seen  INTEGER NOT NULL,
	last_seen   INTEGER NOT NULL,
	PRIMARY KEY (instance, schema_name, digest)
) WITHOUT ROWID;
CREATE INDEX query_digests_last_seen ON query_digests (last_seen);

-- Per minute and digest: sums of what ran, and the largest latency.
CREATE TABLE query_stats (
	instance          TEXT    NOT NULL,
	minute            INTEGER NOT NULL, -- start of the minute, Unix seconds
	schema_name       TEXT    NOT NULL,
	digest            TEXT    NOT NULL,
	count             INTEGER NOT NULL,
	total_ps          INTEGER NOT NULL,
	max_ps            INTEGER NOT NULL,
	rows_examined     INTEGER NOT NULL,
	rows_sent         INTEGER NOT NULL,
	errors            INTEGER NOT NULL,
	warnings          INTEGER NOT NULL,
	no_index_used     INTEGER NOT NULL,
	tmp_disk_tables   INTEGER NOT NULL,
	sort_merge_passes INTEGER NOT NULL,
	PRIMARY KEY (instance, minute, schema_name, digest)
) WITHOUT ROWID;
CREATE INDEX query_stats_minute ON query_stats (minute);

-- The source of each instance's statistics at its last collection.
CREATE TABLE query_sources (
	instance     TEXT    PRIMARY KEY,
	cluster      TEXT    NOT NULL,
	source       TEXT    NOT NULL,
	detail       TEXT    NOT NULL,
	capacity     INTEGER NOT NULL,
	digests      INTEGER NOT NULL,
	lost_digests INTEGER NOT NULL,
	full         INTEGER NOT NULL,
	at           INTEGER NOT NULL,
	error        TEXT    NOT NULL
);

-- Per minute: collections, and the growth of the lost digests counter.
CREATE TABLE query_source_minutes (
	instance TEXT    NOT NULL,
	minute   INTEGER NOT NULL,
	lost     INTEGER NOT NULL,
	PRIMARY KEY (instance, minute)
) WITHOUT ROWID;
