package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/sandbox"
)

// With performance_schema off and the slow log in mysql.slow_log, queries
// reads the table: the probe run 30 times in the interval is one row with
// count 30, and the header says the source. --source performance_schema
// refuses the server; a bad --source is a usage error.
func TestQueriesSlowLogTable(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologySingle,
		Options: []string{"performance_schema=OFF", "slow_query_log=ON", "long_query_time=0", "log_output=TABLE"}})
	ctx := context.Background()
	db, err := mysql.Open(ctx, d.Nodes[0].Key(), d.AdminOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	const alias = "dbpilot_cli_slow_probe"
	done := make(chan error, 1)
	go func() {
		// After the first read, well before the second.
		if err := waitFirstRead(ctx, db, "SELECT COUNT(*) AS dbpilot_first_read_wait FROM mysql.slow_log"+
			" WHERE sql_text LIKE '%FROM mysql.slow_log%' AND sql_text NOT LIKE '%dbpilot_first_read_wait%'"); err != nil {
			done <- err
			return
		}
		for i := range 30 {
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
	if rep.Source != "slow_log_table" || len(rep.Instances) != 1 || rep.Instances[0].Source != "slow_log_table" ||
		rep.Instances[0].Instance != key || rep.Instances[0].Capacity != 0 || !strings.Contains(rep.Instances[0].SourceNote, "mysql.slow_log") {
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
	if probe.Count != 30 || probe.RowsSent != 30 || probe.MaxMS > probe.TotalMS || probe.Digest == "" ||
		probe.DigestText != "select ? + ? as "+alias || probe.Instance != key {
		t.Errorf("probe row = %+v", *probe)
	}

	code, out, errOut = runCLI(t, "queries", "--sandbox", d.Name, "--since-start", "--by", "count", "--source", "slow_log")
	if code != exitOK || !strings.Contains(out, "(source: slow_log_table)") || !strings.Contains(out, key+": source slow_log_table") ||
		!strings.Contains(out, alias) {
		t.Errorf("queries --since-start --source slow_log: exit %d\n%s%s", code, out, errOut)
	}
	t.Logf("queries --since-start --source slow_log:\n%s", out)
	code, out, errOut = runCLI(t, "queries", "--sandbox", d.Name, "--since-start", "--source", "performance_schema")
	if code != exitError || out != "" || !strings.Contains(errOut, "performance_schema is off on "+key) {
		t.Errorf("--source performance_schema: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, errOut = runCLI(t, "queries", "--sandbox", d.Name, "--since-start", "--source", "digest")
	if code != exitError || out != "" || !strings.Contains(errOut, `--source "digest": want auto, performance_schema or slow_log`) {
		t.Errorf("--source digest: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
