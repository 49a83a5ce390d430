package backup

import (
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
)

func TestParseDesyncSample(t *testing.T) {
	at := time.Unix(100, 0)
	ok := map[string]string{"wsrep_local_recv_queue": "12", "wsrep_flow_control_sent": "3", "wsrep_flow_control_paused_ns": " 4500000 ", "wsrep_local_state_comment": "Donor/Desynced"}
	s, err := parseDesyncSample(at, ok)
	if err != nil || s != (desyncSample{At: at, RecvQueue: 12, FCSent: 3, FCPaused: 4500000, State: "Donor/Desynced"}) {
		t.Errorf("parseDesyncSample = %+v, %v", s, err)
	}
	for name, m := range map[string]map[string]string{
		"missing":      {"wsrep_local_recv_queue": "1", "wsrep_flow_control_sent": "0"},
		"not a number": {"wsrep_local_recv_queue": "x", "wsrep_flow_control_sent": "0", "wsrep_flow_control_paused_ns": "0"},
	} {
		if _, err := parseDesyncSample(at, m); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestGaleraRefusal(t *testing.T) {
	key := dbpilot.InstanceKey{Host: "127.0.0.1", Port: 3306}
	tests := []struct {
		name string
		vars map[string]string
		code string
		want string
	}{
		{"galera node", map[string]string{"wsrep_on": "ON", "wsrep_provider": "/usr/lib/galera/libgalera_smm.so", "wsrep_desync": "OFF"}, "", ""},
		{"MySQL: no wsrep at all", map[string]string{}, dbpilot.EUNSUPPORTED, "127.0.0.1:3306 is not a Galera node (the server has no wsrep_on)"},
		{"MariaDB without Galera", map[string]string{"wsrep_on": "OFF", "wsrep_provider": "none", "wsrep_desync": "OFF"}, dbpilot.EUNSUPPORTED, "is not a Galera node (wsrep_on is OFF)"},
		{"no provider", map[string]string{"wsrep_on": "ON", "wsrep_provider": "none"}, dbpilot.EUNSUPPORTED, "(no wsrep provider loaded)"},
		{"empty provider", map[string]string{"wsrep_on": "1", "wsrep_provider": ""}, dbpilot.EUNSUPPORTED, "(no wsrep provider loaded)"},
		{"desynced already", map[string]string{"wsrep_on": "ON", "wsrep_provider": "/x.so", "wsrep_desync": "ON"}, dbpilot.ECONFLICT, "wsrep_desync is already ON on 127.0.0.1:3306"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := galeraRefusal(key, tt.vars)
			if tt.code == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if dbpilot.ErrorCode(err) != tt.code || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("galeraRefusal = %v (%s), want %s with %q", err, dbpilot.ErrorCode(err), tt.code, tt.want)
			}
		})
	}
}

func TestBuildDesyncReport(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	sample := func(ms int, queue, sent, pausedMS int64, state string) desyncSample {
		return desyncSample{At: at(ms), RecvQueue: queue, FCSent: sent, FCPaused: pausedMS * int64(time.Millisecond), State: state}
	}
	before := sample(0, 0, 10, 1000, "Synced")
	tests := []struct {
		name     string
		before   desyncSample
		samples  []desyncSample
		on, off  time.Time
		want     DesyncReport
		wantLine string
	}{
		{
			name:   "queue grows while desynced, drains with flow control after",
			before: before,
			samples: []desyncSample{
				sample(100, 5, 10, 1000, "Donor/Desynced"),
				sample(200, 40, 10, 1000, "Donor/Desynced"),
				sample(290, 55, 10, 1000, "Donor/Desynced"), // the sample taken just before off
				sample(400, 60, 12, 1100, "Joined"),
				sample(500, 20, 14, 1250, "Joined"),
				sample(600, 0, 15, 1300, "Joined"),
				sample(700, 3, 15, 1300, "Synced"), // after the drain: not counted
			},
			on: at(50), off: at(300),
			want: DesyncReport{Node: "n", On: at(50), Off: at(300), Desynced: 250 * time.Millisecond,
				RecvQueueBefore: 0, RecvQueueAtOff: 55, MaxRecvQueue: 60, FlowControlSent: 5, FlowControlPaused: 300 * time.Millisecond,
				Drained: true, DrainTime: 300 * time.Millisecond, Samples: 8},
			wantLine: "wsrep_desync ON for 250ms on n; receive queue max 60 (55 when turned off), drained 300ms after, flow control sent 5, cluster paused 300ms",
		},
		{
			name:   "Synced counts as caught up on a busy cluster",
			before: sample(0, 2, 0, 0, "Synced"),
			samples: []desyncSample{
				sample(100, 30, 0, 0, "Donor/Desynced"),
				sample(300, 9, 1, 5, "Synced"),
			},
			on: at(10), off: at(200),
			want: DesyncReport{Node: "n", On: at(10), Off: at(200), Desynced: 190 * time.Millisecond, RecvQueueBefore: 2, RecvQueueAtOff: 30,
				MaxRecvQueue: 30, FlowControlSent: 1, FlowControlPaused: 5 * time.Millisecond, Drained: true, DrainTime: 100 * time.Millisecond, Samples: 3},
		},
		{
			name:   "not drained when sampling stopped",
			before: before,
			samples: []desyncSample{
				sample(100, 8, 10, 1000, "Donor/Desynced"),
				sample(300, 9, 11, 1000, "Joined"),
			},
			on: at(10), off: at(200),
			want: DesyncReport{Node: "n", On: at(10), Off: at(200), Desynced: 190 * time.Millisecond, RecvQueueAtOff: 8, MaxRecvQueue: 9,
				FlowControlSent: 1, Samples: 3},
			wantLine: "wsrep_desync ON for 190ms on n; receive queue max 9 (8 when turned off), not drained when sampling stopped, flow control sent 1, cluster paused 0s",
		},
		{
			name:    "never turned off",
			before:  before,
			samples: []desyncSample{sample(100, 4, 10, 1000, "Donor/Desynced")},
			on:      at(10),
			want:    DesyncReport{Node: "n", On: at(10), RecvQueueAtOff: 4, MaxRecvQueue: 4, Samples: 2},
		},
		{
			name:    "counters reset by FLUSH STATUS count from zero",
			before:  sample(0, 0, 100, 5000, "Synced"),
			samples: []desyncSample{sample(100, 0, 2, 7, "Synced")},
			on:      at(10), off: at(50),
			want: DesyncReport{Node: "n", On: at(10), Off: at(50), Desynced: 40 * time.Millisecond, FlowControlSent: 2, FlowControlPaused: 7 * time.Millisecond,
				Drained: true, DrainTime: 50 * time.Millisecond, Samples: 2},
		},
		{
			name: "no samples", before: before, on: at(10), off: at(20),
			want: DesyncReport{Node: "n", On: at(10), Off: at(20), Desynced: 10 * time.Millisecond, Samples: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := buildDesyncReport("n", tt.before, tt.samples, tt.on, tt.off)
			if got != tt.want {
				t.Errorf("report\n got %+v\nwant %+v", got, tt.want)
			}
			if tt.wantLine != "" && got.String() != tt.wantLine {
				t.Errorf("String()\n got %q\nwant %q", got.String(), tt.wantLine)
			}
		})
	}
}

func TestDumpOptionsDesyncDefaults(t *testing.T) {
	o := DumpOptions{Out: "x", Desync: true}
	if err := o.Validate(); err != nil || o.DesyncWait != defaultDesyncWait || o.DesyncInterval != defaultDesyncInterval {
		t.Errorf("Validate: %v, wait %s, interval %s", err, o.DesyncWait, o.DesyncInterval)
	}
	o = DumpOptions{Out: "x", DesyncWait: -time.Second}
	if err := o.Validate(); dbpilot.ErrorCode(err) != dbpilot.EINVALID {
		t.Errorf("negative --desync-wait: %v", err)
	}
}
