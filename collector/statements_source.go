package collector

import (
	"context"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
)

// statementsRedetect is how many runs a source is kept before it is
// detected again (a server restarted with performance_schema on, a slow
// log turned on), also when it works.
const statementsRedetect = 30

// statementReader reads a source's digests: cumulative counters, so that
// mysql.DigestDeltas gives what ran between two reads.
type statementReader interface {
	Snapshot(ctx context.Context, q mysql.Querier) (*mysql.DigestSnapshot, error)
}

// statementSource is the source an instance's statistics come from.
type statementSource struct {
	source string // dbpilot.QuerySource*
	path   string // the slow log file
	reason string // QuerySourceNone: why
	reader statementReader
	at     int // the run it was detected in
}

func (s *statementSource) name() string   { return s.source }
func (s *statementSource) detail() string { return s.path }

// stale reports whether the source should be detected again at run.
func (s *statementSource) stale(run int) bool { return run-s.at >= statementsRedetect }

// psReader reads performance_schema's digest table.
type psReader struct {
	key      dbpilot.InstanceKey
	examples bool
}

func (r psReader) Snapshot(ctx context.Context, q mysql.Querier) (*mysql.DigestSnapshot, error) {
	return mysql.ReadDigestsFrom(ctx, q, r.key, "", mysql.DigestOptions{Examples: r.examples})
}

// detectStatementSource picks the source of an instance's statistics.
func detectStatementSource(ctx context.Context, q mysql.Querier, key dbpilot.InstanceKey, examples bool, run int) (*statementSource, error) {
	return &statementSource{source: dbpilot.QuerySourcePerformanceSchema, reader: psReader{key: key, examples: examples}, at: run}, nil
}
