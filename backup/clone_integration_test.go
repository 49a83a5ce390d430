package backup

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/sandbox"
)

// TestCloneReplicate clones a server that is being written to onto a fresh
// one, attaches the copy as a replica at the dump's GTID position and
// checks that it then follows the source exactly.
func TestCloneReplicate(t *testing.T) {
	srcD := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologySingle})
	tgtD := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologySingle})
	src, tgt := itConnect(t, srcD, 0), itConnect(t, tgtD, 0)
	ctx := context.Background()

	src.exec(t,
		"CREATE DATABASE app",
		"CREATE TABLE app.items (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, name VARCHAR(50), qty INT NOT NULL)",
		"INSERT INTO app.items (name, qty) SELECT CONCAT('item ', seq), seq FROM mysql.seq_1_to_300",
		"CREATE TABLE app.kv (k VARCHAR(20) NOT NULL PRIMARY KEY, v TEXT)",
		"INSERT INTO app.kv SELECT CONCAT('key-', seq), REPEAT('v', seq) FROM mysql.seq_1_to_120",
		"CREATE TABLE app.audit (at DATETIME(6), what VARCHAR(40))",
		"CREATE DATABASE other",
		"CREATE TABLE other.t (id INT NOT NULL PRIMARY KEY)",
		"INSERT INTO other.t SELECT seq FROM mysql.seq_1_to_50",
		"ANALYZE TABLE app.items, app.kv, other.t",
	)
	tables := []string{"app.items", "app.kv", "app.audit", "other.t"}

	// A writer runs before, during and after the clone.
	var stop atomic.Bool
	var writes atomic.Int64
	var wg sync.WaitGroup
	var werr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			err := src.db.Exec(ctx,
				fmt.Sprintf("UPDATE app.items SET qty = qty + 1 WHERE id = %d", i%300+1),
				fmt.Sprintf("INSERT INTO app.kv VALUES ('w-%d', 'x') ON DUPLICATE KEY UPDATE v = CONCAT(v, 'y')", i%500),
				"INSERT INTO app.audit VALUES (NOW(6), 'write')")
			if err != nil {
				werr = err
				return
			}
			writes.Add(1)
		}
	}()
	stopWriter := func() {
		if !stop.Swap(true) {
			wg.Wait()
		}
	}
	t.Cleanup(stopWriter)
	testutil.WaitFor(t, 30*time.Second, "20 writes before the clone", func() (bool, string) {
		return writes.Load() >= 20, fmt.Sprint(writes.Load(), " writes")
	})

	before := writes.Load()
	res, err := Clone(ctx, src.key, src.opts, tgt.key, tgt.opts, CloneOptions{Threads: 2, ChunkRows: 25, Replicate: true, Repl: srcD.Repl})
	during := writes.Load() - before
	if err != nil {
		stopWriter()
		t.Fatalf("clone: %v", err)
	}
	t.Logf("clone at %s, %d writes during it", res.Position, during)
	if !res.Replicating || res.Errant != "" || res.Position == "" {
		t.Errorf("clone result: replicating %v, errant %q, position %q", res.Replicating, res.Errant, res.Position)
	}
	if res.Dump == nil || res.Dump.Totals.Chunks < 10 {
		t.Errorf("clone dump: %+v", res.Dump)
	}
	if during == 0 {
		t.Errorf("no write happened during the clone")
	}
	// More writes after the clone, then stop and let the copy catch up.
	after := writes.Load()
	testutil.WaitFor(t, 30*time.Second, "10 writes after the clone", func() (bool, string) {
		return writes.Load() >= after+10, fmt.Sprint(writes.Load()-after, " writes (the writer stops at its first error)")
	})
	stopWriter()
	if werr != nil {
		t.Fatalf("writer: %v", werr)
	}
	src.exec(t,
		"INSERT INTO app.items (name, qty) VALUES ('after clone', 1)",
		"DELETE FROM app.kv WHERE k = 'key-7'",
		"CREATE TABLE other.later (id INT PRIMARY KEY)",
		"INSERT INTO other.later VALUES (1), (2)",
	)
	pos := src.value(t, "SELECT @@gtid_binlog_pos")
	if v := tgt.value(t, "SELECT MASTER_GTID_WAIT(?, 30)", pos); v != "0" {
		t.Fatalf("the clone did not reach the source's %s: MASTER_GTID_WAIT = %s; status %v", pos, v, tgt.maps(t, "SHOW SLAVE STATUS"))
	}
	itSameTables(t, src, tgt, append(tables, "other.later")...)
	st := tgt.maps(t, "SHOW SLAVE STATUS")
	if len(st) != 1 || st[0]["Slave_SQL_Running"] != "Yes" || st[0]["Slave_IO_Running"] != "Yes" || st[0]["Using_Gtid"] != "Slave_Pos" ||
		st[0]["Master_Port"] != fmt.Sprint(src.key.Port) || st[0]["Master_User"] != srcD.Repl.User {
		t.Errorf("the clone's replication: %v", st)
	}
	if a, b := src.value(t, "SELECT @@gtid_binlog_pos"), tgt.value(t, "SELECT @@gtid_slave_pos"); a != b {
		t.Errorf("source at %s, clone's replication position %s", a, b)
	}
	// The restore itself left no transaction of the target's own.
	if own, state := tgt.value(t, "SELECT @@server_id"), tgt.value(t, "SELECT @@gtid_binlog_state"); own == "" || itContainsServerID(state, own) {
		t.Errorf("the clone logged transactions of its own (server_id %s): gtid_binlog_state %s", own, state)
	}

	// A second clone onto a replicating target is refused before any dump.
	_, err = Clone(ctx, src.key, src.opts, tgt.key, tgt.opts, CloneOptions{Threads: 2, Replicate: true, Repl: srcD.Repl})
	itWantCode(t, "clone onto a replica", err, dbpilot.ECONFLICT, tgt.key.String())
	_, err = Clone(ctx, src.key, src.opts, src.key, src.opts, CloneOptions{})
	itWantCode(t, "clone onto itself", err, dbpilot.EINVALID)
	_, err = Clone(ctx, src.key, src.opts, tgt.key, tgt.opts, CloneOptions{Replicate: true})
	itWantCode(t, "clone --replicate without an account", err, dbpilot.EINVALID)
	// A wrong replication password makes replication fail to start: reported
	// within ReplicaWait, not a hang.
	tgt.exec(t, "STOP SLAVE", "RESET SLAVE ALL")
	itDropDBs(t, tgt, "app", "other")
	tgt.exec(t, "RESET MASTER") // a fresh server again: no GTIDs of its own
	start := time.Now()
	_, err = Clone(ctx, src.key, src.opts, tgt.key, tgt.opts, CloneOptions{Threads: 2, Replicate: true, ReplicaWait: 2 * time.Second,
		Repl: mysql.Credentials{User: srcD.Repl.User, Password: "wrong-repl-pw-913"}})
	if err == nil {
		t.Fatalf("clone with a wrong replication password succeeded")
	}
	t.Logf("clone with a wrong replication password, after %s: %v", time.Since(start).Round(time.Millisecond), err)
	itOneLine(t, "clone with a wrong replication password", err, "wrong-repl-pw-913")
	if c := dbpilot.ErrorCode(err); c != dbpilot.EUNAVAIL && c != dbpilot.EAUTH {
		t.Errorf("clone with a wrong replication password: code %s: %v", c, err)
	}
	if time.Since(start) > 30*time.Second {
		t.Errorf("clone with a wrong replication password took %s", time.Since(start))
	}
	tgt.exec(t, "STOP SLAVE", "RESET SLAVE ALL")
}

// itContainsServerID reports whether a MariaDB GTID list has a GTID of server id.
func itContainsServerID(list, id string) bool {
	for _, g := range itSplit(list, ',') {
		var d, s, n uint64
		if _, err := fmt.Sscanf(g, "%d-%d-%d", &d, &s, &n); err == nil && fmt.Sprint(s) == id {
			return true
		}
	}
	return false
}

func itSplit(s string, sep byte) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == sep {
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	return out
}
