package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/daemon"
	"github.com/dbpilot/dbpilot/httpapi"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/sandbox"
)

// binaryEnv makes the test binary act as the dbpilot command (TestMain), so
// that tests can run serve as a process of its own and kill it with SIGKILL.
const binaryEnv = "DBPILOT_TEST_AS_BINARY"

func TestMain(m *testing.M) {
	if os.Getenv(binaryEnv) == "1" {
		mysql.SilenceDriverLog()
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// serveProcess runs `dbpilot serve --config cfg` as a process of its own
// (in its own process group, killed with the test), with env added.
func serveProcess(t *testing.T, cfg, logPath string, env ...string) *exec.Cmd {
	t.Helper()
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "serve", "--config", cfg)
	cmd.Env = append(append(os.Environ(), binaryEnv+"=1"), env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); logf.Close(); close(done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	})
	return cmd
}

// processGone reports whether pid no longer runs (gone, or a zombie).
func processGone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	f := strings.Fields(string(b))
	return len(f) > 2 && f[2] == "Z"
}

// TestServeKilledMidRecovery kills serve (SIGKILL, through the fault
// injection switch) at each named step of an automatic failover of a
// cluster seeded from its primary alone, then starts a new serve. Each time
// the new serve closes the recovery: exactly one writable primary, every
// replica under it, one recovery (never a second promotion), the
// pre-failover hook run at most once and its leftover processes killed, the
// post-failover hook run once.
func TestServeKilledMidRecovery(t *testing.T) {
	for _, step := range []string{"before-hooks", "in-pre-failover-hook", "after-promotion", "before-post-hooks"} {
		t.Run(step, func(t *testing.T) {
			d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 3})
			if code, _, errOut := runCLI(t, "serve", "--sandbox", d.Name, "--print-config"); code != 0 {
				t.Fatalf("print-config: exit %d: %s", code, errOut)
			}
			dir := t.TempDir()
			port := closedPort(t)
			url := fmt.Sprintf("http://127.0.0.1:%d", port)
			cfg := fmt.Sprintf(`listen: 127.0.0.1:%d
state: %[2]s/state.db
token_file: %[3]s/api-token
credentials: {user: %[4]s, file: %[3]s/admin.cnf}
replication: {user: %[5]s, file: %[3]s/replication.cnf}
metrics: {disabled: true}
hooks:
  pre_failover: ["echo pre >> %[2]s/pre.log; sleep 60 >/dev/null 2>&1 & echo $! > %[2]s/sleep.pid; sleep 1"]
  post_failover: ["echo post >> %[2]s/post.log"]
clusters:
  - name: c
    seeds: ['%[6]s']
    auto_failover: true
`, port, dir, d.Dir, d.Admin.User, d.Repl.User, d.Nodes[0].Key())
			path := filepath.Join(dir, "dbpilot.yml")
			if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			logPath := filepath.Join(dir, "serve.log")
			first := serveProcess(t, path, logPath, daemon.FaultEnv+"="+step)
			token, err := os.ReadFile(filepath.Join(d.Dir, "api-token"))
			if err != nil {
				t.Fatal(err)
			}
			client := httpapi.NewClient(url, strings.TrimSpace(string(token)))
			ctx := context.Background()
			serveLog := func() string { b, _ := os.ReadFile(logPath); return string(b) }
			testutil.WaitFor(t, 20*time.Second, "serve watches 3 instances", func() (bool, string) {
				st, err := client.ClusterStatus(ctx, "c")
				if err != nil {
					return false, err.Error()
				}
				return st.State == dbpilot.ClusterOK && len(st.Instances) == 3, serveLog()
			})
			time.Sleep(1500 * time.Millisecond) // the observation is saved
			if err := sandbox.Kill(d, "node1"); err != nil {
				t.Fatal(err)
			}
			exited := make(chan struct{})
			go func() {
				for !processGone(first.Process.Pid) {
					time.Sleep(50 * time.Millisecond)
				}
				close(exited)
			}()
			select {
			case <-exited:
			case <-time.After(30 * time.Second):
				t.Fatalf("serve was not killed at %s:\n%s", step, serveLog())
			}
			if !strings.Contains(serveLog(), "fault injection") {
				t.Fatalf("serve ended without reaching %s:\n%s", step, serveLog())
			}
			var sleepPID int
			if step == "in-pre-failover-hook" {
				b, err := os.ReadFile(filepath.Join(dir, "sleep.pid"))
				if err != nil {
					t.Fatalf("the hook did not start: %v", err)
				}
				sleepPID, _ = strconv.Atoi(strings.TrimSpace(string(b)))
				if processGone(sleepPID) {
					t.Fatalf("the hook's child %d died with serve already; the test cannot show the cleanup", sleepPID)
				}
			}

			serveProcess(t, path, logPath)
			var rec *dbpilot.Recovery
			testutil.WaitFor(t, 40*time.Second, "the recovery closed by the new serve", func() (bool, string) {
				recs, err := client.Recoveries(ctx, dbpilot.RecoveryFilter{Cluster: "c"})
				if err != nil || len(recs) == 0 {
					return false, fmt.Sprint(err, "\n", serveLog())
				}
				rec = recs[0]
				return !rec.Ended.IsZero(), serveLog()
			})
			recs, _ := client.Recoveries(ctx, dbpilot.RecoveryFilter{Cluster: "c"})
			if len(recs) != 1 || !rec.Success {
				t.Fatalf("recoveries %+v (want one, successful)\n%s", recs, serveLog())
			}
			// Exactly one writable primary, the other replica below it.
			var writable, replica []string
			for _, n := range []string{"node2", "node3"} {
				ro, err := testutil.Value(d, n, "SELECT @@read_only")
				if err != nil {
					t.Fatal(err)
				}
				if ro == "0" {
					writable = append(writable, n)
				} else {
					replica = append(replica, n)
				}
			}
			if len(writable) != 1 || len(replica) != 1 {
				t.Fatalf("writable %v, read-only %v: want exactly one writable primary", writable, replica)
			}
			newP, _ := d.Node(writable[0])
			if rec.NewPrimary != newP.Key() {
				t.Errorf("recovery says %s, the writable one is %s", rec.NewPrimary, newP.Key())
			}
			testutil.WaitFor(t, 15*time.Second, replica[0]+" replicates from "+writable[0], func() (bool, string) {
				rows, err := sandbox.Exec(ctx, d, replica[0], "SHOW SLAVE STATUS")
				if err != nil {
					return false, err.Error()
				}
				m := rows.Maps()
				return len(m) == 1 && m[0]["Master_Port"] == strconv.Itoa(newP.Port) && m[0]["Slave_IO_Running"] == "Yes" && m[0]["Slave_SQL_Running"] == "Yes", fmt.Sprint(m)
			})
			count := func(name string) int {
				b, _ := os.ReadFile(filepath.Join(dir, name))
				return strings.Count(string(b), "\n")
			}
			testutil.WaitFor(t, 10*time.Second, "the post-failover hook ran", func() (bool, string) { return count("post.log") >= 1, serveLog() })
			if n := count("post.log"); n != 1 {
				t.Errorf("post-failover hook ran %d times, want 1", n)
			}
			if n := count("pre.log"); n != 1 {
				t.Errorf("pre-failover hook ran %d times, want once", n)
			}
			if sleepPID != 0 {
				testutil.WaitFor(t, 5*time.Second, "the killed serve's hook processes are gone", func() (bool, string) {
					return processGone(sleepPID), fmt.Sprintf("pid %d still runs", sleepPID)
				})
			}
		})
	}
}
