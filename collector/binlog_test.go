package collector

import (
	"context"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
	driver "github.com/go-sql-driver/mysql"
)

// blServerError is a server error as a Querier returns it.
func blServerError(n uint16, msg string) error {
	return mysql.Classify(&driver.MySQLError{Number: n, Message: msg}, dbpilot.InstanceKey{Host: "fake", Port: 3306}, "test", "query")
}

func TestBinlogMariaDB(t *testing.T) {
	key := dbpilot.InstanceKey{Host: "db1", Port: 3306}
	q := &gsFakeQuerier{results: map[string]*mysql.Rows{
		blLogsQuery:    gsFixture(t, "binlog/mariadb-10.11-binary-logs.txt"),
		blCommitsQuery: gsFixture(t, "binlog/mariadb-10.11-commits.txt"),
	}}
	c := NewBinlog()
	if c.Name() != "binlog" || c.DefaultInterval() != 5*time.Second {
		t.Fatalf("name/interval = %s/%v", c.Name(), c.DefaultInterval())
	}
	target := Target{Key: key, Flavor: dbpilot.FlavorMariaDB}
	samples, err := c.Collect(context.Background(), q, target)
	if err != nil {
		t.Fatal(err)
	}
	got := gsIndex(t, samples)
	gsCheck(t, got, []gsWant{
		{"mysql_binlog_files", 2, gsG},
		{"mysql_binlog_size_bytes", 1142 + 809, gsG},
		{"mysql_binlog_file_number", 2, gsG},
	})
	// The first run has no previous counters: no ratio.
	gsCheckAbsent(t, got, "dbpilot_binlog_commits_per_group")

	// 4 → 34 commits in 4 → 14 groups: 3 per group.
	q.results[blCommitsQuery] = gsRows([]string{"Variable_name", "Value"},
		[]string{"Binlog_commits", "34"}, []string{"Binlog_group_commits", "14"})
	samples, _ = c.Collect(context.Background(), q, target)
	gsCheck(t, gsIndex(t, samples), []gsWant{{"dbpilot_binlog_commits_per_group", 3, gsG}})

	// Another instance has its own history.
	samples, _ = c.Collect(context.Background(), q, Target{Key: dbpilot.InstanceKey{Host: "db2", Port: 3306}, Flavor: dbpilot.FlavorMariaDB})
	gsCheckAbsent(t, gsIndex(t, samples), "dbpilot_binlog_commits_per_group")

	// Nothing committed, then a restart (counters back to 0): no ratio.
	samples, _ = c.Collect(context.Background(), q, target)
	gsCheckAbsent(t, gsIndex(t, samples), "dbpilot_binlog_commits_per_group")
	q.results[blCommitsQuery] = gsRows([]string{"Variable_name", "Value"},
		[]string{"Binlog_commits", "1"}, []string{"Binlog_group_commits", "1"})
	samples, _ = c.Collect(context.Background(), q, target)
	gsCheckAbsent(t, gsIndex(t, samples), "dbpilot_binlog_commits_per_group")
}

func TestBinlogMySQL(t *testing.T) {
	q := &gsFakeQuerier{results: map[string]*mysql.Rows{blLogsQuery: gsFixture(t, "binlog/mysql-8.4-binary-logs.txt")}}
	samples, err := NewBinlog().Collect(context.Background(), q, Target{Flavor: dbpilot.FlavorMySQL})
	if err != nil {
		t.Fatal(err)
	}
	gsCheck(t, gsIndex(t, samples), []gsWant{
		{"mysql_binlog_files", 3, gsG},
		{"mysql_binlog_size_bytes", 180 + 1073742231 + 52311876, gsG},
		{"mysql_binlog_file_number", 9, gsG},
	})
	if len(q.queries) != 1 {
		t.Errorf("MySQL has no Binlog_group_commits; queries = %v", q.queries)
	}
}

func TestBinlogOff(t *testing.T) {
	q := &gsFakeQuerier{errs: map[string]error{blLogsQuery: blServerError(blNoBinaryLogging, "You are not using binary logging")}}
	samples, err := NewBinlog().Collect(context.Background(), q, Target{Flavor: dbpilot.FlavorMariaDB})
	if err != nil || samples != nil {
		t.Fatalf("log_bin=OFF: %v, %v; want nothing", samples, err)
	}
	q = &gsFakeQuerier{errs: map[string]error{blLogsQuery: blServerError(1227, "Access denied; you need (at least one of) the BINLOG MONITOR privilege(s)")}}
	if _, err := NewBinlog().Collect(context.Background(), q, Target{}); err == nil {
		t.Fatal("a missing privilege must be an error")
	}
}

func TestBlParseLogs(t *testing.T) {
	for _, tc := range []struct {
		name              string
		rows              *mysql.Rows
		files, size, last float64
	}{
		{"empty", gsRows([]string{"Log_name", "File_size"}), 0, 0, 0},
		{"dotted basename", gsRows([]string{"Log_name", "File_size"}, []string{"db1.example-bin.000120", "10"}), 1, 10, 120},
		{"no number", gsRows([]string{"Log_name", "File_size"}, []string{"binlog", "10"}), 1, 10, 0},
	} {
		got := gsIndex(t, blParseLogs(tc.rows))
		if got["mysql_binlog_files"].Value != tc.files || got["mysql_binlog_size_bytes"].Value != tc.size || got["mysql_binlog_file_number"].Value != tc.last {
			t.Errorf("%s: %v", tc.name, got)
		}
	}
}
