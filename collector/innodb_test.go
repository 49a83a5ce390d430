package collector

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
)

func TestInnoParseStatus(t *testing.T) {
	v := innoSet
	none := InnoDBValue{}
	tests := []struct {
		name string
		text string
		want InnoDBStatus
	}{
		{
			name: "MariaDB 10.11",
			text: `------------
TRANSACTIONS
------------
Trx id counter 23
Purge done for trx's n:o < 13 undo n:o < 0 state: running
History list length 4
--------
FILE I/O
--------
Pending flushes (fsync): 0
179 OS file reads, 0 OS file writes, 97 OS fsyncs
---
LOG
---
Log sequence number 5208958
Log flushed up to   5208877
Pages flushed up to 44404
Last checkpoint at  44404
----------------------
BUFFER POOL AND MEMORY
----------------------
Pending reads 1
Pending writes: LRU 2, flush list 3
`,
			want: InnoDBStatus{LSN: v(5208958), LSNFlushed: v(5208877), PagesFlushedLSN: v(44404), CheckpointLSN: v(44404),
				HistoryLength: v(4), PendingReads: v(1), PendingWrites: v(5), PendingFsyncs: v(0)},
		},
		{
			name: "MySQL 8.0: aio per thread, aligned LSNs",
			text: `History list length 1257
Pending normal aio reads: [0, 2, 0, 1] , aio writes: [0, 0, 3, 0] ,
 ibuf aio reads:, log i/o's:, sync i/o's:
Pending flushes (fsync) log: 1; buffer pool: 4
Log sequence number          418592381
Log buffer assigned up to    418592381
Log flushed up to            418590112
Added dirty pages up to      418592381
Pages flushed up to          401337219
Last checkpoint at           401337219
Log minimum file id is       123
Pending reads      7
Pending writes: LRU 0, flush list 9, single page 0
`,
			want: InnoDBStatus{LSN: v(418592381), LSNFlushed: v(418590112), PagesFlushedLSN: v(401337219), CheckpointLSN: v(401337219),
				HistoryLength: v(1257), PendingReads: v(3), PendingWrites: v(3), PendingFsyncs: v(5)},
		},
		{
			name: "MySQL 5.7: aio totals first",
			text: `Pending normal aio reads: 6 [2, 2, 1, 1] , aio writes: 1 [0, 0, 0, 1] ,
Pending flushes (fsync) log: 0; buffer pool: 0
Log sequence number 2687018
Log flushed up to   2687018
Pages flushed up to 2687018
Last checkpoint at  2687009
`,
			want: InnoDBStatus{LSN: v(2687018), LSNFlushed: v(2687018), PagesFlushedLSN: v(2687018), CheckpointLSN: v(2687009),
				PendingReads: v(6), PendingWrites: v(1), PendingFsyncs: v(0)},
		},
		{
			name: "MySQL 5.5: plain aio counts",
			text: "Pending normal aio reads: 2, aio writes: 0,\nLog sequence number 1597945\nLast checkpoint at  1597945\n",
			want: InnoDBStatus{LSN: v(1597945), CheckpointLSN: v(1597945), PendingReads: v(2), PendingWrites: v(0)},
		},
		{
			name: "before 5.5: LSN halves",
			text: "Log sequence number 248 2222568315\nLog flushed up to   248 2222533410\nLast checkpoint at  248 1843690869\n",
			want: InnoDBStatus{LSN: v(248<<32 | 2222568315), LSNFlushed: v(248<<32 | 2222533410), CheckpointLSN: v(248<<32 | 1843690869)},
		},
		{
			name: "CRLF and malformed numbers",
			text: "Log sequence number 12x\r\nLast checkpoint at  99999999999999999999999\r\nHistory list length 3\r\nPending normal aio reads: [1, 2 , aio writes: [\r\n",
			want: InnoDBStatus{LSN: none, CheckpointLSN: none, HistoryLength: v(3)},
		},
		{name: "empty", text: "", want: InnoDBStatus{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ParseInnoDBStatus(tt.text); got != tt.want {
				t.Errorf("ParseInnoDBStatus:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestInnoParseRecorded parses every recorded status text: a real server's
// output must yield the LOG section and the history length.
func TestInnoParseRecorded(t *testing.T) {
	files, _ := filepath.Glob("testdata/innodb/*/*/innodb_status*.txt")
	if len(files) == 0 {
		t.Fatal("no recorded INNODB STATUS")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s := ParseInnoDBStatus(string(b))
		if !s.LSN.OK || !s.LSNFlushed.OK || !s.PagesFlushedLSN.OK || !s.CheckpointLSN.OK || !s.HistoryLength.OK ||
			!s.PendingReads.OK || !s.PendingWrites.OK || !s.PendingFsyncs.OK {
			t.Errorf("%s: incomplete: %+v", f, s)
		}
		if s.CheckpointLSN.V > s.LSN.V || s.LSNFlushed.V > s.LSN.V {
			t.Errorf("%s: LSNs out of order: %+v", f, s)
		}
	}
}

// TestInnoCheckpointAgeOfCapacity reads what `dbpilot top` shows of the
// texts in testdata/innodb-text: the checkpoint age as a share of the redo
// log capacity, and the history list length.
func TestInnoCheckpointAgeOfCapacity(t *testing.T) {
	tests := []struct {
		file               string
		target             Target
		lsn, ckpt, history uint64
		hasHistory         bool
		vars               map[string]string
		wantPct            float64
	}{
		{"mariadb-10.11.txt", Target{Flavor: dbpilot.FlavorMariaDB, Version: dbpilot.Version{Major: 10, Minor: 11, Patch: 6}},
			65105, 44404, 0, true, map[string]string{"innodb_log_file_size": "33554432"}, 100 * (65105 - 44404) / 33554432.0},
		{"mysql-8.0.txt", Target{Flavor: dbpilot.FlavorMySQL, Version: dbpilot.Version{Major: 8, Minor: 0, Patch: 36}},
			31145920, 30097344, 17, true,
			map[string]string{"innodb_log_file_size": "50331648", "innodb_log_files_in_group": "2", "innodb_redo_log_capacity": "104857600"},
			100 * (31145920 - 30097344) / 104857600.0},
		{"percona-5.1.txt", Target{Flavor: dbpilot.FlavorPercona, Version: dbpilot.Version{Major: 5, Minor: 1, Patch: 73}},
			9682004056, 9682002296, 0, false,
			map[string]string{"innodb_log_file_size": "67108864", "innodb_log_files_in_group": "2"}, 100 * 1760 / 134217728.0},
	}
	for _, tt := range tests {
		b, err := os.ReadFile(filepath.Join("testdata", "innodb-text", tt.file))
		if err != nil {
			t.Fatal(err)
		}
		st := ParseInnoDBStatus(string(b))
		if st.LSN != innoSet(tt.lsn) || st.CheckpointLSN != innoSet(tt.ckpt) || st.HistoryLength.OK != tt.hasHistory || st.HistoryLength.V != tt.history {
			t.Errorf("%s: %+v", tt.file, st)
		}
		age, ok := st.CheckpointAge()
		capacity, capOK := RedoLogCapacity(nil, tt.vars, tt.target)
		if !ok || !capOK || capacity == 0 {
			t.Errorf("%s: age %d, %v; capacity %d, %v", tt.file, age, ok, capacity, capOK)
			continue
		}
		if got := 100 * float64(age) / float64(capacity); math.Abs(got-tt.wantPct) > 1e-9 {
			t.Errorf("%s: checkpoint age %.6f%% of the redo log, want %.6f%%", tt.file, got, tt.wantPct)
		}
	}

	st := ParseInnoDBStatus("garbage\nLog sequence number x\nLast checkpoint at 7\n")
	if age, ok := st.CheckpointAge(); st.LSN.OK || ok || age != 0 {
		t.Errorf("garbage parsed: %+v, age %d, %v", st, age, ok)
	}
	// The checkpoint line printed after the LSN moved on: no negative age.
	st = ParseInnoDBStatus("Log sequence number 100\nLast checkpoint at 120\n")
	if age, ok := st.CheckpointAge(); !ok || age != 0 {
		t.Errorf("checkpoint ahead of the LSN: age %d, %v; want 0, true", age, ok)
	}
	if c, ok := RedoLogCapacity(nil, map[string]string{}, Target{}); ok || c != 0 {
		t.Errorf("capacity without variables: %d, %v", c, ok)
	}
}

func FuzzInnoParseStatus(f *testing.F) {
	files, _ := filepath.Glob("testdata/innodb/*/*/innodb_status*.txt")
	text, _ := filepath.Glob("testdata/innodb-text/*.txt")
	files = append(files, text...)
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(string(b))
		}
	}
	f.Add("Pending normal aio reads: [18446744073709551615, 1] , aio writes: 99999999999999999999999 [")
	f.Add("Log sequence number 4294967295 4294967295\nPending flushes (fsync)")
	f.Add("Log sequence number0\nLast checkpoint at0") // a tiny redo capacity gave 0/0
	f.Fuzz(func(t *testing.T, text string) {
		s := ParseInnoDBStatus(text)
		st := map[string]string{"innodb_buffer_pool_pages_total": "0"}
		samples := innoStatusSamples(s, st, map[string]string{"innodb_log_file_size": "1"}, Target{Flavor: dbpilot.FlavorMySQL})
		for _, x := range samples {
			if x.Value != x.Value || x.Value < 0 {
				t.Fatalf("%s = %v from %q", x.Name, x.Value, text)
			}
		}
	})
}

func TestInnoCheckpointMax(t *testing.T) {
	maria105 := Target{Flavor: dbpilot.FlavorMariaDB, Version: dbpilot.Version{Major: 10, Minor: 11, Patch: 6}}
	maria104 := Target{Flavor: dbpilot.FlavorMariaDB, Version: dbpilot.Version{Major: 10, Minor: 4, Patch: 30}}
	my := Target{Flavor: dbpilot.FlavorMySQL, Version: dbpilot.Version{Major: 8, Minor: 0, Patch: 36}}
	tests := []struct {
		name   string
		t      Target
		status map[string]string
		vars   map[string]string
		want   uint64
		ok     bool
	}{
		{"MariaDB reports it", maria105, map[string]string{"innodb_checkpoint_max_age": "26461349"},
			map[string]string{"innodb_log_file_size": "33554432"}, 26461349, true},
		{"MariaDB 10.5+ without status: one file", maria105, nil,
			map[string]string{"innodb_log_file_size": "100", "innodb_log_files_in_group": "2"}, 90, true},
		{"MariaDB 10.4: files in group", maria104, nil,
			map[string]string{"innodb_log_file_size": "100", "innodb_log_files_in_group": "2"}, 180, true},
		{"MySQL 8.0.30+: resized capacity first", my, map[string]string{"innodb_redo_log_capacity_resized": "1000"},
			map[string]string{"innodb_redo_log_capacity": "2000", "innodb_log_file_size": "100", "innodb_log_files_in_group": "2"}, 900, true},
		{"MySQL 8.0.30+: capacity variable", my, nil,
			map[string]string{"innodb_redo_log_capacity": "2000", "innodb_log_file_size": "100"}, 1800, true},
		{"MySQL 5.7", my, nil, map[string]string{"innodb_log_file_size": "50331648", "innodb_log_files_in_group": "2"}, 90596961, true},
		{"nothing known", my, nil, map[string]string{"innodb_log_file_size": "x"}, 0, false},
		{"too small to matter", my, nil, map[string]string{"innodb_log_file_size": "9"}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := innoCheckpointMax(tt.status, tt.vars, tt.t)
			if got != tt.want || ok != tt.ok {
				t.Errorf("innoCheckpointMax = %d, %v; want %d, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestInnoMetricsNaming(t *testing.T) {
	rows := &mysql.Rows{Columns: []string{"name", "subsystem", "count", "type"}}
	add := func(vals ...string) {
		row := make([]*string, len(vals))
		for i := range vals {
			row[i] = &vals[i]
		}
		rows.Values = append(rows.Values, row)
	}
	add("trx_rseg_history_len", "transaction", "12", "value")
	add("buffer_pool_pages_total", "buffer", "8191", "value")
	add("buffer_page_read_index_leaf", "buffer_page_io", "5", "counter")
	add("buffer_page_bogus", "buffer_page_io", "5", "counter")
	add("icp_attempts", "icp", "-1", "counter")
	add("odd-name", "x y", "1", "status_counter")
	add("no_count", "x", "", "value")
	got := rhiFormat(innoMetricsSamples(rows))
	want := `mysql_info_schema_innodb_metrics_transaction_trx_rseg_history_len 12
mysql_info_schema_innodb_metrics_buffer_page_read_total{type="index_leaf"} 5 counter
mysql_info_schema_innodb_metrics_icp_icp_attempts -1
mysql_info_schema_innodb_metrics_x_y_odd_name_total 1 counter
`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestInnoHitRatioReset: a restart (counters going back) gives no ratio,
// the run after it does; instances do not share counters.
func TestInnoHitRatioReset(t *testing.T) {
	c := NewInnoDB().(*innodb)
	a := Target{Key: dbpilot.InstanceKey{Host: "a", Port: 1}, Flavor: dbpilot.FlavorMySQL}
	b := Target{Key: dbpilot.InstanceKey{Host: "b", Port: 1}, Flavor: dbpilot.FlavorMySQL}
	st := func(req, reads string) map[string]string {
		return map[string]string{"innodb_buffer_pool_read_requests": req, "innodb_buffer_pool_reads": reads}
	}
	ratio := func(s []dbpilot.Sample) string { return rhiFormat(s) }
	if got := ratio(c.bufferPoolSamples(a, st("1000", "10"))); got != "" {
		t.Errorf("first run: %q", got)
	}
	if got := ratio(c.bufferPoolSamples(b, st("50", "50"))); got != "" {
		t.Errorf("first run on b: %q", got)
	}
	if got := ratio(c.bufferPoolSamples(a, st("2000", "110"))); got != "dbpilot_innodb_buffer_pool_hit_ratio 0.9\n" {
		t.Errorf("second run: %q", got)
	}
	if got := ratio(c.bufferPoolSamples(a, st("10", "1"))); got != "" {
		t.Errorf("after restart: %q", got)
	}
	if got := ratio(c.bufferPoolSamples(a, st("10", "1"))); got != "" {
		t.Errorf("no requests: %q", got)
	}
	if got := ratio(c.bufferPoolSamples(a, st("20", "1"))); got != "dbpilot_innodb_buffer_pool_hit_ratio 1\n" {
		t.Errorf("after restart, second run: %q", got)
	}
	c.Forget(a.Key)
	if got := ratio(c.bufferPoolSamples(a, st("30", "1"))); got != "" {
		t.Errorf("after Forget: %q", got)
	}
}

// TestInnoConcurrentTargets runs one collector on several targets at once,
// as the daemon shares collectors between instances (go test -race).
func TestInnoConcurrentTargets(t *testing.T) {
	c := NewInnoDB()
	dir := "testdata/innodb/mysql-8.0/primary"
	target, _ := rhiLoadTarget(t, dir)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tg := target
			tg.Key.Port = 3000 + i
			for run := 1; run <= 2; run++ {
				if _, err := c.Collect(context.Background(), &rhiReplay{dir: dir, run: run}, tg); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
}

// TestInnoRefusedStatus: without the PROCESS privilege the run still
// returns what global status gives, with the refusal as its error.
func TestInnoRefusedStatus(t *testing.T) {
	q := &rhiStubQuerier{errs: map[string]error{
		innoStatusSQL:       rhiFileError("ERROR 1227 (42000): Access denied; you need (at least one of) the PROCESS privilege(s) for this operation"),
		innoMetricsMySQLSQL: rhiFileError("ERROR 1227 (42000): Access denied; you need (at least one of) the PROCESS privilege(s) for this operation"),
	}, rows: map[string]*mysql.Rows{
		innoGlobalStatusSQL: rhiParseVertical("*** 1. row ***\nVariable_name: Innodb_buffer_pool_pages_dirty\n        Value: 5\n*** 2. row ***\nVariable_name: Innodb_buffer_pool_pages_total\n        Value: 10\n"),
	}}
	samples, err := NewInnoDB().Collect(context.Background(), q, Target{Flavor: dbpilot.FlavorMySQL})
	if mysql.ServerErrorNumber(err) != 1227 {
		t.Errorf("err = %v, want the 1227 refusal", err)
	}
	if got := rhiFormat(samples); got != "dbpilot_innodb_buffer_pool_dirty_percent 50\n" {
		t.Errorf("samples = %q", got)
	}
	// A broken connection ends the run.
	q = &rhiStubQuerier{errs: map[string]error{innoStatusSQL: dbpilot.Errorf(dbpilot.EUNAVAIL, "gone")}}
	if _, err := NewInnoDB().Collect(context.Background(), q, Target{}); dbpilot.ErrorCode(err) != dbpilot.EUNAVAIL {
		t.Errorf("err = %v, want unavailable", err)
	}
}

// rhiStubQuerier answers statements from maps; others return no rows.
type rhiStubQuerier struct {
	rows  map[string]*mysql.Rows
	errs  map[string]error
	execs []string
}

func (s *rhiStubQuerier) Query(_ context.Context, q string, _ ...any) (*mysql.Rows, error) {
	if err := s.errs[q]; err != nil {
		return nil, err
	}
	if r := s.rows[q]; r != nil {
		return r, nil
	}
	return &mysql.Rows{}, nil
}

func (s *rhiStubQuerier) Exec(_ context.Context, stmts ...string) error {
	for _, st := range stmts {
		if err := s.errs[st]; err != nil {
			return err
		}
		s.execs = append(s.execs, st)
	}
	return nil
}

// TestInnoMetricsColumnFallback: a server without the flavor's column for
// "enabled" is asked with the other spelling.
func TestInnoMetricsColumnFallback(t *testing.T) {
	rows := &mysql.Rows{Columns: []string{"NAME", "SUBSYSTEM", "COUNT", "TYPE"},
		Values: [][]*string{{rhiPtr("trx_rseg_history_len"), rhiPtr("transaction"), rhiPtr("7"), rhiPtr("value")}}}
	q := &rhiStubQuerier{
		errs: map[string]error{innoMetricsMariaSQL: rhiFileError("ERROR 1054 (42S22): Unknown column 'ENABLED' in 'where clause'")},
		rows: map[string]*mysql.Rows{innoMetricsMySQLSQL: rows},
	}
	samples, err := NewInnoDB().Collect(context.Background(), q, Target{Flavor: dbpilot.FlavorMariaDB, Version: dbpilot.Version{Major: 10, Minor: 4}})
	if err != nil {
		t.Fatal(err)
	}
	if got := rhiFormat(samples); got != "mysql_info_schema_innodb_metrics_transaction_trx_rseg_history_len 7\n" {
		t.Errorf("samples = %q", got)
	}
}
