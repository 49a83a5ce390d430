package main

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/sandbox"
)

// TestRelaxGC checks that dump's garbage collector settings apply, leave
// what GOGC and GOMEMLIMIT set alone, and are undone afterwards.
func TestRelaxGC(t *testing.T) {
	gcPercent := func() int {
		p := debug.SetGCPercent(100)
		debug.SetGCPercent(p)
		return p
	}
	memLimit := func() int64 { return debug.SetMemoryLimit(-1) }
	prevPercent, prevLimit := debug.SetGCPercent(100), debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() {
		debug.SetGCPercent(prevPercent)
		debug.SetMemoryLimit(prevLimit)
	})

	tests := []struct {
		name, gogc, gomemlimit string
		percent                int
		limit                  int64
	}{
		{"defaults", "", "", dumpGCPercent, dumpMemoryLimit},
		{"GOGC set", "200", "", 100, dumpMemoryLimit},
		{"GOMEMLIMIT set", "", "1GiB", dumpGCPercent, math.MaxInt64},
		{"both set", "off", "1GiB", 100, math.MaxInt64},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOGC", tc.gogc)
			t.Setenv("GOMEMLIMIT", tc.gomemlimit)
			restore := relaxGC()
			if got := gcPercent(); got != tc.percent {
				t.Errorf("GC percent %d, want %d", got, tc.percent)
			}
			if got := memLimit(); got != tc.limit {
				t.Errorf("memory limit %d, want %d", got, tc.limit)
			}
			restore()
			if got, got2 := gcPercent(), memLimit(); got != 100 || got2 != math.MaxInt64 {
				t.Errorf("after restore: GC percent %d, memory limit %d; want 100, no limit", got, got2)
			}
		})
	}
}

// TestDumpDesyncNotGalera checks that dump --desync refuses a server that
// is not a Galera node, in one line, before it creates the directory.
func TestDumpDesyncNotGalera(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologySingle})
	out := filepath.Join(t.TempDir(), "dump")
	code, _, errOut := runCLI(t, "dump", "--sandbox", d.Name, "--desync", "--out", out)
	want := "dbpilot: backup: --desync: " + d.Nodes[0].Key().String() + " is not a Galera node (wsrep_on is OFF); dump it without --desync\n"
	if code != 2 || errOut != want {
		t.Errorf("exit %d, stderr %q; want 2, %q", code, errOut, want)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("the refused dump created %s: %v", out, err)
	}
}

// TestDumpDesyncCLI runs dump --desync on node2 of a Galera cluster while
// node1 takes writes, and reads the report in the summary and in --json.
func TestDumpDesyncCLI(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyGalera, Nodes: 3})
	ctx := context.Background()
	n1, err := mysql.Open(ctx, d.Nodes[0].Key(), d.AdminOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer n1.Close()
	if err := n1.Exec(ctx, "CREATE DATABASE app", "CREATE TABLE app.t (id INT AUTO_INCREMENT PRIMARY KEY, v INT)", "INSERT INTO app.t (v) VALUES (1), (2)"); err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		for wctx.Err() == nil {
			_ = n1.Exec(wctx, "INSERT INTO app.t (v) VALUES (3)")
			time.Sleep(5 * time.Millisecond)
		}
	})
	defer func() { stop(); wg.Wait() }()

	code, out, errOut := runCLI(t, "dump", "--sandbox", d.Name, "--node", "2", "--desync", "--out", filepath.Join(t.TempDir(), "d1"))
	if code != 0 {
		t.Fatalf("dump --desync: exit %d\n%s\n%s", code, out, errOut)
	}
	node2 := d.Nodes[1].Key().String()
	for _, want := range []string{"  wsrep_desync ON for ", " on " + node2 + "; receive queue max ", "flow control sent ", "cluster paused "} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "dump: wsrep_desync ON on "+node2) || !strings.Contains(errOut, "dump: wsrep_desync OFF on "+node2+" after ") {
		t.Errorf("progress:\n%s", errOut)
	}

	code, out, errOut = runCLI(t, "dump", "--sandbox", d.Name, "--node", "2", "--desync", "--json", "-q", "--out", filepath.Join(t.TempDir(), "d2"))
	var got struct {
		Format int `json:"format"`
		Desync *struct {
			Node         string `json:"node"`
			MaxRecvQueue *int64 `json:"max_recv_queue"`
			FCSent       *int64 `json:"flow_control_sent"`
			Desynced     int64  `json:"desynced_ns"`
			Samples      int    `json:"samples"`
		} `json:"desync"`
	}
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil {
		t.Fatalf("dump --desync --json: exit %d, %v\n%s\n%s", code, err, out, errOut)
	}
	if got.Format == 0 || got.Desync == nil || got.Desync.Node != node2 || got.Desync.MaxRecvQueue == nil || got.Desync.FCSent == nil ||
		got.Desync.Desynced <= 0 || got.Desync.Samples < 2 {
		t.Errorf("--json: %s", out)
	}
	if v, _, err := n1.QueryValue(ctx, "SELECT @@GLOBAL.wsrep_desync"); err != nil || v != "0" {
		t.Errorf("node1 wsrep_desync %q, %v", v, err)
	}
	db2, err := mysql.Open(ctx, d.Nodes[1].Key(), d.AdminOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	if v, _, err := db2.QueryValue(ctx, "SELECT @@GLOBAL.wsrep_desync"); err != nil || v != "0" {
		t.Errorf("node2 wsrep_desync after the dumps %q, %v", v, err)
	}
}
