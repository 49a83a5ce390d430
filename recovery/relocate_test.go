package recovery

import (
	"strings"
	"testing"

	"github.com/dbpilot/dbpilot"
)

func TestCheckRelocate(t *testing.T) {
	// 21001 primary; 21002 and 21003 replicas; 21004 below 21003.
	maria := func(opts ...func(map[int]*dbpilot.Instance)) map[int]*dbpilot.Instance {
		m := map[int]*dbpilot.Instance{
			21001: {Key: plKey(21001), Reachable: true, Flavor: dbpilot.FlavorMariaDB, Version: plMariaVersion, ServerID: 1, LogBin: true,
				GTID: dbpilot.GTIDState{Mode: "ON", BinlogPos: "0-1-100", CurrentPos: "0-1-100", BinlogState: "0-1-100"}},
			21002: plMaria(21002, 2, 21001, "0-1-100", "0-1-100", plLive),
			21003: plMaria(21003, 3, 21001, "0-1-100", "0-1-100", plLive),
			21004: plMaria(21004, 4, 21003, "0-1-100", "0-1-100", plLive),
		}
		for _, o := range opts {
			o(m)
		}
		return m
	}
	mysql := func(opts ...func(map[int]*dbpilot.Instance)) map[int]*dbpilot.Instance {
		m := map[int]*dbpilot.Instance{
			21001: {Key: plKey(21001), Reachable: true, Flavor: dbpilot.FlavorMySQL, ServerID: 1, ServerUUID: plU1, LogBin: true,
				GTID: dbpilot.GTIDState{Mode: "ON", Executed: plU1 + ":1-100"}},
			21002: plMySQL(21002, 2, 21001, plU1+":1-100", plU1+":1-100", plLive),
			21004: plMySQL(21004, 4, 21002, plU1+":1-100", plU1+":1-100", plLive),
		}
		for _, o := range opts {
			o(m)
		}
		return m
	}
	tests := []struct {
		name            string
		in              map[int]*dbpilot.Instance
		replica, target int
		code, has       string
	}{
		{name: "sibling", in: maria(), replica: 21004, target: 21002},
		{name: "already there", in: maria(), replica: 21004, target: 21003},
		{name: "to the primary", in: maria(), replica: 21004, target: 21001},
		{name: "target lagging behind the replica", in: maria(func(m map[int]*dbpilot.Instance) {
			m[21002] = plMaria(21002, 2, 21001, "0-1-90", "0-1-90", plLive)
		}), replica: 21004, target: 21002, code: dbpilot.ECONFLICT,
			has: "the replica is ahead in domain 0: it has 0-1-100, the target received only 0-1-90; wait for the target to catch up"},
		{name: "target received but not applied yet", in: maria(func(m map[int]*dbpilot.Instance) {
			m[21002] = plMaria(21002, 2, 21001, "0-1-100", "0-1-90", plLive)
		}), replica: 21004, target: 21002},
		{name: "diverged: same sequence number, other server", in: maria(func(m map[int]*dbpilot.Instance) {
			m[21002] = plMaria(21002, 2, 21001, "0-1-100", "0-9-100", plState("0-1-99,0-9-100"), plLive)
		}), replica: 21004, target: 21002, code: dbpilot.ECONFLICT, has: "diverged in domain 0: the replica has 0-1-100, the target 0-9-100"},
		{name: "a domain the target lacks", in: maria(func(m map[int]*dbpilot.Instance) {
			m[21004] = plMaria(21004, 4, 21003, "0-1-100,5-7-3", "0-1-100,5-7-3", plLive)
		}), replica: 21004, target: 21002, code: dbpilot.ECONFLICT, has: "the replica has 5-7-3 in domain 5, where the target has nothing"},
		{name: "newer target", in: maria(func(m map[int]*dbpilot.Instance) {
			m[21002].Version = dbpilot.Version{Major: 11, Minor: 4, Patch: 5}
		}), replica: 21004, target: 21002, code: dbpilot.EUNSUPPORTED, has: "the target runs 11.4.5, a newer release series than 10.11.19"},
		{name: "older target", in: maria(func(m map[int]*dbpilot.Instance) {
			m[21002].Version = dbpilot.Version{Major: 10, Minor: 6, Patch: 21}
		}), replica: 21004, target: 21002},
		{name: "unreachable replica", in: maria(func(m map[int]*dbpilot.Instance) {
			m[21004] = plDead(21004)
		}), replica: 21004, target: 21002, code: dbpilot.EUNAVAIL},
		{name: "deeper cycle", in: maria(func(m map[int]*dbpilot.Instance) {
			m[21005] = plMaria(21005, 5, 21004, "0-1-100", "0-1-100", plLive)
		}), replica: 21003, target: 21005, code: dbpilot.ECONFLICT,
			has: "127.0.0.1:21005 → 127.0.0.1:21004 → 127.0.0.1:21003"},
		{name: "unreadable state", in: maria(func(m map[int]*dbpilot.Instance) {
			m[21002].GTID.BinlogState = "zz"
		}), replica: 21004, target: 21002, code: dbpilot.EINVALID, has: "gtid_binlog_state of 127.0.0.1:21002 is unreadable"},
		{name: "MySQL sibling", in: mysql(), replica: 21004, target: 21001},
		{name: "MySQL: replica has what the target lacks", in: mysql(func(m map[int]*dbpilot.Instance) {
			m[21004] = plMySQL(21004, 4, 21002, plU1+":1-100", plU1+":1-100,"+plUUID(4)+":1-2", plLive)
		}), replica: 21004, target: 21001, code: dbpilot.ECONFLICT,
			has: "the replica has " + plUUID(4) + ":1-2, which the target lacks (some written on the replica itself: errant)"},
		{name: "MySQL: retrieved by the target counts", in: mysql(func(m map[int]*dbpilot.Instance) {
			m[21002] = plMySQL(21002, 2, 21001, plU1+":1-110", plU1+":1-100", plLive)
			m[21004] = plMySQL(21004, 4, 21001, plU1+":1-105", plU1+":1-105", plLive)
		}), replica: 21004, target: 21002},
		{name: "MySQL: target purged what the replica needs", in: mysql(func(m map[int]*dbpilot.Instance) {
			m[21001].GTID.Purged = plU1 + ":1-95"
			m[21004] = plMySQL(21004, 4, 21002, plU1+":1-90", plU1+":1-90", plLive)
		}), replica: 21004, target: 21001, code: dbpilot.ECONFLICT,
			has: "the replica needs " + plU1 + ":91-95, which the target purged from its binary log"},
		{name: "MySQL: gtid_mode OFF", in: mysql(func(m map[int]*dbpilot.Instance) {
			m[21004].GTID.Mode = "OFF_PERMISSIVE"
		}), replica: 21004, target: 21001, code: dbpilot.EUNSUPPORTED, has: "127.0.0.1:21004 has gtid_mode=OFF_PERMISSIVE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var all []*dbpilot.Instance
			for _, in := range tt.in {
				all = append(all, in)
			}
			err := CheckRelocate(tt.in[tt.replica], tt.in[tt.target], all)
			if tt.code == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if dbpilot.ErrorCode(err) != tt.code || !strings.Contains(err.Error(), tt.has) {
				t.Fatalf("error %v (code %s), want code %s with %q", err, dbpilot.ErrorCode(err), tt.code, tt.has)
			}
		})
	}
}
