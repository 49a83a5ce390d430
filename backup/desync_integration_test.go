package backup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/sandbox"
)

// TestDumpDesyncGalera dumps node2 of a 3-node Galera cluster with Desync
// while node1 takes writes: wsrep_desync is ON while the snapshots are
// taken and OFF after, the report has the catch-up's numbers, and a dump
// that fails while the node is desynced still puts it back.
func TestDumpDesyncGalera(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyGalera, Nodes: 3})
	n1, n2, n3 := itConnect(t, d, 0), itConnect(t, d, 1), itConnect(t, d, 2)
	n1.exec(t, "CREATE DATABASE gd", "CREATE TABLE gd.t (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(32))",
		"INSERT INTO gd.t (v) VALUES ('a'), ('b'), ('c')")
	desyncOf := func(s *itServer) string {
		// A session variable read of a global boolean prints 1 or 0.
		return s.value(t, "SELECT @@GLOBAL.wsrep_desync")
	}

	// A small writer on node1 for the whole test.
	wctx, stopWriter := context.WithCancel(context.Background())
	var writes atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for wctx.Err() == nil {
			if err := n1.db.Exec(wctx, "INSERT INTO gd.t (v) VALUES ('w')"); err == nil {
				writes.Add(1)
			}
			time.Sleep(2 * time.Millisecond)
		}
	})
	t.Cleanup(func() { stopWriter(); wg.Wait() })
	testutil.WaitFor(t, 30*time.Second, "the writer writing", func() (bool, string) {
		return writes.Load() >= 20, fmt.Sprint(writes.Load(), " writes")
	})

	t.Run("desynced during the snapshot only", func(t *testing.T) {
		var during string
		var rep *DesyncReport
		var afterSnapshot atomic.Value
		out := filepath.Join(t.TempDir(), "dump")
		m, err := Dump(context.Background(), n2.key, n2.opts, DumpOptions{
			Out: out, Threads: 2, ChunkRows: 200, Filter: Filter{Databases: []string{"gd"}},
			Desync: true, DesyncInterval: 20 * time.Millisecond, DesyncWait: 30 * time.Second,
			OnLocked: func() {
				during = desyncOf(n2)
				// Hold the lock a while: node2 cannot commit what node1
				// writes, and its receive queue grows.
				time.Sleep(time.Second)
			},
			OnChunk: func(*Table, *Chunk) {
				if afterSnapshot.Load() == nil {
					afterSnapshot.Store(desyncOf(n2))
				}
			},
			OnDesync: func(r DesyncReport) { rep = &r },
		})
		if err != nil {
			t.Fatalf("dump --desync: %v", err)
		}
		if during != "1" {
			t.Errorf("wsrep_desync while the snapshots were taken = %q, want 1", during)
		}
		if v := afterSnapshot.Load(); v != "0" {
			t.Errorf("wsrep_desync while the data was copied = %v, want 0", v)
		}
		if v := desyncOf(n2); v != "0" {
			t.Errorf("wsrep_desync after the dump = %q, want 0", v)
		}
		if rep == nil {
			t.Fatal("no desync report")
		}
		t.Logf("%d writes on node1; report: %s; lock %s held %s", writes.Load(), rep, m.Lock.Kind, m.Lock.Held)
		if rep.Node != n2.key.String() || rep.Off.Before(rep.On) || rep.Desynced < time.Second || rep.Samples < 10 {
			t.Errorf("report %+v", *rep)
		}
		if !rep.Drained || rep.DrainTime <= 0 || rep.DrainTime > 30*time.Second {
			t.Errorf("the queue did not drain: %+v", *rep)
		}
		if rep.MaxRecvQueue <= 0 || rep.RecvQueueAtOff <= 0 {
			t.Errorf("node2's receive queue did not grow while its snapshots were taken under node1's writes: %+v", *rep)
		}
		if rep.FlowControlSent < 0 || rep.FlowControlPaused < 0 {
			t.Errorf("flow control %+v", *rep)
		}
		if m.Totals.Rows < 3 {
			t.Errorf("dumped %d rows", m.Totals.Rows)
		}
	})

	t.Run("a dump that fails while desynced puts the node back", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var during string
		out := filepath.Join(t.TempDir(), "dump")
		_, err := Dump(ctx, n2.key, n2.opts, DumpOptions{
			Out: out, Threads: 2, Filter: Filter{Databases: []string{"gd"}}, Desync: true,
			OnLocked: func() {
				during = desyncOf(n2)
				cancel() // Ctrl-C while the lock is held
			},
		})
		if err == nil || !errors.Is(err, context.Canceled) && dbpilot.ErrorCode(err) != dbpilot.EUNAVAIL {
			t.Fatalf("interrupted dump: %v", err)
		}
		if during != "1" {
			t.Errorf("wsrep_desync during the snapshot = %q, want 1", during)
		}
		if v := desyncOf(n2); v != "0" {
			t.Errorf("wsrep_desync after an interrupted dump = %q, want 0", v)
		}
		if _, err := os.Stat(filepath.Join(out, IncompleteFile)); err != nil {
			t.Errorf("the interrupted dump is not marked incomplete: %v", err)
		}
	})

	t.Run("a dump that fails after the snapshot leaves the node synced", func(t *testing.T) {
		restore := createFile
		createFile = func(string) (fileWriter, error) { return nil, errors.New("disk full (test)") }
		defer func() { createFile = restore }()
		_, err := Dump(context.Background(), n2.key, n2.opts, DumpOptions{Out: filepath.Join(t.TempDir(), "dump"), Threads: 2, Filter: Filter{Databases: []string{"gd"}}, Desync: true})
		if err == nil {
			t.Fatal("dump with failing files succeeded")
		}
		if v := desyncOf(n2); v != "0" {
			t.Errorf("wsrep_desync after a failed dump = %q, want 0", v)
		}
	})

	t.Run("refused on a node desynced by someone else", func(t *testing.T) {
		n3.exec(t, "SET GLOBAL wsrep_desync = ON")
		defer n3.exec(t, "SET GLOBAL wsrep_desync = OFF")
		out := filepath.Join(t.TempDir(), "dump")
		_, err := Dump(context.Background(), n3.key, n3.opts, DumpOptions{Out: out, Filter: Filter{Databases: []string{"gd"}}, Desync: true})
		itWantCode(t, "dump --desync of a desynced node", err, dbpilot.ECONFLICT, "wsrep_desync is already ON")
		if v := desyncOf(n3); v != "1" {
			t.Errorf("the refusal changed wsrep_desync to %q", v)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("the refused dump created %s: %v", out, err)
		}
	})
}

// TestDumpDesyncRefused checks that Desync on a server that is not a
// Galera node is refused before anything is written.
func TestDumpDesyncRefused(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologySingle})
	s := itConnect(t, d, 0)
	s.exec(t, "CREATE DATABASE nd", "CREATE TABLE nd.t (id INT PRIMARY KEY)")
	out := filepath.Join(t.TempDir(), "dump")
	_, err := Dump(context.Background(), s.key, s.opts, DumpOptions{Out: out, Desync: true})
	itWantCode(t, "dump --desync of a server without Galera", err, dbpilot.EUNSUPPORTED, s.key.String()+" is not a Galera node (wsrep_on is OFF)")
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("the refused dump created %s: %v", out, err)
	}
}
