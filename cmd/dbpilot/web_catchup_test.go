package main

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot/internal/browser"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/sandbox"
)

// TestWebConsoleCatchUp: a replica whose SQL thread is stopped while the
// primary takes writes shows, in headless Chromium against a real serve,
// "SQL stopped" next to its lag in the topology box, the catch-up with its
// backlog on its instance page, and the primary's page its group commit.
func TestWebConsoleCatchUp(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 2})
	page := browser.New(t)
	n1, n2 := d.Nodes[0].Key().String(), d.Nodes[1].Key().String()
	s := startWebServe(t, d, fmt.Sprintf("clusters:\n  - name: %s\n    seeds: [%s, %s]\n    auto_failover: false\n", d.Name, n1, n2))
	testutil.WaitFor(t, 15*time.Second, "serve sees the cluster ok", func() (bool, string) {
		c, body := s.cluster(d.Name)
		return c.State == "ok", body
	})
	ctx := context.Background()
	exec := func(node, q string) {
		t.Helper()
		if _, err := sandbox.Exec(ctx, d, node, q); err != nil {
			t.Fatalf("%s on %s: %v", q, node, err)
		}
	}
	exec("node1", "CREATE DATABASE catchup")
	exec("node1", "CREATE TABLE catchup.t (id INT AUTO_INCREMENT PRIMARY KEY, v INT)")
	exec("node2", "STOP SLAVE SQL_THREAD")
	t.Cleanup(func() { sandbox.Exec(ctx, d, "node2", "START SLAVE SQL_THREAD") })
	for i := 0; i < 40; i++ { // 20 writes a second for 2 s
		exec("node1", "INSERT INTO catchup.t (v) VALUES (1)")
		time.Sleep(50 * time.Millisecond)
	}

	p := page.With(t)
	p.Navigate(s.URL + "/clusters/" + d.Name)
	box := nodeSel(n2) + ` tspan.catchup[data-state="stopped"]`
	p.WaitSelector(box, 15*time.Second)
	if got := p.Text(box); got != "SQL stopped" {
		t.Errorf("the replica's box says %q next to its lag, want \"SQL stopped\"", got)
	}
	if p.Has(nodeSel(n1) + " tspan.catchup") {
		t.Errorf("the primary's box has a catch-up")
	}
	p.Screenshot("catchup-topology")

	p.Navigate(s.URL + "/instances/" + n2)
	p.WaitSelector(`p.catchup[data-state="stopped"]`, 15*time.Second)
	text := p.Text(`p.catchup[data-state="stopped"]`)
	m := regexp.MustCompile(`backlog (\d+) tx`).FindStringSubmatch(text)
	if m == nil || !strings.Contains(text, "SQL thread stopped: falling behind by") {
		t.Fatalf("the replica's page says %q", text)
	}
	// 40 inserts (and serve's heartbeats) not applied.
	if n, _ := strconv.Atoi(m[1]); n < 40 {
		t.Errorf("backlog %d on the page, want at least the 40 inserts: %q", n, text)
	}
	p.Screenshot("catchup-instance")

	// The primary's group commit, once serve's metrics have a minute's
	// rate of Binlog_commits (read every 5 s).
	p.Navigate(s.URL + "/instances/" + n1)
	p.WaitSelector(`p.group-commit`, 30*time.Second)
	if gc := p.Text(`p.group-commit`); !strings.Contains(gc, "commits per group") && !strings.Contains(gc, "no group commits") {
		t.Errorf("the primary's group commit line: %q", gc)
	}
	if p.Has(`p.catchup`) {
		t.Errorf("the primary's page has a catch-up line")
	}
}
