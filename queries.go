package dbpilot

import (
	"context"
	"time"
)

// Query analytics: what statements ran on an instance, grouped by digest
// (the statement with its literals replaced by "?"), as serve's statements
// collector records them and `dbpilot queries` reports them.

// Statement sources: where the statistics of an instance come from.
const (
	// QuerySourcePerformanceSchema is events_statements_summary_by_digest.
	QuerySourcePerformanceSchema = "performance_schema"
	// QuerySourceSlowLogTable is mysql.slow_log (log_output=TABLE).
	QuerySourceSlowLogTable = "slow_log_table"
	// QuerySourceSlowLogFile is the slow query log file, read on this host.
	QuerySourceSlowLogFile = "slow_log_file"
	// QuerySourceNone: neither is available (QuerySource.Error says why).
	QuerySourceNone = "none"
)

// QueryStat is one digest's activity on one instance over a span: counts
// and sums over the span, the largest latency seen in it.
type QueryStat struct {
	Instance   string `json:"instance"` // host:port
	Cluster    string `json:"cluster,omitempty"`
	Schema     string `json:"schema"` // "" for statements without a default schema
	Digest     string `json:"digest"` // "" for the row of statements that found the digest table full
	DigestText string `json:"digest_text"`
	// Example is a sample statement, its literals replaced by "?" unless
	// the collector keeps examples.
	Example         string  `json:"example,omitempty"`
	Count           uint64  `json:"count"`
	TotalMS         float64 `json:"total_ms"`
	AvgMS           float64 `json:"avg_ms"`
	MaxMS           float64 `json:"max_ms"`
	RowsExamined    uint64  `json:"rows_examined"`
	RowsSent        uint64  `json:"rows_sent"`
	Errors          uint64  `json:"errors"`
	Warnings        uint64  `json:"warnings"`
	NoIndexUsed     uint64  `json:"no_index_used"`
	TmpDiskTables   uint64  `json:"tmp_disk_tables"`
	SortMergePasses uint64  `json:"sort_merge_passes"`
	// FirstSeen and LastSeen are as the source gives them: the server's
	// FIRST_SEEN/LAST_SEEN (server time zone) for a direct read, the UTC
	// times of the first and last interval with activity (RFC 3339) for
	// serve's store.
	FirstSeen string `json:"first_seen,omitempty"`
	LastSeen  string `json:"last_seen,omitempty"`
}

// QuerySource describes where an instance's statistics come from and
// whether they can be trusted.
type QuerySource struct {
	Instance string `json:"instance"`
	Cluster  string `json:"cluster,omitempty"`
	// Source is one of the QuerySource* constants.
	Source string `json:"source"`
	// Detail qualifies the source: the slow log file's path, the consumers
	// that are off.
	Detail string `json:"detail,omitempty"`
	// Capacity is performance_schema_digests_size (-1 autosized, 0 for a
	// slow log source).
	Capacity int64 `json:"capacity"`
	// Digests is the number of rows in the digest table at the last read.
	Digests int `json:"digests"`
	// LostDigests is Performance_schema_digest_lost since the server
	// started; LostInSpan its growth over the report's span.
	LostDigests uint64 `json:"lost_digests"`
	LostInSpan  uint64 `json:"lost_in_span"`
	// Full is set when the table holds Capacity rows: new digests are lost.
	Full bool `json:"full"`
	// At is the last collection; Error the last failure, "" when it worked.
	At    time.Time `json:"at,omitempty"`
	Error string    `json:"error,omitempty"`
}

// QueryOrder values: what a report is sorted by, largest first.
const (
	QueryByTotal = "total" // total latency
	QueryByAvg   = "avg"   // average latency
	QueryByCount = "count"
	QueryByRows  = "rows" // rows examined
)

// QueryFilter selects a query report.
type QueryFilter struct {
	// Cluster or Instance (host:port) narrow the report; both empty: every
	// instance.
	Cluster  string
	Instance string
	// Since is the start of the span (zero: the last hour); Until its end
	// (zero: now).
	Since, Until time.Time
	// By orders the rows (QueryBy*; "" is total).
	By string
	// Limit is the number of rows (0: 20).
	Limit int
	// Schema keeps only digests of this default schema.
	Schema string
}

// QueryReport is the top digests over a span.
type QueryReport struct {
	Since   time.Time     `json:"since"`
	Until   time.Time     `json:"until"`
	By      string        `json:"by"`
	Sources []QuerySource `json:"sources"`
	Queries []QueryStat   `json:"queries"`
}

// QueryInterval is what a statements collector read of one instance in one
// interval: the digests that ran in it (deltas), and the source's state.
type QueryInterval struct {
	Start, End time.Time
	Source     QuerySource
	Stats      []QueryStat
}

// QueryService answers query reports: serve implements it from its store,
// and so does httpapi.Client; a ClusterService that also implements it
// exposes GET /api/queries.
type QueryService interface {
	Queries(ctx context.Context, f QueryFilter) (*QueryReport, error)
}

// QueryRecorder stores the intervals of the statements collectors.
type QueryRecorder interface {
	RecordQueries(ctx context.Context, iv QueryInterval) error
}
