package collector

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
)

const (
	gsC = dbpilot.Counter
	gsG = dbpilot.Gauge
)

func TestGlobalStatusMariaDB(t *testing.T) {
	rows := gsFixture(t, "status/mariadb-10.11.txt")
	q := &gsFakeQuerier{results: map[string]*mysql.Rows{gsQuery: rows}}
	c := NewGlobalStatus()
	c.(*globalStatus).SetIdleCounters(true) // the counters at 0 below too
	if c.Name() != "global_status" || c.DefaultInterval() != time.Second {
		t.Fatalf("name/interval = %s/%v", c.Name(), c.DefaultInterval())
	}
	samples, err := c.Collect(context.Background(), q, Target{Flavor: dbpilot.FlavorMariaDB})
	if err != nil {
		t.Fatal(err)
	}
	got := gsIndex(t, samples)
	gsCheck(t, got, []gsWant{
		{`mysql_up`, 1, gsG},
		{`mysql_global_status_commands_total{command="select"}`, 13, gsC},
		{`mysql_global_status_commands_total{command="insert"}`, 4, gsC},
		{`mysql_global_status_handlers_total{handler="commit"}`, 40, gsC},
		{`mysql_global_status_connection_errors_total{error="max_connections"}`, 0, gsC},
		{`mysql_global_status_buffer_pool_pages{state="data"}`, 306, gsG},
		{`mysql_global_status_buffer_pool_pages{state="free"}`, 1722, gsG},
		{`mysql_global_status_buffer_pool_page_changes_total{operation="flushed"}`, 0, gsC},
		{`mysql_global_status_performance_schema_lost_total{instrumentation="users_lost"}`, 0, gsC},
		{`mysql_global_status_questions`, 79, gsC},
		{`mysql_global_status_uptime`, 24, gsC},
		{`mysql_global_status_threads_connected`, 5, gsG},
		{`mysql_global_status_threads_created`, 5, gsC},
		{`mysql_global_status_open_tables`, 14, gsG},
		{`mysql_global_status_bytes_received`, 6466, gsC},
		{`mysql_global_status_binlog_commits`, 4, gsC},
		{`mysql_global_status_binlog_snapshot_position`, 809, gsG},
		{`mysql_global_status_innodb_data_pending_reads`, 0, gsG},
		{`mysql_global_status_innodb_have_punch_hole`, 1, gsG},
		{`mysql_global_status_rpl_semi_sync_master_status`, 1, gsG},
		{`mysql_global_status_rpl_semi_sync_master_clients`, 2, gsG},
		{`mysql_global_status_rpl_semi_sync_master_yes_tx`, 6, gsC},
		{`mysql_global_status_slave_running`, 0, gsG},
		{`mysql_global_status_compression`, 0, gsG},
	})
	// The labelled groups are written only labelled, as mysqld_exporter does;
	// wsrep_* is the galera collector's; text is skipped.
	gsCheckAbsent(t, got, "mysql_global_status_com_select", "mysql_global_status_handler_commit",
		"mysql_global_status_innodb_buffer_pool_pages_data", "mysql_global_status_wsrep_ready",
		"mysql_global_status_wsrep_cluster_size", "mysql_global_status_rpl_status",
		"mysql_global_status_ssl_cipher", "mysql_global_status_binlog_snapshot_file",
		"mysql_global_status_max_memory_used")
	for k := range got {
		if strings.Contains(k, "wsrep") {
			t.Errorf("wsrep series from global_status: %s", k)
		}
	}
	if n := len(q.queries); n != 1 {
		t.Errorf("queries = %d, want 1", n)
	}
}

func TestGlobalStatusMySQL(t *testing.T) {
	for _, tc := range []struct {
		file  string
		wants []gsWant
	}{
		{"status/mysql-8.4.txt", []gsWant{
			{`mysql_global_status_commands_total{command="select"}`, 40211, gsC},
			{`mysql_global_status_commands_total{command="replica_start"}`, 1, gsC},
			{`mysql_global_status_connection_errors_total{error="max_connections"}`, 2, gsC},
			{`mysql_global_status_buffer_pool_pages{state="misc"}`, 132, gsG},
			{`mysql_global_status_buffer_pool_page_changes_total{operation="total"}`, 8192, gsC},
			{`mysql_global_status_innodb_row_ops_total{operation="inserted"}`, 15210, gsC},
			{`mysql_global_status_innodb_buffer_pool_reads`, 1804, gsC},
			{`mysql_global_status_innodb_buffer_pool_bytes_data`, 37847040, gsG},
			{`mysql_global_status_innodb_os_log_written`, 20812288, gsC},
			{`mysql_global_status_innodb_os_log_pending_fsyncs`, 0, gsG},
			{`mysql_global_status_innodb_row_lock_time`, 120, gsC},
			{`mysql_global_status_innodb_row_lock_time_max`, 51, gsG},
			{`mysql_global_status_innodb_redo_log_enabled`, 1, gsG},
			{`mysql_global_status_max_used_connections`, 14, gsG},
			{`mysql_global_status_max_used_connections_time`, float64(time.Date(2024, 6, 10, 12, 3, 44, 0, time.UTC).Unix()), gsG},
			{`mysql_global_status_ssl_server_not_after`, float64(time.Date(2034, 6, 8, 12, 0, 0, 0, time.UTC).Unix()), gsG},
			{`mysql_global_status_ssl_accepts`, 0, gsC},
			{`mysql_global_status_ssl_ctx_verify_depth`, 18446744073709551615, gsG},
			{`mysql_global_status_rpl_semi_sync_source_clients`, 2, gsG},
			{`mysql_global_status_rpl_semi_sync_source_yes_tx`, 2088, gsC},
			{`mysql_global_status_rpl_semi_sync_replica_status`, 0, gsG},
			{`mysql_global_status_table_open_cache_hits`, 40122, gsC},
			{`mysql_global_status_queries`, 43211, gsC},
			{`mysql_global_status_threads_running`, 2, gsG},
			{`mysql_global_status_uptime`, 86412, gsC},
		}},
		{"status/mysql-8.0.txt", []gsWant{
			{`mysql_global_status_commands_total{command="slave_start"}`, 1, gsC},
			{`mysql_global_status_buffer_pool_page_changes_total{operation="made_young"}`, 12, gsC},
			{`mysql_global_status_rpl_semi_sync_master_no_tx`, 2, gsC},
			{`mysql_global_status_rpl_semi_sync_master_status`, 1, gsG},
			{`mysql_global_status_slave_open_temp_tables`, 0, gsG},
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			samples := gsParseTier(gsFixture(t, tc.file), nil, true)
			got := gsIndex(t, samples)
			gsCheck(t, got, tc.wants)
			gsCheckAbsent(t, got, "mysql_global_status_rsa_public_key", "mysql_global_status_current_tls_version",
				"mysql_global_status_innodb_buffer_pool_load_status", "mysql_global_status_tls_library_version")
		})
	}
}

func TestGsDescribe(t *testing.T) {
	for _, tc := range []struct {
		raw, key string
		typ      dbpilot.MetricType
		skip     bool
	}{
		{raw: "Com_select", key: `mysql_global_status_commands_total{command="select"}`, typ: gsC},
		{raw: "Com_stmt_execute", key: `mysql_global_status_commands_total{command="stmt_execute"}`, typ: gsC},
		{raw: "Compression", key: `mysql_global_status_compression`, typ: gsG},
		{raw: "Handler_read_rnd_next", key: `mysql_global_status_handlers_total{handler="read_rnd_next"}`, typ: gsC},
		{raw: "Connection_errors_peer_address", key: `mysql_global_status_connection_errors_total{error="peer_address"}`, typ: gsC},
		{raw: "Innodb_buffer_pool_pages_dirty", key: `mysql_global_status_buffer_pool_pages{state="dirty"}`, typ: gsG},
		{raw: "Innodb_buffer_pool_pages_old", key: `mysql_global_status_buffer_pool_page_changes_total{operation="old"}`, typ: gsC},
		{raw: "Innodb_rows_updated", key: `mysql_global_status_innodb_row_ops_total{operation="updated"}`, typ: gsC},
		{raw: "Performance_schema_digest_lost", key: `mysql_global_status_performance_schema_lost_total{instrumentation="digest_lost"}`, typ: gsC},
		{raw: "Aborted_connects", key: "mysql_global_status_aborted_connects", typ: gsC},
		{raw: "Created_tmp_disk_tables", key: "mysql_global_status_created_tmp_disk_tables", typ: gsC},
		{raw: "Select_full_join", key: "mysql_global_status_select_full_join", typ: gsC},
		{raw: "Sort_merge_passes", key: "mysql_global_status_sort_merge_passes", typ: gsC},
		{raw: "Table_locks_waited", key: "mysql_global_status_table_locks_waited", typ: gsC},
		{raw: "Binlog_cache_disk_use", key: "mysql_global_status_binlog_cache_disk_use", typ: gsC},
		{raw: "Binlog_group_commit_trigger_timeout", key: "mysql_global_status_binlog_group_commit_trigger_timeout", typ: gsC},
		{raw: "Opened_tables", key: "mysql_global_status_opened_tables", typ: gsC},
		{raw: "Open_tables", key: "mysql_global_status_open_tables", typ: gsG},
		{raw: "Threads_running", key: "mysql_global_status_threads_running", typ: gsG},
		{raw: "Threads_created", key: "mysql_global_status_threads_created", typ: gsC},
		{raw: "Uptime", key: "mysql_global_status_uptime", typ: gsC},
		{raw: "Innodb_data_written", key: "mysql_global_status_innodb_data_written", typ: gsC},
		{raw: "Innodb_data_pending_writes", key: "mysql_global_status_innodb_data_pending_writes", typ: gsG},
		{raw: "Innodb_log_write_requests", key: "mysql_global_status_innodb_log_write_requests", typ: gsC},
		{raw: "Innodb_buffer_pool_read_requests", key: "mysql_global_status_innodb_buffer_pool_read_requests", typ: gsC},
		{raw: "Innodb_buffer_pool_bytes_dirty", key: "mysql_global_status_innodb_buffer_pool_bytes_dirty", typ: gsG},
		{raw: "Innodb_row_lock_time_avg", key: "mysql_global_status_innodb_row_lock_time_avg", typ: gsG},
		{raw: "Innodb_row_lock_current_waits", key: "mysql_global_status_innodb_row_lock_current_waits", typ: gsG},
		{raw: "Key_blocks_unused", key: "mysql_global_status_key_blocks_unused", typ: gsG},
		{raw: "Feature_json", key: "mysql_global_status_feature_json", typ: gsC},
		{raw: "Ssl_sessions_reused", key: "mysql_global_status_ssl_sessions_reused", typ: gsC},
		{raw: "Ssl_verify_depth", key: "mysql_global_status_ssl_verify_depth", typ: gsG},
		{raw: "Max_used_connections", key: "mysql_global_status_max_used_connections", typ: gsG},
		{raw: "Rpl_semi_sync_master_clients", key: "mysql_global_status_rpl_semi_sync_master_clients", typ: gsG},
		{raw: "Rpl_semi_sync_source_no_tx", key: "mysql_global_status_rpl_semi_sync_source_no_tx", typ: gsC},
		{raw: "Odd-Name.x", key: "mysql_global_status_odd_name_x", typ: gsG},
		{raw: "wsrep_ready", skip: true},
		{raw: "wsrep", skip: true},
	} {
		d := gsDescribe(tc.raw)
		if d.skip != tc.skip {
			t.Errorf("%s: skip = %v", tc.raw, d.skip)
			continue
		}
		if tc.skip {
			continue
		}
		if k := gsKey(d.name, d.labels); k != tc.key || d.typ != tc.typ {
			t.Errorf("%s → %s (type %d), want %s (type %d)", tc.raw, k, d.typ, tc.key, tc.typ)
		}
	}
}

func TestGsParseValue(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
		ok   bool
	}{
		{"0", 0, true},
		{"42", 42, true},
		{"-3", -3, true},
		{"0.012531", 0.012531, true},
		{"18446744073709551615", 18446744073709551615, true},
		{"ON", 1, true}, {"on", 1, true}, {"YES", 1, true}, {"Primary", 1, true},
		{"OFF", 0, true}, {"No", 0, true}, {"Connecting", 0, true}, {"non-Primary", 0, true},
		{"Disconnected", 0, true}, {"DISABLED", 0, true},
		{"2024-06-10 12:03:44", float64(time.Date(2024, 6, 10, 12, 3, 44, 0, time.UTC).Unix()), true},
		{"Jun  8 12:00:00 2034 GMT", float64(time.Date(2034, 6, 8, 12, 0, 0, 0, time.UTC).Unix()), true},
		{"", 0, false},
		{"NULL", 0, false},
		{"binlog.000002", 0, false},
		{"10.11.19-MariaDB", 0, false},
		{"AUTH_MASTER", 0, false},
		{"NaN", 0, false}, {"Inf", 0, false}, {"+Inf", 0, false},
		{"Buffer pool(s) load completed at 261121  9:44:20", 0, false},
	} {
		got, ok := gsParseValue(tc.in)
		if ok != tc.ok || got != tc.want {
			t.Errorf("gsParseValue(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestGlobalStatusQueryError(t *testing.T) {
	q := &gsFakeQuerier{}
	if _, err := NewGlobalStatus().Collect(context.Background(), q, Target{}); err == nil {
		t.Fatal("want the query error")
	}
}

func FuzzGsParseValue(f *testing.F) {
	for _, s := range []string{"0", "ON", "1.5e3", "Jun  8 12:00:00 2034 GMT", "2024-06-10 12:03:44", "", "-", "+Inf"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, ok := gsParseValue(s)
		if ok && (math.IsNaN(v) || math.IsInf(v, 0)) {
			t.Fatalf("gsParseValue(%q) = %v", s, v)
		}
		if !ok && v != 0 {
			t.Fatalf("gsParseValue(%q) = %v, false", s, v)
		}
	})
}

// BenchmarkGlobalStatusParse measures the CPU of one global_status run's
// parsing (the recorded MariaDB 10.11 SHOW GLOBAL STATUS, ~560 rows) with
// the name cache warm, as in steady state. Figures only; never pass/fail.
func BenchmarkGlobalStatusParse(b *testing.B) {
	rows := gsFixture(b, "status/mariadb-10.11.txt")
	var state []uint8
	gsParseTier(rows, &state, true)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		gsParseTier(rows, &state, true)
	}
}

// TestGlobalStatusTiers: the first run and every full interval write every
// variable; the runs between write the every-second set only: what the
// console, the alert rules and top read.
func TestGlobalStatusTiers(t *testing.T) {
	rows := gsFixture(t, "status/mariadb-10.11.txt")
	// The server answers the every-second query with its set only; the
	// fake answers everything and the collector still keeps the set.
	q := &gsFakeQuerier{results: map[string]*mysql.Rows{gsQuery: rows, gsHotQuery: rows}}
	c := NewGlobalStatus().(*globalStatus)
	c.SetIdleCounters(true) // every variable: the tiers alone
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	c.now = func() time.Time { return now }
	run := func() map[string]float64 {
		t.Helper()
		s, err := c.Collect(context.Background(), q, Target{Flavor: dbpilot.FlavorMariaDB})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for k, v := range gsIndex(t, s) {
			out[k] = v.Value
		}
		return out
	}
	full := run()
	now = now.Add(time.Second)
	hot := run()
	if len(hot) >= len(full)/3 || len(hot) < 80 {
		t.Errorf("every-second set: %d series of %d", len(hot), len(full))
	}
	for _, name := range []string{"mysql_up", "mysql_global_status_questions", "mysql_global_status_threads_running", "mysql_global_status_threads_connected",
		"mysql_global_status_uptime", "mysql_global_status_innodb_checkpoint_age", "mysql_global_status_innodb_history_list_length",
		"mysql_global_status_rows_read", "mysql_global_status_innodb_deadlocks", "mysql_global_status_innodb_redo_log_capacity_resized",
		`mysql_global_status_commands_total{command="select"}`, `mysql_global_status_handlers_total{handler="commit"}`,
		`mysql_global_status_buffer_pool_pages{state="dirty"}`, `mysql_global_status_innodb_row_ops_total{operation="read"}`} {
		if _, ok := hot[name]; !ok {
			if _, inFull := full[name]; inFull {
				t.Errorf("%s is not written every second", name)
			}
		}
	}
	for _, name := range []string{`mysql_global_status_performance_schema_lost_total{instrumentation="users_lost"}`, `mysql_global_status_commands_total{command="show_grants"}`} {
		if _, ok := hot[name]; ok {
			t.Errorf("%s is written every second", name)
		}
	}
	if len(q.queries) != 2 || q.queries[0] != gsQuery || q.queries[1] != gsHotQuery {
		t.Errorf("queries = %.80q", q.queries)
	}
	now = now.Add(8 * time.Second) // 9 s after the full run: within the slack
	if n := len(run()); n != len(full) {
		t.Errorf("9 s after a full run: %d series, want all %d", n, len(full))
	}
	c.SetFullInterval(0)
	now = now.Add(time.Second)
	if n := len(run()); n != len(full) {
		t.Errorf("full interval 0: %d series, want all %d", n, len(full))
	}
}

// TestGlobalStatusIdleCounters: counters at 0 are left out until they
// move; the first value after is marked FromZero, and from then on the
// counter is written even at 0. Gauges at 0 and Uptime are always written.
func TestGlobalStatusIdleCounters(t *testing.T) {
	rows := gsFixture(t, "status/mariadb-10.11.txt")
	q := &gsFakeQuerier{results: map[string]*mysql.Rows{gsQuery: rows}}
	c := NewGlobalStatus().(*globalStatus)
	c.SetFullInterval(0)
	run := func() map[string]dbpilot.Sample {
		t.Helper()
		s, err := c.Collect(context.Background(), q, Target{Flavor: dbpilot.FlavorMariaDB})
		if err != nil {
			t.Fatal(err)
		}
		return gsIndex(t, s)
	}
	set := func(name, v string) {
		for _, row := range rows.Values {
			if *row[0] == name {
				row[1] = &v
				return
			}
		}
		t.Fatalf("no %s in the fixture", name)
	}
	first := run()
	idle := `mysql_global_status_connection_errors_total{error="max_connections"}`
	for _, name := range []string{idle, `mysql_global_status_performance_schema_lost_total{instrumentation="users_lost"}`, "mysql_global_status_innodb_deadlocks"} {
		if _, ok := first[name]; ok {
			t.Errorf("%s at 0 is written", name)
		}
	}
	for _, name := range []string{"mysql_global_status_slave_running", "mysql_global_status_innodb_data_pending_reads", `mysql_global_status_commands_total{command="select"}`} {
		if _, ok := first[name]; !ok {
			t.Errorf("%s is not written", name)
		}
	}
	all := NewGlobalStatus().(*globalStatus)
	all.SetIdleCounters(true)
	every, err := all.Collect(context.Background(), q, Target{Flavor: dbpilot.FlavorMariaDB})
	if err != nil {
		t.Fatal(err)
	}
	if len(first) >= len(every)/2 {
		t.Errorf("idle counters left out: %d series, %d with idle_counters: write", len(first), len(every))
	}
	for _, s := range first {
		if s.FromZero {
			t.Errorf("%s is FromZero in the first run", s.Name)
		}
	}

	set("Connection_errors_max_connections", "3")
	moved := run()
	if s, ok := moved[idle]; !ok || s.Value != 3 || !s.FromZero {
		t.Errorf("after it moved: %+v (written %v), want 3 FromZero", s, ok)
	}
	set("Connection_errors_max_connections", "0") // FLUSH STATUS
	again := run()
	if s, ok := again[idle]; !ok || s.Value != 0 || s.FromZero {
		t.Errorf("a counter that moved, back at 0: %+v (written %v), want 0", s, ok)
	}
	if len(again) != len(first)+1 {
		t.Errorf("%d series, want %d", len(again), len(first)+1)
	}
}
