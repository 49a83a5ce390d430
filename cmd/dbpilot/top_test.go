package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/sandbox"
)

func TestTopBadInput(t *testing.T) {
	t.Setenv("DBPILOT_HOME", t.TempDir())
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"top"}, "name a server as HOST:PORT or a sandbox with --sandbox NAME"},
		{[]string{"top", "127.0.0.1:1", "--interval", "10ms"}, "--interval 10ms is too short"},
		{[]string{"top", "127.0.0.1:1", "--count", "-1"}, "--count -1"},
		{[]string{"top", "127.0.0.1:1", "--view", "disk"}, `unknown view "disk"`},
		{[]string{"top", "--sandbox", "nosuch"}, `no sandbox named "nosuch"`},
		{[]string{"top", "--server", "http://127.0.0.1:1", "--count", "1"}, "top: GET /api/clusters"},
	}
	for _, tt := range tests {
		code, out, errOut := runCLI(t, tt.args...)
		if code != exitError || !strings.Contains(errOut, tt.want) || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", tt.args, code, out, errOut, tt.want)
		}
	}
	// Every instance down at the first read is a connection error.
	port := closedPort(t)
	code, _, errOut := runCLI(t, "top", fmt.Sprintf("127.0.0.1:%d", port), "--count", "1")
	if code != exitError || !strings.Contains(errOut, "connection refused") {
		t.Errorf("unreachable: exit %d, stderr %q", code, errOut)
	}
}

var topLineRE = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\S* instance=127\.0\.0\.1:(\d+) role=(primary|replica) qps=[0-9.]+ select=[0-9.]+ insert=[0-9.]+ update=[0-9.]+ delete=[0-9.]+ threads_running=\d+ threads_connected=\d+ lag=(\S+) dirty_pct=[0-9.]+ checkpoint_pct=[0-9.]+ `)

// TestTopIntegration runs top against a real 3-node replication sandbox:
// once with output to a buffer (lines), once full screen in tmux driven by
// key presses.
func TestTopIntegration(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 3})

	t.Run("non-tty", func(t *testing.T) {
		start := time.Now()
		code, out, errOut := runCLI(t, "top", "--sandbox", d.Name, "--count", "2")
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("2 refreshes took %s", took)
		}
		if strings.Contains(out, "\x1b") {
			t.Errorf("ANSI escapes in output that is not a terminal: %q", out)
		}
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) != 2*3 {
			t.Fatalf("%d lines, want 2 refreshes × 3 instances:\n%s", len(lines), out)
		}
		times := map[string]bool{}
		roles := map[string]int{}
		for _, l := range lines {
			m := topLineRE.FindStringSubmatch(l)
			if m == nil {
				t.Fatalf("line does not match %s:\n%s", topLineRE, l)
			}
			times[strings.Fields(l)[0]] = true
			roles[m[2]]++
			switch m[2] {
			case "primary":
				if m[3] != "-" {
					t.Errorf("primary with a lag: %s", l)
				}
			case "replica":
				if !regexp.MustCompile(`^\d+\.\d$`).MatchString(m[3]) || !strings.Contains(l, " io=Yes sql=Yes") {
					t.Errorf("replica without a lag or running threads: %s", l)
				}
			}
		}
		if len(times) != 2 || roles["primary"] != 2 || roles["replica"] != 4 {
			t.Errorf("refresh times %v, roles %v:\n%s", times, roles, out)
		}
	})

	t.Run("queries non-tty", func(t *testing.T) {
		// The digests are read every 5 s: one refresh is the second read.
		code, out, errOut := runCLI(t, "top", "--sandbox", d.Name, "--node", "1", "--view", "q", "--count", "1")
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		primary := d.Nodes[0].Key().String()
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if !regexp.MustCompile(`^\S+ instance=` + regexp.QuoteMeta(primary) + ` digests=\d+ capacity=\d+ lost=\d+ lost_in_span=\d+ full=(true|false)$`).MatchString(lines[0]) {
			t.Fatalf("first line is not the digest table's:\n%s", out)
		}
		digest := regexp.MustCompile(`^\S+ instance=` + regexp.QuoteMeta(primary) + ` span_s=[0-9.]+ schema=\S+ digest=\S+ count=\d+ calls_per_s=[0-9.]+ load_ms_per_s=[0-9.]+ avg_ms=[0-9.]+ max_ms=[0-9.]+ rows_examined_per_s=[0-9.]+ errors=\d+ no_index_used=\d+ text=".*"$`)
		status := false
		for _, l := range lines[1:] {
			if !digest.MatchString(l) {
				t.Errorf("not a digest line: %s", l)
			}
			status = status || strings.Contains(l, `text="SHOW GLOBAL STATUS"`)
		}
		if !status {
			t.Errorf("top's own SHOW GLOBAL STATUS is not among the digests:\n%s", out)
		}
	})

	t.Run("tmux", func(t *testing.T) {
		tmux, err := exec.LookPath("tmux")
		if err != nil {
			if testutil.InCI() {
				t.Fatal("CI=true and tmux is not installed")
			}
			t.Skip("tmux is not installed")
		}
		bin := filepath.Join(t.TempDir(), "dbpilot")
		build := exec.Command("go", "build", "-o", bin, "./cmd/dbpilot")
		build.Dir = filepath.Join("..", "..")
		if b, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, b)
		}
		sock := fmt.Sprintf("dbpilot-top-%d-%d", os.Getpid(), rand.IntN(1_000_000))
		run := func(args ...string) (string, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			b, err := exec.CommandContext(ctx, tmux, append([]string{"-L", sock}, args...)...).CombinedOutput()
			return string(b), err
		}
		t.Cleanup(func() { run("kill-server") })
		if out, err := run("new-session", "-d", "-x", "200", "-y", "50", "-e", "DBPILOT_HOME="+os.Getenv("DBPILOT_HOME"),
			bin+" top --sandbox "+d.Name); err != nil {
			t.Fatalf("tmux new-session: %v\n%s", err, out)
		}
		screen := func() string {
			out, err := run("capture-pane", "-p")
			if err != nil {
				t.Fatalf("tmux capture-pane: %v\n%s", err, out)
			}
			return out
		}
		// waitScreen waits until ok accepts the screen.
		waitScreen := func(what string, ok func(string) bool) string {
			t.Helper()
			deadline := time.Now().Add(15 * time.Second)
			for {
				s := screen()
				if ok(s) {
					return s
				}
				if time.Now().After(deadline) {
					t.Fatalf("screen never showed %s:\n%s", what, s)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
		// rows returns the screen's lines about the sandbox's nodes, split
		// into fields, by node.
		rows := func(s string) map[string][]string {
			out := map[string][]string{}
			for _, l := range strings.Split(s, "\n") {
				f := strings.Fields(l)
				for _, n := range d.Nodes {
					if len(f) > 0 && f[0] == n.Key().String() {
						out[n.Name] = f
					}
				}
			}
			return out
		}
		hasAll := func(s string, words ...string) bool {
			for _, w := range words {
				if !strings.Contains(s, w) {
					return false
				}
			}
			return true
		}

		// Overview: three rows with their roles and, after the second read,
		// rates.
		s := waitScreen("the overview with rates", func(s string) bool {
			r := rows(s)
			if len(r) != 3 || !hasAll(s, "[o:overview]", "INSTANCE", "ROLE", "QPS", "SEL/s", "RUN", "CONN", "LAG", "DIRTY%", "CKPT%", "ROWS_R/s") {
				return false
			}
			for _, f := range r {
				if len(f) < 3 || f[2] == "-" {
					return false
				}
			}
			return true
		})
		r := rows(s)
		if r["node1"][1] != "primary" || r["node2"][1] != "replica" || r["node3"][1] != "replica" {
			t.Errorf("roles wrong:\n%s", s)
		}

		// InnoDB view.
		run("send-keys", "i")
		waitScreen("the innodb view", func(s string) bool {
			return hasAll(s, "[i:innodb]", "DIRTY%", "CKPT%", "CKPT_AGE", "HISTORY", "ROWS_I/s", "PEND_R", "PEND_FSYNC") && len(rows(s)) == 3
		})

		// Replication view: the replicas' lag column holds seconds.
		run("send-keys", "r")
		s = waitScreen("the replication view", func(s string) bool {
			return hasAll(s, "[r:replication]", "CHANNEL", "SOURCE", "IO", "SQL", "LAG", "RELAY_SPACE", "GTID") && len(rows(s)) == 3
		})
		header := ""
		for _, l := range strings.Split(s, "\n") {
			if strings.HasPrefix(l, "INSTANCE") {
				header = l
			}
		}
		lagCol := -1
		for i, f := range strings.Fields(header) {
			if f == "LAG" {
				lagCol = i
			}
		}
		r = rows(s)
		primary := d.Nodes[0].Key().String()
		for _, n := range []string{"node2", "node3"} {
			f := r[n]
			if lagCol < 0 || len(f) <= lagCol || !regexp.MustCompile(`^\d+(\.\d)?s$`).MatchString(f[lagCol]) ||
				f[3] != primary || f[4] != "Yes" || f[5] != "Yes" {
				t.Errorf("%s: no lag in column %d or not replicating from %s: %q\n%s", n, lagCol, primary, f, s)
			}
		}
		if f := r["node1"]; len(f) <= lagCol || f[lagCol] != "-" {
			t.Errorf("primary row %q", f)
		}

		// Queries view: the digest table is read every 5 s; top's own
		// statements are digests of the second read.
		run("send-keys", "q")
		waitScreen("the queries view with digests", func(s string) bool {
			return hasAll(s, "[q:queries]", "TOP DIGESTS by load over the last", "CALLS/s", "LOAD_ms/s", "DIGEST_TEXT", "SHOW GLOBAL STATUS")
		})

		// Ctrl-C quits: the pane (and so the session) ends.
		run("send-keys", "C-c")
		deadline := time.Now().Add(10 * time.Second)
		for {
			if _, err := run("has-session"); err != nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("top still runs after Ctrl-C:\n%s", screen())
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
}
