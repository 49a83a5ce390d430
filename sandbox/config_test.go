package sandbox

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
)

func TestParseServerVersion(t *testing.T) {
	tests := []struct {
		out     string
		flavor  dbpilot.Flavor
		version string
		err     string
	}{
		{"mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64 (Debian 12)", dbpilot.FlavorMariaDB, "10.11.19", ""},
		{"/usr/sbin/mysqld  Ver 8.0.36 for Linux on x86_64 (MySQL Community Server - GPL)", dbpilot.FlavorMySQL, "8.0.36", ""},
		{"/usr/sbin/mysqld  Ver 8.4.3 for Linux on x86_64 (MySQL Community Server - GPL)", dbpilot.FlavorMySQL, "8.4.3", ""},
		{"/usr/sbin/mysqld  Ver 8.0.36-28 for Linux on x86_64 (Percona Server (GPL), Release 28, Revision 47601f19)", dbpilot.FlavorPercona, "8.0.36", ""},
		{"/usr/sbin/mysqld  Ver 5.7.44-log for Linux on x86_64 (MySQL Community Server (GPL))", dbpilot.FlavorMySQL, "5.7.44", ""},
		{"/usr/sbin/mysqld  Ver 5.6.51 for Linux on x86_64 (MySQL Community Server (GPL))", dbpilot.FlavorMySQL, "5.6.51", "too old"},
		{"mysqld  Ver 10.2.44-MariaDB for Linux on x86_64 (MariaDB Server)", dbpilot.FlavorMariaDB, "10.2.44", "too old"},
		{"garbage", "", "", "cannot read the server version"},
	}
	for _, tt := range tests {
		s, err := ParseServerVersion(tt.out)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseServerVersion(%q) error = %v, want %q", tt.out, err, tt.err)
			}
			continue
		}
		if err != nil || s.Flavor != tt.flavor || s.Version != tt.version {
			t.Errorf("ParseServerVersion(%q) = %+v, %v", tt.out, s, err)
		}
	}
}

func TestInitCommand(t *testing.T) {
	tests := []struct {
		srv      Server
		wantProg string
		wantArgs string
	}{
		{Server{Flavor: dbpilot.FlavorMariaDB, Version: "10.11.6", Mysqld: "/usr/sbin/mariadbd", InstallDB: "/usr/bin/mariadb-install-db"},
			"/usr/bin/mariadb-install-db", "--defaults-file=/s/node1/my.cnf --skip-test-db --auth-root-authentication-method=normal"},
		{Server{Flavor: dbpilot.FlavorMariaDB, Version: "10.3.39", Mysqld: "/opt/m/bin/mysqld", InstallDB: "/opt/m/scripts/mysql_install_db", Basedir: "/opt/m"},
			"/opt/m/scripts/mysql_install_db", "--defaults-file=/s/node1/my.cnf --skip-test-db --basedir=/opt/m"},
		{Server{Flavor: dbpilot.FlavorMySQL, Version: "8.0.36", Mysqld: "/usr/sbin/mysqld"},
			"/usr/sbin/mysqld", "--defaults-file=/s/node1/my.cnf --initialize-insecure"},
		{Server{Flavor: dbpilot.FlavorMySQL, Version: "5.7.44", Mysqld: "/opt/mysql/bin/mysqld", Basedir: "/opt/mysql"},
			"/opt/mysql/bin/mysqld", "--defaults-file=/s/node1/my.cnf --initialize-insecure --basedir=/opt/mysql"},
	}
	for _, tt := range tests {
		prog, args := InitCommand(tt.srv, "/s/node1/my.cnf")
		if prog != tt.wantProg || strings.Join(args, " ") != tt.wantArgs {
			t.Errorf("InitCommand(%s %s) = %s %v\nwant %s %s", tt.srv.Flavor, tt.srv.Version, prog, args, tt.wantProg, tt.wantArgs)
		}
	}
}

func testDescriptor(topology string, flavor dbpilot.Flavor, version string, nodes int, semi bool) (*Descriptor, Server) {
	srv := Server{Flavor: flavor, Version: version, Mysqld: "/usr/sbin/mysqld"}
	d := &Descriptor{Name: "t", Topology: topology, Flavor: flavor, Version: version, Dir: "/s", SemiSync: semi}
	ports := make([]int, nodes)
	for i := range ports {
		ports[i] = 21001 + i
	}
	layout(d, ports)
	return d, srv
}

func configMap(t *testing.T, cfg string) map[string][]string {
	t.Helper()
	m := map[string][]string{}
	section := ""
	for _, l := range strings.Split(cfg, "\n") {
		if strings.HasPrefix(l, "[") {
			section = l
			continue
		}
		if section != "[mysqld]" {
			continue
		}
		if k, v, ok := strings.Cut(l, "="); ok {
			m[k] = append(m[k], v)
		}
	}
	return m
}

func TestNodeConfigMariaDB(t *testing.T) {
	d, srv := testDescriptor(TopologyReplication, dbpilot.FlavorMariaDB, "10.11.6", 3, true)
	cfg, err := nodeConfig(srv, d, d.Nodes[1], []string{"innodb_buffer_pool_size=64M", "max-connections=50"})
	if err != nil {
		t.Fatal(err)
	}
	m := configMap(t, cfg)
	want := map[string]string{
		"port": "21002", "server_id": "21002", "bind_address": "127.0.0.1", "report_host": "127.0.0.1", "report_port": "21002",
		"log_bin": "binlog", "log_slave_updates": "ON", "gtid_strict_mode": "ON", "gtid_domain_id": "0",
		"read_only": "ON", "rpl_semi_sync_slave_enabled": "ON",
		"slave_net_timeout": "4", "innodb_buffer_pool_size": "64M", "max_connections": "50",
		"datadir": "/s/node2/data", "socket": "/s/node2/mysqld.sock",
		"performance_schema": "ON", "performance_schema_digests_size": "2000", "performance_schema_max_digest_length": "1024",
		"performance_schema_users_size": "0",
	}
	for k, v := range want {
		if got := m[k]; len(got) != 1 || got[0] != v {
			t.Errorf("%s = %v, want %q", k, got, v)
		}
	}
	if _, ok := m["gtid_mode"]; ok {
		t.Error("MariaDB config has MySQL's gtid_mode")
	}
	if _, ok := m["rpl_semi_sync_master_enabled"]; ok {
		t.Error("replica without replicas has semi-sync primary side on")
	}
	p, _ := nodeConfig(srv, d, d.Nodes[0], nil)
	pm := configMap(t, p)
	// The primary starts read_only too: Deploy and Start open the writer
	// (openWriters), so that a former primary started again stays fenced.
	if v := pm["read_only"]; len(v) != 1 || v[0] != "ON" {
		t.Errorf("primary read_only in my.cnf = %v, want ON", v)
	}
	if v := pm["rpl_semi_sync_master_enabled"]; len(v) != 1 || v[0] != "ON" {
		t.Errorf("primary semi-sync primary side = %v", v)
	}
}

func TestNodeConfigMySQL(t *testing.T) {
	for _, tt := range []struct {
		version   string
		want      []string
		forbidden []string
	}{
		{"8.4.3", []string{"performance_schema=ON", "loose_performance_schema_digests_size=2000", "gtid_mode=ON", "enforce_gtid_consistency=ON", "log_replica_updates=ON", "replica_net_timeout=4", "mysqlx=OFF",
			"plugin_load_add=semisync_source.so", "plugin_load_add=semisync_replica.so", "loose_rpl_semi_sync_replica_enabled=ON"},
			[]string{"log_slave_updates", "gtid_strict_mode", "gtid_domain_id", "rpl_semi_sync_master_enabled", "loose_rpl_semi_sync_source_enabled"}},
		{"8.0.21", []string{"log_slave_updates=ON", "slave_net_timeout=4", "plugin_load_add=semisync_master.so", "loose_rpl_semi_sync_slave_enabled=ON", "mysqlx=OFF"},
			[]string{"log_replica_updates", "gtid_domain_id"}},
		{"5.7.44", []string{"log_slave_updates=ON", "innodb_log_file_size=32M", "gtid_mode=ON"},
			[]string{"mysqlx", "innodb_redo_log_capacity"}},
	} {
		d, srv := testDescriptor(TopologyReplication, dbpilot.FlavorMySQL, tt.version, 2, true)
		cfg, err := nodeConfig(srv, d, d.Nodes[1], nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range tt.want {
			if !strings.Contains(cfg, "\n"+w+"\n") {
				t.Errorf("MySQL %s config lacks %q:\n%s", tt.version, w, cfg)
			}
		}
		for _, f := range tt.forbidden {
			if strings.Contains(cfg, "\n"+f+"=") {
				t.Errorf("MySQL %s config has %q", tt.version, f)
			}
		}
	}
}

// The small performance_schema sizing is a default like the others: a
// user option replaces it rather than adding a second line.
func TestNodeConfigPerformanceSchemaOverride(t *testing.T) {
	d, srv := testDescriptor(TopologySingle, dbpilot.FlavorMariaDB, "10.11.6", 1, false)
	cfg, err := nodeConfig(srv, d, d.Nodes[0], []string{"performance_schema=OFF", "performance-schema-digests-size=10000"})
	if err != nil {
		t.Fatal(err)
	}
	m := configMap(t, cfg)
	for k, v := range map[string]string{"performance_schema": "OFF", "performance_schema_digests_size": "10000"} {
		if got := m[k]; len(got) != 1 || got[0] != v {
			t.Errorf("%s = %v, want %q", k, got, v)
		}
	}
}

func TestParseOptions(t *testing.T) {
	for _, bad := range []string{"novalue", "=1", "a b=1", "k=v\nx"} {
		if _, err := parseOptions([]string{bad}); err == nil || dbpilot.ErrorCode(err) != dbpilot.EINVALID {
			t.Errorf("parseOptions(%q) = %v, want invalid", bad, err)
		}
	}
	got, err := parseOptions([]string{"innodb-buffer-pool-size = 64M", "sql_mode="})
	if err != nil || got[0] != [2]string{"innodb_buffer_pool_size", "64M"} || got[1] != [2]string{"sql_mode", ""} {
		t.Errorf("parseOptions = %v, %v", got, err)
	}
}

// TestParseOptionsLoopbackOnly: a sandbox listens on loopback only; an
// option that would move it elsewhere is refused with one line.
func TestParseOptionsLoopbackOnly(t *testing.T) {
	for _, bad := range []string{
		"bind_address=0.0.0.0", "bind-address=0.0.0.0", "Bind-Address = ::", "bind_address=*",
		"bind_address=10.1.2.3", "bind_address=127.0.0.1,0.0.0.0", "bind_address=", "bind_address=db1.example.com",
		"loose-bind-address=0.0.0.0", "bind=0.0.0.0", "bind_addr=0.0.0.0",
		"admin_address=0.0.0.0", "mysqlx_bind_address=*", "wsrep_node_address=192.168.1.5:4567",
		"wsrep_sst_receive_address=0.0.0.0",
	} {
		_, err := parseOptions([]string{bad})
		if err == nil {
			t.Errorf("parseOptions(%q) accepted it", bad)
			continue
		}
		if msg := err.Error(); dbpilot.ErrorCode(err) != dbpilot.EINVALID || !strings.Contains(msg, "would make the sandbox listen beyond loopback") || strings.Contains(msg, "\n") {
			t.Errorf("parseOptions(%q): %v", bad, err)
		}
	}
	for _, good := range []string{
		"bind_address=127.0.0.1", "bind-address=localhost", "bind_address=::1", "bind_address=127.0.0.2",
		"bind_address=127.0.0.1,::1", "wsrep_node_address=127.0.0.1:4567", "wsrep_sst_receive_address=tcp://[::1]:4444",
		"binlog_format=ROW", "binlog_cache_size=1M", "bin=x", // not a listen option (prefixes of others)
	} {
		if _, err := parseOptions([]string{good}); err != nil {
			t.Errorf("parseOptions(%q): %v", good, err)
		}
	}
}

func TestLayout(t *testing.T) {
	d, _ := testDescriptor(TopologyRing, dbpilot.FlavorMariaDB, "10.11.6", 3, false)
	if d.Nodes[0].Sources[0].Node != "node3" || d.Nodes[1].Sources[0].Node != "node1" || d.Nodes[2].DomainID != 3 {
		t.Errorf("ring layout wrong: %+v %+v %+v", d.Nodes[0], d.Nodes[1], d.Nodes[2])
	}
	cfg, err := nodeConfig(Server{Flavor: dbpilot.FlavorMariaDB, Version: "10.11.6"}, d, d.Nodes[1], nil)
	if err != nil || !strings.Contains(cfg, "\nauto_increment_increment=3\n") || !strings.Contains(cfg, "\nauto_increment_offset=2\n") {
		t.Errorf("ring node lacks interleaved auto-increment settings: %v\n%s", err, cfg)
	}
	d, _ = testDescriptor(TopologyMultiSource, dbpilot.FlavorMariaDB, "10.11.6", 4, false)
	sink := d.Nodes[3]
	if len(sink.Sources) != 3 || sink.Sources[2].Channel != "node3" || d.Nodes[0].Role != RoleSource || d.Nodes[1].DomainID != 2 {
		t.Errorf("multi-source layout wrong: %+v", sink)
	}
}

func TestSpecValidate(t *testing.T) {
	tests := []struct {
		spec Spec
		err  string
	}{
		{Spec{Name: "ok"}, ""},
		{Spec{Name: "1bad"}, "invalid sandbox name"},
		{Spec{Name: "a/b"}, "invalid sandbox name"},
		{Spec{Name: "x", Topology: "star"}, "unknown topology"},
		{Spec{Name: "x", Topology: TopologySingle, Nodes: 2}, "exactly 1 node"},
		{Spec{Name: "x", Topology: TopologyMultiSource, Nodes: 2}, "from 3 to 9"},
		{Spec{Name: "x", Nodes: 10}, "from 2 to 9"},
		{Spec{Name: "x", PortBase: 80}, "out of range"},
		{Spec{Name: "x", Options: []string{"bad"}}, "KEY=VALUE"},
	}
	for _, tt := range tests {
		err := tt.spec.Validate()
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("Validate(%+v) = %v, want %q", tt.spec, err, tt.err)
		}
	}
	s := Spec{Name: "x", Topology: TopologyRing}
	if err := s.Validate(); err != nil || s.Nodes != 3 {
		t.Errorf("default nodes = %d, %v", s.Nodes, err)
	}
}

func FuzzParseServerVersion(f *testing.F) {
	for _, s := range []string{
		"mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64 (Debian 12)",
		"/usr/sbin/mysqld  Ver 8.0.36-28 for Linux on x86_64 (Percona Server (GPL), Release 28, Revision 47601f19)",
		"Ver 1.2.3", "Ver 99999999999999999999.0.0", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		srv, err := ParseServerVersion(s)
		if err != nil {
			return
		}
		if srv.Flavor == "" || srv.Version == "" {
			t.Fatalf("ParseServerVersion(%q) = %+v", s, srv)
		}
		if _, err := dbpilot.ParseVersion(srv.Version); err != nil {
			t.Fatalf("ParseServerVersion(%q) gave unparsable version %q", s, srv.Version)
		}
	})
}

func TestGaleraLayoutAndConfig(t *testing.T) {
	for _, tt := range []struct {
		topology      string
		nodes, galera int
	}{{TopologyGalera, 3, 3}, {TopologyGaleraReplica, 2, 2}} {
		np := portCount(tt.topology, tt.nodes)
		ports := make([]int, np)
		for i := range ports {
			ports[i] = 21001 + i
		}
		d := &Descriptor{Name: "g", Topology: tt.topology, Flavor: dbpilot.FlavorMariaDB, Version: "10.11.6", Dir: "/s",
			Admin:  mysql.Credentials{User: "dbpilot", Password: "secret"},
			Galera: &Galera{Provider: "/usr/lib/galera/libgalera_smm.so", ClusterName: "dbpilot_g", SST: SSTMariabackup, SSTScript: SSTMariabackup}}
		layout(d, ports)
		seen := map[int]bool{}
		members := 0
		for _, n := range d.Nodes {
			for _, p := range n.Ports() {
				if seen[p] || p < 21001 || p > 21000+np {
					t.Errorf("%s %s: port %d reused or outside the block", tt.topology, n.Name, p)
				}
				seen[p] = true
			}
			if n.IsGalera() {
				members++
			}
		}
		if len(seen) != np || members != tt.galera {
			t.Errorf("%s: %d ports used of %d, %d Galera nodes", tt.topology, len(seen), np, members)
		}
		if d.Nodes[1].Port != 21002 || d.Nodes[0].GaleraPort != 21001+len(d.Nodes) {
			t.Errorf("%s: node ports first, Galera ports after: %+v", tt.topology, d.Nodes[0])
		}
		srv := Server{Flavor: dbpilot.FlavorMariaDB, Version: "10.11.6"}
		n := d.Nodes[1]
		cfg, err := nodeConfig(srv, d, n, nil)
		if err != nil {
			t.Fatal(err)
		}
		m := configMap(t, cfg)
		want := map[string]string{
			"wsrep_on": "ON", "wsrep_provider": "/usr/lib/galera/libgalera_smm.so", "wsrep_gtid_mode": "ON", "wsrep_gtid_domain_id": "0",
			"binlog_format": "ROW", "innodb_autoinc_lock_mode": "2", "log_slave_updates": "ON", "bind_address": "127.0.0.1",
			"wsrep_node_address":        fmt.Sprintf("127.0.0.1:%d", n.GaleraPort),
			"wsrep_sst_receive_address": fmt.Sprintf("127.0.0.1:%d", n.SSTPort),
			"wsrep_sst_method":          SSTMariabackup, "wsrep_sst_auth": "dbpilot:secret", "gtid_domain_id": "2",
		}
		for k, v := range want {
			if got := m[k]; len(got) != 1 || got[0] != v {
				t.Errorf("%s: %s = %v, want %q", tt.topology, k, got, v)
			}
		}
		po := m["wsrep_provider_options"]
		if len(po) != 1 || !strings.Contains(po[0], fmt.Sprintf("gmcast.listen_addr=tcp://127.0.0.1:%d;", n.GaleraPort)) || !strings.Contains(po[0], fmt.Sprintf("ist.recv_addr=127.0.0.1:%d;", n.ISTPort)) || !strings.Contains(po[0], "gcache.size=32M") {
			t.Errorf("wsrep_provider_options = %v", po)
		}
		if addr := m["wsrep_cluster_address"]; len(addr) != 1 || strings.Count(addr[0], "127.0.0.1:") != tt.galera {
			t.Errorf("wsrep_cluster_address = %v", addr)
		}
		if tt.topology == TopologyGaleraReplica {
			r := d.Nodes[len(d.Nodes)-1]
			rcfg, _ := nodeConfig(srv, d, r, nil)
			if strings.Contains(rcfg, "wsrep") || !strings.Contains(rcfg, "\nread_only=ON\n") || r.Sources[0].Node != "node1" {
				t.Errorf("replica config has wsrep or lacks read_only:\n%s", rcfg)
			}
		}
	}
	for _, tt := range []struct {
		spec Spec
		err  string
	}{
		{Spec{Name: "x", Topology: TopologyGalera, SST: "xtrabackup"}, "unknown --sst"},
		{Spec{Name: "x", Topology: TopologyReplication, SST: "rsync"}, "galera topologies only"},
		{Spec{Name: "x", Topology: TopologyGalera, Nodes: 1}, "from 2 to 9"},
		{Spec{Name: "x", Topology: TopologyGalera, PortBase: 65530}, "port-base+1..port-base+12"},
	} {
		if err := tt.spec.Validate(); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("Validate(%+v) = %v, want %q", tt.spec, err, tt.err)
		}
	}
	s := Spec{Name: "x", Topology: TopologyGaleraReplica}
	if err := s.Validate(); err != nil || s.SST != SSTRsync || s.Nodes != 3 {
		t.Errorf("galera defaults: %+v, %v", s, err)
	}
}
