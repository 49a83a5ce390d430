package collector

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
)

func TestSemiSyncFixtures(t *testing.T) {
	for _, tc := range []struct {
		file   string
		flavor dbpilot.Flavor
		wants  []gsWant
		absent []string
	}{
		{"semisync/mariadb-10.11-primary.txt", dbpilot.FlavorMariaDB, []gsWant{
			{"dbpilot_semisync_primary_enabled", 1, gsG},
			{"dbpilot_semisync_replica_enabled", 0, gsG},
			{"dbpilot_semisync_primary_status", 1, gsG},
			{"dbpilot_semisync_replica_status", 0, gsG},
			{"dbpilot_semisync_primary_clients", 2, gsG},
			{"dbpilot_semisync_primary_yes_tx_total", 6, gsC},
			{"dbpilot_semisync_primary_no_tx_total", 0, gsC},
			{"dbpilot_semisync_primary_off_total", 0, gsC},
			{"dbpilot_semisync_primary_tx_avg_wait_seconds", 379e-6, gsG},
			{"dbpilot_semisync_primary_net_avg_wait_seconds", 0, gsG},
			{"dbpilot_semisync_primary_tx_wait_seconds_total", 1897e-6, gsC},
			{"dbpilot_semisync_primary_tx_waits_total", 5, gsC},
			{"dbpilot_semisync_primary_wait_sessions", 0, gsG},
			{"dbpilot_semisync_primary_timeout_seconds", 10, gsG},
			{"dbpilot_semisync_primary_wait_no_replica", 1, gsG},
			{`dbpilot_semisync_primary_wait_point_info{wait_point="AFTER_COMMIT"}`, 1, gsG},
			{"dbpilot_semisync_fell_back", 0, gsG},
		}, []string{"dbpilot_semisync_primary_wait_for_replica_count"}},
		{"semisync/mariadb-10.11-replica.txt", dbpilot.FlavorMariaDB, []gsWant{
			{"dbpilot_semisync_primary_enabled", 0, gsG},
			{"dbpilot_semisync_replica_enabled", 1, gsG},
			{"dbpilot_semisync_replica_status", 1, gsG},
			{"dbpilot_semisync_replica_acks_sent_total", 6, gsC},
			{"dbpilot_semisync_primary_status", 0, gsG},
			{"dbpilot_semisync_fell_back", 0, gsG}, // off because not enabled
		}, nil},
		{"semisync/mariadb-10.11-fell-back.txt", dbpilot.FlavorMariaDB, []gsWant{
			{"dbpilot_semisync_primary_enabled", 1, gsG},
			{"dbpilot_semisync_primary_status", 0, gsG},
			{"dbpilot_semisync_primary_clients", 0, gsG},
			{"dbpilot_semisync_primary_no_tx_total", 1, gsC},
			{"dbpilot_semisync_primary_off_total", 1, gsC},
			{"dbpilot_semisync_primary_timeout_seconds", 0.3, gsG},
			{"dbpilot_semisync_fell_back", 1, gsG},
		}, nil},
		{"semisync/mysql-8.4-primary.txt", dbpilot.FlavorMySQL, []gsWant{
			{"dbpilot_semisync_primary_enabled", 1, gsG},
			{"dbpilot_semisync_replica_enabled", 0, gsG},
			{"dbpilot_semisync_primary_status", 1, gsG},
			{"dbpilot_semisync_primary_clients", 2, gsG},
			{"dbpilot_semisync_primary_yes_tx_total", 2088, gsC},
			{"dbpilot_semisync_primary_tx_avg_wait_seconds", 412e-6, gsG},
			{"dbpilot_semisync_primary_wait_for_replica_count", 1, gsG},
			{"dbpilot_semisync_primary_wait_no_replica", 1, gsG},
			{`dbpilot_semisync_primary_wait_point_info{wait_point="AFTER_SYNC"}`, 1, gsG},
			{"dbpilot_semisync_fell_back", 0, gsG},
		}, nil},
		{"semisync/mysql-8.0-fell-back.txt", dbpilot.FlavorMySQL, []gsWant{
			{"dbpilot_semisync_primary_enabled", 1, gsG},
			{"dbpilot_semisync_primary_status", 0, gsG},
			{"dbpilot_semisync_primary_no_tx_total", 7, gsC},
			{"dbpilot_semisync_primary_wait_for_replica_count", 1, gsG},
			{"dbpilot_semisync_fell_back", 1, gsG},
		}, nil},
	} {
		t.Run(tc.file, func(t *testing.T) {
			q := &gsFakeQuerier{results: map[string]*mysql.Rows{ssQuery(tc.flavor): gsFixture(t, tc.file)}}
			samples, err := NewSemiSync().Collect(context.Background(), q, Target{Flavor: tc.flavor})
			if err != nil {
				t.Fatal(err)
			}
			got := gsIndex(t, samples)
			for k, s := range got {
				if !strings.HasPrefix(k, "dbpilot_semisync_") {
					t.Errorf("unexpected series %s", k)
				}
				if strings.Contains(k, "slave") || strings.Contains(k, "master") || strings.Contains(k, "source") {
					t.Errorf("series %s uses the server's words", k)
				}
				_ = s
			}
			gsCheck(t, got, tc.wants)
			gsCheckAbsent(t, got, tc.absent...)
		})
	}
}

func TestSemiSyncQueries(t *testing.T) {
	if q := ssQuery(dbpilot.FlavorMariaDB); !strings.Contains(q, "information_schema.GLOBAL_STATUS") {
		t.Errorf("MariaDB query: %s", q)
	}
	if q := ssQuery(dbpilot.FlavorMySQL); !strings.Contains(q, "performance_schema.GLOBAL_VARIABLES") {
		t.Errorf("MySQL query: %s", q)
	}
}

func TestSemiSyncAbsent(t *testing.T) {
	q := &gsFakeQuerier{results: map[string]*mysql.Rows{ssQuery(dbpilot.FlavorMySQL): gsRows([]string{"KIND", "VARIABLE_NAME", "VARIABLE_VALUE"})}}
	c := NewSemiSync()
	if c.Name() != "semisync" || c.DefaultInterval() != time.Second {
		t.Fatalf("name/interval = %s/%v", c.Name(), c.DefaultInterval())
	}
	samples, err := c.Collect(context.Background(), q, Target{Flavor: dbpilot.FlavorMySQL})
	if err != nil || samples != nil {
		t.Fatalf("no plugin: %v, %v; want nothing", samples, err)
	}
}

// performance_schema cannot be read: SHOW ... LIKE from then on.
func TestSemiSyncFallback(t *testing.T) {
	key := dbpilot.InstanceKey{Host: "db1", Port: 3306}
	q := &gsFakeQuerier{
		errs: map[string]error{ssQuery(dbpilot.FlavorMySQL): blServerError(1142, "SELECT command denied to user 'dbpilot'@'10.0.0.9' for table 'global_status'")},
		results: map[string]*mysql.Rows{
			ssStatusQuery: gsRows([]string{"Variable_name", "Value"},
				[]string{"Rpl_semi_sync_source_clients", "1"}, []string{"Rpl_semi_sync_source_status", "OFF"}),
			ssVariablesQuery: gsRows([]string{"Variable_name", "Value"},
				[]string{"rpl_semi_sync_source_enabled", "ON"}, []string{"rpl_semi_sync_source_timeout", "1500"}),
		},
	}
	c := NewSemiSync()
	for run := 0; run < 2; run++ {
		samples, err := c.Collect(context.Background(), q, Target{Key: key, Flavor: dbpilot.FlavorMySQL})
		if err != nil {
			t.Fatal(err)
		}
		gsCheck(t, gsIndex(t, samples), []gsWant{
			{"dbpilot_semisync_primary_clients", 1, gsG},
			{"dbpilot_semisync_primary_timeout_seconds", 1.5, gsG},
			{"dbpilot_semisync_fell_back", 1, gsG},
		})
	}
	if want := 1 + 2 + 2; len(q.queries) != want {
		t.Errorf("queries = %d (%v), want %d: the failing one only once", len(q.queries), q.queries, want)
	}
	// A connection failure is an error, not a reason to fall back.
	q2 := &gsFakeQuerier{}
	if _, err := NewSemiSync().Collect(context.Background(), q2, Target{Key: key}); err == nil {
		t.Fatal("want an error")
	}
}

func TestSsSide(t *testing.T) {
	for in, want := range map[string]string{
		"rpl_semi_sync_master_clients":                "primary/clients",
		"rpl_semi_sync_source_clients":                "primary/clients",
		"rpl_semi_sync_slave_status":                  "replica/status",
		"rpl_semi_sync_replica_status":                "replica/status",
		"rpl_semi_sync_master_wait_no_slave":          "primary/wait_no_replica",
		"rpl_semi_sync_master_wait_for_slave_count":   "primary/wait_for_replica_count",
		"rpl_semi_sync_source_wait_for_replica_count": "primary/wait_for_replica_count",
		"rpl_semi_sync_other":                         "",
		"binlog_commits":                              "",
	} {
		side, rest, ok := ssSide(in)
		got := ""
		if ok {
			got = side + "/" + rest
		}
		if got != want {
			t.Errorf("ssSide(%q) = %q, want %q", in, got, want)
		}
	}
}
