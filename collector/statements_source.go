package collector

import (
	"context"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
)

// statementsRedetect is how many runs a source is kept before it is
// detected again (a server restarted with performance_schema on, a slow
// log turned on or off), also when it works.
const statementsRedetect = 30

// statementSource is the source an instance's statistics come from.
type statementSource struct {
	src    mysql.StatementSource
	reader mysql.StatementReader // nil for QuerySourceNone
	at     int                   // the run it was detected in
}

func (s *statementSource) name() string   { return s.src.Source }
func (s *statementSource) detail() string { return s.src.Path }

// stale reports whether the source should be detected again at run.
func (s *statementSource) stale(run int) bool { return run-s.at >= statementsRedetect }

// detectStatementSource picks the source of an instance's statistics:
// performance_schema's digest table when it is on, else the slow query
// log (the mysql.slow_log table, or its file when serve runs on the
// server's host), else none with the reason.
func detectStatementSource(ctx context.Context, q mysql.Querier, key dbpilot.InstanceKey, examples bool, run int) (*statementSource, error) {
	src, err := mysql.DetectStatementSource(ctx, q, key)
	if err != nil {
		return nil, err
	}
	s := &statementSource{src: src, at: run}
	if src.Source == dbpilot.QuerySourceNone {
		return s, nil
	}
	if s.reader, err = mysql.NewStatementReader(key, src, mysql.SlowLogOptions{Examples: examples}); err != nil {
		return nil, err
	}
	return s, nil
}
