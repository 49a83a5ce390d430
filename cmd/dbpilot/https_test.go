package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot/internal/browser"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/sandbox"
)

// httpsServe starts serve on a real sandbox over HTTPS with a certificate
// of a test CA (serial 100) and a viewer and an operator token.
func httpsServe(t *testing.T, d *sandbox.Descriptor) (*webServe, *testutil.CA, *testutil.ServerCert) {
	t.Helper()
	ca := testutil.NewCA(t)
	sc := ca.IssueValid(t, t.TempDir(), "serve", 100)
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	s := startWebServeTLS(t, d, fmt.Sprintf(`http_tls: {cert_file: %s, key_file: %s}
tokens:
  - {name: grafana, role: viewer, token: view-secret-1}
  - {name: oncall, role: operator, token: ops-secret-1}
clusters:
  - name: %s
    seeds: [%s]
`, sc.CertFile, sc.KeyFile, d.Name, d.Nodes[0].Key()), pool)
	return s, ca, sc
}

// serialSeen is the serial of the certificate a new connection to url gets.
func serialSeen(t *testing.T, url string, pool *x509.CertPool) int64 {
	t.Helper()
	host := strings.TrimPrefix(url, "https://")
	conn, err := tls.Dial("tcp", host, &tls.Config{RootCAs: pool})
	if err != nil {
		t.Fatalf("TLS to %s: %v", host, err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
}

// TestServeHTTPS: serve answers HTTPS with the configured certificate;
// the CLI reaches it with the CA (--server-ca or $DBPILOT_SERVER_CA) and
// is refused with an x509 error without it; a viewer's switchover is 403.
// SIGHUP swaps the certificate while an event stream stays open and keeps
// receiving events; a pair that fails to load keeps the one in use and
// logs a line naming the file.
func TestServeHTTPS(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 2})
	s, ca, sc := httpsServe(t, d)
	testutil.WaitFor(t, 15*time.Second, "serve sees the cluster with node1 primary", func() (bool, string) {
		c, body := s.cluster(d.Name)
		return c.Primary.Port == d.Nodes[0].Port, body
	})
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	if !strings.Contains(s.out.String(), "web console and API on "+s.URL+"/") {
		t.Errorf("the banner does not name %s: %s", s.URL, s.out.String())
	}
	if got := serialSeen(t, s.URL, pool); got != 100 {
		t.Fatalf("serial %d, want 100", got)
	}

	cli := func(env string, args ...string) (int, string) {
		t.Helper()
		t.Setenv("DBPILOT_SERVER_CA", env)
		var out, errOut bytes.Buffer
		code := run(context.Background(), args, &out, &errOut)
		return code, out.String() + errOut.String()
	}
	if code, out := cli("", "recoveries", d.Name, "--server", s.URL, "--server-ca", ca.File, "--token", "view-secret-1"); code != 0 {
		t.Errorf("recoveries --server-ca: exit %d: %s", code, out)
	}
	if code, out := cli(ca.File, "recoveries", d.Name, "--server", s.URL, "--token", "view-secret-1"); code != 0 {
		t.Errorf("recoveries with $DBPILOT_SERVER_CA: exit %d: %s", code, out)
	}
	code, out := cli("", "recoveries", d.Name, "--server", s.URL, "--token", "view-secret-1")
	if code != exitError || !strings.Contains(out, "x509: certificate signed by unknown authority") || !strings.Contains(out, "--server-ca") {
		t.Errorf("recoveries without the CA: exit %d: %s; want 2 and an x509 error naming --server-ca", code, out)
	}
	code, out = cli("", "switchover", d.Name, "--server", s.URL, "--server-ca", ca.File, "--token", "view-secret-1")
	if code != exitError || !strings.Contains(out, `switchover needs a token of role operator or more; token "grafana" has role viewer`) {
		t.Errorf("switchover with a viewer token: exit %d: %s; want 2 and the role needed", code, out)
	}

	// An event stream, open across the reloads.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", s.URL+"/api/clusters/"+d.Name+"/events", nil)
	req.Header.Set("Authorization", "Bearer view-secret-1")
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.TLS.PeerCertificates[0].SerialNumber.Int64() != 100 {
		t.Fatalf("event stream: %d, serial %v", resp.StatusCode, resp.TLS.PeerCertificates[0].SerialNumber)
	}
	var events atomic.Int64
	streamEnded := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if sc.Text() == "event: cluster" {
				events.Add(1)
			}
		}
		streamEnded <- sc.Err()
	}()
	testutil.WaitFor(t, 10*time.Second, "the stream's first event", func() (bool, string) { return events.Load() >= 1, "" })

	// A new pair (serial 101) over the files, then SIGHUP.
	next := ca.IssueValid(t, t.TempDir(), "next", 101)
	testutil.CopyPEM(t, next.CertFile, sc.CertFile)
	testutil.CopyPEM(t, next.KeyFile, sc.KeyFile)
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, "a new connection gets serial 101", func() (bool, string) {
		got := serialSeen(t, s.URL, pool)
		return got == 101, fmt.Sprintf("serial %d; serve's log: %s", got, s.errOut.String())
	})
	if !strings.Contains(s.errOut.String(), "certificate reloaded") || !strings.Contains(s.errOut.String(), "serial=101") {
		t.Errorf("serve's log does not say the certificate was reloaded: %s", s.errOut.String())
	}

	// A key that does not match: the reload fails, serial 101 stays.
	other := ca.IssueValid(t, t.TempDir(), "other", 102)
	testutil.CopyPEM(t, other.KeyFile, sc.KeyFile)
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, "serve logs the failed reload", func() (bool, string) {
		return strings.Contains(s.errOut.String(), "not reloaded"), s.errOut.String()
	})
	for _, line := range strings.Split(s.errOut.String(), "\n") {
		if strings.Contains(line, "not reloaded") && !strings.Contains(line, "key file "+sc.KeyFile+" does not match the certificate in "+sc.CertFile) {
			t.Errorf("the failed reload's line does not name the file: %s", line)
		}
	}
	if got := serialSeen(t, s.URL, pool); got != 101 {
		t.Errorf("after a failed reload serial %d, want 101 (kept)", got)
	}

	// The stream opened before both reloads still receives: an ack
	// changes the status.
	before := events.Load()
	ack, _ := http.NewRequest("POST", s.URL+"/api/clusters/"+d.Name+"/ack", strings.NewReader(`{"comment":"https test"}`))
	ack.Header.Set("Authorization", "Bearer ops-secret-1")
	aresp, err := s.client.Do(ack)
	if err != nil || aresp.StatusCode != 200 {
		t.Fatalf("ack: %v %v", err, aresp)
	}
	aresp.Body.Close()
	testutil.WaitFor(t, 10*time.Second, "an event on the stream opened before the reloads", func() (bool, string) {
		select {
		case err := <-streamEnded:
			t.Fatalf("the stream ended: %v", err)
		default:
		}
		return events.Load() > before, fmt.Sprintf("%d events", events.Load())
	})
}

// TestServeHTTPSBadStart: a missing file, a key that does not match, an
// expired certificate stop serve at start with one line naming the file,
// before anything starts: no listener, no state file.
func TestServeHTTPSBadStart(t *testing.T) {
	dir := t.TempDir()
	ca := testutil.NewCA(t)
	good := ca.IssueValid(t, dir, "good", 2)
	other := ca.IssueValid(t, dir, "other", 3)
	expired := ca.Issue(t, dir, "expired", 4, time.Now().Add(-48*time.Hour), time.Now().Add(-time.Minute))
	missing := filepath.Join(dir, "missing.crt")
	tests := []struct{ cert, key, want string }{
		{missing, good.KeyFile, "serve: http_tls: certificate file " + missing + ": no such file or directory"},
		{good.CertFile, other.KeyFile, "serve: http_tls: key file " + other.KeyFile + " does not match the certificate in " + good.CertFile},
		{expired.CertFile, expired.KeyFile, "serve: http_tls: certificate file " + expired.CertFile + ": the certificate expired at "},
	}
	for i, tt := range tests {
		state := filepath.Join(dir, fmt.Sprintf("state%d.db", i))
		cfg := filepath.Join(dir, fmt.Sprintf("c%d.yaml", i))
		port := closedPort(t)
		os.WriteFile(cfg, []byte(fmt.Sprintf(`state: %s
http_tls: {cert_file: %s, key_file: %s}
credentials: {user: u, password: p}
replication: {user: r, password: p}
clusters: [{name: main, seeds: ["127.0.0.1:%d"]}]
`, state, tt.cert, tt.key, closedPort(t))), 0o600)
		var out, errOut bytes.Buffer
		code := run(context.Background(), []string{"serve", "--config", cfg, "--listen", fmt.Sprintf("127.0.0.1:%d", port)}, &out, &errOut)
		msg := strings.TrimSpace(errOut.String())
		if code != exitError || !strings.Contains(msg, tt.want) || strings.Contains(msg, "\n") {
			t.Errorf("serve with %s and %s: exit %d, %q; want 2 and one line containing %q", filepath.Base(tt.cert), filepath.Base(tt.key), code, msg, tt.want)
		}
		if _, err := os.Stat(state); !os.IsNotExist(err) {
			t.Errorf("serve made its state file %s before refusing the certificate (%v)", state, err)
		}
		if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second); err == nil {
			c.Close()
			t.Errorf("something listens on serve's port %d after the refusal", port)
		}
	}
	// The same through the flags: --http-tls-cert without --http-tls-key.
	var out, errOut bytes.Buffer
	cfg := filepath.Join(dir, "noflags.yaml")
	os.WriteFile(cfg, []byte("state: "+filepath.Join(dir, "s.db")+"\ncredentials: {user: u, password: p}\nreplication: {user: r, password: p}\nclusters: [{name: main, seeds: [\"127.0.0.1:1\"]}]\n"), 0o600)
	if code := run(context.Background(), []string{"serve", "--config", cfg, "--http-tls-cert", good.CertFile}, &out, &errOut); code != exitError ||
		!strings.Contains(errOut.String(), "give both --http-tls-cert and --http-tls-key") {
		t.Errorf("--http-tls-cert alone: exit %d, %s", code, errOut.String())
	}
}

// TestWebConsoleHTTPSRoles opens the console over HTTPS in real Chromium,
// which trusts the test CA the way a desktop does: the CA is added to the
// NSS database of the HOME Chromium runs with (browser.TrustCA); a
// Chromium without it refuses the page. The page
// asks serve what its token may do (GET /api/whoami): a viewer sees no
// switchover, failover, ack or relocate control; an operator sees
// switchover, ack and relocate, and no failover. Every resource comes from
// the page's own https origin (no mixed content).
func TestWebConsoleHTTPSRoles(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 2})
	s, ca, _ := httpsServe(t, d)
	replica := d.Nodes[1].Key().String()

	// Without the pin Chromium refuses the test CA's certificate.
	untrusting := browser.New(t)
	if err := untrusting.Tab.Navigate(s.URL + "/"); err == nil || !strings.Contains(err.Error(), "ERR_CERT") {
		t.Errorf("a Chromium that does not trust the certificate loaded the console: %v", err)
	}
	untrusting.Browser().Close()

	trust, err := browser.TrustCA(t.TempDir(), ca.File)
	if err != nil {
		t.Fatal(err)
	}
	p := browser.New(t, trust)
	p.Navigate(s.URL + "/clusters/" + d.Name)
	p.WaitSelector(`svg#topology g.node`, 30*time.Second)
	if proto := p.EvalString(`location.protocol`); proto != "https:" {
		t.Fatalf("the console is on %q, want https:", proto)
	}
	// Without a token every control shows (a click asks for one).
	for _, sel := range []string{`button[data-action="switchover"]`, `button[data-action="failover"]`, `button[data-action="ack"]`} {
		if !p.Has(sel) {
			t.Errorf("without a token the page lacks %s", sel)
		}
	}

	setToken := func(tok string) {
		t.Helper()
		if p.EvalString(`sessionStorage.getItem("dbpilot.token") || ""`) != "" {
			p.Click("#token-button") // forget
		}
		p.Click("#token-button")
		p.WaitJS(`document.querySelector("dialog#token")?.open`, 10*time.Second)
		p.Type("#token-input", tok)
		p.Click(`dialog#token button[data-action="save-token"]`)
	}
	controls := func(where string, want map[string]bool) {
		t.Helper()
		for sel, present := range want {
			if p.Has(sel) != present {
				t.Errorf("%s: %s present %v, want %v", where, sel, !present, present)
			}
		}
	}

	// A viewer: no action.
	setToken("view-secret-1")
	p.WaitSelector(`.role-note[data-role="viewer"]`, 15*time.Second)
	controls("cluster page, viewer", map[string]bool{
		`button[data-action="switchover"]`: false, `#switchover-to`: false, `button[data-action="failover"]`: false,
		`button[data-action="ack"]`: false, `svg#topology g.handle`: false, `p.hint`: false,
	})
	if txt := p.Text("#token-button"); !strings.Contains(txt, "grafana (viewer)") {
		t.Errorf("the header says %q, want the token's name and role", txt)
	}
	p.Screenshot("https-viewer-cluster")
	p.Navigate(s.URL + "/instances/" + replica)
	p.WaitSelector(`.view.instance`, 15*time.Second)
	p.WaitJS(`document.querySelector("#token-button")?.dataset.role === "viewer"`, 15*time.Second)
	controls("instance page, viewer", map[string]bool{`button[data-action="relocate"]`: false, `button[data-action="switchover"]`: false})

	// An operator: switchover, ack and relocate; no failover.
	p.Navigate(s.URL + "/clusters/" + d.Name)
	setToken("ops-secret-1")
	p.WaitSelector(`.role-note[data-role="operator"]`, 15*time.Second)
	controls("cluster page, operator", map[string]bool{
		`button[data-action="switchover"]`: true, `#switchover-to`: true, `button[data-action="failover"]`: false,
		`button[data-action="ack"]`: true, `svg#topology g.handle`: true, `p.hint`: true,
	})
	p.Screenshot("https-operator-cluster")
	p.Navigate(s.URL + "/instances/" + replica)
	p.WaitSelector(`.view.instance`, 15*time.Second)
	p.WaitSelector(`button[data-action="relocate"]`, 15*time.Second)
	controls("instance page, operator", map[string]bool{`button[data-action="relocate"]`: true, `button[data-action="switchover"]`: true})
	p.Screenshot("https-operator-instance")

	// Same origin, no mixed content.
	var foreign []string
	p.Eval(`performance.getEntriesByType("resource").map((e) => e.name).filter((u) => !u.startsWith(location.origin + "/"))`, &foreign)
	if len(foreign) > 0 {
		t.Errorf("resources from elsewhere than the page's origin: %v", foreign)
	}
	for _, line := range p.Tab.Console() {
		if strings.Contains(strings.ToLower(line), "mixed content") {
			t.Errorf("console: %s", line)
		}
	}
}
