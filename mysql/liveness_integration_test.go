package mysql_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/sandbox"
)

// TestLivenessStandbyFence: with the server hung (SIGSTOP), a fence sent on
// the standby session Liveness holds runs as soon as the server runs again
// (SIGCONT): an application session waiting in a semi-sync commit is
// killed and the server is read_only, although no new session could have
// been opened while it was stopped.
func TestLivenessStandbyFence(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 2, SemiSync: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	key := d.Nodes[0].Key()
	for _, q := range []string{
		"CREATE USER app@'%' IDENTIFIED BY 'app-pw'",
		"GRANT ALL ON fencetest.* TO app@'%'",
		"CREATE DATABASE fencetest",
		"CREATE TABLE fencetest.t (id INT PRIMARY KEY)",
	} {
		if _, err := sandbox.Exec(ctx, d, "node1", q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	l := &mysql.Liveness{Options: d.AdminOptions()}
	if ch := l.Fence(key); ch != nil {
		t.Fatal("Fence before any Hold returned a channel")
	}
	held := make(chan struct{})
	holdDone := make(chan error, 1)
	go func() { holdDone <- l.Hold(ctx, key, func() { close(held) }) }()
	select {
	case <-held:
	case err := <-holdDone:
		t.Fatalf("hold: %v", err)
	case <-time.After(15 * time.Second):
		t.Fatal("liveness session not held within 15 s")
	}

	// An application session whose commit waits for a semi-sync
	// acknowledgement nobody sends: the replica's IO thread is stopped.
	if _, err := sandbox.Exec(ctx, d, "node2", "STOP SLAVE IO_THREAD"); err != nil {
		t.Fatal(err)
	}
	appOpts := mysql.Options{Credentials: mysql.Credentials{User: "app", Password: "app-pw"}, QueryTimeout: time.Minute}
	app, err := mysql.Open(ctx, key, appOpts)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	insert := make(chan error, 1)
	go func() {
		_, err := app.SQL().ExecContext(ctx, "INSERT INTO fencetest.t VALUES (1)")
		insert <- err
	}()
	// The commit waits for its acknowledgement before the server hangs.
	testutil.WaitFor(t, 10*time.Second, "the application's INSERT waiting for a semi-sync acknowledgement", func() (bool, string) {
		v, err := testutil.Value(d, "node1", "SELECT GROUP_CONCAT(CONCAT(command, '/', IFNULL(state, ''))) FROM information_schema.processlist WHERE user = 'app'")
		if err != nil {
			return false, err.Error()
		}
		return strings.Contains(strings.ToLower(v), "semi-sync"), v
	})

	resume := testutil.Hang(t, d.Nodes[0])
	done := l.Fence(key)
	if done == nil {
		t.Fatal("no standby session held on the primary")
	}
	if again := l.Fence(key); again != nil {
		t.Error("a second Fence found a standby session: it is used once")
	}
	select {
	case err := <-done:
		t.Fatalf("the fence ended while the server was stopped: %v", err)
	case <-time.After(time.Second):
	}
	resume()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("fence: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the fence did not run within 10 s of SIGCONT")
	}
	if v := ctlValue(t, d, "node1", "SELECT @@global.read_only"); v != "1" {
		t.Errorf("read_only after the fence = %s", v)
	}
	if v := ctlValue(t, d, "node1", "SELECT @@global.rpl_semi_sync_master_enabled"); v != "0" {
		t.Errorf("semi-sync primary side after the fence = %s, want off", v)
	}
	select {
	case err := <-insert:
		if err == nil {
			t.Error("the application's commit waiting for an acknowledgement was reported a success")
		}
	case <-time.After(10 * time.Second):
		t.Error("the application's session was not ended by the fence")
	}
	cancel()
	if err := <-holdDone; err != nil {
		t.Errorf("hold after cancel: %v", err)
	}
}
