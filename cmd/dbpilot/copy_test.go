package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot/dbcopy"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/sandbox"
)

func TestParseRenames(t *testing.T) {
	m, err := parseRenames([]string{"shop:shop_v2", "a:b"})
	if err != nil || m["shop"] != "shop_v2" || m["a"] != "b" || len(m) != 2 {
		t.Fatalf("%v, %v", m, err)
	}
	for _, bad := range [][]string{{"shop"}, {":x"}, {"x:"}, {"a:b", "a:c"}} {
		if _, err := parseRenames(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestCopyCLI runs `dbpilot copy --cutover --set-read-only --json` between
// two sandboxes, then the same copy again, which is refused.
func TestCopyCLI(t *testing.T) {
	testutil.Home(t)
	src := testutil.MustSandbox(t, sandbox.Spec{Topology: "single"})
	dst := testutil.MustSandbox(t, sandbox.Spec{Topology: "single"})
	ctx := context.Background()
	db, err := mysql.Open(ctx, src.Nodes[0].Key(), mysql.Options{Credentials: src.Admin, QueryTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Exec(ctx,
		"CREATE DATABASE app",
		"CREATE TABLE app.t (id INT PRIMARY KEY, v VARCHAR(20))",
		"INSERT INTO app.t SELECT seq, CONCAT('v', seq) FROM mysql.seq_1_to_500",
		"CREATE TABLE app.skip (id INT PRIMARY KEY)",
	); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "copy", "--from-sandbox", src.Name, "--to-sandbox", dst.Name, "--databases", "app",
		"--exclude", "app.skip", "--rename-database", "app:app2", "--cutover", "--set-read-only", "--json", "-q")
	if code != 0 {
		t.Fatalf("copy: exit %d: %s", code, errOut)
	}
	var res dbcopy.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("JSON: %v\n%s", err, out)
	}
	final, _, err := db.QueryValue(ctx, "SELECT @@GLOBAL.gtid_binlog_pos")
	if err != nil {
		t.Fatal(err)
	}
	if res.Cutover == nil || res.Cutover.FinalGTID != final || len(res.Cutover.Checksums) != 1 ||
		!res.Cutover.Checksums[0].Equal || res.Cutover.Checksums[0].Target != "app2.t" || res.Bulk.Rows != 500 {
		t.Fatalf("result: %s", out)
	}
	if err := db.Exec(ctx, "SET GLOBAL read_only = OFF"); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runCLI(t, "copy", "--from-sandbox", src.Name, "--to-sandbox", dst.Name, "--databases", "app",
		"--exclude", "app.skip", "--rename-database", "app:app2", "-q")
	if code != exitError || !strings.Contains(errOut, "app2.t exists") {
		t.Fatalf("second copy: exit %d: %s", code, errOut)
	}
}
