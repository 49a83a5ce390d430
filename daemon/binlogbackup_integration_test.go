package daemon_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/binlog"
	"github.com/dbpilot/dbpilot/daemon"
	"github.com/dbpilot/dbpilot/gtid"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/sandbox"
)

// TestBinlogBackupFollowsFailover: serve's binlog backup streams the
// primary of a semi-sync cluster while a client writes; the primary is
// killed, serve fails over, and the backup resumes from the new primary.
// The archive then verifies (checksums, GTIDs continuous, none twice), ends
// at the new primary's gtid_binlog_pos, and holds every transaction the
// client got an OK for.
func TestBinlogBackupFollowsFailover(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 3, SemiSync: true})
	dir := t.TempDir()
	ms := openMetrics(t, dir)
	archive := filepath.Join(dir, "binlog")
	f := startDaemonWith(t, d, func(c *daemon.Config) {
		c.Queries.Disabled = true
		c.Backup.Binlog = &daemon.BinlogBackupConfig{Cluster: d.Name, Dir: archive}
	}, daemon.Wiring{MetricsStore: ms}, false)
	ctx := context.Background()
	f.exec("node1", "CREATE DATABASE app")
	f.exec("node1", "CREATE TABLE app.t (id INT PRIMARY KEY, at TIMESTAMP(6) DEFAULT CURRENT_TIMESTAMP(6))")
	testutil.WaitFor(t, 20*time.Second, "the backup streaming from node1", func() (bool, string) {
		st, _ := f.dm.BinlogBackup()
		return st.Up && st.Source == f.key("node1"), fmt.Sprintf("%+v", st)
	})

	// A client writes one row per transaction and remembers what was
	// acknowledged, on whichever node is the primary.
	var acked atomic.Int64
	var mu sync.Mutex
	ackedIDs := map[int]bool{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		id := 0
		for {
			select {
			case <-stop:
				return
			default:
			}
			st := f.status()
			if st.State != dbpilot.ClusterOK || st.Primary.Host == "" {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			opts := d.AdminOptions()
			opts.ConnectTimeout, opts.QueryTimeout = time.Second, 2*time.Second
			db, err := mysql.Open(ctx, st.Primary, opts)
			if err != nil {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			for {
				select {
				case <-stop:
					db.Close()
					return
				default:
				}
				id++
				if err := db.Exec(ctx, fmt.Sprintf("INSERT INTO app.t (id) VALUES (%d)", id)); err != nil {
					break
				}
				mu.Lock()
				ackedIDs[id] = true
				mu.Unlock()
				acked.Add(1)
				time.Sleep(5 * time.Millisecond)
			}
			db.Close()
		}
	}()
	// A rotation while streaming: the archive finishes a file.
	testutil.WaitFor(t, 10*time.Second, "writes before the rotation", func() (bool, string) { return acked.Load() > 50, "" })
	f.exec("node1", "FLUSH BINARY LOGS")
	testutil.WaitFor(t, 10*time.Second, "writes before the kill", func() (bool, string) { return acked.Load() > 100, "" })
	if err := sandbox.Kill(d, "node1"); err != nil {
		t.Fatal(err)
	}
	rec := f.waitRecovery(1, 30*time.Second)
	if !rec.Success {
		t.Fatalf("recovery: %+v\naudit:\n%s", rec, f.auditText())
	}
	newP := map[dbpilot.InstanceKey]string{f.key("node2"): "node2", f.key("node3"): "node3"}[rec.NewPrimary]
	before := acked.Load()
	testutil.WaitFor(t, 30*time.Second, "writes on the new primary", func() (bool, string) { return acked.Load() > before+100, "" })
	close(stop)
	wg.Wait()

	// The backup follows: it streams from the new primary and catches up
	// (serve's heartbeat writes a transaction every second, so the
	// positions are compared as they move).
	want := f.value(newP, "SELECT @@gtid_binlog_pos")
	testutil.WaitFor(t, 30*time.Second, "the backup at the new primary's position", func() (bool, string) {
		st, _ := f.dm.BinlogBackup()
		now := f.value(newP, "SELECT @@gtid_binlog_pos")
		return st.Up && st.Source == rec.NewPrimary && covers(t, st.Position, want), fmt.Sprintf("%+v, want position %s (now %s)", st, want, now)
	})
	st, _ := f.dm.BinlogBackup()
	if st.Gap != "" {
		t.Errorf("gap reported: %s", st.Gap)
	}
	rep, err := binlog.Verify(archive)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("archive verify: %+v", rep.Problems)
	}
	if now := f.value(newP, "SELECT @@gtid_binlog_pos"); !covers(t, rep.Position, want) || !covers(t, now, rep.Position) {
		t.Errorf("archive ends at %s: want between %s and the new primary's %s", rep.Position, want, now)
	}
	// Every acknowledged row is on the new primary (the failover lost no
	// acknowledged write), and so in the archive, which ends at its
	// position with GTIDs continuous.
	rows := f.value(newP, "SELECT COUNT(*) FROM app.t")
	mu.Lock()
	n := len(ackedIDs)
	mu.Unlock()
	var got int
	fmt.Sscan(rows, &got)
	if got < n {
		t.Errorf("the new primary has %d rows, %d were acknowledged", got, n)
	}
	// The audit tells the story: streaming from node1, then from the new
	// primary.
	a := f.auditText()
	if !strings.Contains(a, "binlog backup streams from "+f.key("node1").String()) || !strings.Contains(a, "binlog backup streams from "+rec.NewPrimary.String()) {
		t.Errorf("audit:\n%s", a)
	}
	// The metrics: up, no gap, bytes archived.
	for expr, ok := range map[string]func(float64) bool{
		`dbpilot_binlog_backup_up`:          func(v float64) bool { return v == 1 },
		`dbpilot_binlog_backup_gap`:         func(v float64) bool { return v == 0 },
		`dbpilot_binlog_backup_bytes_total`: func(v float64) bool { return v > 0 },
	} {
		testutil.WaitFor(t, 20*time.Second, expr, func() (bool, string) {
			s, err := ms.QueryInstant(ctx, expr, time.Now())
			if err != nil {
				return false, err.Error()
			}
			return len(s) == 1 && len(s[0].Points) > 0 && ok(s[0].Points[0].V), fmt.Sprintf("%+v", s)
		})
	}
	t.Logf("%d acknowledged writes; archive %d files, position %s", n, len(rep.Files), rep.Position)
}

// covers reports whether MariaDB position a has reached b in every domain
// of b.
func covers(t *testing.T, a, b string) bool {
	t.Helper()
	la, err := gtid.ParseMariaList(a)
	if err != nil {
		return false
	}
	lb, err := gtid.ParseMariaList(b)
	if err != nil {
		t.Fatalf("position %q: %v", b, err)
	}
	have := map[uint32]uint64{}
	for _, g := range gtid.HighestPerDomain(la) {
		have[g.Domain] = g.Seq
	}
	for _, g := range gtid.HighestPerDomain(lb) {
		if have[g.Domain] < g.Seq {
			return false
		}
	}
	return true
}
