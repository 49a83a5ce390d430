package daemon_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/daemon"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/metrics"
	"github.com/dbpilot/dbpilot/sandbox"
)

// startMonitoring runs a daemon with collection, the metrics store and alerts.
func startMonitoring(t *testing.T, d *sandbox.Descriptor, rules string) (*fixture, *metrics.Store) {
	t.Helper()
	dir := t.TempDir()
	ms := openMetrics(t, dir)
	f := startDaemonWith(t, d, func(c *daemon.Config) {
		c.Alerts.Interval = daemon.Duration(200 * time.Millisecond)
		c.Clusters[0].AutoFailover = false // these tests watch a failure, not its recovery
		if rules != "" {
			p := filepath.Join(dir, "rules.yaml")
			os.WriteFile(p, []byte(rules), 0o600)
			c.Alerts.Rules = p
		}
	}, daemon.Wiring{MetricsStore: ms}, true)
	return f, ms
}

func waitAlert(t *testing.T, f *fixture, rule, instance, state string, timeout time.Duration) *dbpilot.Alert {
	t.Helper()
	var found *dbpilot.Alert
	testutil.WaitFor(t, timeout, fmt.Sprintf("alert %s on %s %s", rule, instance, state), func() (bool, string) {
		alerts, err := f.dm.Alerts(context.Background(), dbpilot.AlertFilter{Cluster: f.d.Name, Limit: 100})
		if err != nil {
			return false, err.Error()
		}
		// Every alert with its times, so that a failure tells an alert
		// stuck pending from one raised again and again.
		var seen []string
		for _, a := range alerts {
			if a.Rule == rule && a.Labels["instance"] == instance && a.State == state {
				found = a
				return true, ""
			}
			seen = append(seen, fmt.Sprintf("%s/%s/%s active %s resolved %s %s", a.Rule, a.Labels["instance"], a.State,
				a.ActiveAt.Format("15:04:05.000"), a.ResolvedAt.Format("15:04:05.000"), a.Suppressed))
		}
		st := f.status()
		return false, fmt.Sprintf("now %s, alerts %v; cluster %s, %d monitored, instances %s, detached %s",
			time.Now().Format("15:04:05.000"), seen, st.State, f.dm.Monitored(), instanceList(st.Instances), instanceList(st.Detached))
	})
	return found
}

// instanceList names instances with their reachability and sources.
func instanceList(is []*dbpilot.Instance) string {
	var b strings.Builder
	for _, i := range is {
		fmt.Fprintf(&b, "[%s reachable=%t", i.Key, i.Reachable)
		for _, c := range i.Channels {
			fmt.Fprintf(&b, " from %s", c.Source)
		}
		b.WriteString("] ")
	}
	return b.String()
}

// TestAlertFiresAndResolves: an alert fires within its `for` after a
// replica's IO thread is stopped and resolves after it restarts; metrics are
// queryable with PromQL.
func TestAlertFiresAndResolves(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 3})
	f, ms := startMonitoring(t, d, "")
	replica := f.key("node2").String()
	// Metrics arrive: counters rise, heartbeat lag is known.
	deadline := time.Now().Add(10 * time.Second)
	for {
		s, err := ms.QueryInstant(context.Background(), `rate(mysql_global_status_questions{instance="`+replica+`"}[5s])`, time.Now())
		if err == nil && len(s) == 1 && s[0].Points[0].V > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no rate for questions: %v %v", s, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	f.exec("node2", "STOP SLAVE IO_THREAD")
	stopped := time.Now()
	a := waitAlert(t, f, "ReplicationIOStopped", replica, dbpilot.AlertFiring, 25*time.Second)
	took := a.FiredAt.Sub(stopped)
	t.Logf("ReplicationIOStopped fired %s after STOP SLAVE IO_THREAD (for: 10s)", took)
	if took < 9*time.Second {
		t.Errorf("fired after %s, before its for of 10s", took)
	}
	if a.Labels["cluster"] != d.Name || a.Labels["role"] != "replica" || !strings.Contains(a.Summary, replica) {
		t.Errorf("alert: %+v", a)
	}
	f.exec("node2", "START SLAVE IO_THREAD")
	waitAlert(t, f, "ReplicationIOStopped", replica, dbpilot.AlertResolved, 15*time.Second)
}

// TestReplicaAlertsSuppressedWhilePrimaryDown: when the primary dies, the
// replicas' replication alerts are suppressed (the cause is the primary);
// the primary's own alert fires.
func TestReplicaAlertsSuppressedWhilePrimaryDown(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 3})
	rules := `groups:
  - name: t
    rules:
      - alert: ReplicationIOStopped
        expr: mysql_slave_status_slave_io_running == 0
        for: 1s
        severity: critical
        summary: "IO stopped on {{ $labels.instance }}"
      - alert: MySQLDown
        expr: mysql_up == 0
        for: 1s
        severity: critical
        summary: "{{ $labels.instance }} is down"
`
	f, ms := startMonitoring(t, d, rules)
	// Collection runs on every node before the primary dies.
	testutil.WaitFor(t, 15*time.Second, "mysql_up 1 on 3 nodes", func() (bool, string) {
		series, err := ms.QueryInstant(context.Background(), "mysql_up == 1", time.Now())
		return err == nil && len(series) == 3, fmt.Sprint(len(series), " series, ", err)
	})
	if err := sandbox.Kill(d, "node1"); err != nil {
		t.Fatal(err)
	}
	f.waitState(dbpilot.ClusterDead, 15*time.Second)
	a := waitAlert(t, f, "ReplicationIOStopped", f.key("node2").String(), dbpilot.AlertFiring, 15*time.Second)
	if !strings.Contains(a.Suppressed, "is down") {
		t.Errorf("replica alert not suppressed while the primary is down: %+v", a)
	}
	p := waitAlert(t, f, "MySQLDown", f.key("node1").String(), dbpilot.AlertFiring, 15*time.Second)
	if p.Suppressed != "" {
		t.Errorf("the primary's own alert is suppressed: %+v", p)
	}
}

// TestPrometheusScrapesMetrics: a real Prometheus server (Debian package
// prometheus) scrapes the daemon's /metrics and sees mysqld_exporter names.
func TestPrometheusScrapesMetrics(t *testing.T) {
	prom, err := exec.LookPath("prometheus")
	if err != nil {
		if testutil.InCI() {
			t.Fatal("CI=true and the prometheus binary is not installed (make test-deps installs it)")
		}
		t.Skip("prometheus not installed (make test-deps installs it)")
	}
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 2})
	_, ms := startMonitoring(t, d, "")
	srv := httptest.NewServer(ms.Handler())
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	promAddr := l.Addr().String()
	l.Close()
	cfg := fmt.Sprintf("global: {scrape_interval: 1s, scrape_timeout: 900ms}\nscrape_configs:\n  - job_name: dbpilot\n    honor_labels: true\n    static_configs: [{targets: ['%s']}]\n", strings.TrimPrefix(srv.URL, "http://"))
	os.WriteFile(filepath.Join(dir, "prom.yml"), []byte(cfg), 0o600)
	cmd := exec.Command(prom, "--config.file="+filepath.Join(dir, "prom.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+promAddr)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var logb strings.Builder
	cmd.Stdout, cmd.Stderr = &logb, &logb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	deadline := time.Now().Add(30 * time.Second)
	var body string
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + promAddr + "/api/v1/query?query=" + "count(mysql_up%3D%3D1)%20and%20count(mysql_global_status_commands_total)%3E0")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(b)
			if strings.Contains(body, `"value":[`) && strings.Contains(body, `"2"]`) {
				return
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("Prometheus never saw both instances up: %s\nprometheus log:\n%s", body, logb.String())
}
