package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/sandbox"
)

// syncBuffer is a bytes.Buffer safe for a writer goroutine and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServeEndToEnd runs `dbpilot serve --sandbox` and drives it through the
// HTTP API and the CLI's --server mode: health, 401 without a token, 404 for
// an unknown cluster, a dry run, the refusal of a second serve, an automatic
// failover after a real kill, recoveries and ack.
// startServe runs `dbpilot serve --sandbox NAME` in-process on a free
// loopback port until the test ends; it returns the API's URL and serve's
// output.
func startServe(t *testing.T, name string) (url string, out, errOut *syncBuffer) {
	t.Helper()
	port := closedPort(t)
	url = fmt.Sprintf("http://127.0.0.1:%d", port)
	ctx, cancel := context.WithCancel(context.Background())
	out, errOut = &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--sandbox", name, "--listen", fmt.Sprintf("127.0.0.1:%d", port)}, out, errOut)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop within 30 s")
		}
	})
	return url, out, errOut
}

func TestServeEndToEnd(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 3, SemiSync: true})
	url, out, errOut := startServe(t, d.Name)
	get := func(path string) (int, string) {
		resp, err := http.Get(url + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		if code, _ := get("/api/health"); code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not answer: stdout %s\nstderr %s", out.String(), errOut.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(out.String(), "API on http://127.0.0.1:") {
		t.Errorf("serve did not print its address: %s", out.String())
	}
	// Wait for the first observation.
	deadline = time.Now().Add(10 * time.Second)
	for {
		_, body := get("/api/clusters/" + d.Name)
		var st struct {
			State   string `json:"state"`
			Primary struct {
				Port int `json:"port"`
			} `json:"primary"`
		}
		json.Unmarshal([]byte(body), &st)
		if st.State == "ok" && st.Primary.Port == d.Nodes[0].Port {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster status: %s", body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// SIGHUP (systemctl reload) does not end a serve without http_tls.
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, "serve notes SIGHUP", func() (bool, string) {
		return strings.Contains(errOut.String()+out.String(), "SIGHUP: nothing to reload"), errOut.String()
	})
	if code, _ := get("/api/health"); code != 200 {
		t.Fatalf("serve after SIGHUP: /api/health %d", code)
	}
	if code, body := get("/api/clusters/nosuch"); code != 404 || !strings.Contains(body, `no cluster named \"nosuch\"`) {
		t.Errorf("unknown cluster: %d %s", code, body)
	}
	// DNS rebinding: a request naming another host is refused (421) on
	// every path; localhost with serve's port is served.
	port := url[strings.LastIndex(url, ":")+1:]
	for host, want := range map[string]int{"rebind.example:" + port: 421, "localhost:" + port: 200} {
		for _, path := range []string{"/api/clusters", "/metrics", "/"} {
			req, _ := http.NewRequest("GET", url+path, nil)
			req.Host = host
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("GET %s with Host %s: %d, want %d: %s", path, host, resp.StatusCode, want, b)
			}
			if want == 421 && !strings.Contains(string(b), "add it to allowed_hosts") {
				t.Errorf("GET %s with Host %s: %s", path, host, b)
			}
		}
	}
	resp, err := http.Post(url+"/api/clusters/"+d.Name+"/failover", "application/json", strings.NewReader(`{"dry_run":true}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("POST without a token: %d, want 401", resp.StatusCode)
	}
	// The CLI through serve, with the sandbox's token.
	code, o, e := runCLI(t, "failover", d.Name, "--server", url, "--sandbox", d.Name, "--dry-run")
	if code != 0 || !strings.Contains(o, "dry run") || !strings.Contains(o, "not dead") {
		t.Errorf("failover --dry-run through serve: %d\n%s\n%s", code, o, e)
	}
	code, _, e = runCLI(t, "failover", d.Name, "--server", url, "--token", "wrong")
	if code != 2 || !strings.Contains(e, "401") && !strings.Contains(strings.ToLower(e), "token") {
		t.Errorf("wrong token: %d %s", code, e)
	}
	// A second serve on the same state is refused.
	code, _, e = runCLI(t, "serve", "--sandbox", d.Name, "--listen", "127.0.0.1:0")
	if code != 2 || !strings.Contains(e, "in use") {
		t.Errorf("second serve: exit %d, %s", code, e)
	}
	// Acting directly while serve owns the state points at --server.
	code, _, e = runCLI(t, "switchover", d.Name, "--sandbox", d.Name)
	if code != 2 || !strings.Contains(e, "--server") {
		t.Errorf("direct switchover while serve runs: %d %s", code, e)
	}
	// A real kill: serve recovers by itself and prints the events.
	if err := sandbox.Kill(d, "node1"); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(30 * time.Second)
	for !strings.Contains(errOut.String(), "event=recovered") {
		if time.Now().After(deadline) {
			t.Fatalf("no recovery printed:\n%s", errOut.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	code, o, _ = runCLI(t, "recoveries", "--server", url)
	if code != 0 || !strings.Contains(o, "failover-auto") || !strings.Contains(o, "127.0.0.1:") {
		t.Errorf("recoveries: %d\n%s", code, o)
	}
	code, o, _ = runCLI(t, "recoveries", d.Name, "--sandbox", d.Name, "--json", "--audit")
	if code != 0 || !strings.Contains(o, `"kind": "failover-auto"`) {
		t.Errorf("recoveries read directly while serve runs: %d\n%s", code, o)
	}
	code, o, e = runCLI(t, "ack", d.Name, "--server", url, "--sandbox", d.Name, "--comment", "test")
	if code != 0 || !strings.Contains(o, "1 recoveries acknowledged") {
		t.Errorf("ack: %d %s %s", code, o, e)
	}
}

// TestServeRefusesOverlappingClusters: two clusters seeded from node1 and
// node2 of one replication tree are a configuration error at start-up:
// exit 2, one line naming both clusters and the server.
func TestServeRefusesOverlappingClusters(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 3})
	if code, _, errOut := runCLI(t, "serve", "--sandbox", d.Name, "--print-config"); code != 0 {
		t.Fatalf("print-config: exit %d: %s", code, errOut)
	}
	dir := t.TempDir()
	cfg := fmt.Sprintf(`listen: 127.0.0.1:%d
state: %s/state.db
token_file: %s/api-token
credentials: {user: %s, file: %s/admin.cnf}
replication: {user: %s, file: %s/replication.cnf}
clusters:
  - name: a
    seeds: ['%s']
  - name: b
    seeds: ['%s']
`, closedPort(t), dir, d.Dir, d.Admin.User, d.Dir, d.Repl.User, d.Dir, d.Nodes[0].Key(), d.Nodes[1].Key())
	path := dir + "/dbpilot.yml"
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCLI(t, "serve", "--config", path)
	if code != 2 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, "clusters b and a") && !strings.Contains(errOut, "clusters a and b") {
		t.Fatalf("exit %d, stderr %q; want exit 2 and one line naming both clusters", code, errOut)
	}
	if !strings.Contains(errOut, "one server belongs to one cluster") {
		t.Errorf("stderr %q does not say why", errOut)
	}
}
