package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/sandbox"
)

func TestQueriesBadInput(t *testing.T) {
	t.Setenv("DBPILOT_HOME", t.TempDir())
	port := closedPort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"queries"}, "name a server as HOST:PORT or a sandbox with --sandbox NAME"},
		{[]string{"queries", addr, "--by", "latency"}, `--by "latency": want total, avg, count or rows`},
		{[]string{"queries", addr, "--limit", "0"}, "--limit 0: want 1 or more"},
		{[]string{"queries", addr, "--interval", "0s"}, "--interval 0s: want a positive duration"},
		{[]string{"queries", addr, "--interval", "5s", "--since-start"}, "either --interval or --since-start"},
		{[]string{"queries", addr, "127.0.0.1:1"}, "queries takes one HOST:PORT"},
		{[]string{"queries", "--sandbox", "nosuch"}, "nosuch"},
		{[]string{"queries", addr}, "connection refused"},
	} {
		code, out, errOut := runCLI(t, tt.args...)
		if code != exitError || out != "" || !strings.Contains(errOut, tt.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and one line with %q", tt.args, code, out, errOut, tt.want)
		}
	}
}

// waitFirstRead polls query (a count of the CLI's reads of the server's
// statement statistics, which leaves the poll's own statements out) until
// it is positive: the CLI has taken its first sample. A fixed sleep was
// too short when the CLI started slowly on a loaded machine.
func waitFirstRead(ctx context.Context, db *mysql.DB, query string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		v, _, err := db.QueryValue(ctx, query)
		if err != nil {
			return err
		}
		if v != "0" && v != "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the CLI's first read did not happen within 30 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The probe statement run 50 times inside the interval shows as one row
// with count 50; --since-start shows the cumulative count; a server with
// performance_schema off is refused with how to turn it on.
func TestQueriesSandbox(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologySingle})
	ctx := context.Background()
	db, err := mysql.Open(ctx, d.Nodes[0].Key(), d.AdminOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	const alias = "dbpilot_cli_probe"
	done := make(chan error, 1)
	go func() {
		// After the first sample, well before the second (5 s later).
		if err := waitFirstRead(ctx, db, "SELECT COUNT(*) AS dbpilot_first_read_wait FROM performance_schema.events_statements_summary_by_digest"+
			" WHERE digest_text LIKE '%events_statements_summary_by_digest%' AND digest_text NOT LIKE '%dbpilot_first_read_wait%'"); err != nil {
			done <- err
			return
		}
		for i := range 50 {
			if _, _, err := db.QueryValue(ctx, "SELECT ? + 1 AS "+alias, i); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	code, out, errOut := runCLI(t, "queries", "--sandbox", d.Name, "--interval", "5s", "--json", "--limit", "1000")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if code != exitOK {
		t.Fatalf("queries: exit %d: %s", code, errOut)
	}
	var rep queriesReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("queries --json: %v\n%s", err, out)
	}
	key := d.Nodes[0].Key().String()
	if rep.Source != "performance_schema" || rep.Mode != "interval" || rep.IntervalS != 5 || len(rep.Instances) != 1 ||
		rep.Instances[0].Instance != key || rep.Instances[0].Capacity != 2000 || rep.Instances[0].Full {
		t.Errorf("header = %+v", rep)
	}
	var probe *queryRow
	for i, r := range rep.Queries {
		if strings.Contains(r.DigestText, alias) {
			probe = &rep.Queries[i]
		}
	}
	if probe == nil {
		t.Fatalf("no row for the probe:\n%s", out)
	}
	if probe.Count != 50 || probe.TotalMS <= 0 || probe.AvgMS <= 0 || probe.MaxMS <= 0 || probe.MaxMS > probe.TotalMS ||
		probe.RowsSent != 50 || probe.Errors != 0 || probe.Instance != key || probe.Digest == "" {
		t.Errorf("probe row = %+v", *probe)
	}
	// The raw JSON has the documented names.
	for _, k := range []string{`"digest"`, `"digest_text"`, `"schema"`, `"count"`, `"total_ms"`, `"avg_ms"`, `"max_ms"`, `"rows_examined"`,
		`"rows_sent"`, `"errors"`, `"no_index_used"`, `"tmp_disk_tables"`, `"instance"`, `"capacity"`, `"lost_digests"`, `"source"`} {
		if !strings.Contains(out, k) {
			t.Errorf("JSON lacks %s", k)
		}
	}

	code, out, errOut = runCLI(t, "queries", "--sandbox", d.Name, "--node", "1", "--since-start", "--by", "count")
	if code != exitOK || !strings.Contains(out, "cumulative") || !strings.Contains(out, alias) || !strings.Contains(out, "of 2000 digests") {
		t.Errorf("queries --since-start: exit %d\n%s%s", code, out, errOut)
	}

	off := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologySingle, Options: []string{"performance_schema=OFF"}})
	code, out, errOut = runCLI(t, "queries", "--sandbox", off.Name, "--since-start")
	if code != exitError || out != "" || !strings.Contains(errOut, "performance_schema is off on "+off.Nodes[0].Key().String()) ||
		!strings.Contains(errOut, "performance_schema=ON") {
		t.Errorf("performance_schema off: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
