package main

import (
	"context"
	"encoding/json"
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

// TestReplayUsage checks replay's flags and the refusals that need no
// server: each exits 2 with one line naming what is wrong.
func TestReplayUsage(t *testing.T) {
	t.Setenv("DBPILOT_HOME", t.TempDir())
	to := fmt.Sprintf("127.0.0.1:%d", closedPort(t))
	recorded, _ := filepath.Abs(filepath.Join("..", "..", "pitr", "testdata", "recorded"))
	gap := filepath.Join(t.TempDir(), "gap")
	if err := os.CopyFS(gap, os.DirFS(recorded)); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(gap, "binlog.000004"))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"replay", "--binlogs", recorded}, "name the target"},
		{[]string{"replay", "--target", to}, "--binlogs DIR"},
		{[]string{"replay", "--binlogs", recorded, "--target", to, "--modes", "fast"}, "not a parallel mode"},
		{[]string{"replay", "--binlogs", recorded, "--target", to, "--threads", "4,x"}, "--threads"},
		{[]string{"replay", "--binlogs", recorded, "--target", to, "--from-gtid", "0-1"}, "--from-gtid"},
		{[]string{"replay", "--binlogs", recorded, "--target", to, "--rate", "-1"}, "--rate"},
		// A gap is refused before a sandbox is deployed for --dump.
		{[]string{"replay", "--binlogs", gap, "--dump", "/nonexistent"}, "binlog.000004 is missing"},
		{[]string{"replay", "--binlogs", recorded, "--until-gtid", "0-1-99999", "--dump", "/nonexistent"}, "not a transaction of the archive"},
	} {
		code, _, errOut := runCLI(t, tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.want) || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
			t.Errorf("%v: exit %d, %q; want 2 and one line with %q", tc.args, code, errOut, tc.want)
		}
	}
}

// TestReplayCLI replays a small archive through the command line with
// --dump and no target: replay deploys its own sandbox, restores the dump
// before each setting, prints JSON, writes the HTML report, and removes the
// sandbox at the end.
func TestReplayCLI(t *testing.T) {
	home := testutil.Home(t)
	src := testutil.MustSandbox(t, sandbox.Spec{Topology: "single"})
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
	exec("CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY, n INT)", "INSERT INTO app.t VALUES (1, 0), (2, 0)")
	dir := filepath.Join(t.TempDir(), "dump")
	if code, _, errOut := runCLI(t, "dump", "--sandbox", src.Name, "--out", dir, "-q"); code != 0 {
		t.Fatalf("dump: %s", errOut)
	}
	from, _, err := db.QueryValue(ctx, "SELECT @@GLOBAL.gtid_binlog_pos")
	if err != nil {
		t.Fatal(err)
	}
	for i := 3; i <= 40; i++ {
		exec(fmt.Sprintf("INSERT INTO app.t VALUES (%d, 0)", i), fmt.Sprintf("UPDATE app.t SET n = n + 1 WHERE id = %d", i%2+1))
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
	html := filepath.Join(t.TempDir(), "replay.html")
	code, out, errOut := runCLI(t, "replay", "--binlogs", archive, "--dump", dir, "--from-gtid", from, "--modes", "optimistic", "--threads", "0,2", "--json", "--html", html, "-q")
	if code != 0 {
		t.Fatalf("replay: exit %d: %s", code, errOut)
	}
	var res struct {
		Stretch struct {
			Transactions int `json:"transactions"`
		} `json:"stretch"`
		Settings []struct {
			Mode         string            `json:"mode"`
			Threads      int               `json:"threads"`
			Transactions int               `json:"transactions"`
			Identical    bool              `json:"identical"`
			Checksums    map[string]string `json:"checksums"`
		} `json:"settings"`
		Reason string `json:"reason"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("JSON: %v\n%s", err, out)
	}
	if res.Stretch.Transactions != 76 || len(res.Settings) != 2 {
		t.Fatalf("stretch of %d transactions, %d settings; want 76 and 2", res.Stretch.Transactions, len(res.Settings))
	}
	r, err := db.Query(ctx, "CHECKSUM TABLE app.t EXTENDED")
	if err != nil || len(r.Values) != 1 {
		t.Fatalf("checksum on the source: %v", err)
	}
	want := mysql.Str(r.Values[0], 1)
	for _, s := range res.Settings {
		if s.Transactions != 76 || !s.Identical || s.Checksums["app.t"] != want {
			t.Errorf("%s/%d: %d transactions, identical %v, checksum %q (source %q)", s.Mode, s.Threads, s.Transactions, s.Identical, s.Checksums["app.t"], want)
		}
	}
	b, err := os.ReadFile(html)
	if err != nil || strings.Count(string(b), "<svg") != 2 {
		t.Errorf("HTML report: %v, %d charts", err, strings.Count(string(b), "<svg"))
	}
	// Only the test's own sandbox is left.
	ents, _ := os.ReadDir(filepath.Join(home, "sandboxes"))
	for _, e := range ents {
		if e.Name() != src.Name {
			t.Errorf("sandbox %s left behind", e.Name())
		}
	}
	t.Logf("reason: %s", res.Reason)
}
