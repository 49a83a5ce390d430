package replay

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot/pitr"
)

// Result is a replay: the stretch, how the target was prepared, the
// source's own rate, one SettingResult per setting and the recommendation.
type Result struct {
	Archive string `json:"archive"`
	Target  string `json:"target"`
	From    string `json:"from"`
	Until   string `json:"until"`
	// Rate is --rate (0: full speed).
	Rate    float64  `json:"rate,omitempty"`
	Stretch *Stretch `json:"stretch"`
	// RecordedSpanSec is the time the stretch took on the primary.
	RecordedSpanSec int64 `json:"recorded_span_s"`
	// Prepare says how the target is brought to the start before each
	// setting, and how long the first preparation took.
	Prepare     string        `json:"prepare"`
	PrepareTime time.Duration `json:"prepare_ns"`
	// Source is the source's own serving rate to a discarding sink;
	// SourceRatio is its events/s over the fastest apply's.
	Source      pitr.ServeRate  `json:"source"`
	SourceRatio float64         `json:"source_ratio"`
	Settings    []SettingResult `json:"settings"`
	// Recommended is the fastest setting whose data was identical to the
	// single-threaded run's (nil: none); Reason says why.
	Recommended *Setting `json:"recommended,omitempty"`
	Reason      string   `json:"reason"`
	Warnings    []string `json:"warnings,omitempty"`
}

// SettingResult is one setting's replay.
type SettingResult struct {
	Setting
	// Reset is the time taken to bring the target back to the start
	// before this setting (0 for the first setting on a --target).
	Reset   time.Duration `json:"reset_ns"`
	Elapsed time.Duration `json:"elapsed_ns"`
	// Runs are the times of every run of the setting, in run order, with
	// --repeat; the result is the median run's (Elapsed among them).
	Runs []time.Duration `json:"runs_ns,omitempty"`
	// Transactions are those applied (the target's GTID position moved
	// through them); the events and row events per second are the
	// stretch's over the time.
	Transactions    int     `json:"transactions"`
	TxnsPerSec      float64 `json:"transactions_per_s"`
	EventsPerSec    float64 `json:"events_per_s"`
	RowEventsPerSec float64 `json:"row_events_per_s"`
	RowsPerSec      float64 `json:"rows_per_s"`
	Speedup         float64 `json:"speedup"`
	// Retries is the change of Slave_retried_transactions, Deadlocks of
	// Innodb_deadlocks, over the run.
	Retries   int64 `json:"retries"`
	Deadlocks int64 `json:"deadlocks"`
	// Workers counts the worker threads seen in each state over the
	// samples (information_schema.PROCESSLIST, Command Slave_worker);
	// WorkerSamples is the number of samples.
	Workers       map[string]int `json:"worker_states,omitempty"`
	WorkerSamples int            `json:"worker_samples"`
	// MaxLagSec is, with --rate, the most the target was behind the
	// recorded pace (seconds); BehindAt the recorded time into the stretch
	// where that was.
	MaxLagSec   float64  `json:"max_lag_s,omitempty"`
	BehindAtSec float64  `json:"behind_at_s,omitempty"`
	Samples     []Sample `json:"samples"`
	// Checksums are CHECKSUM TABLE results at the end, by table.
	Checksums map[string]string `json:"checksums"`
	// Identical: every checksum equals the single-threaded run's.
	Identical bool `json:"identical"`
	// Differ names the tables that differ.
	Differ []string `json:"differ,omitempty"`
	Error  string   `json:"error,omitempty"`
}

// Sample is the target's progress at a moment of a run.
type Sample struct {
	At   time.Duration `json:"at_ns"`
	Txns int           `json:"transactions"`
}

// BusyWorkers is the mean number of workers not idle, over the samples.
func (r *SettingResult) BusyWorkers() float64 {
	if r.WorkerSamples == 0 {
		return 0
	}
	n := 0
	for st, c := range r.Workers {
		if !idleState(st) {
			n += c
		}
	}
	return float64(n) / float64(r.WorkerSamples)
}

// idleState: a worker waiting for work to be queued to it.
func idleState(st string) bool {
	s := strings.ToLower(st)
	return strings.Contains(s, "waiting for work") || s == ""
}

// medianRun returns a setting's result from its runs: a failed run's
// when one failed, else the median run's (the faster of the two middle
// ones for an even count), with every run's time in Runs. Runs whose data
// differ from each other make the result a failure: the setting does not
// apply the stretch the same way twice.
func medianRun(runs []*SettingResult) *SettingResult {
	if len(runs) == 1 {
		return runs[0]
	}
	times := make([]time.Duration, len(runs))
	for i, r := range runs {
		times[i] = r.Elapsed
		if r.Error != "" {
			r.Runs = times[:i+1]
			return r
		}
	}
	sorted := slices.Clone(runs)
	slices.SortStableFunc(sorted, func(a, b *SettingResult) int { return cmp.Compare(a.Elapsed, b.Elapsed) })
	m := sorted[(len(sorted)-1)/2]
	m.Runs = times
	for i, r := range runs {
		if same, differ := sameChecksums(runs[0].Checksums, r.Checksums); !same {
			m.Error = fmt.Sprintf("run %d's data differ from run 1's (%s)", i+1, strings.Join(differ, ", "))
			break
		}
	}
	return m
}

// compare sets each result's speed-up and data check against the
// single-threaded run (the first), then the recommendation and the
// source's ratio.
func (res *Result) compare() {
	if len(res.Settings) == 0 {
		return
	}
	base := &res.Settings[0]
	for i := range res.Settings {
		r := &res.Settings[i]
		if r.Error != "" {
			continue
		}
		if base.Error == "" && r.Elapsed > 0 {
			r.Speedup = base.Elapsed.Seconds() / r.Elapsed.Seconds()
		}
		if base.Error != "" {
			continue
		}
		r.Identical, r.Differ = sameChecksums(base.Checksums, r.Checksums)
	}
	res.recommend()
	var fastest float64
	for _, r := range res.Settings {
		if r.Error == "" {
			fastest = max(fastest, r.EventsPerSec)
		}
	}
	if fastest > 0 {
		res.SourceRatio = res.Source.EventsPerSec() / fastest
	}
}

func sameChecksums(base, got map[string]string) (bool, []string) {
	var differ []string
	for t, c := range base {
		if got[t] != c {
			differ = append(differ, t)
		}
	}
	for t := range got {
		if _, ok := base[t]; !ok {
			differ = append(differ, t)
		}
	}
	return len(differ) == 0, differ
}

// recommend picks the fastest setting with identical data and says why,
// naming the faster ones left out.
func (res *Result) recommend() {
	base := res.Settings[0]
	if base.Error != "" {
		res.Reason = "no recommendation: the single-threaded run, the reference of the data check, failed: " + base.Error
		return
	}
	best := -1
	for i, r := range res.Settings {
		if r.Error == "" && r.Identical && (best < 0 || r.Elapsed < res.Settings[best].Elapsed) {
			best = i
		}
	}
	b := res.Settings[best]
	s := b.Setting
	res.Recommended = &s
	var why strings.Builder
	if best == 0 {
		fmt.Fprintf(&why, "%s: no parallel setting was faster with identical data", b.Setting)
	} else {
		fmt.Fprintf(&why, "%s: %.1f× single-threaded, identical checksums", b.Setting, b.Speedup)
	}
	var passed []string
	for i, r := range res.Settings {
		if i == best {
			continue
		}
		switch {
		case r.Error != "":
			passed = append(passed, fmt.Sprintf("%s failed (%s)", r.Setting, r.Error))
		case !r.Identical && r.Elapsed < b.Elapsed:
			passed = append(passed, fmt.Sprintf("%s was %.1f× but its data differed (%s)", r.Setting, r.Speedup, strings.Join(r.Differ, ", ")))
		}
	}
	if len(passed) > 0 {
		why.WriteString("; " + strings.Join(passed, "; "))
	} else if best != 0 {
		// The runner-up, to show the margin.
		second := -1
		for i, r := range res.Settings {
			if i != best && r.Error == "" && r.Identical && (second < 0 || r.Elapsed < res.Settings[second].Elapsed) {
				second = i
			}
		}
		if second >= 0 {
			fmt.Fprintf(&why, "; next: %s at %.1f×", res.Settings[second].Setting, res.Settings[second].Speedup)
		}
	}
	res.Reason = why.String()
}
