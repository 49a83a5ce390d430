package collector

import (
	"context"
	"maps"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
)

// NewGlobalStatus returns the "global_status" collector (every second):
// SHOW GLOBAL STATUS, named as mysqld_exporter names it so that its
// dashboards and alert rules work:
//
//   - every numeric variable → mysql_global_status_<lowercased name>;
//     ON/YES/Primary → 1, OFF/NO/Disconnected → 0, dates → Unix seconds;
//     other text is skipped;
//   - the groups mysqld_exporter labels are written only in labelled form:
//     Com_X → mysql_global_status_commands_total{command="x"},
//     Handler_X → mysql_global_status_handlers_total{handler="x"},
//     Connection_errors_X → mysql_global_status_connection_errors_total{error="x"},
//     Innodb_buffer_pool_pages_{data,dirty,free,misc} →
//     mysql_global_status_buffer_pool_pages{state="x"} (gauge), the other
//     Innodb_buffer_pool_pages_X → mysql_global_status_buffer_pool_page_changes_total{operation="x"},
//     Innodb_rows_X → mysql_global_status_innodb_row_ops_total{operation="x"},
//     Performance_schema_X → mysql_global_status_performance_schema_lost_total{instrumentation="x"};
//   - wsrep_* variables are left to the galera collector (MariaDB lists
//     some even without Galera);
//   - mysql_up 1.
//
// Two tiers: SHOW GLOBAL STATUS runs every second, and the variables that
// the web console's charts, the alert rules and `top` read, with the other
// common workload counters (gsHot: commands of the usual kinds, handlers,
// row operations, threads, bytes, temporary tables, InnoDB buffer pool,
// redo log, data and row-lock counters, semi-sync) are written every run;
// every other variable is written every full interval (SetFullInterval,
// metrics.full_status_interval, default 10 s; 0 writes all every run).
// PMM's mysqld_exporter runs three such resolutions; at a fleet's scale it
// is what keeps 1-second monitoring within one core (see bench/scale.sh).
//
// Idle counters: a counter that has read 0 since the collector started
// (most Com_*, Performance_schema_*_lost, Ssl_*, Feature_* on a typical
// server: about 60% of MariaDB's status variables) is not written, since a
// series costs the store about a kilobyte whether it moves or not. The
// first non-zero value is written with FromZero set, so the store writes a
// 0 at the previous run before it and rate() and increase() count the
// first events (as Prometheus' created-timestamp zero injection does).
// Once written, a counter is written on every run, even if FLUSH STATUS
// sets it back to 0. SetIdleCounters(true) (metrics.idle_counters: write)
// writes them all, as mysqld_exporter does.
//
// Types: mysqld_exporter writes the generic ones untyped; dbpilot types
// them by the rules of gsType: counters for cumulative totals (Bytes_*,
// Questions, Queries, Connections, Aborted_*, Created_*, Select_*, Sort_*,
// Table_locks_*, Binlog_* totals, Opened_*, Innodb_data/pages/log/dblwr
// totals, Uptime, ...), gauges for levels (Threads_connected, Open_*,
// Max_used_connections, *_pending_*, ...).
func NewGlobalStatus() Collector {
	return &globalStatus{fullEvery: DefaultFullStatusInterval, skipIdle: true, now: time.Now}
}

// DefaultFullStatusInterval is how often global_status writes the status
// variables outside its every-second set.
const DefaultFullStatusInterval = 10 * time.Second

type globalStatus struct {
	mu        sync.Mutex
	state     []uint8       // idle-counter state by gsDesc.id
	fullEvery time.Duration // 0: every variable every run
	lastFull  time.Time
	partial   bool // the last run wrote the every-second set only
	skipIdle  bool // counters that never left 0 are not written
	now       func() time.Time
	share     *StatusShare // nil: none (SetStatusShare)
}

// SetStatusShare makes every run keep in share what inspections read of
// the status (every run reads it: the every-second statement includes
// those variables).
func (c *globalStatus) SetStatusShare(share *StatusShare) {
	c.mu.Lock()
	c.share = share
	c.mu.Unlock()
}

// LastPartial implements PartialCollector.
func (c *globalStatus) LastPartial() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.partial
}

// SetFullInterval sets how often the variables outside the every-second
// set are written (0: every run).
func (c *globalStatus) SetFullInterval(d time.Duration) {
	c.mu.Lock()
	c.fullEvery = d
	c.mu.Unlock()
}

// SetIdleCounters makes the collector write counters that have read 0
// since it started (true), or leave them out until they move (false, the
// default).
func (c *globalStatus) SetIdleCounters(write bool) {
	c.mu.Lock()
	c.skipIdle = !write
	c.mu.Unlock()
}

func (*globalStatus) Name() string                   { return "global_status" }
func (*globalStatus) DefaultInterval() time.Duration { return time.Second }

const gsQuery = "SHOW GLOBAL STATUS"

func (c *globalStatus) Collect(ctx context.Context, q Querier, t Target) ([]dbpilot.Sample, error) {
	c.mu.Lock()
	now := c.now()
	share := c.share
	// A tenth of slack: a run a little early still writes everything.
	full := c.fullEvery <= 0 || c.lastFull.IsZero() || now.Sub(c.lastFull) >= c.fullEvery-c.fullEvery/10
	c.mu.Unlock()
	query := gsQuery
	if !full {
		query = gsHotQuery
	}
	r, err := q.Query(ctx, query)
	if err != nil {
		return nil, err
	}
	if share != nil {
		share.put(t.Key, r, now) // now: before the statement was sent
	}
	c.mu.Lock()
	if full {
		c.lastFull = now
	}
	c.partial = !full
	var state *[]uint8
	if c.skipIdle {
		state = &c.state
	}
	out := gsParseTier(r, state, full)
	c.mu.Unlock()
	return append(out, runnerUpSample(1)), nil
}

// gsDesc says how one status variable is written. Descriptions are shared
// by every instance (gsDescFor); what changes per instance (idle counters)
// is in the collector's state, indexed by id.
type gsDesc struct {
	id     int
	skip   bool
	hot    bool // written every run (gsHot)
	name   string
	labels []dbpilot.Label
	typ    dbpilot.MetricType
	always bool // Uptime: 0 in a server's first second is news too
	// share is the lower-cased name when inspections read the variable
	// too (StatusShare), else empty.
	share string
}

// gsDescs are the descriptions of every status variable name seen, for
// every instance: a fleet's servers share their names, and a map per
// instance was 46 MB at 1000 instances.
var (
	gsDescs  sync.Map // string → *gsDesc
	gsDescID atomic.Int64
)

func gsDescFor(raw string) *gsDesc {
	if d, ok := gsDescs.Load(raw); ok {
		return d.(*gsDesc)
	}
	d := gsDescribe(raw)
	d.id = int(gsDescID.Add(1) - 1)
	if n := strings.ToLower(raw); statusShareNames[n] {
		d.share = n
	}
	got, _ := gsDescs.LoadOrStore(strings.Clone(raw), d) // raw shares its result's memory
	return got.(*gsDesc)
}

// Idle-counter state of one variable on one instance.
const (
	gsIdle  uint8 = 1 << iota // read 0 on every run so far, and left out
	gsMoved                   // written once: written from then on
)

// gsParseTier turns SHOW GLOBAL STATUS rows (name, value) into samples:
// of every variable (full) or of the every-second set only. With state (the instance's idle-counter state, grown as
// needed), counters that have read 0 on every run are left out.
func gsParseTier(r *mysql.Rows, state *[]uint8, full bool) []dbpilot.Sample {
	out := make([]dbpilot.Sample, 0, len(r.Values)+runnerExtraSamples)
	for _, row := range r.Values {
		if len(row) < 2 || row[0] == nil || row[1] == nil {
			continue
		}
		d := gsDescFor(*row[0])
		if d.skip || (!full && !d.hot) {
			continue
		}
		v, ok := gsParseValue(*row[1])
		if !ok {
			continue
		}
		fromZero := false
		if state != nil && d.typ == dbpilot.Counter && !d.always {
			if d.id >= len(*state) {
				*state = append(*state, make([]uint8, d.id+1-len(*state))...)
			}
			st := &(*state)[d.id]
			if *st&gsMoved == 0 {
				if v == 0 {
					*st |= gsIdle
					continue
				}
				fromZero = *st&gsIdle != 0
				*st |= gsMoved
			}
		}
		out = append(out, dbpilot.Sample{Name: d.name, Labels: d.labels, Value: v, Type: d.typ, FromZero: fromZero})
	}
	return out
}

// gsGroups are the variable groups mysqld_exporter writes with a label.
var gsGroups = []struct {
	prefix, metric, label string
	typ                   dbpilot.MetricType
}{
	{"com_", "mysql_global_status_commands_total", "command", dbpilot.Counter},
	{"handler_", "mysql_global_status_handlers_total", "handler", dbpilot.Counter},
	{"connection_errors_", "mysql_global_status_connection_errors_total", "error", dbpilot.Counter},
	{"innodb_buffer_pool_pages_", "", "", dbpilot.Gauge}, // two metrics, below
	{"innodb_rows_", "mysql_global_status_innodb_row_ops_total", "operation", dbpilot.Counter},
	{"performance_schema_", "mysql_global_status_performance_schema_lost_total", "instrumentation", dbpilot.Counter},
}

// gsDescribe maps a status variable name to its metric.
func gsDescribe(raw string) *gsDesc {
	d := gsDescribeName(raw)
	if !d.skip {
		d.hot = gsIsHot(gsMetricName(raw))
	}
	return d
}

func gsDescribeName(raw string) *gsDesc {
	name := gsMetricName(raw)
	if strings.HasPrefix(name, "wsrep_") || name == "wsrep" {
		return &gsDesc{skip: true}
	}
	for _, g := range gsGroups {
		rest, ok := strings.CutPrefix(name, g.prefix)
		if !ok || rest == "" {
			continue
		}
		if g.metric == "" { // innodb_buffer_pool_pages_
			switch rest {
			case "data", "dirty", "free", "misc":
				return &gsDesc{name: "mysql_global_status_buffer_pool_pages", labels: []dbpilot.Label{{Name: "state", Value: rest}}, typ: dbpilot.Gauge}
			}
			return &gsDesc{name: "mysql_global_status_buffer_pool_page_changes_total", labels: []dbpilot.Label{{Name: "operation", Value: rest}}, typ: dbpilot.Counter}
		}
		return &gsDesc{name: g.metric, labels: []dbpilot.Label{{Name: g.label, Value: rest}}, typ: g.typ}
	}
	return &gsDesc{name: "mysql_global_status_" + name, typ: gsType(name), always: strings.HasPrefix(name, "uptime")}
}

// gsMetricName lowercases a variable name and replaces characters a metric
// name cannot hold with '_'.
func gsMetricName(raw string) string {
	b := []byte(strings.ToLower(raw))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b)
}

// Counter rules for generic status variables (lowercased names): exact
// names first, then gauges by exact name or a "pending" part, then counter
// prefixes; everything else is a gauge.
var (
	gsCounterNames = gsSet(
		"aborted_clients", "aborted_connects", "aborted_connects_preauth", "access_denied_errors",
		"busy_time", "cpu_time", "column_compressions", "column_decompressions",
		"connections", "delete_scan", "empty_queries", "executed_events", "executed_triggers",
		"flush_commands", "innodb_deadlocks", "innodb_row_lock_time", "innodb_row_lock_waits",
		"innodb_secondary_index_triggered_cluster_reads", "innodb_secondary_index_triggered_cluster_reads_avoided",
		"innodb_buffer_pool_wait_free", "innodb_buffer_pool_write_requests",
		"innodb_history_list_length_ignored", "innodb_num_open_files_closed",
		"key_read_requests", "key_reads", "key_write_requests", "key_writes",
		"locked_connects", "max_statement_time_exceeded", "max_execution_time_exceeded",
		"max_execution_time_set", "max_execution_time_set_failed",
		"qcache_hits", "qcache_inserts", "qcache_lowmem_prunes", "qcache_not_cached",
		"queries", "questions", "rows_read", "rows_sent", "rows_tmp_read",
		"slave_connections", "slave_received_heartbeats", "slave_retried_transactions", "slave_skipped_errors",
		"slow_launch_threads", "slow_queries", "subquery_cache_hit", "subquery_cache_miss", "syncs",
		"table_open_cache_hits", "table_open_cache_misses", "table_open_cache_overflows",
		"tc_log_page_waits", "threads_created", "transactions_gtid_foreign_engine", "transactions_multi_engine",
		"update_scan", "uptime", "uptime_since_flush_status",
		"rpl_semi_sync_master_get_ack", "rpl_semi_sync_master_net_wait_time", "rpl_semi_sync_master_net_waits",
		"rpl_semi_sync_master_no_times", "rpl_semi_sync_master_no_tx", "rpl_semi_sync_master_request_ack",
		"rpl_semi_sync_master_timefunc_failures", "rpl_semi_sync_master_tx_wait_time", "rpl_semi_sync_master_tx_waits",
		"rpl_semi_sync_master_wait_pos_backtraverse", "rpl_semi_sync_master_yes_tx", "rpl_semi_sync_slave_send_ack",
		"rpl_semi_sync_source_net_wait_time", "rpl_semi_sync_source_net_waits", "rpl_semi_sync_source_no_times",
		"rpl_semi_sync_source_no_tx", "rpl_semi_sync_source_timefunc_failures", "rpl_semi_sync_source_tx_wait_time",
		"rpl_semi_sync_source_tx_waits", "rpl_semi_sync_source_wait_pos_backtraverse", "rpl_semi_sync_source_yes_tx",
	)
	gsGaugeNames = gsSet(
		"binlog_snapshot_position",
		"innodb_row_lock_current_waits", "innodb_row_lock_time_avg", "innodb_row_lock_time_max",
		"ssl_ctx_verify_depth", "ssl_ctx_verify_mode", "ssl_default_timeout", "ssl_session_cache_size",
		"ssl_used_session_cache_entries", "ssl_verify_depth", "ssl_verify_mode", "ssl_server_not_after",
		"ssl_server_not_before", "ssl_session_cache_mode", "ssl_session_cache_timeout",
	)
	gsCounterPrefixes = []string{
		"binlog_", "bytes_", "created_", "feature_", "innodb_data_", "innodb_dblwr_",
		"innodb_log_waits", "innodb_log_write", "innodb_os_log_", "innodb_pages_",
		"innodb_buffer_pool_read", "innodb_page_compression_saved", "innodb_num_pages_",
		"innodb_defragment_", "opened_", "select_", "sort_", "ssl_", "table_locks_",
		"aria_pagecache_read", "aria_pagecache_write", "mysqlx_bytes_",
	}
)

func gsSet(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// gsType types a generic status variable (lowercased name).
func gsType(name string) dbpilot.MetricType {
	switch {
	case gsCounterNames[name]:
		return dbpilot.Counter
	case gsGaugeNames[name], strings.Contains(name, "pending"), strings.HasSuffix(name, "_avg"),
		strings.HasSuffix(name, "_max"), strings.HasSuffix(name, "_current_waits"):
		return dbpilot.Gauge
	}
	for _, p := range gsCounterPrefixes {
		if strings.HasPrefix(name, p) {
			return dbpilot.Counter
		}
	}
	return dbpilot.Gauge
}

// gsParseValue reads a status or variable value as mysqld_exporter does:
// numbers; ON/YES/Primary as 1 and OFF/NO/Connecting/Non-Primary/
// Disconnected/DISABLED as 0; dates as Unix seconds. ok is false for any
// other text.
func gsParseValue(s string) (v float64, ok bool) {
	if s == "" {
		return 0, false
	}
	if c := s[0]; c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' {
		v, err := strconv.ParseFloat(s, 64)
		if err == nil && !math.IsNaN(v) && !math.IsInf(v, 0) {
			return v, true
		}
		if t, err := time.Parse(time.DateTime, s); err == nil {
			return float64(t.Unix()), true
		}
		return 0, false
	}
	switch strings.ToLower(s) {
	case "on", "yes", "primary":
		return 1, true
	case "off", "no", "connecting", "non-primary", "disconnected", "disabled":
		return 0, true
	}
	// Ssl_server_not_after: "Jan  2 15:04:05 2030 GMT".
	if len(s) > 20 && s[0] >= 'A' && s[0] <= 'Z' {
		if t, err := time.Parse("Jan _2 15:04:05 2006 MST", s); err == nil {
			return float64(t.Unix()), true
		}
	}
	return 0, false
}

// The every-second set of global_status (lowercased variable names): what
// the console, the alert rules and top read, and the workload counters a
// DBA looks at second by second. Groups: every Handler_*, Innodb_rows_*
// and Innodb_buffer_pool_pages_*, and the Com_* of gsHotCommands.
var (
	gsHotNames = gsSet(
		"uptime", "questions", "queries", "connections", "max_used_connections",
		"threads_connected", "threads_running", "threads_created", "threads_cached",
		"aborted_clients", "aborted_connects", "bytes_received", "bytes_sent", "slow_queries",
		"rows_read", "rows_sent", "select_full_join", "select_range", "select_scan", "sort_merge_passes", "sort_rows",
		"created_tmp_tables", "created_tmp_disk_tables", "created_tmp_files",
		"open_files", "open_tables", "opened_files", "opened_tables", "table_locks_immediate", "table_locks_waited",
		"innodb_checkpoint_age", "innodb_checkpoint_max_age", "innodb_history_list_length",
		"innodb_redo_log_capacity_resized", "innodb_lsn_current", "innodb_lsn_flushed", "innodb_lsn_last_checkpoint",
		"innodb_deadlocks", "innodb_row_lock_current_waits", "innodb_row_lock_time", "innodb_row_lock_waits",
		"innodb_buffer_pool_read_requests", "innodb_buffer_pool_reads", "innodb_buffer_pool_write_requests",
		"innodb_buffer_pool_wait_free", "innodb_buffer_pool_bytes_data", "innodb_buffer_pool_bytes_dirty",
		"innodb_data_read", "innodb_data_written", "innodb_data_reads", "innodb_data_writes", "innodb_data_fsyncs",
		"innodb_data_pending_reads", "innodb_data_pending_writes", "innodb_data_pending_fsyncs",
		"innodb_os_log_written", "innodb_os_log_fsyncs", "innodb_log_waits", "innodb_log_writes", "innodb_log_write_requests",
		"innodb_pages_created", "innodb_pages_read", "innodb_pages_written",
		"binlog_bytes_written", "binlog_commits", "binlog_group_commits",
		"memory_used", "slave_running", "slave_received_heartbeats", "slave_open_temp_tables",
		"rpl_semi_sync_master_status", "rpl_semi_sync_master_clients", "rpl_semi_sync_master_yes_tx",
		"rpl_semi_sync_master_no_tx", "rpl_semi_sync_master_tx_waits", "rpl_semi_sync_master_tx_wait_time",
		"rpl_semi_sync_master_wait_sessions", "rpl_semi_sync_slave_status",
		"rpl_semi_sync_source_status", "rpl_semi_sync_source_clients", "rpl_semi_sync_source_yes_tx",
		"rpl_semi_sync_source_no_tx", "rpl_semi_sync_source_tx_waits", "rpl_semi_sync_source_tx_wait_time",
		"rpl_semi_sync_source_wait_sessions", "rpl_semi_sync_replica_status",
	)
	gsHotCommands = gsSet(
		"select", "insert", "insert_select", "update", "update_multi", "delete", "delete_multi",
		"replace", "replace_select", "load", "commit", "rollback", "begin", "savepoint",
		"call_procedure", "stmt_execute", "stmt_prepare", "stmt_close", "set_option", "change_db",
		"create_table", "drop_table", "alter_table", "create_index", "drop_index", "truncate",
		"lock_tables", "unlock_tables", "flush", "kill", "xa_commit", "xa_rollback",
		"show_status", "show_variables", "show_slave_status", "show_processlist", "admin_commands",
	)
)

// gsHotGroups are the members of the labelled groups written every run
// (MariaDB 10.3-11 and MySQL 5.7-8.4 names).
var gsHotGroups = []string{
	"handler_commit", "handler_delete", "handler_discover", "handler_external_lock", "handler_icp_attempts", "handler_icp_match",
	"handler_mrr_init", "handler_mrr_key_refills", "handler_mrr_rowid_refills", "handler_prepare", "handler_read_first",
	"handler_read_key", "handler_read_last", "handler_read_next", "handler_read_prev", "handler_read_retry", "handler_read_rnd",
	"handler_read_rnd_deleted", "handler_read_rnd_next", "handler_rollback", "handler_savepoint", "handler_savepoint_rollback",
	"handler_tmp_delete", "handler_tmp_update", "handler_tmp_write", "handler_update", "handler_write",
	"innodb_buffer_pool_pages_data", "innodb_buffer_pool_pages_dirty", "innodb_buffer_pool_pages_flushed",
	"innodb_buffer_pool_pages_free", "innodb_buffer_pool_pages_lru_flushed", "innodb_buffer_pool_pages_lru_freed",
	"innodb_buffer_pool_pages_made_not_young", "innodb_buffer_pool_pages_made_young", "innodb_buffer_pool_pages_misc",
	"innodb_buffer_pool_pages_old", "innodb_buffer_pool_pages_split", "innodb_buffer_pool_pages_total",
	"innodb_rows_deleted", "innodb_rows_inserted", "innodb_rows_read", "innodb_rows_updated",
}

// gsHot is the every-second set, and gsHotQuery the statement that reads
// only it, and what inspections read of the status (StatusShare; those
// outside gsHot are read, not written): the server sends 160 rows instead
// of 530.
var gsHot, gsHotQuery = func() (map[string]bool, string) {
	set := map[string]bool{}
	for n := range gsHotNames {
		set[n] = true
	}
	for c := range gsHotCommands {
		set["com_"+c] = true
	}
	for _, n := range gsHotGroups {
		set[n] = true
	}
	read := maps.Clone(set)
	for n := range statusShareNames {
		read[n] = true
	}
	names := make([]string, 0, len(read))
	for n := range read {
		names = append(names, "'"+n+"'")
	}
	sort.Strings(names)
	return set, gsQuery + " WHERE Variable_name IN (" + strings.Join(names, ",") + ")"
}()

// gsIsHot reports whether the variable (lowercased) is written every run.
func gsIsHot(name string) bool { return gsHot[name] }
