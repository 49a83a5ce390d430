package recovery

import (
	"strings"
	"testing"

	"github.com/dbpilot/dbpilot"
)

func TestRelayLogTarget(t *testing.T) {
	const (
		a = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
		b = "4f22fb58-82db-22f2-af44-d91bb0530673"
	)
	key := exKey(3307)
	mysqlCand := func(executed string) *dbpilot.Instance {
		return &dbpilot.Instance{Key: key, Flavor: dbpilot.FlavorMySQL, GTID: dbpilot.GTIDState{Executed: executed}}
	}
	mariaCand := func(binlog, slave string) *dbpilot.Instance {
		return &dbpilot.Instance{Key: key, Flavor: dbpilot.FlavorMariaDB, GTID: dbpilot.GTIDState{BinlogPos: binlog, SlavePos: slave}}
	}
	retrieved := func(sets ...string) []dbpilot.ReplicationChannel {
		var chans []dbpilot.ReplicationChannel
		for _, s := range sets {
			chans = append(chans, dbpilot.ReplicationChannel{RetrievedGTIDSet: s})
		}
		return chans
	}
	ioPos := func(poss ...string) []dbpilot.ReplicationChannel {
		var chans []dbpilot.ReplicationChannel
		for _, s := range poss {
			chans = append(chans, dbpilot.ReplicationChannel{GTIDIOPos: s})
		}
		return chans
	}
	tests := []struct {
		name                  string
		cand                  *dbpilot.Instance
		chans                 []dbpilot.ReplicationChannel
		target, received, err string
	}{
		{"mysql nothing received", mysqlCand(a + ":1-5"), retrieved(""), "", "", ""},
		{"mysql all applied", mysqlCand(a + ":1-10"), retrieved(a + ":3-10"), "", a + ":3-10", ""},
		{"mysql some left", mysqlCand(a + ":1-5"), retrieved(a + ":3-10"), a + ":3-10", a + ":3-10", ""},
		{"mysql two channels", mysqlCand(a + ":1-10"), retrieved(a+":1-10", b+":1-2"), a + ":1-10," + b + ":1-2", a + ":1-10," + b + ":1-2", ""},
		{"mysql bad retrieved set", mysqlCand(a + ":1-5"), retrieved("nope"), "", "", "read Retrieved_Gtid_Set of 10.0.0.1:3307"},
		{"mysql bad gtid_executed", mysqlCand("nope"), retrieved(a + ":1-5"), "", "", "read gtid_executed of 10.0.0.1:3307"},
		{"mariadb all applied", mariaCand("0-1-10", "0-1-10"), ioPos("0-1-10"), "", "0-1-10", ""},
		{"mariadb some left", mariaCand("0-1-10", "0-1-8,1-2-3"), ioPos("0-1-12,1-2-3"), "0-1-12", "0-1-12,1-2-3", ""},
		{"mariadb highest of channels", mariaCand("", ""), ioPos("0-1-12", "0-1-14,2-3-1"), "0-1-14,2-3-1", "0-1-14,2-3-1", ""},
		{"mariadb bad io pos", mariaCand("", ""), ioPos("x"), "", "", "read Gtid_IO_Pos of 10.0.0.1:3307"},
		{"mariadb bad position", mariaCand("x", ""), ioPos("0-1-1"), "", "", "read GTID position of 10.0.0.1:3307"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var target, received string
			var err error
			if tt.cand.Flavor.IsMySQLFamily() {
				target, received, err = relayLogTargetMySQL(key, tt.cand, tt.chans)
			} else {
				target, received, err = relayLogTargetMariaDB(key, tt.cand, tt.chans)
			}
			if tt.err != "" {
				if err == nil || dbpilot.ErrorCode(err) != dbpilot.EINTERNAL || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want EINTERNAL %q", err, tt.err)
				}
				return
			}
			if err != nil || target != tt.target || received != tt.received {
				t.Errorf("target %q, received %q, %v; want %q, %q", target, received, err, tt.target, tt.received)
			}
		})
	}
}
