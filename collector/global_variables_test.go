package collector

import (
	"context"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot/mysql"
)

func TestGlobalVariablesMariaDB(t *testing.T) {
	q := &gsFakeQuerier{results: map[string]*mysql.Rows{gvQuery: gsFixture(t, "variables/mariadb-10.11.txt")}}
	c := NewGlobalVariables()
	if c.Name() != "global_variables" || c.DefaultInterval() != time.Minute {
		t.Fatalf("name/interval = %s/%v", c.Name(), c.DefaultInterval())
	}
	samples, err := c.Collect(context.Background(), q, Target{})
	if err != nil {
		t.Fatal(err)
	}
	got := gsIndex(t, samples)
	gsCheck(t, got, []gsWant{
		{"mysql_global_variables_max_connections", 100, gsG},
		{"mysql_global_variables_innodb_buffer_pool_size", 33554432, gsG},
		{"mysql_global_variables_read_only", 0, gsG},
		{"mysql_global_variables_log_bin", 1, gsG},
		{"mysql_global_variables_gtid_strict_mode", 1, gsG},
		{"mysql_global_variables_have_ssl", 0, gsG},
		{"mysql_global_variables_long_query_time", 10, gsG},
		{"mysql_global_variables_server_id", 25401, gsG},
		{"mysql_global_variables_wsrep_on", 0, gsG},
		{`mysql_version_info{innodb_version="",version="10.11.19-MariaDB-0+deb12u1-log",version_comment="Debian 12"}`, 1, gsG},
	})
	// Text is skipped; Galera info only where wsrep_on=ON (MariaDB always
	// has a wsrep_cluster_name).
	gsCheckAbsent(t, got, "mysql_global_variables_version", "mysql_global_variables_sql_mode",
		`mysql_galera_variables_info{wsrep_cluster_name="my_wsrep_cluster"}`, "mysql_galera_gcache_size_bytes")
	// A second run uses the name cache and gives the same.
	again, _ := c.Collect(context.Background(), q, Target{})
	if len(again) != len(samples) {
		t.Errorf("second run: %d samples, first %d", len(again), len(samples))
	}
}

func TestGlobalVariablesMySQL(t *testing.T) {
	got := gsIndex(t, gvParse(gsFixture(t, "variables/mysql-8.4.txt"), nil))
	gsCheck(t, got, []gsWant{
		{"mysql_global_variables_max_connections", 151, gsG},
		{"mysql_global_variables_super_read_only", 0, gsG},
		{"mysql_global_variables_gtid_mode", 1, gsG},
		{"mysql_global_variables_rpl_semi_sync_source_enabled", 1, gsG},
		{"mysql_global_variables_rpl_semi_sync_source_timeout", 10000, gsG},
		{`mysql_version_info{innodb_version="8.4.0",version="8.4.0",version_comment="MySQL Community Server - GPL"}`, 1, gsG},
	})
	gsCheckAbsent(t, got, "mysql_global_variables_rpl_semi_sync_source_wait_point", "mysql_global_variables_hostname")
}

func TestGlobalVariablesGalera(t *testing.T) {
	r := gsRows([]string{"Variable_name", "Value"},
		[]string{"wsrep_on", "ON"},
		[]string{"wsrep_cluster_name", "prod"},
		[]string{"wsrep_provider_options", "base_dir = /var/lib/mysql/; base_host = 10.0.0.1; gcache.dir = /var/lib/mysql/; gcache.keep_pages_size = 0; gcache.name = galera.cache; gcache.page_size = 128M; gcache.size = 1G; gcs.fc_limit = 16"},
		[]string{"version", "10.11.6-MariaDB-log"},
	)
	got := gsIndex(t, gvParse(r, nil))
	gsCheck(t, got, []gsWant{
		{`mysql_galera_variables_info{wsrep_cluster_name="prod"}`, 1, gsG},
		{"mysql_galera_gcache_size_bytes", 1 << 30, gsG},
		{"mysql_global_variables_wsrep_on", 1, gsG},
	})
}

func TestGvGcacheSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
		ok   bool
	}{
		{"gcache.size = 128M; gcs.fc_limit = 16", 128 << 20, true},
		{"a = 1; gcache.size = 2G", 2 << 30, true},
		{"gcache.page_size = 128M; gcache.size = 1073741824; x = y", 1 << 30, true},
		{"gcache.size=512K", 512 << 10, true},
		{"gcache.page_size = 128M", 0, false},
		{"", 0, false},
	} {
		got, ok := gvGcacheSize(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("gvGcacheSize(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// TestGlobalVariablesEssential: by default the essential set is written;
// SetAllVariables(true) writes every numeric variable.
func TestGlobalVariablesEssential(t *testing.T) {
	q := &gsFakeQuerier{results: map[string]*mysql.Rows{gvQuery: gsFixture(t, "variables/mariadb-10.11.txt")}}
	c := NewGlobalVariables().(*globalVariables)
	essential, err := c.Collect(context.Background(), q, Target{})
	if err != nil {
		t.Fatal(err)
	}
	c.SetAllVariables(true)
	all, err := c.Collect(context.Background(), q, Target{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 400 || len(essential) > 120 || len(essential) < 50 {
		t.Fatalf("essential %d, all %d samples", len(essential), len(all))
	}
	got := gsIndex(t, essential)
	for _, name := range []string{"mysql_global_variables_max_connections", "mysql_global_variables_innodb_log_file_size", "mysql_global_variables_read_only"} {
		if _, ok := got[name]; !ok {
			t.Errorf("essential set lacks %s", name)
		}
	}
	gsCheckAbsent(t, got, "mysql_global_variables_aria_checkpoint_log_activity", "mysql_global_variables_div_precision_increment")
	t.Logf("essential %d, all %d samples", len(essential), len(all))
}
