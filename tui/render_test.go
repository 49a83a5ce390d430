package tui

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/internal/testutil"
)

// golden compares got with testdata/render/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	testutil.Golden(t, filepath.Join("testdata", "render", name), []byte(got))
}

var fixedTime = time.Date(2026, 11, 21, 9, 48, 20, 0, time.UTC)

// directFrame is a replication sandbox read directly: a busy primary, a
// replica in step, a replica whose SQL thread stopped, and a server down.
func directFrame() *Frame {
	return &Frame{
		Time:   fixedTime,
		Source: "direct, 4 instances",
		Rows: []Row{
			{
				Instance: "127.0.0.1:16501", Role: RolePrimary,
				QPS: N(152.4), Select: N(40.6), Insert: N(12), Update: N(8.4), Delete: N(1),
				ThreadsRunning: N(2), ThreadsConnected: N(14),
				DirtyPct: N(19.97), CheckpointAge: N(8388608), CheckpointPct: N(25),
				RowsRead: N(2095.5), RowsInserted: N(12), RowsUpdated: N(8.4), RowsDeleted: N(1),
				HistoryLength: N(212), PendingReads: N(0), PendingWrites: N(1), PendingFsyncs: N(0),
				GTID:        "0-16501-1043",
				GroupCommit: &dbpilot.GroupCommit{CommitRate: 120, GroupRate: 96, CommitsPerGroup: 1.25, TriggerCountRate: 6.5, TriggerTimeoutRate: 80.2, TriggerLockWaitRate: 9.3, WaitCount: 4, WaitUsec: 2000},
			},
			{
				Instance: "127.0.0.1:16502", Role: RoleReplica, ReadOnly: true,
				QPS: N(3.2), Select: N(0.4), Insert: N(0), Update: N(0), Delete: N(0),
				ThreadsRunning: N(1), ThreadsConnected: N(3), Lag: N(0),
				DirtyPct: N(4.98), CheckpointAge: N(1048576), CheckpointPct: N(3.125),
				RowsRead: N(0), RowsInserted: N(12), RowsUpdated: N(8.4), RowsDeleted: N(1),
				HistoryLength: N(0), PendingReads: N(0), PendingWrites: N(0), PendingFsyncs: N(0),
				GTID:     "0-16501-1043",
				Channels: []Channel{{Source: "127.0.0.1:16501", IORunning: "Yes", SQLRunning: "Yes", Lag: N(0), RelayLogSpace: N(10125)}},
				Apply: &dbpilot.ReplicaApply{BacklogTransactions: 1820, ApplyRate: 310.4, RateSeconds: 12, CommitRate: 120,
					State: dbpilot.CatchUpCatching, CatchUpSeconds: 9.57, WorkersBusy: 3, WorkersTotal: 4, RetryRate: 1.25},
			},
			{
				Instance: "127.0.0.1:16503", Role: RoleReplica, ReadOnly: true,
				QPS: N(3), Select: N(0.4), Insert: N(0), Update: N(0), Delete: N(0),
				ThreadsRunning: N(1), ThreadsConnected: N(3), LagNull: true,
				DirtyPct: N(0.59), CheckpointAge: N(356), CheckpointPct: N(0.001),
				RowsRead: N(0), RowsInserted: N(0), RowsUpdated: N(0), RowsDeleted: N(0),
				HistoryLength: N(0), PendingReads: N(0), PendingWrites: N(0), PendingFsyncs: N(0),
				GTID:     "0-16501-987",
				Channels: []Channel{{Source: "127.0.0.1:16501", IORunning: "Yes", SQLRunning: "No", RelayLogSpace: N(5242880)}},
				Apply:    &dbpilot.ReplicaApply{BacklogTransactions: 56, CommitRate: 120, State: dbpilot.CatchUpStopped, FallingBehindBy: 120},
			},
			{Instance: "127.0.0.1:16504", Err: "mysql: connect on 127.0.0.1:16504: connection refused"},
		},
	}
}

// galeraFrame is a three-node Galera cluster with one node paused by flow
// control, read directly.
func galeraFrame() *Frame {
	row := func(port, state string, recv, paused, sent, cdd float64) Row {
		return Row{Instance: "127.0.0.1:" + port, Role: RolePrimary, Wsrep: true, WsrepState: state,
			WsrepClusterSize: N(3), WsrepRecvQueue: N(recv), WsrepSendQueue: N(0), WsrepFlowPaused: N(paused),
			WsrepFCSent: N(sent), WsrepFCRecv: N(5), WsrepCertDeps: N(cdd),
			QPS: N(410), ThreadsRunning: N(3), ThreadsConnected: N(20)}
	}
	f := &Frame{Time: fixedTime, Source: "direct, 3 instances", Rows: []Row{
		row("4001", "Synced", 0, 0, 0, 7642.4), row("4002", "Synced", 2, 1.5, 0, 7699.8), row("4003", "Donor/Desynced", 1204, 33.3, 5, 3134.4),
	}}
	f.Rows = append(f.Rows, Row{Instance: "127.0.0.1:4004", Role: RolePrimary})
	return f
}

func TestRenderGolden(t *testing.T) {
	tests := []struct {
		name   string
		screen Screen
	}{
		{"overview.golden", Screen{Frame: directFrame(), View: ViewOverview}},
		{"innodb.golden", Screen{Frame: directFrame(), View: ViewInnoDB}},
		{"replication.golden", Screen{Frame: directFrame(), View: ViewReplication}},
		{"wsrep.golden", Screen{Frame: galeraFrame(), View: ViewWsrep}},
		{"overview-narrow.golden", Screen{Frame: directFrame(), View: ViewOverview, Width: 60, Height: 6}},
		{"overview-color.golden", Screen{Frame: directFrame(), View: ViewOverview, Width: 160, Color: true}},
		{"waiting.golden", Screen{View: ViewInnoDB, Width: 100}},
		{"stale.golden", Screen{Frame: directFrame(), View: ViewReplication, Err: "top: GET /api/clusters: connection refused"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			golden(t, tt.name, Render(tt.screen))
		})
	}
}

func TestRenderFitsWidth(t *testing.T) {
	for _, w := range []int{20, 45, 80, 200} {
		for v := range views {
			for _, color := range []bool{false, true} {
				out := Render(Screen{Frame: directFrame(), View: View(v), Width: w, Height: 5, Color: color})
				lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
				if len(lines) > 5 {
					t.Errorf("width %d view %v: %d lines, want at most 5", w, View(v), len(lines))
				}
				for _, l := range lines {
					if n := visibleLen(l); n > w {
						t.Errorf("width %d view %v: line of %d columns: %q", w, View(v), n, l)
					}
					if !utf8.ValidString(l) {
						t.Errorf("invalid UTF-8: %q", l)
					}
				}
			}
		}
	}
}

func TestLinesGolden(t *testing.T) {
	f := directFrame()
	var b strings.Builder
	for _, l := range Lines(f) {
		b.WriteString(l + "\n")
	}
	for _, l := range Lines(galeraFrame()) {
		b.WriteString(l + "\n")
	}
	golden(t, "lines.golden", b.String())
	for _, l := range Lines(f) {
		if strings.ContainsRune(l, '\x1b') || strings.ContainsRune(l, '\n') {
			t.Errorf("line with an escape or newline: %q", l)
		}
		if !strings.HasPrefix(l, "2026-11-21T09:48:20.000Z instance=") {
			t.Errorf("line does not start with the time and instance: %q", l)
		}
	}
}

func TestFormatNumbers(t *testing.T) {
	tests := []struct {
		got, want string
	}{
		{rate(N(0)), "0"}, {rate(N(0.45)), "0.5"}, {rate(N(12)), "12"}, {rate(N(99999)), "99999"},
		{rate(N(123456)), "123k"}, {rate(N(12_345_678)), "12.3M"}, {rate(Num{}), "-"},
		{size(N(924)), "924B"}, {size(N(10125)), "9.9K"}, {size(N(33554432)), "32M"}, {size(N(1.5 * (1 << 30))), "1.5G"},
		{percent(N(19.97)), "20.0"}, {count(N(2.6)), "3"},
		{seconds(0), "0s"}, {seconds(7.25), "7.2s"}, {seconds(3600), "3600s"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

func TestAssignRoles(t *testing.T) {
	ch := func(src string) []Channel { return []Channel{{Source: src}} }
	tests := []struct {
		name string
		rows []Row
		want []string
	}{
		{"primary and replicas", []Row{{Instance: "h:1"}, {Instance: "h:2", ReadOnly: true, Channels: ch("h:1")}, {Instance: "h:3", ReadOnly: true, Channels: ch("h:1")}},
			[]string{RolePrimary, RoleReplica, RoleReplica}},
		{"chain", []Row{{Instance: "h:1"}, {Instance: "h:2", ReadOnly: true, Channels: ch("h:1")}, {Instance: "h:3", ReadOnly: true, Channels: ch("h:2")}},
			[]string{RolePrimary, RoleIntermediate, RoleReplica}},
		{"ring of three", []Row{{Instance: "h:1", Channels: ch("h:3")}, {Instance: "h:2", Channels: ch("h:1")}, {Instance: "h:3", Channels: ch("h:2")}},
			[]string{RolePrimary, RolePrimary, RolePrimary}},
		{"read-only standalone", []Row{{Instance: "h:1", ReadOnly: true}}, []string{RoleReadOnly}},
		{"localhost and 127.0.0.1 are one", []Row{{Instance: "localhost:1", ReadOnly: true}, {Instance: "h:2", Channels: ch("127.0.0.1:1")}},
			[]string{RolePrimary, RoleReplica}},
		{"unreachable keeps no role", []Row{{Instance: "h:1", Err: "down"}, {Instance: "h:2", Channels: ch("h:1")}},
			[]string{"", RoleReplica}},
	}
	for _, tt := range tests {
		assignRoles(tt.rows)
		for i, r := range tt.rows {
			if r.Role != tt.want[i] {
				t.Errorf("%s: %s is %q, want %q", tt.name, r.Instance, r.Role, tt.want[i])
			}
		}
	}
}

func TestParseView(t *testing.T) {
	for s, want := range map[string]View{"overview": ViewOverview, "i": ViewInnoDB, "Replication": ViewReplication, "w": ViewWsrep,
		"q": ViewQueries, "queries": ViewQueries} {
		if v, err := ParseView(s); err != nil || v != want {
			t.Errorf("ParseView(%q) = %v, %v", s, v, err)
		}
	}
	if _, err := ParseView("x"); dbpilot.ErrorCode(err) != dbpilot.EINVALID || !strings.Contains(err.Error(), "wsrep or queries") {
		t.Errorf("ParseView(x) error %v", err)
	}
}
