package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/sandbox"
)

// TestQueriesServer: `queries --server` reports a probe run 30 times from
// serve's store, for the cluster and for the instance, in JSON and as a
// table; flags of the direct mode are refused with it.
func TestQueriesServer(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologySingle})
	url, out, errOut := startServe(t, d.Name)
	n1, err := d.Node("node1")
	if err != nil {
		t.Fatal(err)
	}
	node1 := n1.Key().String()

	// Wait for the statements collector's baseline of node1.
	testutil.WaitFor(t, 40*time.Second, "a first collection", func() (bool, string) {
		code, stdout, stderr := runCLI(t, "queries", "--server", url, node1, "--json")
		var rep dbpilot.QueryReport
		if code != 0 || json.Unmarshal([]byte(stdout), &rep) != nil {
			return false, stdout + stderr + "\nserve: " + out.String() + errOut.String()
		}
		return len(rep.Sources) == 1 && !rep.Sources[0].At.IsZero(), stdout
	})
	const n = 30
	for i := 0; i < n; i++ {
		if _, err := sandbox.Exec(context.Background(), d, "node1", fmt.Sprintf("SELECT %d AS dbpilot_cli_probe", i)); err != nil {
			t.Fatal(err)
		}
	}
	var row *dbpilot.QueryStat
	testutil.WaitFor(t, 40*time.Second, "the probe in serve's report", func() (bool, string) {
		code, stdout, stderr := runCLI(t, "queries", "--server", url, d.Name, "--since", "10m", "--by", "count", "--limit", "1000", "--json")
		var rep dbpilot.QueryReport
		if code != 0 || json.Unmarshal([]byte(stdout), &rep) != nil {
			return false, stdout + stderr
		}
		for i, q := range rep.Queries {
			if strings.Contains(q.DigestText, "dbpilot_cli_probe") {
				row = &rep.Queries[i]
				return q.Count == n, fmt.Sprintf("%+v", q)
			}
		}
		return false, fmt.Sprintf("%d digests", len(rep.Queries))
	})
	if row.Instance != node1 || row.Digest == "" {
		t.Errorf("probe row: %+v", *row)
	}
	// The table, for the instance.
	code, stdout, stderr := runCLI(t, "queries", "--server", url, node1, "--limit", "1000")
	if code != 0 || !strings.Contains(stdout, "dbpilot_cli_probe") || !strings.Contains(stdout, node1+": performance_schema") {
		t.Errorf("table: exit %d\n%s%s", code, stdout, stderr)
	}
	// An unknown cluster; direct-mode flags.
	if code, _, stderr := runCLI(t, "queries", "--server", url, "nope"); code != 2 || !strings.Contains(stderr, "nope") {
		t.Errorf("unknown cluster: exit %d, %s", code, stderr)
	}
	for _, args := range [][]string{
		{"queries", "--server", url, "--interval", "5s"},
		{"queries", "--server", url, "--sandbox", d.Name},
		{"queries", "--server", url, "--since", "0s"},
		{"queries", "--sandbox", d.Name, "--since", "1h"},
	} {
		if code, _, stderr := runCLI(t, args...); code != 2 || stderr == "" {
			t.Errorf("%v: exit %d, %q: want a usage error", args, code, stderr)
		}
	}
}
