package loadgen

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

var resultStart = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func sampleIntervals() []Interval {
	return []Interval{
		{Start: resultStart, Seconds: 1, RateTarget: 1000, Rate: 1000, Completed: 1000, P50: 1.234, P90: 2, P99: 4.56, P999: 9.87, Max: 12.3, Busy: 3, BusyMax: 5},
		{Start: resultStart.Add(time.Second), Seconds: 0.5, RateTarget: 1000, Rate: 998, Completed: 499, Errors: 2,
			ErrorsBy: map[string]int64{"connection": 2}, P50: 0.412, P90: 0.9, P99: 250, P999: 2013.4, Max: 2013.4,
			Busy: 64, BusyMax: 64, Backlog: 17, BacklogMax: 40, Reconnects: 1},
	}
}

func TestFormatLine(t *testing.T) {
	ivs := sampleIntervals()
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"elapsed", FormatLineAt(12*time.Second, ivs[0]),
			"[ 12s ] rate 1000.0/1000 tps  p50 1.23 ms  p99 4.56 ms  p99.9 9.87 ms  max 12.3 ms  err 0  busy 3  backlog 0"},
		{"stall with reconnects", FormatLineAt(1500*time.Millisecond, ivs[1]),
			"[ 1.5s ] rate 998.0/1000 tps  p50 0.412 ms  p99 250 ms  p99.9 2013 ms  max 2013 ms  err 2  busy 64  backlog 17  reconnects 1"},
		{"time of day", FormatLine(ivs[0]),
			"[ 12:00:01 ] rate 1000.0/1000 tps  p50 1.23 ms  p99 4.56 ms  p99.9 9.87 ms  max 12.3 ms  err 0  busy 3  backlog 0"},
		{"closed loop", FormatLineAt(time.Second, Interval{Seconds: 1, Rate: 3998}),
			"[ 1s ] rate 3998.0 tps  p50 0 ms  p99 0 ms  p99.9 0 ms  max 0 ms  err 0  busy 0  backlog 0"},
		{"fractional target", FormatLineAt(time.Second, Interval{Seconds: 1, Rate: 2.5, RateTarget: 2.5}),
			"[ 1s ] rate 2.5/2.5 tps  p50 0 ms  p99 0 ms  p99.9 0 ms  max 0 ms  err 0  busy 0  backlog 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", tc.got, tc.want)
			}
		})
	}
}

func TestWriteCSV(t *testing.T) {
	var b bytes.Buffer
	if err := WriteCSV(&b, sampleIntervals()); err != nil {
		t.Fatal(err)
	}
	want := "start,seconds,rate_target,rate,transactions,errors,p50_ms,p90_ms,p99_ms,p999_ms,max_ms,busy,backlog,reconnects\n" +
		"2026-03-01T12:00:00.000Z,1,1000,1000,1000,0,1.234,2.000,4.560,9.870,12.300,3,0,0\n" +
		"2026-03-01T12:00:01.000Z,0.5,1000,998,499,2,0.412,0.900,250.000,2013.400,2013.400,64,17,1\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	if err := WriteCSV(&b, nil); err != nil || strings.Count(b.String(), "\n") != 1 {
		t.Errorf("no intervals: %q, %v; want the header only", b.String(), err)
	}
}

func TestWriteJSON(t *testing.T) {
	res := &Result{
		Summary: Summary{Workload: "oltp_read_write", Mode: "open", Arrival: ArrivalConstant, Seconds: 1.5, Transactions: 1499,
			Errors: 2, ErrorsBy: map[string]int64{"connection": 2}, Ops: []OpSummary{{Op: "tx", Count: 1499}},
			Event: &EventReport{Kind: "failover", At: resultStart.Add(time.Second), UnavailableMS: 250}},
		Intervals: sampleIntervals(),
	}
	var b bytes.Buffer
	if err := WriteJSON(&b, res); err != nil {
		t.Fatal(err)
	}
	var back map[string]json.RawMessage
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if len(back) != 2 || back["summary"] == nil || back["intervals"] == nil {
		t.Fatalf("keys: %v, want summary and intervals", b.String())
	}
	var got Result
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Summary.Event == nil || got.Summary.Event.UnavailableMS != 250 || len(got.Intervals) != 2 ||
		got.Intervals[1].ErrorsBy["connection"] != 2 || !got.Intervals[1].Start.Equal(resultStart.Add(time.Second)) {
		t.Errorf("round trip: %+v", got)
	}
	for _, key := range []string{`"rate_target"`, `"p999_ms"`, `"errors_by_class"`, `"write_unavailable_ms"`, `"backlog_max"`} {
		if !strings.Contains(b.String(), key) {
			t.Errorf("JSON lacks %s", key)
		}
	}
	b.Reset()
	if err := WriteJSON(&b, &Result{}); err != nil || !strings.Contains(b.String(), `"intervals": []`) {
		t.Errorf("empty result: %s, %v", b.String(), err)
	}
}

func TestFormatSummary(t *testing.T) {
	at := resultStart.Add(30 * time.Second)
	tests := []struct {
		name string
		s    Summary
		want []string
		not  []string
	}{
		{
			name: "open loop with an event",
			s: Summary{Workload: "oltp_read_write", Target: "sandbox demo", Mode: "open", Arrival: ArrivalPoisson, Seconds: 60,
				RateTarget: 1000, RateAchieved: 998.5, Transactions: 59910, Errors: 30, ErrorsBy: map[string]int64{"connection": 20, "read_only": 10},
				P50: 1.2, P90: 2.5, P99: 40, P999: 2013, Max: 2100, MaxBacklog: 120, MaxBusy: 64, Reconnects: 64,
				Ops: []OpSummary{{Op: "get_node", Count: 50000, P50: 1}, {Op: "add_link", Count: 9910, Errors: 30}},
				Event: &EventReport{Kind: "failover", At: at, FirstFailed: at.Add(12 * time.Millisecond), FirstOK: at.Add(2025 * time.Millisecond),
					UnavailableMS: 2013, Failed: 30, AckedWrites: 9000, OldPrimary: "127.0.0.1:1", NewPrimary: "127.0.0.1:2",
					Before: OpSummary{Count: 30000}, During: OpSummary{Count: 2000, Errors: 30}, After: OpSummary{Count: 27910}}},
			want: []string{
				"oltp_read_write on sandbox demo, open loop at 1000 tx/s (poisson arrivals), 60.0 s transactions",
				"transactions  59910 (998.5/s)",
				"errors        30 (0.05%: connection 20, read_only 10)",
				"latency (ms, from intended start)  p50 1.20  p90 2.50  p99 40.0  p99.9 2013  max 2100",
				"busy connections max 64, backlog max 120, reconnects 64",
				"get_node  50000",
				"add_link   9910     30",
				"failover at 12:00:30.000: primary 127.0.0.1:1 -> 127.0.0.1:2",
				"writes unavailable 2013 ms: first failed write +0.012 s after the event, first successful write +2.025 s",
				"failed transactions 30; acknowledged writes 9000, lost 0",
				"during   2000     30",
			},
		},
		{
			name: "closed loop, interrupted",
			s:    Summary{Workload: "oltp_point_select", Mode: "closed", Seconds: 2.5, Transactions: 100, RateAchieved: 40, Interrupted: true},
			want: []string{"oltp_point_select, closed loop, 2.5 s (interrupted: the summary so far)", "from actual start", "errors 0 latency"},
			not:  []string{"backlog", "unavailable"},
		},
		{
			name: "event without recovery",
			s:    Summary{Workload: "w", Mode: "open", Event: &EventReport{At: at, FirstFailed: at.Add(time.Second), UnavailableMS: 5000}},
			want: []string{"event at 12:00:30.000 writes", "writes unavailable from +1.000 s after the event to the end of the run (5000 ms)"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := FormatSummary(tc.s)
			// Compared with spaces collapsed: the tables' alignment is not
			// the point.
			flat := strings.Join(strings.Fields(got), " ")
			for _, w := range tc.want {
				if !strings.Contains(flat, strings.Join(strings.Fields(w), " ")) {
					t.Errorf("summary lacks %q:\n%s", w, got)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(got, w) {
					t.Errorf("summary has %q:\n%s", w, got)
				}
			}
		})
	}
}
