package recovery

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
)

const plU1 = "3f1e7a52-3f5c-11f0-8d2b-0242ac120002"

func plKey(port int) dbpilot.InstanceKey { return dbpilot.InstanceKey{Host: "127.0.0.1", Port: port} }

var plMariaVersion = dbpilot.Version{Major: 10, Minor: 11, Patch: 19, Raw: "10.11.19-MariaDB-log"}

// plMaria is a MariaDB replica of source with received position io and
// gtid_current_pos cur (also its binlog state and slave pos).
func plMaria(port int, id uint32, source int, io, cur string, opts ...func(*dbpilot.Instance)) *dbpilot.Instance {
	in := &dbpilot.Instance{
		Key: plKey(port), Reachable: true, Flavor: dbpilot.FlavorMariaDB, Version: plMariaVersion,
		ServerID: id, ReadOnly: true, LogBin: true, LogReplicaUpdates: true,
		GTID: dbpilot.GTIDState{Mode: "ON", BinlogPos: cur, SlavePos: cur, CurrentPos: cur, BinlogState: cur},
		Channels: []dbpilot.ReplicationChannel{{
			Source: plKey(source), IORunning: dbpilot.IOConnecting, SQLRunning: true,
			UsingGTID: "Slave_Pos", GTIDIOPos: io, SourceServerID: 1,
		}},
	}
	for _, o := range opts {
		o(in)
	}
	return in
}

// plMySQL is a MySQL replica of source.
func plMySQL(port int, id uint32, source int, retrieved, executed string, opts ...func(*dbpilot.Instance)) *dbpilot.Instance {
	in := &dbpilot.Instance{
		Key: plKey(port), Reachable: true, Flavor: dbpilot.FlavorMySQL,
		Version:  dbpilot.Version{Major: 8, Minor: 4, Patch: 5, Raw: "8.4.5"},
		ServerID: id, ServerUUID: plUUID(id), ReadOnly: true, LogBin: true, LogReplicaUpdates: true,
		GTID: dbpilot.GTIDState{Mode: "ON", Executed: executed},
		Channels: []dbpilot.ReplicationChannel{{
			Source: plKey(source), IORunning: dbpilot.IOConnecting, SQLRunning: true,
			UsingGTID: "Auto_Position", RetrievedGTIDSet: retrieved, ExecutedGTIDSet: executed, SourceServerID: 1,
		}},
	}
	for _, o := range opts {
		o(in)
	}
	return in
}

func plUUID(id uint32) string {
	return map[uint32]string{1: plU1, 2: "4a8c21e9-3f5c-11f0-9b41-0242ac120003", 3: "55d0b6f4-3f5c-11f0-a3c7-0242ac120004",
		4: "61f3c8a0-3f5c-11f0-b5d2-0242ac120005"}[id]
}

func plDead(port int) *dbpilot.Instance {
	return &dbpilot.Instance{Key: plKey(port), LastError: "connection refused"}
}

func plLive(in *dbpilot.Instance) { in.Channels[0].IORunning = dbpilot.IORunning }
func plState(s string) func(*dbpilot.Instance) {
	return func(in *dbpilot.Instance) { in.GTID.BinlogState = s }
}

func TestCompareRank(t *testing.T) {
	base := rank{key: plKey(21002), rule: dbpilot.PromoteNeutral, complete: true, fetchable: true}
	with := func(f func(*rank)) rank { r := base; f(&r); return r }
	tests := []struct {
		name          string
		better, worse rank
	}{
		{"complete before catch-up",
			base, with(func(r *rank) { r.complete = false; r.key = plKey(21001) })},
		{"catch-up neutral before complete prefer_not",
			with(func(r *rank) { r.complete = false; r.missing = 100 }), with(func(r *rank) { r.rule = dbpilot.PromotePreferNot; r.key = plKey(21001) })},
		{"complete prefer_not before prefer_not with catch-up",
			with(func(r *rank) { r.rule = dbpilot.PromotePreferNot }), with(func(r *rank) { r.rule = dbpilot.PromotePreferNot; r.complete = false; r.key = plKey(21001) })},
		{"prefer_not with catch-up before one that cannot be made complete",
			with(func(r *rank) { r.rule = dbpilot.PromotePreferNot; r.complete = false }), with(func(r *rank) { r.rule = dbpilot.PromotePrefer; r.complete = false; r.fetchable = false })},
		{"complete neutral before prefer with catch-up",
			base, with(func(r *rank) { r.rule = dbpilot.PromotePrefer; r.complete = false })},
		{"prefer before neutral",
			with(func(r *rank) { r.rule = dbpilot.PromotePrefer; r.backlog = 900 }), base},
		{"empty rule is neutral",
			with(func(r *rank) { r.rule = "" }), with(func(r *rank) { r.rule = dbpilot.PromotePreferNot })},
		{"more domains at the top",
			with(func(r *rank) { r.complete = false; r.ahead = 2; r.missing = 50; r.key = plKey(21009) }), with(func(r *rank) { r.complete = false; r.ahead = 1; r.missing = 5 })},
		{"fewer transactions to fetch",
			with(func(r *rank) { r.complete = false; r.missing = 5; r.backlog = 900; r.key = plKey(21009) }), with(func(r *rank) { r.complete = false; r.missing = 6 })},
		{"smaller relay backlog",
			with(func(r *rank) { r.backlog = 1; r.key = plKey(21009) }), with(func(r *rank) { r.backlog = 2 })},
		{"lower key",
			base, with(func(r *rank) { r.key = plKey(21003) })},
		{"port compares as a number",
			with(func(r *rank) { r.key = plKey(3306) }), with(func(r *rank) { r.key = plKey(21001) })},
	}
	for _, tt := range tests {
		if c := compareRank(tt.better, tt.worse); c >= 0 {
			t.Errorf("%s: compareRank = %d, want < 0", tt.name, c)
		}
		if c := compareRank(tt.worse, tt.better); c <= 0 {
			t.Errorf("%s: reversed compareRank = %d, want > 0", tt.name, c)
		}
	}
	if compareRank(base, base) != 0 {
		t.Errorf("compareRank(x, x) != 0")
	}
}

func TestPlanFailover(t *testing.T) {
	type want struct {
		candidate int
		catchUp   []CatchUp
		repoint   []int
		lost      []int    // ports
		notes     []string // substrings of the rendered plan
		errCode   string
		errHas    []string
	}
	tests := []struct {
		name      string
		dead      dbpilot.InstanceKey
		instances []*dbpilot.Instance
		rules     Rules
		want      want
	}{
		{
			name: "keys are normalized",
			dead: dbpilot.InstanceKey{Host: "localhost", Port: 21001},
			instances: []*dbpilot.Instance{
				plMaria(21002, 2, 21001, "0-1-10", "0-1-10"),
				plMaria(21003, 3, 21001, "0-1-12", "0-1-12"),
			},
			want: want{candidate: 21003, repoint: []int{21002}},
		},
		{
			name: "prefer with catch-up loses to a complete neutral",
			instances: []*dbpilot.Instance{
				plMaria(21002, 2, 21001, "0-1-10", "0-1-10"),
				plMaria(21003, 3, 21001, "0-1-12", "0-1-12"),
			},
			rules: Rules{plKey(21002): dbpilot.PromotePrefer},
			want:  want{candidate: 21003, repoint: []int{21002}, notes: []string{"lacks some of them"}},
		},
		{
			name: "complete prefer_not chosen when no other can be made complete",
			instances: []*dbpilot.Instance{
				plMySQL(21002, 2, 21001, plU1+":1-60", plU1+":1-60", func(in *dbpilot.Instance) { in.GTID.Purged = plU1 + ":1-55" }),
				plMySQL(21003, 3, 21001, plU1+":1-50", plU1+":1-50"),
			},
			rules: Rules{plKey(21002): dbpilot.PromotePreferNot},
			want: want{candidate: 21002, lost: []int{21003}, notes: []string{
				"prefer_not, but no other replica can be made complete",
				"cannot fetch " + plU1 + ":51-60: 127.0.0.1:21002 has " + plU1 + ":51-60 (purged " + plU1 + ":51-55 from its binary log)",
				"127.0.0.1:21003: needs " + plU1 + ":51-55, which 127.0.0.1:21002 purged from its binary log",
			}},
		},
		{
			name: "domains from two sources: two steps, each ignoring the others",
			instances: []*dbpilot.Instance{
				plMaria(21002, 2, 21001, "0-1-100,1-1-50,2-1-30", "0-1-100,1-1-50,2-1-30"),
				plMaria(21003, 3, 21001, "0-1-100,1-1-55,2-1-30", "0-1-100,1-1-55,2-1-30", func(in *dbpilot.Instance) { in.Version.Minor = 6 }),
				plMaria(21004, 4, 21001, "0-1-100,1-1-50,2-1-33", "0-1-100,1-1-50,2-1-33", func(in *dbpilot.Instance) { in.Version.Minor = 6 }),
			},
			rules: Rules{plKey(21003): dbpilot.PromoteMustNot, plKey(21004): dbpilot.PromoteMustNot},
			want: want{candidate: 21002, catchUp: []CatchUp{
				{From: plKey(21003), Domains: []uint32{1}, Until: "1-1-55"},
				{From: plKey(21004), Domains: []uint32{2}, Until: "2-1-33"},
			}, repoint: nil, lost: nil, errCode: dbpilot.ECONFLICT, errHas: []string{"newer release series"}},
		},
		{
			name: "two domains from one source: one step",
			instances: []*dbpilot.Instance{
				plMaria(21002, 2, 21001, "0-1-100,1-1-50,2-1-30", "0-1-100,1-1-50,2-1-30"),
				plMaria(21003, 3, 21001, "0-1-100,1-1-55,2-1-33", "0-1-100,1-1-55,2-1-33"),
				plMaria(21004, 4, 21001, "0-1-100,1-1-50,2-1-33", "0-1-100,1-1-50,2-1-33"),
			},
			rules: Rules{plKey(21003): dbpilot.PromoteMustNot},
			want: want{candidate: 21004, catchUp: []CatchUp{
				{From: plKey(21003), Domains: []uint32{1}, Until: "1-1-55"},
			}, repoint: []int{21002, 21003}},
		},
		{
			name: "prefer breaks the tie between catch-ups",
			instances: []*dbpilot.Instance{
				plMaria(21002, 2, 21001, "0-1-100,1-1-50,2-1-30", "0-1-100,1-1-50,2-1-30"),
				plMaria(21003, 3, 21001, "0-1-100,1-1-55,2-1-33", "0-1-100,1-1-55,2-1-33"),
				plMaria(21004, 4, 21001, "0-1-100,1-1-50,2-1-33", "0-1-100,1-1-50,2-1-33"),
			},
			rules: Rules{plKey(21003): dbpilot.PromoteMustNot, plKey(21002): dbpilot.PromotePrefer},
			want: want{candidate: 21002, catchUp: []CatchUp{
				{From: plKey(21003), Domains: []uint32{1, 2}, Until: "1-1-55,2-1-33"},
			}, repoint: []int{21003, 21004}},
		},
		{
			name: "conflict without the old primary's server_id: both sides lost",
			instances: []*dbpilot.Instance{
				plMaria(21002, 2, 21001, "0-5-100", "0-5-100", func(in *dbpilot.Instance) { in.Channels[0].SourceServerID = 0 }),
				plMaria(21003, 3, 21001, "0-6-100", "0-6-100", func(in *dbpilot.Instance) { in.Channels[0].SourceServerID = 0 }),
				plMaria(21004, 4, 21001, "1-1-7", "1-1-7", func(in *dbpilot.Instance) { in.Channels[0].SourceServerID = 0 }),
			},
			want: want{candidate: 21004, lost: []int{21002, 21003}, notes: []string{"cannot tell which holds errant transactions"}},
		},
		{
			name: "behind but not in the history of the one ahead: diverged",
			instances: []*dbpilot.Instance{
				plMaria(21002, 2, 21001, "0-1-100", "0-7-101", plState("0-1-100,0-7-101")),
				plMaria(21003, 3, 21001, "0-1-102", "0-1-102"),
			},
			want: want{candidate: 21003, lost: []int{21002}, notes: []string{"not in the history of 0-1-102"}},
		},
		{
			name: "own write at the tip is errant, its replicated position still counts",
			instances: []*dbpilot.Instance{
				plMaria(21002, 2, 21001, "0-1-105", "0-2-106", plState("0-1-104,0-2-106"), func(in *dbpilot.Instance) { in.GTID.SlavePos = "0-1-104" }),
				plMaria(21003, 3, 21001, "0-1-104", "0-1-104"),
			},
			want: want{errCode: dbpilot.ECONFLICT, errHas: []string{"without losing transactions", "127.0.0.1:21002 has 0-1-105 (holds errant transactions in domain 0)", "stop 127.0.0.1:21002"}},
		},
		{
			name: "an old own write below the others' position is only noted",
			instances: []*dbpilot.Instance{
				plMaria(21002, 2, 21001, "0-1-9817", "0-1-9817", plState("0-1-9817,0-2-5000")),
				plMaria(21003, 3, 21001, "0-1-9817", "0-1-9800", plState("0-1-9800")),
			},
			want: want{candidate: 21002, repoint: []int{21003}, notes: []string{"has 0-2-5000, written on this replica (server_id 2), which no other replica has: old errant transactions, or written when it was primary"}},
		},
		{
			name: "replica of the old primary's replica is not a candidate",
			instances: []*dbpilot.Instance{
				plDead(21001),
				plMaria(21002, 2, 21001, "0-1-10", "0-1-10"),
				plMaria(21003, 3, 21002, "0-1-12", "0-1-12", plLive),
			},
			want: want{candidate: 21002, notes: []string{"its replicas 127.0.0.1:21003 stay below it"}},
		},
		{
			name: "unreachable with nothing known, below a reachable intermediate: not ours",
			instances: []*dbpilot.Instance{
				plDead(21001),
				plMaria(21002, 2, 21001, "0-1-10", "0-1-10", func(in *dbpilot.Instance) { in.Replicas = []dbpilot.InstanceKey{plKey(21005)} }),
				plDead(21005),
				plDead(21006),
			},
			want: want{candidate: 21002, lost: []int{21006}},
		},
		{
			name: "MariaDB replica without GTID is not eligible but follows",
			instances: []*dbpilot.Instance{
				plMaria(21002, 2, 21001, "0-1-12", "0-1-12", func(in *dbpilot.Instance) { in.Channels[0].UsingGTID = "No" }),
				plMaria(21003, 3, 21001, "0-1-12", "0-1-12"),
			},
			want: want{candidate: 21003, repoint: []int{21002}, notes: []string{"replicates without GTID (Using_Gtid=No)"}},
		},
		{
			name: "other flavor is lost",
			instances: []*dbpilot.Instance{
				plMaria(21002, 2, 21001, "0-1-12", "0-1-12"),
				plMySQL(21003, 3, 21001, plU1+":1-5", plU1+":1-5"),
			},
			want: want{candidate: 21002, lost: []int{21003}, notes: []string{"flavor mysql: the cluster is mariadb"}},
		},
		{
			name: "unreadable GTID state",
			instances: []*dbpilot.Instance{
				plMaria(21002, 2, 21001, "0-1-x", "0-1-12"),
				plMaria(21003, 3, 21001, "0-1-12", "0-1-12"),
			},
			want: want{candidate: 21003, lost: []int{21002}, notes: []string{"cannot read its GTID state: Gtid_IO_Pos: gtid: invalid MariaDB GTID list"}},
		},
		{
			name:      "no replica",
			instances: []*dbpilot.Instance{plDead(21001), plMaria(21003, 3, 21002, "0-1-1", "0-1-1")},
			want:      want{errCode: dbpilot.ENOTFOUND, errHas: []string{"none of the 2 observed instances replicates from it"}},
		},
		{
			name: "MySQL: several sources when none has all",
			instances: []*dbpilot.Instance{
				plMySQL(21002, 2, 21001, plU1+":1-50", plU1+":1-50"),
				plMySQL(21003, 3, 21001, plU1+":1-48:51-53", plU1+":1-48:51-53"),
				plMySQL(21004, 4, 21001, plU1+":1-49:54", plU1+":1-49:54"),
			},
			rules: Rules{plKey(21003): dbpilot.PromoteMustNot, plKey(21004): dbpilot.PromoteMustNot},
			want: want{candidate: 21002, catchUp: []CatchUp{
				{From: plKey(21003), Until: plU1 + ":1-48:51-53"},
				{From: plKey(21004), Until: plU1 + ":1-49:54"},
			}, repoint: []int{21003, 21004}},
		},
		{
			name: "MySQL: a source that purged what is missing cannot serve",
			instances: []*dbpilot.Instance{
				plMySQL(21002, 2, 21001, plU1+":1-50", plU1+":1-50"),
				plMySQL(21003, 3, 21001, plU1+":1-53", plU1+":1-53", func(in *dbpilot.Instance) { in.GTID.Purged = plU1 + ":1-52" }),
			},
			rules: Rules{plKey(21003): dbpilot.PromoteMustNot},
			want:  want{errCode: dbpilot.ECONFLICT, errHas: []string{"purged " + plU1 + ":51-52 from its binary log"}},
		},
		{
			name: "MySQL: a replica with gtid_mode OFF is lost",
			instances: []*dbpilot.Instance{
				plMySQL(21002, 2, 21001, plU1+":1-50", plU1+":1-50"),
				plMySQL(21003, 3, 21001, plU1+":1-50", plU1+":1-50", func(in *dbpilot.Instance) { in.GTID.Mode = "OFF" }),
			},
			want: want{candidate: 21002, lost: []int{21003}, notes: []string{"gtid_mode=OFF: GTID positioning needs ON"}},
		},
		{
			name: "MySQL: a replica that needs what the candidate purged is lost",
			instances: []*dbpilot.Instance{
				plMySQL(21002, 2, 21001, plU1+":1-50", plU1+":1-50", func(in *dbpilot.Instance) { in.GTID.Purged = plU1 + ":1-45" }),
				plMySQL(21003, 3, 21001, plU1+":1-40", plU1+":1-40"),
			},
			want: want{candidate: 21002, lost: []int{21003}, notes: []string{"needs " + plU1 + ":41-45, which 127.0.0.1:21002 purged"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dead := tt.dead
			if dead.IsZero() {
				dead = plKey(21001)
			}
			plan, err := PlanFailover("c", dead, tt.instances, tt.rules)
			text := ""
			if plan != nil {
				text = plan.String()
			}
			if tt.want.errCode != "" {
				if dbpilot.ErrorCode(err) != tt.want.errCode {
					t.Fatalf("error %v (code %q), want code %s\n%s", err, dbpilot.ErrorCode(err), tt.want.errCode, text)
				}
				for _, s := range tt.want.errHas {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q lacks %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("error %v\n%s", err, text)
			}
			if plan.Candidate != plKey(tt.want.candidate) {
				t.Errorf("candidate %s, want %d\n%s", plan.Candidate, tt.want.candidate, text)
			}
			if tt.want.catchUp != nil && !slices.EqualFunc(plan.CatchUp, tt.want.catchUp, func(a, b CatchUp) bool {
				return a.From == b.From && slices.Equal(a.Domains, b.Domains) && a.Until == b.Until
			}) {
				t.Errorf("catch-up %+v, want %+v\n%s", plan.CatchUp, tt.want.catchUp, text)
			}
			if tt.want.repoint != nil {
				var got []int
				for _, r := range plan.Repoint {
					got = append(got, r.Port)
				}
				if !slices.Equal(got, tt.want.repoint) {
					t.Errorf("repoint %v, want %v\n%s", got, tt.want.repoint, text)
				}
			}
			var lost []int
			for _, l := range plan.Lost {
				lost = append(lost, l.Key.Port)
			}
			if !slices.Equal(lost, tt.want.lost) {
				t.Errorf("lost %v, want %v\n%s", lost, tt.want.lost, text)
			}
			for _, n := range tt.want.notes {
				if !strings.Contains(text, n) {
					t.Errorf("plan lacks %q:\n%s", n, text)
				}
			}
		})
	}
}

func TestPlanSwitchover(t *testing.T) {
	primary := func(opts ...func(*dbpilot.Instance)) *dbpilot.Instance {
		in := &dbpilot.Instance{Key: plKey(21001), Reachable: true, Flavor: dbpilot.FlavorMariaDB, Version: plMariaVersion,
			ServerID: 1, LogBin: true, LogReplicaUpdates: true,
			GTID: dbpilot.GTIDState{Mode: "ON", BinlogPos: "0-1-100", CurrentPos: "0-1-100", BinlogState: "0-1-100"}}
		for _, o := range opts {
			o(in)
		}
		return in
	}
	replicas := func() []*dbpilot.Instance {
		return []*dbpilot.Instance{
			plMaria(21002, 2, 21001, "0-1-100", "0-1-100", plLive),
			plMaria(21003, 3, 21001, "0-1-100", "0-1-90", plLive),
			plMaria(21004, 4, 21003, "0-1-90", "0-1-90", plLive),
		}
	}
	tests := []struct {
		name      string
		primary   *dbpilot.Instance
		instances []*dbpilot.Instance
		to        dbpilot.InstanceKey
		rules     Rules
		maxLag    time.Duration
		candidate int
		errCode   string
		errHas    string
	}{
		{name: "best: closest to the primary", primary: primary(), instances: replicas(), candidate: 21002},
		{name: "prefer beats closer", primary: primary(), instances: replicas(), rules: Rules{plKey(21003): dbpilot.PromotePrefer}, candidate: 21003},
		{name: "requested", primary: primary(), instances: replicas(), to: plKey(21003), candidate: 21003},
		{name: "not a direct replica", primary: primary(), instances: replicas(), to: plKey(21004),
			errCode: dbpilot.EINVALID, errHas: "not a direct replica of 127.0.0.1:21001 (it replicates from 127.0.0.1:21003); relocate it below 127.0.0.1:21001 first"},
		{name: "unknown", primary: primary(), instances: replicas(), to: plKey(21009), errCode: dbpilot.ENOTFOUND},
		{name: "to itself", primary: primary(), instances: replicas(), to: plKey(21001), errCode: dbpilot.EINVALID},
		{name: "primary unreachable", primary: plDead(21001), instances: replicas(), errCode: dbpilot.EUNAVAIL},
		{name: "primary with a source", primary: primary(func(in *dbpilot.Instance) {
			in.Channels = []dbpilot.ReplicationChannel{{Source: plKey(21009)}}
		}), instances: replicas(), errCode: dbpilot.EUNSUPPORTED},
		{name: "candidate not replicating", primary: primary(), to: plKey(21002), instances: []*dbpilot.Instance{
			plMaria(21002, 2, 21001, "0-1-100", "0-1-100", plLive, func(in *dbpilot.Instance) { in.Channels[0].SQLRunning = false }),
		}, errCode: dbpilot.ECONFLICT, errHas: "not replicating from the primary (IO thread Yes, SQL thread No): start replication first"},
		{name: "the primary's own newer writes are not errant", primary: primary(), to: plKey(21002), instances: []*dbpilot.Instance{
			plMaria(21002, 2, 21001, "0-1-101", "0-1-101", plLive),
		}, candidate: 21002},
		{name: "MySQL errant", to: plKey(21002),
			primary: &dbpilot.Instance{Key: plKey(21001), Reachable: true, Flavor: dbpilot.FlavorMySQL, ServerID: 1, ServerUUID: plU1,
				LogBin: true, GTID: dbpilot.GTIDState{Mode: "ON", Executed: plU1 + ":1-57"}},
			instances: []*dbpilot.Instance{
				plMySQL(21002, 2, 21001, plU1+":1-58", plU1+":1-58,"+plUUID(2)+":1-3", plLive),
			}, errCode: dbpilot.ECONFLICT, errHas: "errant transactions: it has " + plUUID(2) + ":1-3"},
		{name: "requested candidate lagging over max_lag", primary: primary(), to: plKey(21003), instances: []*dbpilot.Instance{
			plMaria(21002, 2, 21001, "0-1-100", "0-1-100", plLive),
			plMaria(21003, 3, 21001, "0-1-100", "0-1-60", plLive, func(in *dbpilot.Instance) { s := int64(42); in.Channels[0].SecondsBehind = &s }),
		}, errCode: dbpilot.ECONFLICT, errHas: "cannot switch over 127.0.0.1:21001 to 127.0.0.1:21003: 42s behind its source (Seconds_Behind_Master) with 40 transactions to apply: over switchover.max_lag (10s)"},
		{name: "requested candidate lagging within a larger max_lag", primary: primary(), to: plKey(21003), maxLag: time.Minute, instances: []*dbpilot.Instance{
			plMaria(21003, 3, 21001, "0-1-100", "0-1-60", plLive, func(in *dbpilot.Instance) { s := int64(42); in.Channels[0].SecondsBehind = &s }),
		}, candidate: 21003},
		{name: "best skips a candidate whose applier waits for a lock", primary: primary(), rules: Rules{plKey(21003): dbpilot.PromotePrefer}, instances: []*dbpilot.Instance{
			plMaria(21002, 2, 21001, "0-1-100", "0-1-97", plLive),
			plMaria(21003, 3, 21001, "0-1-100", "0-1-99", plLive, func(in *dbpilot.Instance) { in.Channels[0].SQLStateText = "Waiting for table metadata lock" }),
		}, candidate: 21002},
		{name: "a stopped SQL thread with a backlog names the backlog", primary: primary(), to: plKey(21002), instances: []*dbpilot.Instance{
			plMaria(21002, 2, 21001, "0-1-100", "0-1-20", plLive, func(in *dbpilot.Instance) { in.Channels[0].SQLRunning = false }),
		}, errCode: dbpilot.ECONFLICT, errHas: "to 127.0.0.1:21002: 80 transactions received but not applied and its SQL thread is stopped: it cannot catch up within switchover.max_lag (10s)"},
		{name: "none eligible", primary: primary(), rules: Rules{plKey(21002): dbpilot.PromoteMustNot}, instances: []*dbpilot.Instance{
			plMaria(21002, 2, 21001, "0-1-100", "0-1-100", plLive),
		}, errCode: dbpilot.ECONFLICT, errHas: "no replica can be promoted: 127.0.0.1:21002: promotion rule must_not"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]*dbpilot.Instance{tt.primary}, tt.instances...)
			plan, err := PlanSwitchover("c", tt.primary, in, tt.to, tt.rules, SwitchoverOptions{MaxLag: tt.maxLag})
			if tt.errCode != "" {
				if dbpilot.ErrorCode(err) != tt.errCode || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("error %v (code %s), want code %s with %q", err, dbpilot.ErrorCode(err), tt.errCode, tt.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if plan.Candidate != plKey(tt.candidate) {
				t.Errorf("candidate %s, want %d\n%s", plan.Candidate, tt.candidate, plan)
			}
			if s := plan.String(); !strings.Contains(s, "old primary 127.0.0.1:21001 becomes a replica of "+plan.Candidate.String()) {
				t.Errorf("plan does not say the old primary follows:\n%s", s)
			}
		})
	}
}
