package collector_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot/collector"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/sandbox"
)

// TestInnoDBOnSandbox reads a real server under writes: the checkpoint age
// is above 0 and below its maximum, and the other InnoDB figures are there.
func TestInnoDBOnSandbox(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologySingle})
	ctx := context.Background()
	n := d.Nodes[0]
	db := hbOpen(t, d, n)
	tg := collector.Target{Key: n.Key(), Flavor: d.Flavor, Version: d.Server.ParsedVersion(), Role: "standalone", ServerID: n.ServerID}
	if err := db.Exec(ctx, "CREATE DATABASE app", "CREATE TABLE app.t (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(200))"); err != nil {
		t.Fatal(err)
	}
	write := func(rows int) {
		t.Helper()
		stmt := "INSERT INTO app.t (v) VALUES (REPEAT('x', 200))" + strings.Repeat(", (REPEAT('x', 200))", rows-1)
		if err := db.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	c := collector.NewInnoDB()
	var age, maxAge, pct float64
	ok := false
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && !ok; {
		write(2000)
		s, err := c.Collect(ctx, db, tg)
		if err != nil {
			t.Fatal(err)
		}
		var ok1, ok2, ok3 bool
		age, ok1 = hbValue(s, "dbpilot_innodb_checkpoint_age_bytes")
		maxAge, ok2 = hbValue(s, "dbpilot_innodb_checkpoint_age_max_bytes")
		pct, ok3 = hbValue(s, "dbpilot_innodb_checkpoint_age_percent")
		if !ok1 || !ok2 || !ok3 {
			t.Fatalf("no checkpoint figures in %v", s)
		}
		ok = age > 0 && age < maxAge
		for _, name := range []string{"dbpilot_innodb_lsn", "dbpilot_innodb_checkpoint_lsn", "dbpilot_innodb_history_list_length",
			"dbpilot_innodb_pending_reads", "dbpilot_innodb_pending_writes", "dbpilot_innodb_pending_fsyncs",
			"dbpilot_innodb_buffer_pool_dirty_percent", "mysql_info_schema_innodb_metrics_transaction_trx_rseg_history_len"} {
			if _, have := hbValue(s, name); !have {
				t.Errorf("no %s", name)
			}
		}
		if lsn, _ := hbValue(s, "dbpilot_innodb_lsn"); lsn <= 0 {
			t.Errorf("LSN %v", lsn)
		}
		if r, have := hbValue(s, "dbpilot_innodb_buffer_pool_hit_ratio"); have && (r < 0 || r > 1) {
			t.Errorf("hit ratio %v", r)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !ok {
		t.Fatalf("checkpoint age %v, max %v: want 0 < age < max", age, maxAge)
	}
	if pct <= 0 || pct >= 100 {
		t.Errorf("checkpoint age percent %v", pct)
	}
	t.Logf("checkpoint age %.0f of %.0f bytes (%.2f%%)", age, maxAge, pct)
	// The second run on the instance has a hit ratio.
	write(10)
	s, err := c.Collect(ctx, db, tg)
	if err != nil {
		t.Fatal(err)
	}
	if r, have := hbValue(s, "dbpilot_innodb_buffer_pool_hit_ratio"); !have || r < 0 || r > 1 {
		t.Errorf("hit ratio %v (present %v)", r, have)
	}
}
