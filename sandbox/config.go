package sandbox

import (
	"fmt"
	"net"
	"os/user"
	"path/filepath"
	"strings"

	"github.com/dbpilot/dbpilot"
)

// Timeouts that make a dead source noticed within seconds: a 1 s heartbeat
// keeps an idle healthy link alive, and slave_net_timeout declares a silent
// link dead.
const (
	sandboxNetTimeout = 4 // seconds
	heartbeatSeconds  = 1
)

// nodeConfig renders a node's option file.
func nodeConfig(s Server, d *Descriptor, n *Node, options []string) (string, error) {
	kv := [][2]string{
		{"datadir", n.Datadir},
		{"socket", n.Socket},
		{"port", fmt.Sprint(n.Port)},
		{"bind_address", "127.0.0.1"},
		{"pid_file", n.PidFile},
		{"log_error", n.ErrorLog},
		{"tmpdir", filepath.Join(n.Dir, "tmp")},
		{"server_id", fmt.Sprint(n.ServerID)},
		{"report_host", "127.0.0.1"},
		{"report_port", fmt.Sprint(n.Port)},
		{"skip_name_resolve", "ON"},
		{"log_bin", "binlog"},
		{"relay_log", "relay-bin"},
		{"binlog_format", "ROW"},
		{"sync_binlog", "1"},
		{"innodb_flush_log_at_trx_commit", "1"},
		// Small footprint: five nodes fit comfortably in 2 GB.
		{"innodb_buffer_pool_size", "32M"},
		{"innodb_log_buffer_size", "4M"},
		{"key_buffer_size", "1M"},
		{"max_connections", "100"},
		{"table_open_cache", "256"},
		{"thread_cache_size", "8"},
		{"tmp_table_size", "8M"},
		{"max_heap_table_size", "8M"},
		{"max_allowed_packet", "64M"},
	}
	if s.Basedir != "" {
		kv = append(kv, [2]string{"basedir", s.Basedir})
	}
	if u, err := user.Current(); err == nil && u.Uid == "0" {
		// mysqld refuses to run as root unless told to.
		kv = append(kv, [2]string{"user", "root"})
	}
	if s.Flavor == dbpilot.FlavorMariaDB {
		kv = append(kv, mariadbOptions(d, n)...)
	} else {
		kv = append(kv, mysqlOptions(s.ParsedVersion(), d, n)...)
	}
	if n.IsGalera() && d.Galera != nil {
		kv = mergeOptions(kv, galeraOptions(d, n))
	}
	kv = append(kv, tlsOptions(d, n)...)
	if !n.IsGalera() {
		// Every server starts read_only, as production servers under a
		// failover manager should: an old primary that restarts after a
		// failover must not take writes before anyone fences it. Deploy
		// opens the writer (the primary, a single server, the sources of a
		// multi-source, node1 of a ring: two writable members of a ring
		// conflict on every key they share) and Start opens it again
		// (openWriters).
		kv = append(kv, [2]string{"read_only", "ON"})
	}
	if d.Topology == TopologyRing || d.Topology == TopologyMultiSource {
		// Several writers: interleave AUTO_INCREMENT values so that inserts
		// on different writers never collide, as MySQL-Sandbox does.
		kv = append(kv,
			[2]string{"auto_increment_increment", fmt.Sprint(len(d.Nodes))},
			[2]string{"auto_increment_offset", fmt.Sprint(n.Index)},
		)
	}
	// User options come last and override ours.
	extra, err := parseOptions(options)
	if err != nil {
		return "", err
	}
	kv = mergeOptions(kv, extra)

	var b strings.Builder
	fmt.Fprintf(&b, "# dbpilot sandbox %s, %s (%s %s). Rendered by dbpilot; edits are kept until redeploy.\n", d.Name, n.Name, s.Flavor, s.Version)
	b.WriteString("[mysqld]\n")
	for _, p := range kv {
		fmt.Fprintf(&b, "%s=%s\n", p[0], p[1])
	}
	fmt.Fprintf(&b, "\n[client]\nsocket=%s\nport=%d\nhost=127.0.0.1\n", n.Socket, n.Port)
	return b.String(), nil
}

// mariadbOptions are a MariaDB node's replication options: GTIDs in strict
// mode, parallel replication, semi-sync where it has a partner.
func mariadbOptions(d *Descriptor, n *Node) [][2]string {
	kv := [][2]string{
		{"log_slave_updates", "ON"},
		{"gtid_strict_mode", "ON"},
		{"gtid_domain_id", fmt.Sprint(n.DomainID)},
		{"slave_net_timeout", fmt.Sprint(sandboxNetTimeout)},
		{"innodb_log_file_size", "32M"},
		{"slave_parallel_threads", "2"},
		{"slave_parallel_mode", "optimistic"},
	}
	kv = append(kv, performanceSchemaOptions("")...)
	// Semi-sync primary side only where some node replicates from this
	// one: with it on and no replica connected, MariaDB makes every
	// commit (replicated ones too) wait rpl_semi_sync_master_timeout.
	if d.SemiSync && hasReplicas(d, n) {
		kv = append(kv, [2]string{"rpl_semi_sync_master_enabled", "ON"})
	}
	if d.SemiSync && len(n.Sources) > 0 {
		kv = append(kv, [2]string{"rpl_semi_sync_slave_enabled", "ON"})
	}
	return kv
}

// mysqlOptions are a MySQL node's replication options for version v:
// GTIDs, the replica or slave words of its version, semi-sync plugins.
func mysqlOptions(v dbpilot.Version, d *Descriptor, n *Node) [][2]string {
	replicaWords := v.AtLeast(8, 0, 26)
	kv := [][2]string{
		{"gtid_mode", "ON"},
		{"enforce_gtid_consistency", "ON"},
	}
	// loose_: a sizing variable some MySQL version lacks is a warning,
	// not a refusal to start.
	kv = append(kv, performanceSchemaOptions("loose_")...)
	if replicaWords {
		kv = append(kv, [2]string{"log_replica_updates", "ON"}, [2]string{"replica_net_timeout", fmt.Sprint(sandboxNetTimeout)})
	} else {
		kv = append(kv, [2]string{"log_slave_updates", "ON"}, [2]string{"slave_net_timeout", fmt.Sprint(sandboxNetTimeout)})
	}
	if v.AtLeast(8, 0, 0) {
		kv = append(kv, [2]string{"mysqlx", "OFF"}, [2]string{"innodb_redo_log_capacity", "64M"})
	} else {
		kv = append(kv, [2]string{"innodb_log_file_size", "32M"})
	}
	if d.SemiSync {
		// Both plugins everywhere (a replica may be promoted); each side
		// enabled only where it has a partner.
		source, replica := "source", "replica"
		if !replicaWords {
			source, replica = "master", "slave"
		}
		kv = append(kv,
			[2]string{"plugin_load_add", "semisync_" + source + ".so"},
			[2]string{"plugin_load_add", "semisync_" + replica + ".so"},
		)
		if hasReplicas(d, n) {
			kv = append(kv, [2]string{"loose_rpl_semi_sync_" + source + "_enabled", "ON"})
		}
		if len(n.Sources) > 0 {
			kv = append(kv, [2]string{"loose_rpl_semi_sync_" + replica + "_enabled", "ON"})
		}
	}
	return kv
}

// performanceSchemaOptions turns performance_schema on with small sizing, for
// query analytics (`dbpilot queries` reads
// events_statements_summary_by_digest, filled by the statements_digest
// consumer, on by default). Measured with ps -o rss on an idle single
// MariaDB 10.11 node: 63 MB with performance_schema off, 162 MB with the
// server's default sizing, 94 MB with these (114 MB vs 68 MB off after a
// small mixed load). Most of the cost is per thread:
// performance_schema_max_thread_instances is 160, max_connections (100)
// plus background and replication threads with room to spare (a thread
// beyond it is not instrumented: its statements are not counted). The
// account, host and user summaries (about 30 MB) are off: statements still
// aggregate by digest and globally. prefix goes before each name but
// performance_schema itself ("loose_" for MySQL, whose variable set differs
// between versions).
func performanceSchemaOptions(prefix string) [][2]string {
	kv := [][2]string{{"performance_schema", "ON"}}
	for _, o := range [][2]string{
		{"digests_size", "2000"},
		{"max_digest_length", "1024"},
		{"max_sql_text_length", "1024"},
		{"max_thread_instances", "160"},
		{"accounts_size", "0"},
		{"hosts_size", "0"},
		{"users_size", "0"},
		{"events_statements_history_size", "5"},
		{"events_statements_history_long_size", "100"},
		{"events_stages_history_size", "1"},
		{"events_stages_history_long_size", "10"},
		{"events_waits_history_size", "1"},
		{"events_waits_history_long_size", "10"},
		{"events_transactions_history_size", "1"},
		{"events_transactions_history_long_size", "10"},
		{"max_table_instances", "400"},
		{"max_table_handles", "400"},
		{"max_index_stat", "1000"},
		{"max_table_lock_stat", "400"},
		{"max_file_instances", "1000"},
		{"max_socket_instances", "200"},
		{"max_metadata_locks", "1000"},
		{"max_prepared_statements_instances", "100"},
		{"max_program_instances", "100"},
		{"setup_actors_size", "20"},
		{"setup_objects_size", "20"},
	} {
		kv = append(kv, [2]string{prefix + "performance_schema_" + o[0], o[1]})
	}
	return kv
}

// parseOptions validates --option KEY=VALUE pairs.
func parseOptions(options []string) ([][2]string, error) {
	var out [][2]string
	for _, o := range options {
		k, v, ok := strings.Cut(o, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" || strings.ContainsAny(k, " \t\n[]=") || strings.ContainsAny(v, "\n") {
			return nil, dbpilot.Errorf(dbpilot.EINVALID, "sandbox: invalid --option %q: want KEY=VALUE, e.g. --option innodb_buffer_pool_size=64M", o)
		}
		k, v = strings.ReplaceAll(k, "-", "_"), strings.TrimSpace(v)
		if name, ok := listenOption(k); ok && !loopbackAddresses(v) {
			return nil, dbpilot.Errorf(dbpilot.EINVALID, "sandbox: --option %s=%s would make the sandbox listen beyond loopback: its %s must be 127.0.0.1, ::1 or localhost", k, v, name)
		}
		out = append(out, [2]string{k, v})
	}
	return out, nil
}

// listenAddressOptions are the server options (underscore spelling) that
// choose addresses a node listens on: a sandbox listens on loopback only.
var listenAddressOptions = []string{"bind_address", "admin_address", "mysqlx_bind_address",
	"wsrep_node_address", "wsrep_node_incoming_address", "wsrep_sst_receive_address"}

// listenOption reports whether key (dashes already underscores) sets one of
// listenAddressOptions: its name, with the loose_ prefix, or a unique
// prefix of it as the server accepts (bind for bind_address).
func listenOption(key string) (string, bool) {
	k := strings.TrimPrefix(strings.ToLower(key), "loose_")
	for _, name := range listenAddressOptions {
		if k == name || len(k) >= 4 && strings.HasPrefix(name, k) {
			return name, true
		}
	}
	return "", false
}

// loopbackAddresses reports whether every address of a listen option's
// value (a comma-separated list of HOST, HOST:PORT, [V6]:PORT, optionally
// tcp://) is a loopback one.
func loopbackAddresses(v string) bool {
	for _, a := range strings.Split(v, ",") {
		a = strings.TrimPrefix(strings.TrimSpace(a), "tcp://")
		host := a
		if h, _, err := net.SplitHostPort(a); err == nil {
			host = h
		}
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
		if strings.EqualFold(host, "localhost") {
			continue
		}
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			return false
		}
	}
	return true
}

// mergeOptions overrides keys of base present in extra (dash and underscore
// equivalent) and appends new ones; repeatable keys like plugin_load_add are
// appended.
func mergeOptions(base, extra [][2]string) [][2]string {
	norm := func(k string) string { return strings.ReplaceAll(strings.ToLower(k), "-", "_") }
	out := append([][2]string(nil), base...)
	for _, e := range extra {
		replaced := false
		if norm(e[0]) != "plugin_load_add" {
			for i := range out {
				if norm(out[i][0]) == norm(e[0]) {
					out[i][1] = e[1]
					replaced = true
				}
			}
		}
		if !replaced {
			out = append(out, e)
		}
	}
	return out
}

// InitCommand returns the program and arguments that initialize a node's
// datadir: mariadb-install-db for MariaDB, mysqld --initialize-insecure for
// MySQL 5.7 and 8.x.
func InitCommand(s Server, configPath string) (string, []string) {
	if s.Flavor == dbpilot.FlavorMariaDB {
		args := []string{"--defaults-file=" + configPath, "--skip-test-db"}
		if s.ParsedVersion().AtLeast(10, 4, 0) {
			args = append(args, "--auth-root-authentication-method=normal")
		}
		if s.Basedir != "" {
			args = append(args, "--basedir="+s.Basedir)
		}
		return s.InstallDB, args
	}
	args := []string{"--defaults-file=" + configPath, "--initialize-insecure"}
	if s.Basedir != "" {
		args = append(args, "--basedir="+s.Basedir)
	}
	return s.Mysqld, args
}

// hasReplicas reports whether some node of d replicates from n.
func hasReplicas(d *Descriptor, n *Node) bool {
	for _, o := range d.Nodes {
		for _, s := range o.Sources {
			if s.Node == n.Name {
				return true
			}
		}
	}
	return false
}
