package collector

import (
	"context"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
)

func TestGaleraSynced(t *testing.T) {
	q := &gsFakeQuerier{results: map[string]*mysql.Rows{galeraQuery: gsFixture(t, "galera/mariadb-10.11-galera.txt")}}
	c := NewGalera()
	if c.Name() != "galera" || c.DefaultInterval() != time.Second {
		t.Fatalf("name/interval = %s/%v", c.Name(), c.DefaultInterval())
	}
	samples, err := c.Collect(context.Background(), q, Target{Flavor: dbpilot.FlavorMariaDB})
	if err != nil {
		t.Fatal(err)
	}
	got := gsIndex(t, samples)
	gsCheck(t, got, []gsWant{
		{"mysql_global_status_wsrep_local_state", 4, gsG},
		{"mysql_global_status_wsrep_local_recv_queue", 0, gsG},
		{"mysql_global_status_wsrep_local_recv_queue_avg", 0.012531, gsG},
		{"mysql_global_status_wsrep_local_send_queue_avg", 0.000288, gsG},
		{"mysql_global_status_wsrep_flow_control_paused", 0.000012, gsG},
		{"mysql_global_status_wsrep_flow_control_paused_ns", 2831941750, gsC},
		{"mysql_global_status_wsrep_flow_control_sent", 3, gsC},
		{"mysql_global_status_wsrep_flow_control_recv", 11, gsC},
		{"mysql_global_status_wsrep_flow_control_active", 0, gsG},
		{"mysql_global_status_wsrep_cluster_size", 3, gsG},
		{"mysql_global_status_wsrep_cluster_status", 1, gsG},
		{"mysql_global_status_wsrep_ready", 1, gsG},
		{"mysql_global_status_wsrep_connected", 1, gsG},
		{"mysql_global_status_wsrep_local_cert_failures", 2, gsC},
		{"mysql_global_status_wsrep_replicated_bytes", 6526788, gsC},
		{"mysql_global_status_wsrep_cert_deps_distance", 21.863467, gsG},
		{`mysql_galera_status_info{wsrep_cluster_state_uuid="6c06e583-686f-11e6-b9e3-8336ad58138c",wsrep_local_state_uuid="6c06e583-686f-11e6-b9e3-8336ad58138c",wsrep_provider_version="26.4.16(r7dce5149)"}`, 1, gsG},
		{"mysql_galera_evs_repl_latency_min_seconds", 0.000277619, gsG},
		{"mysql_galera_evs_repl_latency_avg_seconds", 0.000584637, gsG},
		{"mysql_galera_evs_repl_latency_max_seconds", 0.00128293, gsG},
		{"mysql_galera_evs_repl_latency_stdev", 0.000223479, gsG},
		{"mysql_galera_evs_repl_latency_sample_size", 78, gsG},
	})
	gsCheckAbsent(t, got, "mysql_global_status_wsrep_local_state_comment", "mysql_global_status_wsrep_provider_name",
		"mysql_global_status_wsrep_incoming_addresses", "mysql_global_status_wsrep_evs_repl_latency")
}

func TestGaleraAbsent(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := NewGalera().(*galera)
	c.now = func() time.Time { return now }
	key := dbpilot.InstanceKey{Host: "db1", Port: 3306}
	// MariaDB without a provider: the wsrep placeholders (recorded).
	q := &gsFakeQuerier{results: map[string]*mysql.Rows{galeraQuery: gsFixture(t, "galera/mariadb-10.11-no-galera.txt")}}
	for i := 0; i < 3; i++ {
		samples, err := c.Collect(context.Background(), q, Target{Key: key})
		if err != nil || samples != nil {
			t.Fatalf("run %d: %v, %v; want nothing", i, samples, err)
		}
	}
	if len(q.queries) != 1 {
		t.Fatalf("a server without Galera was asked %d times within a minute", len(q.queries))
	}
	// A minute later it is asked again; MySQL has no wsrep rows at all.
	now = now.Add(galeraRecheck)
	q.results[galeraQuery] = gsRows([]string{"Variable_name", "Value"})
	if samples, err := c.Collect(context.Background(), q, Target{Key: key}); err != nil || samples != nil || len(q.queries) != 2 {
		t.Fatalf("recheck: %v, %v, %d queries", samples, err, len(q.queries))
	}
	// Another instance is asked at once.
	if _, err := c.Collect(context.Background(), q, Target{Key: dbpilot.InstanceKey{Host: "db2", Port: 3306}}); err != nil || len(q.queries) != 3 {
		t.Fatalf("other instance: %v, %d queries", err, len(q.queries))
	}
}

func TestGaleraLatency(t *testing.T) {
	for in, n := range map[string]int{
		"0.1/0.2/0.3/0.01/5": 5,
		"":                   0,
		"0.1/0.2/0.3":        0,
		"a/b/c/d/e":          0,
	} {
		if got := len(galeraLatency(in)); got != n {
			t.Errorf("galeraLatency(%q): %d samples, want %d", in, got, n)
		}
	}
}
