package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/sandbox"
)

// TestServeTokenRoles runs serve on a real sandbox with a viewer and an
// operator token: the viewer reads but is refused a switchover (403, one
// line naming the role needed), through the API and through the CLI's
// --server; the operator's ack is done and audited with the token's name.
func TestServeTokenRoles(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 2})
	s := startWebServe(t, d, fmt.Sprintf(`tokens:
  - {name: grafana, role: viewer, token: view-secret-1}
  - {name: oncall, role: operator, token: ops-secret-1}
clusters:
  - name: %s
    seeds: [%s]
`, d.Name, d.Nodes[0].Key()))

	testutil.WaitFor(t, 15*time.Second, "serve sees the cluster with node1 primary", func() (bool, string) {
		c, body := s.cluster(d.Name)
		return c.Primary.Port == d.Nodes[0].Port, body
	})

	send := func(method, path, token, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, s.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	if code, m := send("GET", "/api/clusters/"+d.Name, "view-secret-1", ""); code != 200 || m["name"] != d.Name {
		t.Fatalf("the viewer reads the cluster: %d %v", code, m)
	}
	code, m := send("POST", "/api/clusters/"+d.Name+"/switchover", "view-secret-1", `{}`)
	want := `switchover needs a token of role operator or more; token "grafana" has role viewer`
	if code != http.StatusForbidden || m["error"] != want {
		t.Fatalf("a viewer's switchover: %d %v, want 403 %q", code, m, want)
	}
	if code, m := send("POST", "/api/clusters/"+d.Name+"/failover", "ops-secret-1", `{"dry_run": true}`); code != http.StatusForbidden ||
		m["error"] != `failover needs a token of role admin or more; token "oncall" has role operator` {
		t.Errorf("an operator's failover: %d %v, want 403", code, m)
	}

	// The CLI through serve says the same, in one line, exit 2.
	var out, errOut bytes.Buffer
	exit := run(context.Background(), []string{"switchover", d.Name, "--server", s.URL, "--token", "view-secret-1"}, &out, &errOut)
	if exit != exitError || !strings.Contains(errOut.String(), want) || strings.Count(strings.TrimSpace(errOut.String()), "\n") != 0 {
		t.Errorf("switchover --server with a viewer token: exit %d, %q; want 2 and %q", exit, errOut.String(), want)
	}
	if c, _ := s.cluster(d.Name); c.Primary.Port != d.Nodes[0].Port {
		t.Errorf("the primary moved to port %d after refused switchovers", c.Primary.Port)
	}

	// The operator acks: done, and audited as token:oncall.
	if code, m := send("POST", "/api/clusters/"+d.Name+"/ack", "ops-secret-1", `{"comment": "roles test"}`); code != 200 {
		t.Fatalf("the operator's ack: %d %v", code, m)
	}
	var audit []dbpilot.AuditEvent
	_, body := s.get("/api/audit?cluster=" + d.Name)
	if err := json.Unmarshal([]byte(body), &audit); err != nil {
		t.Fatalf("audit: %v: %s", err, body)
	}
	found := false
	for _, e := range audit {
		if e.Event == dbpilot.AuditAck {
			found = true
			if e.Detail["by"] != "token:oncall" || !strings.Contains(e.Message, "acknowledged by token:oncall") {
				t.Errorf("the ack's audit event: %+v, want detail by=token:oncall and the ack by token:oncall", e)
			}
		}
	}
	if !found {
		t.Errorf("no ack in the audit: %s", body)
	}
}
