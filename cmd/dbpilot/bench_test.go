package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/loadgen"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/sandbox"
)

// Bad input gets one clear line and exit 2, before any server is touched
// where the flags alone are wrong.
func TestBenchBadInput(t *testing.T) {
	t.Setenv("DBPILOT_HOME", t.TempDir())
	addr := fmt.Sprintf("127.0.0.1:%d", closedPort(t))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "run", addr, "--workload", "nosuch", "--rate", "10"}, `unknown workload "nosuch"`},
		{[]string{"bench", "run", addr, "--rate", "1000:x"}, `"x"`},
		{[]string{"bench", "run", addr, "--ramp", "100-200"}, "--ramp"},
		{[]string{"bench", "run", addr}, "--rate R (open loop) or --threads N"},
		{[]string{"bench", "run", addr, "--rate", "10", "--threads", "2"}, "--threads is the closed loop"},
		{[]string{"bench", "run", addr, "--rate", "10", "--arrival", "bursty"}, `--arrival "bursty"`},
		{[]string{"bench", "run", addr, "--rate", "10", "--during", "meteor"}, `--during "meteor"`},
		{[]string{"bench", "run", addr, "--rate", "10", "--during", "switchover"}, "--during acts through serve"},
		{[]string{"bench", "run", addr, "--rate", "10", "--read-from", "nowhere"}, `--read-from "nowhere"`},
		{[]string{"bench", "run", addr, "--rate", "10", "--io", "epoll"}, `--io "epoll": give auto, blocking or poll`},
		{[]string{"bench", "prepare", addr, "--workload", "oltp_insert", "--db", "a`b"}, "not a usable database name"},
		// The server must answer at start.
		{[]string{"bench", "run", addr, "--rate", "10", "--duration", "1s"}, addr},
	} {
		code, out, errOut := runCLI(t, c.args...)
		if code != exitError || !strings.Contains(errOut, c.want) || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit 2 and one line with %q", c.args, code, errOut, out, c.want)
		}
	}
}

// The whole life of a benchmark on a real semi-sync sandbox: prepare
// (twice: the second refused), an open-loop run, a run through serve while
// the primary is killed (finite write-unavailability, no acknowledged write
// lost, the intervals in serve's metrics), cleanup (only what prepare made).
func TestBenchEndToEnd(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 3, SemiSync: true})
	prep := []string{"--sandbox", d.Name, "--workload", "oltp_read_write", "--tables", "2", "--table-size", "2000"}

	code, out, errOut := runCLI(t, append([]string{"bench", "prepare"}, prep...)...)
	if code != 0 || !strings.Contains(out, "prepared oltp_read_write") {
		t.Fatalf("prepare: exit %d\n%s\n%s", code, out, errOut)
	}
	code, _, errOut = runCLI(t, append([]string{"bench", "prepare"}, prep...)...)
	if code != exitError || !strings.Contains(errOut, "--force") {
		t.Errorf("prepare over existing tables: exit %d, %q; want a refusal naming --force", code, errOut)
	}

	// Open loop, low rate: every transaction due is accounted for (done,
	// or still due in the backlog when the run ended: on a loaded machine
	// semi-sync commits take over a second and the last ones wait), and
	// none failed.
	code, out, errOut = runCLI(t, append([]string{"bench", "run", "--rate", "100", "--duration", "3s", "--json"}, prep...)...)
	if code != 0 {
		t.Fatalf("run: exit %d\n%s", code, errOut)
	}
	var res struct {
		Summary   loadgen.Summary    `json:"summary"`
		Intervals []loadgen.Interval `json:"intervals"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("run --json: %v\n%s", err, out)
	}
	s := res.Summary
	var due int64
	if n := len(res.Intervals); n > 0 {
		due = res.Intervals[n-1].Backlog
	}
	if s.Errors != 0 || s.Transactions == 0 || s.Transactions+due < 295 || s.RateTarget != 100 || len(res.Intervals) < 3 || s.P99 <= 0 {
		t.Errorf("run summary: %+v, %d intervals, %d due at the end", s, len(res.Intervals), due)
	}
	if !strings.Contains(errOut, "rate ") {
		t.Errorf("no live line on stderr with --json: %q", errOut)
	}

	// Through serve, with the primary killed mid-run.
	api, _, sErr := startServe(t, d.Name)
	testutil.WaitFor(t, 20*time.Second, "serve observes the cluster", func() (bool, string) {
		resp, err := http.Get(api + "/api/clusters/" + d.Name)
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == 200 && strings.Contains(string(b), `"state":"ok"`), string(b)
	})
	code, out, errOut = runCLI(t, append([]string{"bench", "run", "--server", api, "--workload", "oltp_write_only",
		"--rate", "100", "--duration", "8s", "--during", "kill-primary", "--at", "2s", "--json"}, prep[:2]...)...)
	if code != 0 {
		t.Fatalf("run --during kill-primary: exit %d\n%s\nserve:\n%s", code, errOut, sErr.String())
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("run --json: %v\n%s", err, out)
	}
	ev := res.Summary.Event
	switch {
	case ev == nil:
		t.Fatalf("no event in the summary: %s", out)
	case ev.Kind != "kill-primary" || ev.OldPrimary != d.Nodes[0].Key().String() || ev.NewPrimary == "" || ev.NewPrimary == ev.OldPrimary:
		t.Errorf("event: kind %q, old %q, new %q", ev.Kind, ev.OldPrimary, ev.NewPrimary)
	case ev.FirstFailed.IsZero() || ev.FirstOK.IsZero() || ev.UnavailableMS <= 0 || ev.UnavailableMS >= 6000:
		t.Errorf("write-unavailability not finite: %+v\n%s", ev, errOut)
	case ev.AckedWrites < 100 || ev.LostWrites != 0:
		t.Errorf("acknowledged writes %d, lost %d; want many and none lost", ev.AckedWrites, ev.LostWrites)
	}
	// Its intervals are in serve's metrics.
	q := url.Values{"expr": {`count(dbpilot_bench_rate{workload="oltp_write_only"})`}}
	testutil.WaitFor(t, 10*time.Second, "bench intervals in serve's metrics", func() (bool, string) {
		resp, err := http.Get(api + "/api/metrics/query?" + q.Encode())
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(b), `"1"]`), string(b)
	})

	// A switchover under load: the writer follows the new primary, and no
	// acknowledged write is lost. It starts once serve has settled after
	// the failover (no recovery running, the new primary observed), and
	// the run lasts long enough for a switchover on a loaded machine to
	// finish inside it: the run reports an event only when it did.
	testutil.WaitFor(t, 20*time.Second, "serve settled on the new primary", func() (bool, string) {
		resp, err := http.Get(api + "/api/clusters/" + d.Name)
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		var st struct {
			State   string              `json:"state"`
			Primary dbpilot.InstanceKey `json:"primary"`
		}
		b, _ := io.ReadAll(resp.Body)
		if err := json.Unmarshal(b, &st); err != nil {
			return false, err.Error()
		}
		return ev != nil && st.Primary.String() == ev.NewPrimary && st.State != dbpilot.ClusterRecovering && st.State != dbpilot.ClusterDead, string(b)
	})
	code, out, errOut = runCLI(t, append([]string{"bench", "run", "--server", api, "--workload", "oltp_write_only",
		"--rate", "100", "--duration", "12s", "--during", "switchover", "--at", "2s", "--json"}, prep[:2]...)...)
	if code != 0 {
		t.Fatalf("run --during switchover: exit %d\n%s\nserve:\n%s", code, errOut, sErr.String())
	}
	var sw struct {
		Summary loadgen.Summary `json:"summary"`
	}
	if err := json.Unmarshal([]byte(out), &sw); err != nil {
		t.Fatalf("run --json: %v\n%s", err, out)
	}
	if e := sw.Summary.Event; e == nil || e.Kind != "switchover" || e.NewPrimary == "" || e.NewPrimary == e.OldPrimary ||
		e.LostWrites != 0 || e.AckedWrites < 100 || e.UnavailableMS >= 4000 {
		t.Errorf("switchover under load: %+v\n%s", e, errOut)
	} else {
		t.Logf("switchover under load: writes unavailable %.0f ms, %d failed, %d acknowledged, %d lost", e.UnavailableMS, e.Failed, e.AckedWrites, e.LostWrites)
		ev = e
	}

	// Cleanup drops what prepare made, not an unrelated table of the same
	// family's name.
	newPrimary := d.Nodes[1]
	if ev != nil && ev.NewPrimary == d.Nodes[2].Key().String() {
		newPrimary = d.Nodes[2]
	}

	db, err := mysql.Open(context.Background(), newPrimary.Key(), d.AdminOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Exec(context.Background(), "CREATE TABLE sbtest.sbtest9 (id INT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runCLI(t, "bench", "cleanup", "--sandbox", d.Name, "--workload", "oltp_read_write")
	if code != 0 {
		t.Fatalf("cleanup: exit %d\n%s\n%s", code, out, errOut)
	}
	r, err := db.Query(context.Background(), "SELECT table_name FROM information_schema.tables WHERE table_schema = 'sbtest' ORDER BY 1")
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, row := range r.Values {
		left = append(left, mysql.Str(row, 0))
	}
	if strings.Join(left, ",") != "sbtest9" {
		t.Errorf("after cleanup sbtest holds %v; want only sbtest9 (not made by prepare)", left)
	}
}
