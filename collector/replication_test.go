package collector

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
)

func TestReplicationStatementsByVersion(t *testing.T) {
	tests := []struct {
		flavor  dbpilot.Flavor
		version dbpilot.Version
		want    []string
	}{
		{dbpilot.FlavorMariaDB, dbpilot.Version{Major: 10, Minor: 11}, []string{"SHOW ALL SLAVES STATUS", replMariaGTIDSQL}},
		{dbpilot.FlavorMySQL, dbpilot.Version{Major: 8, Minor: 4}, []string{"SHOW REPLICA STATUS", replMySQLGTIDSQL}},
		{dbpilot.FlavorMySQL, dbpilot.Version{Major: 8, Minor: 0, Patch: 21}, []string{"SHOW SLAVE STATUS", replMySQLGTIDSQL}},
		{dbpilot.FlavorPercona, dbpilot.Version{Major: 5, Minor: 7}, []string{"SHOW SLAVE STATUS", replMySQLGTIDSQL}},
		{dbpilot.FlavorMySQL, dbpilot.Version{Major: 5, Minor: 5}, []string{"SHOW SLAVE STATUS"}}, // no GTIDs
	}
	for _, tt := range tests {
		q := &rhiLogQuerier{}
		if _, err := NewReplication().Collect(context.Background(), q, Target{Flavor: tt.flavor, Version: tt.version}); err != nil {
			t.Fatal(err)
		}
		if got, want := strings.Join(q.queries, "; "), strings.Join(tt.want, "; "); got != want {
			t.Errorf("%s %v: queries %q, want %q", tt.flavor, tt.version, got, want)
		}
	}
}

func TestReplicationErrors(t *testing.T) {
	ctx := context.Background()
	maria := Target{Flavor: dbpilot.FlavorMariaDB, Version: dbpilot.Version{Major: 10, Minor: 11}}
	row := &mysql.Rows{Columns: []string{"Master_Host", "Slave_IO_Running", "Read_Master_Log_Pos"},
		Values: [][]*string{{rhiPtr("h"), rhiPtr("Yes"), rhiPtr("x")}}}
	// A malformed number fails the run.
	q := &rhiStubQuerier{rows: map[string]*mysql.Rows{"SHOW ALL SLAVES STATUS": row}}
	if _, err := NewReplication().Collect(ctx, q, maria); err == nil {
		t.Error("malformed replica status: no error")
	}
	// A refused optional statement is skipped; a broken connection ends the
	// run with what was read.
	good := rhiParseVertical("*** 1. row ***\n     Master_Host: h\nSlave_IO_Running: Connecting\n")
	q = &rhiStubQuerier{rows: map[string]*mysql.Rows{"SHOW ALL SLAVES STATUS": good}, errs: map[string]error{
		replMariaGTIDSQL:    rhiFileError("ERROR 1227 (42000): Access denied"),
		replMariaWorkersSQL: dbpilot.Errorf(dbpilot.EUNAVAIL, "connection lost"),
	}}
	samples, err := NewReplication().Collect(ctx, q, maria)
	if dbpilot.ErrorCode(err) != dbpilot.EUNAVAIL {
		t.Errorf("err = %v, want unavailable", err)
	}
	got := rhiFormat(samples)
	if !strings.HasPrefix(got, `mysql_slave_status_slave_io_running{master_host="h",master_uuid="",channel_name="",connection_name=""} 0`+"\n") ||
		strings.Contains(got, "gtid") {
		t.Errorf("samples:\n%s", got)
	}
}

// rhiLogQuerier records queries and answers each with no rows.
type rhiLogQuerier struct{ queries []string }

func (l *rhiLogQuerier) Query(_ context.Context, q string, _ ...any) (*mysql.Rows, error) {
	l.queries = append(l.queries, q)
	return &mysql.Rows{}, nil
}

func (l *rhiLogQuerier) Exec(context.Context, ...string) error { return nil }

// TestReplicationWorkersRecheck: a MariaDB replica seen without parallel
// workers is asked again only after replNoWorkersRecheck, its zeros
// written in between; one with workers is asked every run.
func TestReplicationWorkersRecheck(t *testing.T) {
	ctx := context.Background()
	maria := Target{Flavor: dbpilot.FlavorMariaDB, Version: dbpilot.Version{Major: 10, Minor: 11}}
	status := rhiParseVertical("*** 1. row ***\n     Master_Host: h\nSlave_IO_Running: Yes\nSlave_SQL_Running: Yes\n")
	log := &rhiLogQuerier{}
	c := NewReplication().(*replication)
	now := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	c.now = func() time.Time { return now }
	workers := func() int {
		n := 0
		for _, q := range log.queries {
			if q == replMariaWorkersSQL {
				n++
			}
		}
		return n
	}
	q := &rhiCountingQuerier{log: log, rows: map[string]*mysql.Rows{"SHOW ALL SLAVES STATUS": status}}
	for i := range 12 {
		samples, err := c.Collect(ctx, q, maria)
		if err != nil {
			t.Fatal(err)
		}
		if got := rhiFormat(samples); !strings.Contains(got, "dbpilot_replication_applier_workers_total 0") {
			t.Fatalf("run %d lacks the workers' zeros:\n%s", i, got)
		}
		now = now.Add(time.Second)
	}
	if n := workers(); n != 2 {
		t.Errorf("workers asked %d times in 12 s, want 2 (at 0 s and 10 s)", n)
	}
	// With workers, every run asks.
	q.rows[replMariaWorkersSQL] = &mysql.Rows{Columns: []string{"STATE"}, Values: [][]*string{{rhiPtr("Waiting for work from SQL thread")}}}
	now = now.Add(replNoWorkersRecheck)
	for range 3 {
		if _, err := c.Collect(ctx, q, maria); err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Second)
	}
	if n := workers(); n != 5 {
		t.Errorf("workers asked %d times, want 5", n)
	}
}

// rhiCountingQuerier answers from rows and logs every query in log.
type rhiCountingQuerier struct {
	log  *rhiLogQuerier
	rows map[string]*mysql.Rows
}

func (c *rhiCountingQuerier) Query(ctx context.Context, q string, args ...any) (*mysql.Rows, error) {
	c.log.Query(ctx, q, args...)
	if r := c.rows[q]; r != nil {
		return r, nil
	}
	return &mysql.Rows{}, nil
}

func (c *rhiCountingQuerier) Exec(context.Context, ...string) error { return nil }
