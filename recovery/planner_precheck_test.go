package recovery

import (
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
)

// pcAt is a MariaDB replica of 21001 that received io and applied cur,
// observed at t0+at.
func pcAt(at time.Duration, io, cur string, opts ...func(*dbpilot.Instance)) *ApplierSample {
	in := plMaria(21002, 2, 21001, io, cur, plLive, func(in *dbpilot.Instance) {
		in.ObservedAt = time.Date(2025, 6, 2, 10, 15, 0, 0, time.UTC).Add(at)
	})
	for _, o := range opts {
		o(in)
	}
	return &ApplierSample{Inst: in}
}

func pcSQL(running bool, state string) func(*dbpilot.Instance) {
	return func(in *dbpilot.Instance) {
		in.Channels[0].SQLRunning = running
		in.Channels[0].SQLStateText = state
	}
}

func pcBehind(s int64) func(*dbpilot.Instance) {
	return func(in *dbpilot.Instance) { in.Channels[0].SecondsBehind = &s }
}

func withThreads(s *ApplierSample, th ...dbpilot.ApplierThread) *ApplierSample {
	s.Threads = th
	return s
}

func TestCheckApplier(t *testing.T) {
	const mdl = "Waiting for table metadata lock"
	tests := []struct {
		name          string
		first, second *ApplierSample
		maxLag        time.Duration
		refusal       []string // "": ready
		backlog       uint64
		estimate      time.Duration
	}{
		{name: "nothing to apply, SQL thread stopped", first: pcAt(0, "0-1-100", "0-1-100", pcSQL(false, ""))},
		{name: "nothing to apply, odd SQL thread state", first: pcAt(0, "0-1-100", "0-1-100", pcSQL(true, mdl), pcBehind(3600))},
		{name: "nothing to apply, a worker waits", first: withThreads(pcAt(0, "0-1-100", "0-1-100"), dbpilot.ApplierThread{ID: 7, State: mdl, Wait: mdl})},
		{name: "caught up by the second reading", first: pcAt(0, "0-1-100", "0-1-90", pcSQL(true, mdl)), second: pcAt(500*time.Millisecond, "0-1-100", "0-1-100")},
		{name: "backlog, SQL thread stopped", first: pcAt(0, "0-1-3100", "0-1-100", pcSQL(false, "")), backlog: 3000,
			refusal: []string{"3000 transactions received but not applied and its SQL thread is stopped: it cannot catch up within switchover.max_lag (10s)"}},
		{name: "backlog, SQL thread waits for a metadata lock", first: pcAt(0, "0-1-101", "0-1-100", pcSQL(true, mdl)), backlog: 1,
			refusal: []string{"1 transaction to apply and its applier waits for a lock (Waiting for table metadata lock)", "switchover.max_lag (10s)"}},
		{name: "backlog, a worker waits for a row lock", first: pcAt(0, "0-1-105", "0-1-100"),
			second:  withThreads(pcAt(500*time.Millisecond, "0-1-105", "0-1-101"), dbpilot.ApplierThread{ID: 8, State: "Update_rows_log_event::find_row(-1)", Wait: "an InnoDB row lock"}),
			backlog: 4, refusal: []string{"4 transactions to apply and its applier waits for a lock (an InnoDB row lock)"}},
		{name: "lag over the bound", first: pcAt(0, "0-1-9817", "0-1-9342", pcBehind(184)), backlog: 475,
			refusal: []string{"3m4s behind its source (Seconds_Behind_Master) with 475 transactions to apply: over switchover.max_lag (10s)"}},
		{name: "lag within a larger bound", first: pcAt(0, "0-1-9817", "0-1-9342", pcBehind(184)), maxLag: 5 * time.Minute, backlog: 475},
		{name: "one reading cannot tell progress", first: pcAt(0, "0-1-200", "0-1-100", pcBehind(2)), backlog: 100},
		{name: "applies nothing between readings", first: pcAt(0, "0-1-101", "0-1-100", pcSQL(true, "Waiting until MASTER_DELAY seconds after master executed event")),
			second:  pcAt(500*time.Millisecond, "0-1-101", "0-1-100", pcSQL(true, "Waiting until MASTER_DELAY seconds after master executed event")),
			backlog: 1, refusal: []string{"1 transaction to apply and none applied in 500ms (SQL thread: Waiting until MASTER_DELAY seconds after master executed event): its applier is not progressing, so it cannot catch up within switchover.max_lag (10s)"}},
		{name: "applies fast enough", first: pcAt(0, "0-1-1440", "0-1-100", pcBehind(1)), second: pcAt(500*time.Millisecond, "0-1-1440", "0-1-200", pcBehind(1)),
			backlog: 1240, estimate: 6200 * time.Millisecond},
		{name: "applies too slowly", first: pcAt(0, "0-1-1440", "0-1-50", pcBehind(4)), second: pcAt(time.Second, "0-1-1440", "0-1-100", pcBehind(5)),
			backlog: 1340, estimate: 26800 * time.Millisecond,
			refusal: []string{"1340 transactions to apply at 50/s, about 27s: over switchover.max_lag (10s)"}},
		{name: "too slowly for a smaller bound", first: pcAt(0, "0-1-1440", "0-1-100"), second: pcAt(500*time.Millisecond, "0-1-1440", "0-1-200"),
			maxLag: 2 * time.Second, backlog: 1240, estimate: 6200 * time.Millisecond,
			refusal: []string{"1240 transactions to apply at 200/s, about 6s: over switchover.max_lag (2s)"}},
		{name: "readings without a time take the sample interval", first: pcAt(0, "0-1-1440", "0-1-100", func(in *dbpilot.Instance) { in.ObservedAt = time.Time{} }),
			second: pcAt(0, "0-1-1440", "0-1-200", func(in *dbpilot.Instance) { in.ObservedAt = time.Time{} }), backlog: 1240, estimate: 6200 * time.Millisecond},
		{name: "several domains", first: pcAt(0, "0-1-110,1-2-20", "0-1-100,1-2-20"), second: pcAt(500*time.Millisecond, "0-1-110,1-2-30", "0-1-105,1-2-25"),
			backlog: 10, estimate: 500 * time.Millisecond},
		{name: "no channel from the source", first: pcAt(0, "0-1-100", "0-1-100", func(in *dbpilot.Instance) { in.Channels[0].Source = plKey(21009) }),
			refusal: []string{"no replication channel from 127.0.0.1:21001"}},
		{name: "unreadable GTID state", first: pcAt(0, "garbage", "0-1-100"), refusal: []string{"cannot read its GTID state: Gtid_IO_Pos"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rd := CheckApplier(plKey(21001), tt.first, tt.second, tt.maxLag)
			if len(tt.refusal) == 0 && rd.Refusal != "" {
				t.Fatalf("refused: %s", rd.Refusal)
			}
			if len(tt.refusal) > 0 && rd.Refusal == "" {
				t.Fatalf("ready (%+v), want a refusal", rd)
			}
			for _, want := range tt.refusal {
				if !strings.Contains(rd.Refusal, want) {
					t.Errorf("refusal %q lacks %q", rd.Refusal, want)
				}
			}
			if strings.Contains(rd.Refusal, "\n") {
				t.Errorf("refusal spans lines: %q", rd.Refusal)
			}
			if rd.Backlog != tt.backlog {
				t.Errorf("backlog %d, want %d", rd.Backlog, tt.backlog)
			}
			if rd.Estimate != tt.estimate {
				t.Errorf("estimate %s, want %s", rd.Estimate, tt.estimate)
			}
		})
	}
}

func TestCheckApplierMySQL(t *testing.T) {
	u := plU1
	at := func(at time.Duration, retrieved, executed string) *ApplierSample {
		in := plMySQL(21002, 2, 21001, retrieved, executed, plLive)
		in.ObservedAt = time.Date(2025, 6, 2, 10, 15, 0, 0, time.UTC).Add(at)
		return &ApplierSample{Inst: in}
	}
	rd := CheckApplier(plKey(21001), at(0, u+":1-500", u+":1-100"), at(500*time.Millisecond, u+":1-500", u+":1-100"), 0)
	if rd.Backlog != 400 || !strings.Contains(rd.Refusal, "400 transactions to apply and none applied in 500ms") {
		t.Errorf("stalled: %+v", rd)
	}
	rd = CheckApplier(plKey(21001), at(0, u+":1-500", u+":1-100"), at(500*time.Millisecond, u+":1-500", u+":1-300"), 0)
	if rd.Backlog != 200 || rd.Applied != 200 || rd.Refusal != "" || rd.Estimate != 500*time.Millisecond {
		t.Errorf("progressing: %+v", rd)
	}
	rd = CheckApplier(plKey(21001), at(0, u+":1-500", u+":1-500"), nil, 0)
	if rd.Backlog != 0 || rd.Refusal != "" {
		t.Errorf("caught up: %+v", rd)
	}
}
