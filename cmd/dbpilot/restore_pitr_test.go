package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/sandbox"
)

// TestRestorePITRUsage checks the point-in-time flags without a server.
func TestRestorePITRUsage(t *testing.T) {
	t.Setenv("DBPILOT_HOME", t.TempDir())
	port := closedPort(t)
	to := fmt.Sprintf("127.0.0.1:%d", port)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"restore", "/nonexistent", "--to", to, "--until-gtid", "0-1-5"}, "go with --binlogs"},
		{[]string{"restore", "/nonexistent", "--to", to, "--binlogs", "/x"}, "exactly one of --until-gtid"},
		{[]string{"restore", "/nonexistent", "--to", to, "--binlogs", "/x", "--until-gtid", "0-1-5", "--until-time", "2026-01-01 00:00:00"}, "exactly one of --until-gtid"},
		{[]string{"restore", "/nonexistent", "--to", to, "--binlogs", "/x", "--until-gtid", "0-1"}, "--until-gtid"},
		{[]string{"restore", "/nonexistent", "--to", to, "--binlogs", "/x", "--until-time", "yesterday"}, "RFC 3339"},
		{[]string{"restore", "/nonexistent", "--to", to, "--binlogs", "/x", "--until-gtid", "0-1-5", "--resume"}, "--resume does not go with --binlogs"},
	} {
		code, _, errOut := runCLI(t, tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
}

// TestRestorePITRCLI dumps a sandbox, writes more, copies its binary logs
// and restores to a GTID in the middle through the command line.
func TestRestorePITRCLI(t *testing.T) {
	testutil.Home(t)
	src := testutil.MustSandbox(t, sandbox.Spec{Topology: "single"})
	dst := testutil.MustSandbox(t, sandbox.Spec{Topology: "single"})
	ctx := context.Background()
	db, err := mysql.Open(ctx, src.Nodes[0].Key(), mysql.Options{Credentials: src.Admin, QueryTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	exec := func(stmts ...string) {
		t.Helper()
		if err := db.Exec(ctx, stmts...); err != nil {
			t.Fatal(err)
		}
	}
	exec("CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY)", "INSERT INTO app.t VALUES (1), (2)")
	dir := filepath.Join(t.TempDir(), "dump")
	if code, _, errOut := runCLI(t, "dump", "--sandbox", src.Name, "--out", dir, "-q"); code != 0 {
		t.Fatalf("dump: %s", errOut)
	}
	var until string
	for i := 3; i <= 30; i++ {
		exec(fmt.Sprintf("INSERT INTO app.t VALUES (%d)", i))
		if i == 17 {
			until, _, _ = db.QueryValue(ctx, "SELECT @@GLOBAL.gtid_binlog_pos")
		}
		if i%10 == 0 {
			exec("FLUSH BINARY LOGS")
		}
	}
	exec("FLUSH BINARY LOGS")
	archive := t.TempDir()
	files, _ := filepath.Glob(filepath.Join(src.Nodes[0].Datadir, "binlog.[0-9]*"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(archive, filepath.Base(f)), b, 0o600)
	}
	code, out, errOut := runCLI(t, "restore", dir, "--sandbox", dst.Name, "--binlogs", archive, "--until-gtid", until, "-q")
	if code != 0 {
		t.Fatalf("restore --until-gtid %s: exit %d: %s", until, code, errOut)
	}
	t.Log(out)
	if !strings.Contains(out, "position "+until) {
		t.Errorf("output: %s", out)
	}
	v, err := testutil.Value(dst, "node1", "SELECT CONCAT(COUNT(*), ' ', MAX(id)) FROM app.t")
	if err != nil || v != "17 17" {
		t.Errorf("target has %q (%v), want rows 1..17", v, err)
	}
	// Again: nothing to do, the dump is not restored twice.
	code, out, errOut = runCLI(t, "restore", dir, "--sandbox", dst.Name, "--binlogs", archive, "--until-gtid", until, "-q")
	if code != 0 || !strings.Contains(out, "already restored") || !strings.Contains(out, "applied 0 transactions") {
		t.Errorf("second run: exit %d: %s %s", code, out, errOut)
	}
}
