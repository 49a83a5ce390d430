package collector

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
)

// NewGlobalVariables returns the "global_variables" collector (every 60 s):
// SHOW GLOBAL VARIABLES, as mysqld_exporter writes it:
//
//   - every numeric variable → mysql_global_variables_<lowercased name>
//     (gauge; ON/YES → 1, OFF/NO → 0; other text skipped);
//   - mysql_version_info{version, innodb_version, version_comment} 1;
//   - on Galera nodes (wsrep_on=ON): mysql_galera_variables_info{wsrep_cluster_name} 1
//     and mysql_galera_gcache_size_bytes from wsrep_provider_options.
//
// Every run writes every variable. Changes are seen within the interval;
// besides, the Runner runs collectors with intervals of 10 s or more at
// once after it reconnects, which is when a restart with another
// configuration would show. A restart seen only through Uptime going down
// (without the connection breaking) waits for the next tick.
func NewGlobalVariables() Collector { return &globalVariables{} }

type globalVariables struct {
	mu  sync.Mutex
	all bool // every numeric variable, not the essential set
}

// gvNames maps variable names to metric names, for every instance (a
// fleet's servers share their variable names; a map per instance was 55 MB
// at 1000 instances).
var gvNames sync.Map // string → string

func gvMetricName(raw string) string {
	if n, ok := gvNames.Load(raw); ok {
		return n.(string)
	}
	n := "mysql_global_variables_" + gsMetricName(raw)
	gvNames.Store(strings.Clone(raw), n) // raw shares its result's memory
	return n
}

// SetAllVariables makes the collector write every numeric variable, as
// mysqld_exporter does (metrics.global_variables: all), instead of the
// essential set gvEssential.
func (c *globalVariables) SetAllVariables(all bool) {
	c.mu.Lock()
	c.all = all
	c.mu.Unlock()
}

func (*globalVariables) Name() string                   { return "global_variables" }
func (*globalVariables) DefaultInterval() time.Duration { return 60 * time.Second }

const gvQuery = "SHOW GLOBAL VARIABLES"

func (c *globalVariables) Collect(ctx context.Context, q Querier, _ Target) ([]dbpilot.Sample, error) {
	r, err := q.Query(ctx, gvQuery)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	all := c.all
	c.mu.Unlock()
	if all {
		return gvParse(r, nil), nil
	}
	return gvParse(r, gvEssential), nil
}

// gvEssential are the global variables written by default (lowercased):
// what dbpilot's alert rules, console and analysis read, and what the
// usual MySQL dashboards (PMM's MySQL and InnoDB ones) chart beside the
// status counters: capacities, buffer and cache sizes, durability and
// replication settings. A server has about 480 numeric variables; kept
// every minute for every instance of a large fleet they would be 40% of
// the time series, almost all of them constant.
var gvEssential = gsSet(
	"max_connections", "max_user_connections", "max_connect_errors", "thread_cache_size", "thread_handling",
	"thread_pool_size", "table_open_cache", "table_definition_cache", "open_files_limit",
	"innodb_buffer_pool_size", "innodb_buffer_pool_instances", "innodb_buffer_pool_chunk_size",
	"innodb_log_file_size", "innodb_log_files_in_group", "innodb_redo_log_capacity", "innodb_log_buffer_size",
	"innodb_flush_log_at_trx_commit", "innodb_io_capacity", "innodb_io_capacity_max", "innodb_max_dirty_pages_pct",
	"innodb_max_dirty_pages_pct_lwm", "innodb_read_io_threads", "innodb_write_io_threads", "innodb_thread_concurrency",
	"innodb_doublewrite", "innodb_file_per_table", "innodb_lock_wait_timeout", "innodb_adaptive_hash_index",
	"innodb_open_files", "innodb_page_size", "innodb_purge_threads", "innodb_undo_tablespaces",
	"key_buffer_size", "query_cache_size", "query_cache_type", "query_cache_limit",
	"tmp_table_size", "max_heap_table_size", "sort_buffer_size", "join_buffer_size", "read_buffer_size",
	"read_rnd_buffer_size", "max_allowed_packet", "net_buffer_length", "wait_timeout", "interactive_timeout",
	"long_query_time", "slow_query_log", "general_log", "performance_schema", "userstat",
	"log_bin", "sync_binlog", "binlog_cache_size", "max_binlog_size", "expire_logs_days", "binlog_expire_logs_seconds",
	"binlog_commit_wait_count", "binlog_commit_wait_usec", "binlog_group_commit_sync_delay", "binlog_group_commit_sync_no_delay_count",
	"log_slave_updates", "log_replica_updates", "read_only", "super_read_only", "server_id", "port",
	"gtid_strict_mode", "gtid_domain_id", "slave_parallel_threads", "slave_parallel_workers", "replica_parallel_workers",
	"slave_net_timeout", "replica_net_timeout", "slave_max_allowed_packet",
	"rpl_semi_sync_master_enabled", "rpl_semi_sync_master_timeout", "rpl_semi_sync_master_wait_no_slave",
	"rpl_semi_sync_slave_enabled", "rpl_semi_sync_source_enabled", "rpl_semi_sync_source_timeout",
	"rpl_semi_sync_source_wait_for_replica_count", "rpl_semi_sync_replica_enabled",
	"wsrep_on", "wsrep_desync", "wsrep_slave_threads", "wsrep_applier_threads",
	"aria_pagecache_buffer_size", "have_ssl", "lower_case_table_names",
)

// gvParse turns SHOW GLOBAL VARIABLES rows into samples: of the variables
// of set only (lowercased names), or of every numeric one when set is nil;
// the version and Galera information samples always.
func gvParse(r *mysql.Rows, set map[string]bool) []dbpilot.Sample {
	n := len(r.Values)
	if set != nil {
		n = min(n, len(set)+4)
	}
	out := make([]dbpilot.Sample, 0, n)
	text := map[string]string{}
	for _, row := range r.Values {
		if len(row) < 2 || row[0] == nil || row[1] == nil {
			continue
		}
		raw, val := *row[0], *row[1]
		name := gvMetricName(raw)
		if set == nil || set[name[len("mysql_global_variables_"):]] {
			if v, ok := gsParseValue(val); ok {
				out = append(out, dbpilot.Sample{Name: name, Value: v, Type: dbpilot.Gauge})
			}
		}
		switch lower := strings.ToLower(raw); lower {
		case "version", "innodb_version", "version_comment", "wsrep_on", "wsrep_cluster_name", "wsrep_provider_options":
			text[lower] = val
		}
	}
	out = append(out, dbpilot.Sample{
		Name: "mysql_version_info",
		Labels: []dbpilot.Label{
			{Name: "innodb_version", Value: text["innodb_version"]},
			{Name: "version", Value: text["version"]},
			{Name: "version_comment", Value: text["version_comment"]},
		},
		Value: 1, Type: dbpilot.Gauge, Help: "MySQL version and distribution.",
	})
	if v, _ := gsParseValue(text["wsrep_on"]); v == 1 {
		if n := text["wsrep_cluster_name"]; n != "" {
			out = append(out, dbpilot.Sample{Name: "mysql_galera_variables_info", Labels: []dbpilot.Label{{Name: "wsrep_cluster_name", Value: n}},
				Value: 1, Type: dbpilot.Gauge, Help: "PXC/Galera variables information."})
		}
		if size, ok := gvGcacheSize(text["wsrep_provider_options"]); ok {
			out = append(out, dbpilot.Sample{Name: "mysql_galera_gcache_size_bytes", Value: size, Type: dbpilot.Gauge, Help: "PXC/Galera gcache size."})
		}
	}
	return out
}

var gvGcacheRE = regexp.MustCompile(`(?:^|;\s*)gcache\.size\s*=\s*(\d+(?:\.\d+)?)\s*([KkMmGgTt]?)`)

// gvGcacheSize reads gcache.size from wsrep_provider_options
// ("...; gcache.size = 128M; ...").
func gvGcacheSize(opts string) (float64, bool) {
	m := gvGcacheRE.FindStringSubmatch(opts)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, false
	}
	switch strings.ToUpper(m[2]) {
	case "K":
		v *= 1 << 10
	case "M":
		v *= 1 << 20
	case "G":
		v *= 1 << 30
	case "T":
		v *= 1 << 40
	}
	return v, true
}
