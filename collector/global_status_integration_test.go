package collector

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/sandbox"
)

// gsOpen connects to a sandbox node as the admin user.
func gsOpen(t testing.TB, d *sandbox.Descriptor, node string) (*mysql.DB, Target) {
	t.Helper()
	n, err := d.Node(node)
	if err != nil {
		t.Fatal(err)
	}
	db, err := mysql.Open(context.Background(), n.Key(), d.AdminOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	v, err := dbpilot.ParseVersion(d.Version)
	if err != nil {
		t.Fatal(err)
	}
	return db, Target{Key: n.Key(), Flavor: d.Flavor, Version: v, ServerID: n.ServerID}
}

func gsExec(t testing.TB, db *mysql.DB, stmts ...string) {
	t.Helper()
	if err := db.Exec(context.Background(), stmts...); err != nil {
		t.Fatal(err)
	}
}

func gsCollect(t testing.TB, c Collector, q Querier, tg Target) map[string]dbpilot.Sample {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := c.Collect(ctx, q, tg)
	if err != nil {
		t.Fatalf("%s: %v", c.Name(), err)
	}
	return gsIndex(t, s)
}

// gsPoll collects until cond holds.
func gsPoll(t testing.TB, what string, c Collector, q Querier, tg Target, cond func(map[string]dbpilot.Sample) bool) map[string]dbpilot.Sample {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := gsCollect(t, c, q, tg)
		if cond(got) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: timed out; last samples: %v", what, got)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestIntegrationCollectors runs every collector of this package's runner
// set on a real 3-node semi-sync sandbox.
func TestIntegrationCollectors(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 3, SemiSync: true})
	primary, pt := gsOpen(t, d, "node1")
	replica, rt := gsOpen(t, d, "node2")
	other, _ := gsOpen(t, d, "node1")
	ctx := context.Background()
	gsExec(t, primary, "CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY AUTO_INCREMENT, v VARCHAR(20))")

	t.Run("global_status counters rise", func(t *testing.T) {
		c := NewGlobalStatus()
		before := gsCollect(t, c, primary, pt)
		for i := 0; i < 5; i++ {
			if _, err := other.Query(ctx, "SELECT 1"); err != nil {
				t.Fatal(err)
			}
		}
		gsExec(t, other, "INSERT INTO app.t (v) VALUES ('a')")
		after := gsCollect(t, c, primary, pt)
		sel := `mysql_global_status_commands_total{command="select"}`
		if d := after[sel].Value - before[sel].Value; d < 5 {
			t.Errorf("Com_select rose by %v, want at least 5", d)
		}
		ins := `mysql_global_status_commands_total{command="insert"}`
		if after[ins].Value <= before[ins].Value {
			t.Errorf("Com_insert did not rise: %v → %v", before[ins].Value, after[ins].Value)
		}
		if after["mysql_global_status_questions"].Value <= before["mysql_global_status_questions"].Value {
			t.Error("Questions did not rise")
		}
		// The second run read the every-second set only, with its own
		// statement (SHOW GLOBAL STATUS WHERE Variable_name IN (...)).
		if len(after) >= len(before) || len(after) < 60 {
			t.Errorf("every-second run: %d series; the full run had %d", len(after), len(before))
		}
		if after[MetricUp].Value != 1 || after["mysql_global_status_uptime"].Type != dbpilot.Counter {
			t.Errorf("mysql_up = %v, uptime = %+v", after[MetricUp], after["mysql_global_status_uptime"])
		}
	})

	t.Run("global_variables", func(t *testing.T) {
		got := gsCollect(t, NewGlobalVariables(), primary, pt)
		if got["mysql_global_variables_max_connections"].Value != 100 || got["mysql_global_variables_log_bin"].Value != 1 {
			t.Errorf("max_connections = %v, log_bin = %v", got["mysql_global_variables_max_connections"], got["mysql_global_variables_log_bin"])
		}
		found := false
		for k := range got {
			if strings.HasPrefix(k, "mysql_version_info{") {
				found = true
			}
		}
		if !found {
			t.Error("no mysql_version_info")
		}
	})

	t.Run("processlist oldest query and transaction", func(t *testing.T) {
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			other.Query(ctx, "SELECT SLEEP(3)")
		}()
		trx, err := primary.SQL().Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer trx.Close()
		if _, err := trx.ExecContext(ctx, "BEGIN"); err != nil {
			t.Fatal(err)
		}
		if _, err := trx.ExecContext(ctx, "INSERT INTO app.t (v) VALUES ('trx')"); err != nil {
			t.Fatal(err)
		}
		pl := NewProcesslist()
		got := gsPoll(t, "a running SLEEP(3) older than 1 s", pl, primary, pt, func(m map[string]dbpilot.Sample) bool {
			return m["dbpilot_oldest_query_seconds"].Value >= 1
		})
		if v := got["dbpilot_oldest_query_seconds"].Value; v >= 4 {
			t.Errorf("oldest query = %v s", v)
		}
		if got["dbpilot_innodb_trx_count"].Value < 1 {
			t.Errorf("innodb trx count = %v", got["dbpilot_innodb_trx_count"])
		}
		if got[`mysql_info_schema_processlist_threads{command="query",state="user_sleep"}`].Value != 1 {
			t.Errorf("threads in User sleep: %v", got)
		}
		if got[`mysql_info_schema_processlist_threads{command="binlog_dump",state="master_has_sent_all_binlog_to_slave_waiting_for_more_updates"}`].Value != 2 {
			t.Errorf("binlog dump threads: %v", got)
		}
		if _, err := trx.ExecContext(ctx, "ROLLBACK"); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
	})

	t.Run("binlog", func(t *testing.T) {
		c := NewBinlog()
		got := gsCollect(t, c, primary, pt)
		if got["mysql_binlog_size_bytes"].Value <= 0 || got["mysql_binlog_files"].Value < 1 || got["mysql_binlog_file_number"].Value < 1 {
			t.Errorf("binlog samples: %v", got)
		}
		gsExec(t, primary, "INSERT INTO app.t (v) VALUES ('b')", "INSERT INTO app.t (v) VALUES ('c')")
		got = gsCollect(t, c, primary, pt)
		if v, ok := got["dbpilot_binlog_commits_per_group"]; !ok || v.Value < 1 {
			t.Errorf("commits per group = %v, %v", v, ok)
		}
	})

	t.Run("galera absent", func(t *testing.T) {
		s, err := NewGalera().Collect(ctx, primary, pt)
		if err != nil || s != nil {
			t.Errorf("galera on a plain server: %v, %v", s, err)
		}
	})

	t.Run("semisync", func(t *testing.T) {
		c := NewSemiSync()
		got := gsPoll(t, "2 semi-sync clients", c, primary, pt, func(m map[string]dbpilot.Sample) bool {
			return m["dbpilot_semisync_primary_clients"].Value == 2
		})
		gsCheck(t, got, []gsWant{
			{"dbpilot_semisync_primary_enabled", 1, gsG},
			{"dbpilot_semisync_primary_status", 1, gsG},
			{"dbpilot_semisync_fell_back", 0, gsG},
		})
		gsCheck(t, gsCollect(t, c, replica, rt), []gsWant{
			{"dbpilot_semisync_replica_enabled", 1, gsG},
			{"dbpilot_semisync_replica_status", 1, gsG},
			{"dbpilot_semisync_fell_back", 0, gsG},
		})
	})

	t.Run("runner with every collector", func(t *testing.T) {
		sink := &runnerSink{}
		cs := []Collector{NewGlobalStatus(), NewGlobalVariables(), NewProcesslist(), NewBinlog(), NewGalera(), NewSemiSync()}
		iv := map[string]time.Duration{}
		for _, c := range cs {
			iv[c.Name()] = 300 * time.Millisecond
		}
		r := NewRunner(Target{Key: pt.Key, Role: "primary"}, d.AdminOptions(), cs, Config{Interval: iv}, sink, dbpilot.Batch{Cluster: "t"}, nil)
		r.Start(ctx)
		testutil.WaitFor(t, 20*time.Second, "three runs of every collector", func() (bool, string) {
			for _, st := range r.Stats() {
				if st.Runs < 3 {
					return false, fmt.Sprintf("%+v", st)
				}
			}
			return true, ""
		})
		r.Stop()
		for _, st := range r.Stats() {
			if st.Runs < 3 || st.Errors != 0 {
				t.Errorf("%s: %+v", st.Collector, st)
			}
		}
		bs := sink.of("global_status")
		if len(bs) < 3 {
			t.Fatalf("%d global_status batches", len(bs))
		}
		if s, _ := runnerSample(bs[len(bs)-1], MetricUp); s.Value != 1 {
			t.Errorf("mysql_up = %v", s)
		}
	})

	// Last, as it breaks replication: with no replica acknowledging, the
	// primary falls back to asynchronous commits.
	t.Run("semisync fell back", func(t *testing.T) {
		gsExec(t, primary, "SET GLOBAL rpl_semi_sync_master_timeout = 200")
		for _, n := range []string{"node2", "node3"} {
			db, _ := gsOpen(t, d, n)
			gsExec(t, db, "STOP SLAVE")
		}
		gsExec(t, primary, "INSERT INTO app.t (v) VALUES ('async')")
		got := gsPoll(t, "the fall back", NewSemiSync(), primary, pt, func(m map[string]dbpilot.Sample) bool {
			return m["dbpilot_semisync_fell_back"].Value == 1
		})
		if got["dbpilot_semisync_primary_no_tx_total"].Value < 1 || got["dbpilot_semisync_primary_off_total"].Value < 1 {
			t.Errorf("no_tx/off counters: %v", got)
		}
	})
}

// BenchmarkGlobalStatusRun measures one global_status run against a real
// sandbox (query, transfer and parse; run with -benchtime and look at the
// process CPU too). Figures only; never pass/fail.
func BenchmarkGlobalStatusRun(b *testing.B) {
	d := testutil.MustSandbox(b, sandbox.Spec{Topology: sandbox.TopologySingle})
	db, tg := gsOpen(b, d, "node1")
	c := NewGlobalStatus()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := c.Collect(ctx, db, tg); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/run")
}
