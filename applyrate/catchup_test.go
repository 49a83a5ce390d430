package applyrate

import (
	"math"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// series returns one point a second from t0: count starts at c0 and grows
// by per[i] in second i; backlog and running likewise per second.
func primaryAt(rate float64, secs int) []Point {
	var out []Point
	for i := 0; i <= secs; i++ {
		out = append(out, Point{At: t0.Add(time.Duration(i) * time.Second), Count: uint64(1000 + rate*float64(i)), Known: true})
	}
	return out
}

type step struct {
	applied uint64 // in this second
	running bool
}

// replicaOf builds a replica's points against a primary committing rate
// tx/s, applying steps[i] in second i, starting caught up.
func replicaOf(rate float64, steps []step) []Point {
	count := uint64(1000)
	out := []Point{{At: t0, Count: count, Known: true, Running: true}}
	for i, s := range steps {
		count += s.applied
		primary := uint64(1000 + rate*float64(i+1))
		out = append(out, Point{At: t0.Add(time.Duration(i+1) * time.Second), Count: count, Known: true,
			Backlog: int64(primary) - int64(count), Running: s.running})
	}
	return out
}

func repeat(s step, n int) []step {
	out := make([]step, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func TestPredict(t *testing.T) {
	cases := []struct {
		name     string
		primary  []Point
		replica  []Point
		state    string
		catchup  float64 // expected seconds (state catching_up)
		behind   float64
		backlog  int64
		rate     float64
		rateSecs float64
	}{
		{
			name:    "caught up: applies at the primary's pace",
			primary: primaryAt(100, 30), replica: replicaOf(100, repeat(step{100, true}, 30)),
			state: dbpilot.CatchUpCaughtUp,
		},
		{
			name: "stopped: the SQL thread does not run, falls behind by the commit rate",
			// 10 s applying, then 20 s stopped.
			primary: primaryAt(100, 30), replica: replicaOf(100, append(repeat(step{100, true}, 10), repeat(step{0, false}, 20)...)),
			state: dbpilot.CatchUpStopped, behind: 100, backlog: 2000,
		},
		{
			name:    "just restarted: one second of apply is not enough",
			primary: primaryAt(100, 31), replica: replicaOf(100, append(append(repeat(step{100, true}, 10), repeat(step{0, false}, 20)...), step{300, true})),
			state: dbpilot.CatchUpUnknown, backlog: 1800,
		},
		{
			// 40 s stopped (backlog 4000), then 7 s at 300 tx/s against
			// 100: backlog 4000 - 7*200 = 2600, catches up in 2600/200 s;
			// the rate over the last 5 s (the first second after the start
			// left out).
			name:    "catching up after a stop: the stopped time does not dilute the rate",
			primary: primaryAt(100, 57), replica: replicaOf(100, append(append(repeat(step{100, true}, 10), repeat(step{0, false}, 40)...), repeat(step{300, true}, 7)...)),
			state: dbpilot.CatchUpCatching, backlog: 2600, catchup: 13, rate: 300, rateSecs: 5,
		},
		{
			// The SQL thread's first second after a start applies 60, then
			// 300 a second: the prediction is made from the pace after it.
			// Backlog 4000 + 40 - 6*200.
			name:    "catching up after a stop: the start-up second is left out",
			primary: primaryAt(100, 57), replica: replicaOf(100, append(append(append(repeat(step{100, true}, 10), repeat(step{0, false}, 40)...), step{60, true}), repeat(step{300, true}, 6)...)),
			state: dbpilot.CatchUpCatching, backlog: 2840, catchup: 14.2, rate: 300, rateSecs: 5,
		},
		{
			name:    "4 s after a start is not enough: unknown",
			primary: primaryAt(100, 55), replica: replicaOf(100, append(append(repeat(step{100, true}, 10), repeat(step{0, false}, 40)...), repeat(step{300, true}, 5)...)),
			state: dbpilot.CatchUpUnknown, backlog: 3000,
		},
		{
			// Applies 80 of the 100 a second for 30 s: 20 tx/s behind.
			name:    "falling behind",
			primary: primaryAt(100, 30), replica: replicaOf(100, repeat(step{80, true}, 30)),
			state: dbpilot.CatchUpFalling, backlog: 600, behind: 20, rate: 80, rateSecs: 10, // the last RecentSpan
		},
		{
			name:    "no primary commits: any backlog is caught up at the apply rate",
			primary: primaryAt(0, 10), replica: func() []Point {
				var out []Point
				for i := 0; i <= 10; i++ {
					out = append(out, Point{At: t0.Add(time.Duration(i) * time.Second), Count: uint64(50 * i), Backlog: int64(1000 - 50*i), Known: true, Running: true})
				}
				return out
			}(),
			state: dbpilot.CatchUpCatching, backlog: 500, catchup: 10, rate: 50, rateSecs: 10,
		},
		{
			name:    "positions unknown",
			primary: primaryAt(100, 3), replica: []Point{{At: t0, Known: false}},
			state: dbpilot.CatchUpUnknown,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Predict(c.primary, c.replica)
			if got.State != c.state {
				t.Fatalf("state %s, want %s (%+v)", got.State, c.state, got)
			}
			if got.BacklogTransactions != c.backlog && c.state != dbpilot.CatchUpCaughtUp {
				t.Errorf("backlog %d, want %d", got.BacklogTransactions, c.backlog)
			}
			if math.Abs(got.CatchUpSeconds-c.catchup) > 1e-6 {
				t.Errorf("catch-up %.3f s, want %.3f", got.CatchUpSeconds, c.catchup)
			}
			if math.Abs(got.FallingBehindBy-c.behind) > 1e-6 {
				t.Errorf("falling behind by %.3f, want %.3f", got.FallingBehindBy, c.behind)
			}
			if c.rate > 0 && (math.Abs(got.ApplyRate-c.rate) > 1e-6 || got.RateSeconds != c.rateSecs) {
				t.Errorf("apply rate %.3f over %.1f s, want %.3f over %.1f", got.ApplyRate, got.RateSeconds, c.rate, c.rateSecs)
			}
		})
	}
}

// TestApplyRateLateReading: a replica applying 300 tx/s whose last
// observation was read 400 ms late (its count that of its second). The
// difference of the ends says 288 tx/s (-3.8%); the least-squares slope
// of the span's points is closer.
func TestApplyRateLateReading(t *testing.T) {
	ps := replicaOf(100, append(append(repeat(step{100, true}, 10), repeat(step{0, false}, 40)...), repeat(step{300, true}, 12)...))
	ps[len(ps)-1].At = ps[len(ps)-1].At.Add(400 * time.Millisecond)
	rate, span := ApplyRate(ps)
	first := ps[len(ps)-1].At.Add(-span)
	var c0 uint64
	for _, p := range ps {
		if p.At.Equal(first) {
			c0 = p.Count
		}
	}
	ends := float64(ps[len(ps)-1].Count-c0) / span.Seconds()
	t.Logf("slope %.1f tx/s, ends %.1f tx/s over %s", rate, ends, span)
	if math.Abs(rate-300) > 0.025*300 || math.Abs(rate-300) >= math.Abs(ends-300) {
		t.Errorf("apply rate %.1f tx/s, want within 2.5%% of 300 and closer than the ends' %.1f", rate, ends)
	}
}

func TestCommitRateWindow(t *testing.T) {
	// 100 tx/s for 2 minutes, then 10 tx/s for the last minute: only the
	// last minute counts.
	var ps []Point
	n := uint64(0)
	for i := 0; i <= 180; i++ {
		ps = append(ps, Point{At: t0.Add(time.Duration(i) * time.Second), Count: n, Known: true})
		if i < 120 {
			n += 100
		} else {
			n += 10
		}
	}
	if got := CommitRate(ps); math.Abs(got-10) > 1e-9 {
		t.Errorf("commit rate %.3f, want 10", got)
	}
	var r Ring
	for _, p := range ps {
		r.Add(p)
	}
	if got := len(r.Points()); got != 62 {
		t.Errorf("ring keeps %d points, want 62 (the window and one before)", got)
	}
}

func TestBacklog(t *testing.T) {
	maria := func(binlog, slave string) *dbpilot.Instance {
		return &dbpilot.Instance{Flavor: dbpilot.FlavorMariaDB, GTID: dbpilot.GTIDState{BinlogPos: binlog, SlavePos: slave}}
	}
	mysqlI := func(executed string) *dbpilot.Instance {
		return &dbpilot.Instance{Flavor: dbpilot.FlavorMySQL, GTID: dbpilot.GTIDState{Executed: executed}}
	}
	const u1, u2 = "3e11fa47-71ca-11e1-9e33-c80aa9429562", "4e11fa47-71ca-11e1-9e33-c80aa9429562"
	cases := []struct {
		name             string
		primary, replica *dbpilot.Instance
		want             int64
		ok               bool
	}{
		{"maria one domain", maria("0-1-500", ""), maria("", "0-1-420"), 80, true},
		{"maria two domains", maria("0-1-500,1-2-30", ""), maria("", "0-1-500,1-2-10"), 20, true},
		{"maria replica ahead in a domain counts 0", maria("0-1-500", ""), maria("", "0-1-510"), 0, true},
		{"maria domain never replicated left out", maria("0-1-500,7-9-1000", ""), maria("", "0-1-499"), 1, true},
		{"maria no slave pos", maria("0-1-500", ""), maria("", ""), 0, false},
		{"mysql set difference", mysqlI(u1 + ":1-100," + u2 + ":1-5"), mysqlI(u1 + ":1-90," + u2 + ":1-5"), 10, true},
		{"mysql gap", mysqlI(u1 + ":1-100"), mysqlI(u1 + ":1-50:60-100"), 9, true},
	}
	for _, c := range cases {
		got, ok := Backlog(c.primary, c.replica)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: %d %t, want %d %t", c.name, got, ok, c.want, c.ok)
		}
	}
}

func TestBacklogBytes(t *testing.T) {
	in := &dbpilot.Instance{Channels: []dbpilot.ReplicationChannel{
		{SourceLogFile: "mysql-bin.000003", RelaySourceLogFile: "mysql-bin.000003", ReadSourceLogPos: 9000, ExecSourceLogPos: 4000, RelayLogSpace: 20000},
		{SourceLogFile: "mysql-bin.000004", RelaySourceLogFile: "mysql-bin.000003", ReadSourceLogPos: 100, ExecSourceLogPos: 4000, RelayLogSpace: 7000},
	}}
	if got := BacklogBytes(in); got != 5000+7000 {
		t.Errorf("backlog bytes %d, want 12000", got)
	}
}
