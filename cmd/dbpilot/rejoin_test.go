package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/httpapi"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/sandbox"
)

// TestRejoinThroughServe: a serve (on a port of its own, not the default)
// fails a sandbox over; the old primary comes back and serve fences it.
// topology and analyze, through serve and directly, show it fenced with no
// errant transactions; relocate points at rejoin; a direct command refused
// because serve owns the state names serve's real address; 'dbpilot rejoin'
// through serve attaches it below the new primary, where it replicates.
func TestRejoinThroughServe(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 3})
	url, out, errOut := startServe(t, d.Name)
	ctx := context.Background()
	api := httpapi.NewClient(url, "")
	old := d.Nodes[0].Key()
	status := func() (*dbpilot.ClusterStatus, string) {
		st, err := api.ClusterStatus(ctx, d.Name)
		if err != nil {
			return &dbpilot.ClusterStatus{}, err.Error()
		}
		return st, fmt.Sprintf("%s primary %s fenced %+v", st.State, st.Primary, st.Fenced)
	}
	testutil.WaitFor(t, 20*time.Second, "serve sees node1 primary", func() (bool, string) {
		st, s := status()
		return st.State == dbpilot.ClusterOK && st.Primary == old, s + "\n" + out.String() + errOut.String()
	})
	if _, err := sandbox.Exec(ctx, d, "node1", "CREATE DATABASE app"); err != nil {
		t.Fatal(err)
	}
	if _, err := sandbox.Exec(ctx, d, "node1", "CREATE TABLE app.t (id INT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	testutil.WaitValue(t, d, "node2", "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'app'", "1", 10*time.Second)
	testutil.WaitValue(t, d, "node3", "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'app'", "1", 10*time.Second)
	if err := sandbox.Kill(d, "node1"); err != nil {
		t.Fatal(err)
	}
	var newP dbpilot.InstanceKey
	testutil.WaitFor(t, 30*time.Second, "serve fails over", func() (bool, string) {
		st, s := status()
		newP = st.Primary
		return st.State == dbpilot.ClusterOK && !newP.IsZero() && newP != old, s
	})
	newNode := "node2"
	if newP == d.Nodes[2].Key() {
		newNode = "node3"
	}
	if err := sandbox.Start(ctx, d, "node1", sandbox.ProcessOptions{KillWithParent: true}); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 20*time.Second, "node1 fenced, no errant transactions", func() (bool, string) {
		st, s := status()
		return len(st.Fenced) == 1 && st.Fenced[0].Key == old && st.Fenced[0].ReadOnly && st.Fenced[0].Compared && st.Fenced[0].Errant == "", s
	})

	fencedLine := "- " + old.String()
	for _, args := range [][]string{
		{"topology", "--server", url, "--sandbox", d.Name},
		{"topology", "--sandbox", d.Name}, // crawled directly: known from its GTIDs
	} {
		code, o, e := runCLI(t, args...)
		line := ""
		for _, l := range strings.Split(o, "\n") {
			if strings.HasPrefix(l, fencedLine) {
				line = l
			}
		}
		if code != 1 || !strings.Contains(line, ",ro,") || !strings.Contains(line, "FencedOldPrimary") || !strings.HasSuffix(line, "former primary, fenced, errant: none") {
			t.Errorf("%v: exit %d, the old primary's line %q\n%s%s", args, code, line, o, e)
		}
		if !strings.HasPrefix(o, newP.String()) {
			t.Errorf("%v: the tree does not start at the new primary %s:\n%s", args, newP, o)
		}
		t.Logf("%v:\n%s", args, o)
	}
	code, o, e := runCLI(t, "analyze", "--server", url, "--sandbox", d.Name)
	if code != 1 || !strings.Contains(o, "FencedOldPrimary") || !strings.Contains(o, "'dbpilot rejoin "+old.String()+"'") {
		t.Errorf("analyze --server: exit %d\n%s%s", code, o, e)
	}
	code, _, e = runCLI(t, "relocate", old.String(), "--below", newP.String(), "--server", url, "--sandbox", d.Name)
	if code != 2 || !strings.Contains(e, "dbpilot rejoin "+old.String()) || strings.Count(strings.TrimSpace(e), "\n") != 0 {
		t.Errorf("relocate of the fenced old primary: exit %d, %q", code, e)
	}
	// Acting directly while serve owns the state: the error names the
	// address serve listens on, not the default.
	code, _, e = runCLI(t, "rejoin", old.String(), "--sandbox", d.Name)
	if code != 2 || !strings.Contains(e, "--server "+url) || strings.Contains(e, "7070") {
		t.Errorf("direct rejoin while serve runs: exit %d, %q; want it to name %s", code, e, url)
	}

	code, o, e = runCLI(t, "rejoin", old.String(), "--server", url, "--sandbox", d.Name, "--dry-run")
	if code != 0 || !strings.Contains(o, "dry run: rejoin") || !strings.Contains(o, "attach "+old.String()) {
		t.Errorf("rejoin --dry-run: exit %d\n%s%s", code, o, e)
	}
	t.Logf("rejoin --dry-run:\n%s", o)
	code, o, e = runCLI(t, "rejoin", old.String(), "--server", url, "--sandbox", d.Name)
	if code != 0 || !strings.Contains(o, "rejoin of cluster "+d.Name+" succeeded") {
		t.Fatalf("rejoin through serve: exit %d\n%s%s", code, o, e)
	}
	testutil.WaitFor(t, 10*time.Second, "node1 a member replicating from the new primary", func() (bool, string) {
		st, s := status()
		for _, i := range st.Instances {
			if i.Key == old && i.Channel(newP) != nil && i.Channel(newP).Healthy() && i.ReadOnly && len(st.Fenced) == 0 {
				return true, s
			}
		}
		return false, s
	})
	if _, err := sandbox.Exec(ctx, d, newNode, "INSERT INTO app.t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	testutil.WaitValue(t, d, "node1", "SELECT COUNT(*) FROM app.t", "1", 10*time.Second)
	testutil.WaitValue(t, d, "node1", "SELECT @@read_only", "1", time.Second)
	code, o, e = runCLI(t, "topology", "--server", url, "--sandbox", d.Name)
	if code != 0 || strings.Contains(o, fencedLine) || !strings.Contains(o, "+ "+old.String()) {
		t.Errorf("topology after the rejoin: exit %d\n%s%s", code, o, e)
	}
}

// TestRejoinDirect: without serve, a manual failover; the old primary
// starts again writable (nobody fenced it). topology (crawling) shows it
// as a former primary NOT fenced; 'dbpilot rejoin --sandbox' (a new
// process: it knows the old primary from the state file) sets it
// read_only and attaches it below the new primary.
func TestRejoinDirect(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 3})
	ctx := context.Background()
	old := d.Nodes[0].Key()
	if _, err := sandbox.Exec(ctx, d, "node1", "CREATE DATABASE app"); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"node2", "node3"} {
		testutil.WaitValue(t, d, n, "SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name = 'app'", "1", 10*time.Second)
	}
	if err := sandbox.Kill(d, "node1"); err != nil {
		t.Fatal(err)
	}
	code, o, e := runCLI(t, "failover", d.Name, "--sandbox", d.Name)
	if code != 0 {
		t.Fatalf("failover: exit %d\n%s%s", code, o, e)
	}
	if err := sandbox.Start(ctx, d, "node1", sandbox.ProcessOptions{KillWithParent: true}); err != nil {
		t.Fatal(err)
	}
	// The sandbox starts a former primary read_only (node2 is writable);
	// a server configured without read_only comes back writable.
	testutil.WaitValue(t, d, "node1", "SELECT @@read_only", "1", 10*time.Second)
	if _, err := sandbox.Exec(ctx, d, "node1", "SET GLOBAL read_only = OFF"); err != nil {
		t.Fatal(err)
	}
	code, o, e = runCLI(t, "topology", "--sandbox", d.Name)
	if code != 1 || !strings.Contains(o, "- "+old.String()) || !strings.Contains(o, "MultipleWritable former primary, NOT fenced: writable") {
		t.Errorf("topology with the old primary back writable: exit %d\n%s%s", code, o, e)
	}
	code, o, e = runCLI(t, "rejoin", old.String(), "--sandbox", d.Name)
	if code != 0 || !strings.Contains(o, "succeeded") {
		t.Fatalf("rejoin: exit %d\n%s%s", code, o, e)
	}
	testutil.WaitValue(t, d, "node1", "SELECT @@read_only", "1", time.Second)
	code, o, e = runCLI(t, "topology", "--sandbox", d.Name)
	if code != 0 || !strings.Contains(o, "+ "+old.String()) || strings.Contains(o, "- "+old.String()) {
		t.Errorf("topology after the rejoin: exit %d\n%s%s", code, o, e)
	}
}
