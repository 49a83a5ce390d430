package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/backup"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/pitr"
	"github.com/dbpilot/dbpilot/sandbox"
)

type node struct {
	d    *sandbox.Descriptor
	key  dbpilot.InstanceKey
	opts mysql.Options
	db   *mysql.DB
}

func connect(t *testing.T, d *sandbox.Descriptor) *node {
	t.Helper()
	n := d.Nodes[0]
	db, err := mysql.Open(context.Background(), n.Key(), mysql.Options{Credentials: d.Admin, QueryTimeout: 60 * time.Second, MaxConns: 8})
	if err != nil {
		t.Fatalf("connect to %s: %v", n.Key(), err)
	}
	t.Cleanup(func() { db.Close() })
	return &node{d: d, key: n.Key(), opts: mysql.Options{Credentials: d.Admin}, db: db}
}

func (n *node) exec(t *testing.T, stmts ...string) {
	t.Helper()
	if err := n.db.Exec(context.Background(), stmts...); err != nil {
		t.Fatalf("on %s: %v", n.key, err)
	}
}

func (n *node) value(t *testing.T, q string) string {
	t.Helper()
	v, _, err := n.db.QueryValue(context.Background(), q)
	if err != nil {
		t.Fatalf("on %s: %s: %v", n.key, q, err)
	}
	return v
}

func (n *node) checksum(t *testing.T, table string) string {
	t.Helper()
	r, err := n.db.Query(context.Background(), "CHECKSUM TABLE "+table+" EXTENDED")
	if err != nil || len(r.Values) != 1 || r.Values[0][1] == nil {
		t.Fatalf("checksum %s on %s: %v", table, n.key, err)
	}
	return *r.Values[0][1]
}

// recording is an archive recorded from a sandbox: the dump at its start,
// another dump from the middle, the number of transactions written.
type recording struct {
	src     *node
	archive string
	dump    string // at the archive's start
	dumpMid string // from the middle of the stretch
	txns    int
}

// record writes a concurrent load (4 sessions, single- and multi-row
// transactions on distinct rows, so that group commit gives the replica
// parallelism) after a dump, and copies the binary logs written after the
// dump into a plain archive.
func record(t *testing.T) *recording {
	t.Helper()
	testutil.Home(t)
	src := connect(t, testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologySingle}))
	src.exec(t, "CREATE DATABASE r",
		"CREATE TABLE r.t (id INT PRIMARY KEY, v VARCHAR(64), n INT NOT NULL)",
		"CREATE TABLE r.u (id INT AUTO_INCREMENT PRIMARY KEY, w INT NOT NULL, v VARCHAR(64))")
	for i := 1; i <= 40; i++ {
		src.exec(t, fmt.Sprintf("INSERT INTO r.t VALUES (%d, 'row %d', 0)", i, i))
	}
	rec := &recording{src: src}
	base := t.TempDir()
	rec.archive, rec.dump, rec.dumpMid = filepath.Join(base, "archive"), filepath.Join(base, "dump"), filepath.Join(base, "dump-mid")
	ctx := context.Background()
	if _, err := backup.Dump(ctx, src.key, src.opts, backup.DumpOptions{Out: rec.dump, Threads: 2}); err != nil {
		t.Fatalf("dump: %v", err)
	}
	// The archive starts at the dump: a new file, nothing written between.
	src.exec(t, "FLUSH BINARY LOGS")
	first := src.value(t, "SELECT SUBSTRING_INDEX(@@GLOBAL.log_bin_basename, '/', -1)")
	firstFile := lastBinlog(t, src, first)
	const workers, each = 4, 60
	load := func(from int) {
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				// One session each: BEGIN and COMMIT on the same connection.
				c, err := src.db.SQL().Conn(ctx)
				if err != nil {
					errs <- err
					return
				}
				defer c.Close()
				exec := func(stmts ...string) error {
					for _, s := range stmts {
						if _, err := c.ExecContext(ctx, s); err != nil {
							return err
						}
					}
					return nil
				}
				for i := 0; i < each; i++ {
					id := 1000 + w*100000 + from + i
					var err error
					if i%3 == 2 {
						err = exec("BEGIN",
							fmt.Sprintf("INSERT INTO r.u (w, v) VALUES (%d, 'w%d-%d')", w, w, i),
							fmt.Sprintf("UPDATE r.t SET n = n + 1 WHERE id BETWEEN %d AND %d", 1+(w*10+i)%38, 3+(w*10+i)%38),
							"COMMIT")
					} else {
						err = exec(fmt.Sprintf("INSERT INTO r.t VALUES (%d, 'w%d', %d)", id, w, i))
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}(w)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("load: %v", err)
		}
		rec.txns += workers * each
	}
	load(0)
	if _, err := backup.Dump(ctx, src.key, src.opts, backup.DumpOptions{Out: rec.dumpMid, Threads: 2}); err != nil {
		t.Fatalf("dump: %v", err)
	}
	src.exec(t, "FLUSH BINARY LOGS")
	// A pause in the recorded pace, for --rate.
	time.Sleep(2 * time.Second)
	load(1000)
	src.exec(t, "FLUSH BINARY LOGS")
	files, _ := filepath.Glob(filepath.Join(src.d.Nodes[0].Datadir, first+".[0-9]*"))
	sort.Strings(files)
	if err := os.MkdirAll(rec.archive, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if filepath.Base(f) < firstFile {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(rec.archive, filepath.Base(f)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return rec
}

// lastBinlog is the server's current binary log file.
func lastBinlog(t *testing.T, n *node, base string) string {
	t.Helper()
	r, err := n.db.Query(context.Background(), "SHOW MASTER STATUS")
	if err != nil || len(r.Values) != 1 {
		t.Fatalf("SHOW MASTER STATUS: %v", err)
	}
	f := mysql.Str(r.Values[0], 0)
	if !strings.HasPrefix(f, base) {
		t.Fatalf("binlog %s, not %s.*", f, base)
	}
	return f
}

func TestReplay(t *testing.T) {
	rec := record(t)
	tgt := connect(t, testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologySingle}))
	ctx := context.Background()
	settings, err := Settings([]string{"conservative", "optimistic"}, []int{0, 4}, nil)
	if err != nil {
		t.Fatal(err)
	}
	noData := func(t *testing.T) {
		t.Helper()
		if v := tgt.value(t, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'r'"); v != "0" {
			t.Errorf("%s got data although replay was refused", tgt.key)
		}
	}

	t.Run("refused", func(t *testing.T) {
		// A gap: a file of the middle missing.
		gap := filepath.Join(t.TempDir(), "gap")
		if err := os.CopyFS(gap, os.DirFS(rec.archive)); err != nil {
			t.Fatal(err)
		}
		files, _ := filepath.Glob(filepath.Join(gap, "*.[0-9]*"))
		sort.Strings(files)
		if len(files) < 3 {
			t.Fatalf("archive files %v: want 3", files)
		}
		os.Remove(files[1])
		_, err := Run(ctx, tgt.key, tgt.opts, Options{Binlogs: gap, Dump: rec.dump, Settings: settings})
		var ge *pitr.GapError
		if !errorsAs(err, &ge) || !strings.Contains(err.Error(), filepath.Base(files[1])) || strings.Contains(err.Error(), "\n") {
			t.Errorf("archive with a gap: %v", err)
		}
		t.Logf("gap: %v", err)

		// A target not at the start (a fresh server, no dump).
		_, err = Run(ctx, tgt.key, tgt.opts, Options{Binlogs: rec.archive, Settings: settings})
		if err == nil || !strings.Contains(err.Error(), "gtid_slave_pos") || !strings.Contains(err.Error(), "the stretch starts at") {
			t.Errorf("target at another position: %v", err)
		}
		t.Logf("target position: %v", err)

		// A dump from another position than the stretch's start.
		_, err = Run(ctx, tgt.key, tgt.opts, Options{Binlogs: rec.archive, Dump: rec.dumpMid, Settings: settings})
		if err == nil || !strings.Contains(err.Error(), "the dump "+rec.dumpMid+" is at") {
			t.Errorf("dump from the middle: %v", err)
		}
		t.Logf("dump position: %v", err)

		// A target with a source configured; --force lets it through.
		tgt.exec(t, "CHANGE MASTER 'upstream' TO MASTER_HOST='127.0.0.1', MASTER_PORT=9, MASTER_USER='x', MASTER_PASSWORD='y'")
		_, err = Run(ctx, tgt.key, tgt.opts, Options{Binlogs: rec.archive, Dump: rec.dump, Settings: settings})
		if err == nil || !strings.Contains(err.Error(), "replication tree") || !strings.Contains(err.Error(), "upstream") {
			t.Errorf("target with a source: %v", err)
		}
		t.Logf("tree: %v", err)
		if _, err := Check(ctx, tgt.key, tgt.opts, Options{Binlogs: rec.archive, Dump: rec.dump, Settings: settings, Force: true}); err != nil {
			t.Errorf("--force: %v", err)
		}
		tgt.exec(t, "RESET SLAVE 'upstream' ALL")
		noData(t)
	})

	t.Run("settings", func(t *testing.T) {
		var progress strings.Builder
		res, err := Run(ctx, tgt.key, tgt.opts, Options{Binlogs: rec.archive, Dump: rec.dump, Settings: settings, RestoreThreads: 2, Progress: &progress})
		if err != nil {
			t.Fatalf("replay: %v", err)
		}
		t.Logf("%s", progress.String())
		if len(res.Settings) != 3 {
			t.Fatalf("%d settings replayed, want 3 (single-threaded, conservative 4, optimistic 4)", len(res.Settings))
		}
		if res.Stretch.Txns != rec.txns {
			t.Errorf("the stretch has %d transactions, %d were written", res.Stretch.Txns, rec.txns)
		}
		// 2 of every 3 transactions insert one row into r.t; the third
		// inserts a row into r.u and updates 3 of r.t: one row event
		// each statement.
		if want := int64(rec.txns/3*2 + rec.txns/3*2); res.Stretch.RowEvents != want {
			t.Errorf("the stretch has %d row events, want %d", res.Stretch.RowEvents, want)
		}
		if want := int64(rec.txns/3*2 + rec.txns/3*4); res.Stretch.Rows != want {
			t.Errorf("the stretch has %d rows, want %d", res.Stretch.Rows, want)
		}
		if strings.Join(res.Stretch.Tables, ",") != "`r`.`t`,`r`.`u`" {
			t.Errorf("tables touched %q", res.Stretch.Tables)
		}
		srcSum := map[string]string{"r.t": rec.src.checksum(t, "r.t"), "r.u": rec.src.checksum(t, "r.u")}
		for _, s := range res.Settings {
			if s.Error != "" {
				t.Errorf("%s failed: %s", s.Setting, s.Error)
				continue
			}
			if s.Transactions != rec.txns {
				t.Errorf("%s applied %d transactions, want %d", s.Setting, s.Transactions, rec.txns)
			}
			if !s.Identical {
				t.Errorf("%s: data differs from single-threaded: %v", s.Setting, s.Differ)
			}
			for tb, sum := range srcSum {
				if s.Checksums[tb] != sum {
					t.Errorf("%s: %s checksum %s, the source's %s", s.Setting, tb, s.Checksums[tb], sum)
				}
			}
			if s.Elapsed <= 0 || s.TxnsPerSec <= 0 || s.Speedup <= 0 {
				t.Errorf("%s: elapsed %s, %f tx/s, speed-up %f", s.Setting, s.Elapsed, s.TxnsPerSec, s.Speedup)
			}
			if s.Threads > 0 && s.WorkerSamples > 0 && len(s.Workers) == 0 {
				t.Errorf("%s: %d samples, no worker seen", s.Setting, s.WorkerSamples)
			}
			t.Logf("%s: %s, %.0f tx/s, %.2fx, retries %d, deadlocks %d, workers %v, reset %s", s.Setting, s.Elapsed, s.TxnsPerSec, s.Speedup, s.Retries, s.Deadlocks, s.Workers, s.Reset)
		}
		if res.Recommended == nil || !strings.Contains(res.Reason, res.Recommended.String()) {
			t.Errorf("recommendation %v, reason %q", res.Recommended, res.Reason)
		}
		if res.Source.Txns != int64(rec.txns) || res.SourceRatio <= 0 {
			t.Errorf("source: %+v, ratio %f", res.Source, res.SourceRatio)
		}
		if ch, _ := tgt.db.Query(ctx, "SHOW ALL SLAVES STATUS"); ch == nil || len(ch.Values) != 0 {
			t.Errorf("a replication connection is left on the target")
		}
		// The JSON shape.
		b, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"archive", "target", "from", "until", "stretch", "source", "source_ratio", "settings", "recommended", "reason", "prepare"} {
			if _, ok := m[k]; !ok {
				t.Errorf("JSON has no %q", k)
			}
		}
		s0 := m["settings"].([]any)[1].(map[string]any)
		for _, k := range []string{"mode", "threads", "elapsed_ns", "transactions_per_s", "events_per_s", "row_events_per_s", "rows_per_s", "speedup", "retries", "deadlocks", "checksums", "identical", "samples"} {
			if _, ok := s0[k]; !ok {
				t.Errorf("JSON of a setting has no %q", k)
			}
		}
		var tb strings.Builder
		if err := res.WriteTable(&tb); err != nil {
			t.Fatal(err)
		}
		t.Logf("\n%s", tb.String())
		t.Logf("recommended: %s; source %.0f events/s, %.1fx the fastest apply", res.Reason, res.Source.EventsPerSec(), res.SourceRatio)
	})

	// --rate: the stretch at twice its recorded pace takes at least half
	// its recorded span (whole seconds: less one second).
	t.Run("rate", func(t *testing.T) {
		res, err := Run(ctx, tgt.key, tgt.opts, Options{Binlogs: rec.archive, Dump: rec.dump, Settings: []Setting{{}}, Rate: 2, RestoreThreads: 2})
		if err != nil {
			t.Fatalf("replay --rate 2: %v", err)
		}
		s := res.Settings[0]
		if s.Error != "" || s.Transactions != rec.txns {
			t.Fatalf("error %q, %d transactions", s.Error, s.Transactions)
		}
		if res.RecordedSpanSec < 2 {
			t.Fatalf("the recording spans %d s; it has a 2 s pause", res.RecordedSpanSec)
		}
		if min := time.Duration(res.RecordedSpanSec-1) * time.Second / 2; s.Elapsed < min {
			t.Errorf("a stretch recorded over %d s replayed at 2x in %s, under %s", res.RecordedSpanSec, s.Elapsed, min)
		}
		var tb strings.Builder
		res.WriteTable(&tb)
		if !strings.Contains(tb.String(), "max lag") {
			t.Errorf("no lag column with --rate:\n%s", tb.String())
		}
		t.Logf("recorded span %d s, at 2x: %s, max lag %.1f s at %.0f s\n%s", res.RecordedSpanSec, s.Elapsed, s.MaxLagSec, s.BehindAtSec, tb.String())
	})

	// One setting twice into a target at the start: the second run applies
	// the same GTIDs again (gtid_strict_mode off for it).
	t.Run("repeat-one-setting", func(t *testing.T) {
		tgt3 := connect(t, testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologySingle}))
		if _, err := backup.Restore(ctx, tgt3.key, tgt3.opts, backup.RestoreOptions{Dir: rec.dump, Threads: 2, SetGTIDPosition: true}); err != nil {
			t.Fatal(err)
		}
		os.Remove(filepath.Join(rec.dump, backup.ProgressFile))
		res, err := Run(ctx, tgt3.key, tgt3.opts, Options{Binlogs: rec.archive, Settings: []Setting{{}}, RestoreThreads: 2, Repeat: 2})
		if err != nil {
			t.Fatalf("one setting, twice: %v", err)
		}
		if s := res.Settings[0]; s.Error != "" || len(s.Runs) != 2 || s.Transactions != rec.txns {
			t.Errorf("one setting, twice: error %q, runs %v, %d transactions", s.Error, s.Runs, s.Transactions)
		}
		if got := tgt3.value(t, "SELECT @@global.gtid_strict_mode"); got != "1" {
			t.Errorf("gtid_strict_mode %s after the replay, want it set back to 1", got)
		}
	})

	// Without --dump: the target is at the start already (restored and
	// positioned by hand); replay snapshots it for the second setting.
	t.Run("target", func(t *testing.T) {
		tgt2 := connect(t, testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologySingle}))
		if _, err := backup.Restore(ctx, tgt2.key, tgt2.opts, backup.RestoreOptions{Dir: rec.dump, Threads: 2, SetGTIDPosition: true}); err != nil {
			t.Fatal(err)
		}
		os.Remove(filepath.Join(rec.dump, backup.ProgressFile))
		// The parallel setting with a domain limit
		// (slave_domain_parallel_threads): the server takes it.
		two, _ := Settings([]string{"optimistic"}, []int{0, 4}, []int{2})
		// Each setting twice (--repeat 2): the target reset before each run.
		res, err := Run(ctx, tgt2.key, tgt2.opts, Options{Binlogs: rec.archive, Settings: two, RestoreThreads: 2, Repeat: 2})
		if err != nil {
			t.Fatalf("replay into a target at the start: %v", err)
		}
		for _, s := range res.Settings {
			if len(s.Runs) != 2 || !slices.Contains(s.Runs, s.Elapsed) {
				t.Errorf("%s: runs %v, elapsed %s: want 2 runs, the result one of them", s.Setting, s.Runs, s.Elapsed)
			}
		}
		for _, s := range res.Settings {
			if s.Error != "" || !s.Identical || s.Transactions != rec.txns {
				t.Errorf("%s: error %q, identical %v, %d transactions", s.Setting, s.Error, s.Identical, s.Transactions)
			}
		}
		if got := tgt2.value(t, "SELECT @@global.slave_domain_parallel_threads"); res.Settings[1].DomainThreads != 2 || got != "2" {
			t.Errorf("%s: slave_domain_parallel_threads %s after it", res.Settings[1].Setting, got)
		}
		// No reset before the first run (the target is at the start), one
		// before every other: the first setting's result has none only when
		// it is its first run.
		firstRun := res.Settings[0].Elapsed == res.Settings[0].Runs[0]
		if (res.Settings[0].Reset == 0) != firstRun || res.Settings[1].Reset <= 0 {
			t.Errorf("resets %s (first run: %v), %s: want none before the first run, one before every other", res.Settings[0].Reset, firstRun, res.Settings[1].Reset)
		}
		t.Logf("prepare: %s", res.Prepare)
	})
}
