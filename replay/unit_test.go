package replay

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/pitr"
)

func TestSettings(t *testing.T) {
	got, err := Settings([]string{"conservative", "Optimistic"}, []int{4, 0, 8, 4}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []Setting{{}, {"conservative", 4, 0}, {"optimistic", 4, 0}, {"conservative", 8, 0}, {"optimistic", 8, 0}}
	if !slices.Equal(got, want) {
		t.Errorf("Settings = %v, want %v", got, want)
	}
	// Domain limits: 4 limits nothing with 4 threads, so is left out there.
	got, err = Settings([]string{"optimistic"}, []int{0, 4, 8}, []int{0, 4})
	if err != nil {
		t.Fatal(err)
	}
	want = []Setting{{}, {"optimistic", 4, 0}, {"optimistic", 8, 0}, {"optimistic", 8, 4}}
	if !slices.Equal(got, want) {
		t.Errorf("Settings with domain threads = %v, want %v", got, want)
	}
	if got[3].String() != "optimistic, 8 threads, 4 a domain" {
		t.Errorf("String() = %q", got[3].String())
	}
	if _, err := Settings([]string{"fast"}, []int{4}, nil); err == nil || !strings.Contains(err.Error(), "conservative,optimistic,aggressive,minimal") {
		t.Errorf("a bad mode: %v", err)
	}
	if _, err := Settings([]string{"optimistic"}, []int{-1}, nil); err == nil {
		t.Errorf("threads -1 accepted")
	}
	if _, err := Settings([]string{"optimistic"}, []int{4}, []int{-2}); err == nil {
		t.Errorf("domain threads -2 accepted")
	}
	if _, err := Settings([]string{"optimistic"}, []int{0, 4}, []int{4, 8}); err == nil || !strings.Contains(err.Error(), "no parallel setting is left") {
		t.Errorf("domain limits that limit nothing: %v", err)
	}
	if n, err := ParseThreads("--threads", "0, 4,8"); err != nil || !slices.Equal(n, []int{0, 4, 8}) {
		t.Errorf("ParseThreads = %v, %v", n, err)
	}
	if _, err := ParseThreads("--domain-threads", "4,x"); err == nil || !strings.Contains(err.Error(), "--domain-threads \"x\"") {
		t.Errorf("ParseThreads accepted x: %v", err)
	}
}

func run(s Setting, elapsed time.Duration, sums map[string]string, errText string) SettingResult {
	return SettingResult{Setting: s, Elapsed: elapsed, Checksums: sums, Error: errText, EventsPerSec: 1000 / elapsed.Seconds()}
}

func TestRecommend(t *testing.T) {
	same := map[string]string{"app.t": "1", "app.u": "2"}
	other := map[string]string{"app.t": "1", "app.u": "3"}
	cases := []struct {
		name   string
		runs   []SettingResult
		want   string // recommended setting, "" none
		reason []string
	}{
		{"fastest identical", []SettingResult{
			run(Setting{}, 4*time.Second, same, ""),
			run(Setting{"conservative", 4, 0}, 2*time.Second, same, ""),
			run(Setting{"optimistic", 8, 0}, time.Second, same, ""),
		}, "optimistic, 8 threads", []string{"optimistic, 8 threads: 4.0× single-threaded, identical checksums", "next: conservative, 4 threads at 2.0×"}},
		{"faster but different", []SettingResult{
			run(Setting{}, 4*time.Second, same, ""),
			run(Setting{"conservative", 4, 0}, 2*time.Second, same, ""),
			run(Setting{"aggressive", 8, 0}, time.Second, other, ""),
		}, "conservative, 4 threads", []string{"2.0× single-threaded", "aggressive, 8 threads was 4.0× but its data differed (app.u)"}},
		{"faster but failed", []SettingResult{
			run(Setting{}, 4*time.Second, same, ""),
			run(Setting{"optimistic", 4, 0}, 0, nil, "Duplicate entry"),
		}, "single-threaded", []string{"no parallel setting was faster", "optimistic, 4 threads failed (Duplicate entry)"}},
		{"reference failed", []SettingResult{
			run(Setting{}, 0, nil, "Table doesn't exist"),
			run(Setting{"optimistic", 4, 0}, time.Second, same, ""),
		}, "", []string{"no recommendation", "Table doesn't exist"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := &Result{Settings: c.runs, Source: pitr.ServeRate{Events: 30000, Elapsed: time.Second}}
			res.compare()
			got := ""
			if res.Recommended != nil {
				got = res.Recommended.String()
			}
			if got != c.want {
				t.Errorf("recommended %q, want %q (%s)", got, c.want, res.Reason)
			}
			for _, r := range c.reason {
				if !strings.Contains(res.Reason, r) {
					t.Errorf("reason %q lacks %q", res.Reason, r)
				}
			}
		})
	}
	// The source's ratio is over the fastest apply that did not fail.
	res := &Result{Settings: cases[0].runs, Source: pitr.ServeRate{Events: 3000, Elapsed: time.Second}}
	res.compare()
	if res.SourceRatio != 3 {
		t.Errorf("source ratio %f, want 3 (3000 events/s over 1000)", res.SourceRatio)
	}
}

// vertical reads the client's \G output into rows.
func vertical(t *testing.T, file string) []map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	head := regexp.MustCompile(`^\*+ \d+\. row \*+$`)
	var rows []map[string]string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		l := sc.Text()
		if head.MatchString(l) {
			rows = append(rows, map[string]string{})
			continue
		}
		if k, v, ok := strings.Cut(strings.TrimLeft(l, " "), ": "); ok && len(rows) > 0 {
			rows[len(rows)-1][k] = v
		} else if k, ok := strings.CutSuffix(strings.TrimSpace(l), ":"); ok && len(rows) > 0 {
			rows[len(rows)-1][k] = ""
		}
	}
	return rows
}

// TestApplierState reads recorded replica status of both flavors.
func TestApplierState(t *testing.T) {
	my := vertical(t, "mysql-8.0-replica_status.txt")
	if len(my) == 0 {
		t.Fatal("no rows")
	}
	running, sqlErr, _, retried := applierState(my[0])
	if !running || sqlErr != "" || retried != -1 {
		t.Errorf("MySQL 8.0: running %v, error %q, retried %d", running, sqlErr, retried)
	}
	ma := vertical(t, "mariadb-10.11-sql-error-replica_status.txt")
	running, sqlErr, _, retried = applierState(ma[0])
	if running || !strings.Contains(sqlErr, "Duplicate entry '10'") || retried != 0 {
		t.Errorf("MariaDB: running %v, error %q, retried %d", running, sqlErr, retried)
	}
}

func TestSettingSQL(t *testing.T) {
	got, err := settingSQL(dbpilot.FlavorMariaDB, Channel, Setting{"optimistic", 8, 2}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"SET GLOBAL slave_parallel_threads = 8", "SET GLOBAL slave_domain_parallel_threads = 2", "SET GLOBAL slave_parallel_max_queued = 1048576", "SET GLOBAL `dbpilot_replay`.slave_parallel_mode = 'optimistic'"}
	if !slices.Equal(got, want) {
		t.Errorf("MariaDB: %q", got)
	}
	if got, _ := settingSQL(dbpilot.FlavorMariaDB, Channel, Setting{"optimistic", 8, 0}, 0); !slices.Contains(got, "SET GLOBAL slave_domain_parallel_threads = 0") {
		t.Errorf("MariaDB without a domain limit does not reset it: %q", got)
	}
	if _, err := settingSQL(dbpilot.FlavorMySQL, "", Setting{"conservative", 4, 2}, 0); err == nil {
		t.Errorf("MySQL accepted a domain limit")
	}
	got, err = settingSQL(dbpilot.FlavorMySQL, "", Setting{"database", 4, 0}, 0)
	if err != nil || !slices.Contains(got, "SET GLOBAL replica_parallel_type = 'DATABASE'") || !slices.Contains(got, "SET GLOBAL replica_parallel_workers = 4") {
		t.Errorf("MySQL: %q, %v", got, err)
	}
	if got, _ := settingSQL(dbpilot.FlavorMySQL, "", Setting{}, 0); !slices.Contains(got, "SET GLOBAL replica_parallel_workers = 1") {
		t.Errorf("MySQL single-threaded: %q", got)
	}
	if _, err := settingSQL(dbpilot.FlavorMySQL, "", Setting{"optimistic", 4, 0}, 0); err == nil {
		t.Errorf("MySQL accepted optimistic")
	}
}

func TestRender(t *testing.T) {
	same := map[string]string{"app.t": "1"}
	res := &Result{Archive: "/a", Target: "127.0.0.1:3306", From: "0-1-10", Until: "0-1-20", Rate: 2,
		Stretch:  &Stretch{Txns: 10, Events: 50, RowEvents: 10, Times: []uint32{100, 100, 101, 101, 102, 103, 103, 104, 104, 105}},
		Prepare:  "restored the dump /d before each setting",
		Source:   pitr.ServeRate{Events: 50, Txns: 10, Elapsed: time.Millisecond},
		Settings: []SettingResult{run(Setting{}, 2*time.Second, same, ""), run(Setting{"optimistic", 4, 0}, time.Second, map[string]string{"app.t": "2"}, ""), run(Setting{"aggressive", 4, 0}, 0, nil, "boom <b>")},
	}
	res.Settings[0].Samples = []Sample{{time.Second, 5}, {2 * time.Second, 10}}
	res.Settings[1].Samples = []Sample{{time.Second / 2, 6}, {time.Second, 10}}
	res.compare()
	var tb bytes.Buffer
	if err := res.WriteTable(&tb); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"single-threaded", "reference", "optimistic, 4 threads", "DIFFERS: app.t", "failed: boom", "max lag", "recommended: single-threaded"} {
		if !strings.Contains(tb.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, tb.String())
		}
	}
	var hb bytes.Buffer
	if err := res.WriteHTML(&hb); err != nil {
		t.Fatal(err)
	}
	h := hb.String()
	if n := strings.Count(h, "<svg"); n != 3 {
		t.Errorf("%d charts, want one per setting (3)", n)
	}
	if strings.Contains(h, "boom <b>") || !strings.Contains(h, "boom &lt;b&gt;") {
		t.Errorf("the error is not escaped")
	}
	// Self-contained: no address but the SVG namespace.
	if m := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+`).FindAllString(strings.ReplaceAll(h, `xmlns="http://www.w3.org/2000/svg"`, ""), -1); len(m) > 0 {
		t.Errorf("the page references %v", m)
	}
	if !strings.Contains(h, "stroke-dasharray") {
		t.Errorf("no recorded-pace line with a rate")
	}
}

func TestThin(t *testing.T) {
	var s []Sample
	for i := 0; i < 1000; i++ {
		s = append(s, Sample{At: time.Duration(i), Txns: i})
	}
	got := thin(s, 300)
	if len(got) != 300 || got[0] != s[0] || got[299] != s[999] {
		t.Errorf("thin: %d samples, first %v, last %v", len(got), got[0], got[len(got)-1])
	}
}

// TestMedianRun: a setting's result is its median run with every run's
// time; a failed run, or runs whose data differ, fail the setting.
func TestMedianRun(t *testing.T) {
	same := map[string]string{"app.t": "1"}
	runOf := func(secs int, sums map[string]string, errText string) *SettingResult {
		r := run(Setting{"optimistic", 8, 0}, time.Duration(secs)*time.Second, sums, errText)
		return &r
	}
	got := medianRun([]*SettingResult{runOf(5, same, ""), runOf(3, same, ""), runOf(9, same, "")})
	if got.Elapsed != 5*time.Second || !slices.Equal(got.Runs, []time.Duration{5 * time.Second, 3 * time.Second, 9 * time.Second}) || got.Error != "" {
		t.Errorf("3 runs: elapsed %s, runs %v, error %q", got.Elapsed, got.Runs, got.Error)
	}
	if got := medianRun([]*SettingResult{runOf(4, same, ""), runOf(2, same, "")}); got.Elapsed != 2*time.Second {
		t.Errorf("2 runs: elapsed %s, want the faster middle one", got.Elapsed)
	}
	got = medianRun([]*SettingResult{runOf(4, same, ""), runOf(2, map[string]string{"app.t": "2"}, "")})
	if !strings.Contains(got.Error, "run 2's data differ from run 1's (app.t)") {
		t.Errorf("runs with different data: error %q", got.Error)
	}
	got = medianRun([]*SettingResult{runOf(4, same, ""), runOf(1, nil, "Duplicate entry")})
	if got.Error != "Duplicate entry" || len(got.Runs) != 2 {
		t.Errorf("a failed run: error %q, runs %v", got.Error, got.Runs)
	}
	one := runOf(7, same, "")
	if got := medianRun([]*SettingResult{one}); got != one || got.Runs != nil {
		t.Errorf("one run: %+v", got)
	}
	// The table shows the spread.
	res := &Result{Archive: "/a", Target: "t", Stretch: &Stretch{Txns: 1}, Settings: []SettingResult{*runOf(10, same, ""), *medianRun([]*SettingResult{runOf(5, same, ""), runOf(3, same, ""), runOf(9, same, "")})}}
	res.compare()
	var b strings.Builder
	if err := res.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "5s (3 runs 3.00–9.00 s)") {
		t.Errorf("the table does not show the runs:\n%s", b.String())
	}
	var h strings.Builder
	if err := res.WriteHTML(&h); err != nil || !strings.Contains(h.String(), "(3 runs 3.00–9.00 s)") {
		t.Errorf("the page does not show the runs (%v)", err)
	}
}
