package metrics

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/wlog"

	"github.com/dbpilot/dbpilot"
)

// TestDiskFullGuard simulates a full disk deterministically by replacing
// the free-space probe: writes are refused with ENOSPC, counted and logged,
// /metrics keeps the latest values, and writes work again once space is
// back.
func TestDiskFullGuard(t *testing.T) {
	var logBuf bytes.Buffer
	s, err := Open(Options{Dir: t.TempDir(), MinFreeBytes: 100 << 20, Logger: slog.New(slog.NewTextHandler(&logBuf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var free uint64 = 1 << 40
	s.freeSpace = func(string) (uint64, error) { return free, nil }
	ctx := context.Background()
	mustWrite(t, s, batch(primary, "primary", "global_status", t0, gauge("mysql_global_status_threads_connected", 1)))

	free = 50 << 20
	s.freeAt = time.Time{} // read the free space again now
	err = s.Write(ctx, batch(primary, "primary", "global_status", t0.Add(time.Second), gauge("mysql_global_status_threads_connected", 2)))
	if !errors.Is(err, syscall.ENOSPC) || dbpilot.ErrorCode(err) != dbpilot.EUNAVAIL || !strings.Contains(err.Error(), "50 MiB free") {
		t.Fatalf("write on a full disk: %v", err)
	}
	err = s.Write(ctx, batch(replica, "replica", "global_status", t0.Add(time.Second), gauge("mysql_global_status_threads_connected", 3)))
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("second write on a full disk: %v", err)
	}
	if v := scrapeValue(t, s, "dbpilot_tsdb_write_errors_total"); v != 2 {
		t.Errorf("write errors %v, want 2", v)
	}
	if n := strings.Count(logBuf.String(), "metrics store write failed"); n != 1 {
		t.Errorf("%d error lines for 2 errors within a minute, want 1:\n%s", n, &logBuf)
	}
	fams, _ := scrape(t, s)
	if mf := fams["mysql_global_status_threads_connected"]; mf == nil || len(mf.Metric) != 2 || mf.Metric[0].Gauge.GetValue() != 2 {
		t.Errorf("/metrics during the failure: %v", mf)
	}

	free = 1 << 40
	s.freeAt = time.Time{}
	mustWrite(t, s, batch(primary, "primary", "global_status", t0.Add(2*time.Second), gauge("mysql_global_status_threads_connected", 4)))
	got, err := s.QueryRange(ctx, `mysql_global_status_threads_connected{role="primary"}`, t0, t0.Add(2*time.Second), time.Second)
	if err != nil || len(got) != 1 {
		t.Fatalf("after recovery: %v %v", got, err)
	}
	var vals []float64
	for _, p := range got[0].Points {
		vals = append(vals, p.V)
	}
	// The refused sample is missing; the point at +1s repeats the one
	// before it (lookback).
	if fmt.Sprint(vals) != "[1 1 4]" {
		t.Errorf("stored values %v, want [1 1 4]", vals)
	}
}

// TestWALDiskFull makes the TSDB itself fail with ENOSPC: the WAL's next
// segment is a symbolic link to /dev/full (writes to it fail with ENOSPC),
// and segments are 32 KiB so that a few batches reach it. The failed
// commits are returned wrapped, counted, the process does not panic, and
// /metrics keeps serving the latest values.
func TestWALDiskFull(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs Linux's /dev/full")
	}
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Fatalf("Linux without /dev/full: %v", err)
	}
	dir := t.TempDir()
	s, err := open(Options{Dir: dir, MinFreeBytes: -1}, func(o *tsdb.Options) { o.WALSegmentSize = 32 << 10 })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, last, err := wlog.Segments(filepath.Join(dir, "wal"))
	if err != nil {
		t.Fatal(err)
	}
	for k := last + 1; k <= last+3; k++ {
		if err := os.Symlink("/dev/full", wlog.SegmentName(filepath.Join(dir, "wal"), k)); err != nil {
			t.Fatal(err)
		}
	}

	ctx := context.Background()
	var werr error
	var i int
	for i = 0; i < 500 && werr == nil; i++ {
		samples := make([]dbpilot.Sample, 200)
		for j := range samples {
			samples[j] = counter(fmt.Sprintf("mysql_global_status_x%d", j), float64(i*j))
		}
		werr = s.Write(ctx, batch(primary, "primary", "global_status", t0.Add(time.Duration(i)*time.Second), samples...))
	}
	if !errors.Is(werr, syscall.ENOSPC) || dbpilot.ErrorCode(werr) != dbpilot.EUNAVAIL {
		t.Fatalf("after %d batches: %v, want ENOSPC", i, werr)
	}
	t.Logf("batch %d failed: %v", i, werr)
	// Further writes fail the same way, without a panic.
	werr = s.Write(ctx, batch(primary, "primary", "global_status", t0.Add(time.Duration(i)*time.Second), counter("mysql_global_status_x1", 1e6)))
	if !errors.Is(werr, syscall.ENOSPC) {
		t.Errorf("next write: %v", werr)
	}
	if v := scrapeValue(t, s, "dbpilot_tsdb_write_errors_total"); v != 2 {
		t.Errorf("write errors %v, want 2", v)
	}
	fams, _ := scrape(t, s)
	if mf := fams["mysql_global_status_x1"]; mf == nil || mf.Metric[0].Counter.GetValue() != 1e6 {
		t.Errorf("/metrics after the failure: %v", mf)
	}
	// What was committed before is still queryable.
	got, err := s.QueryInstant(ctx, "mysql_global_status_x2", t0)
	if err != nil || len(got) != 1 || got[0].Points[0].V != 0 {
		t.Errorf("query after the failure: %v %v", got, err)
	}
}
