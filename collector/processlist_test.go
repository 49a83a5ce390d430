package collector

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
)

func TestProcesslistMariaDB(t *testing.T) {
	q := &gsFakeQuerier{results: map[string]*mysql.Rows{
		plQuery(dbpilot.FlavorMariaDB): gsFixture(t, "processlist/mariadb-10.11-threads.txt"),
		plTrxQuery:                     gsFixture(t, "processlist/mariadb-10.11-trx.txt"),
	}}
	c := NewProcesslist()
	if c.Name() != "processlist" || c.DefaultInterval() != 5*time.Second {
		t.Fatalf("name/interval = %s/%v", c.Name(), c.DefaultInterval())
	}
	samples, err := c.Collect(context.Background(), q, Target{Flavor: dbpilot.FlavorMariaDB})
	if err != nil {
		t.Fatal(err)
	}
	got := gsIndex(t, samples)
	gsCheck(t, got, []gsWant{
		{`mysql_info_schema_processlist_threads{command="query",state="user_sleep"}`, 4, gsG},
		{`mysql_info_schema_processlist_seconds{command="query",state="user_sleep"}`, 38, gsG},
		{`mysql_info_schema_processlist_threads{command="binlog_dump",state="master_has_sent_all_binlog_to_slave_waiting_for_more_updates"}`, 2, gsG},
		{`mysql_info_schema_processlist_processes_by_user{mysql_user="dbpilot"}`, 4, gsG},
		{`mysql_info_schema_processlist_processes_by_user{mysql_user="repl"}`, 2, gsG},
		{`mysql_info_schema_processlist_processes_by_host{client_host="127.0.0.1"}`, 6, gsG},
		{"dbpilot_oldest_query_seconds", 16.144933, gsG},
		{"dbpilot_innodb_trx_count", 2, gsG},
		{"dbpilot_innodb_trx_oldest_seconds", 16, gsG},
	})
	if !strings.Contains(q.queries[0], "TIME_MS/1000") {
		t.Errorf("MariaDB query does not use TIME_MS: %s", q.queries[0])
	}
}

func TestProcesslistReplica(t *testing.T) {
	got := gsIndex(t, plParseThreads(gsFixture(t, "processlist/mariadb-10.11-replica-threads.txt")))
	gsCheck(t, got, []gsWant{
		{`mysql_info_schema_processlist_threads{command="slave_io",state="waiting_for_master_to_send_event"}`, 1, gsG},
		{`mysql_info_schema_processlist_threads{command="slave_worker",state="waiting_for_work_from_sql_thread"}`, 2, gsG},
		{`mysql_info_schema_processlist_processes_by_user{mysql_user="system user"}`, 4, gsG},
		{`mysql_info_schema_processlist_processes_by_host{client_host="unknown"}`, 4, gsG},
		{"dbpilot_oldest_query_seconds", 0, gsG}, // replication threads are not queries
	})
}

func TestProcesslistMySQL(t *testing.T) {
	q := &gsFakeQuerier{results: map[string]*mysql.Rows{
		plQuery(dbpilot.FlavorMySQL): gsFixture(t, "processlist/mysql-8.0-threads.txt"),
		plTrxQuery:                   gsFixture(t, "processlist/mysql-8.0-trx.txt"),
	}}
	samples, err := NewProcesslist().Collect(context.Background(), q, Target{Flavor: dbpilot.FlavorMySQL})
	if err != nil {
		t.Fatal(err)
	}
	got := gsIndex(t, samples)
	gsCheck(t, got, []gsWant{
		{`mysql_info_schema_processlist_threads{command="sleep",state="unknown"}`, 37, gsG},
		{`mysql_info_schema_processlist_threads{command="query",state="executing"}`, 3, gsG},
		{`mysql_info_schema_processlist_threads{command="daemon",state="waiting_on_empty_queue"}`, 1, gsG},
		{`mysql_info_schema_processlist_threads{command="binlog_dump_gtid",state="source_has_sent_all_binlog_to_replica_waiting_for_more_updates"}`, 2, gsG},
		{`mysql_info_schema_processlist_processes_by_user{mysql_user="app"}`, 41, gsG},
		{`mysql_info_schema_processlist_processes_by_host{client_host="10.0.1.5"}`, 40, gsG},
		{"dbpilot_oldest_query_seconds", 95, gsG},
		{"dbpilot_innodb_trx_count", 4, gsG},
		{"dbpilot_innodb_trx_oldest_seconds", 97, gsG},
	})
	if strings.Contains(q.queries[0], "TIME_MS") {
		t.Errorf("MySQL query uses TIME_MS: %s", q.queries[0])
	}
}

func TestProcesslistTrxError(t *testing.T) {
	q := &gsFakeQuerier{results: map[string]*mysql.Rows{
		plQuery(dbpilot.FlavorMySQL): gsFixture(t, "processlist/mysql-8.0-threads.txt"),
	}}
	samples, err := NewProcesslist().Collect(context.Background(), q, Target{Flavor: dbpilot.FlavorMySQL})
	if err == nil || len(samples) == 0 {
		t.Fatalf("want the thread samples and the INNODB_TRX error, got %d samples, %v", len(samples), err)
	}
}

func TestPlSanitize(t *testing.T) {
	for in, want := range map[string]string{
		"":                                "unknown",
		"Query":                           "query",
		"Binlog Dump":                     "binlog_dump",
		"User sleep":                      "user_sleep",
		"Waiting for table metadata lock": "waiting_for_table_metadata_lock",
		"Master has sent all binlog to slave; waiting for more updates": "master_has_sent_all_binlog_to_slave_waiting_for_more_updates",
		"Slave_SQL":                  "slave_sql",
		"checking permissions (x.y)": "checking_permissions_xy",
		"set-up":                     "set_up",
	} {
		if got := plSanitize(in); got != want {
			t.Errorf("plSanitize(%q) = %q, want %q", in, got, want)
		}
	}
}
