package mysql

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
)

func TestDialectStatements(t *testing.T) {
	maria := Dialect{Flavor: dbpilot.FlavorMariaDB, Version: dbpilot.Version{Major: 10, Minor: 11, Patch: 6}}
	my80 := Dialect{Flavor: dbpilot.FlavorMySQL, Version: dbpilot.Version{Major: 8, Minor: 0, Patch: 21}}
	my84 := Dialect{Flavor: dbpilot.FlavorMySQL, Version: dbpilot.Version{Major: 8, Minor: 4, Patch: 0}}
	my57 := Dialect{Flavor: dbpilot.FlavorMySQL, Version: dbpilot.Version{Major: 5, Minor: 7, Patch: 44}}
	src := ChangeSource{Source: dbpilot.InstanceKey{Host: "127.0.0.1", Port: 3306}, User: "repl", Password: "p'w", HeartbeatPeriod: 500 * time.Millisecond}
	named := src
	named.Channel = "m1"
	tests := []struct {
		name, got, want string
	}{
		{"maria change", maria.ChangeSourceSQL(src), `CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=3306, MASTER_USER='repl', MASTER_PASSWORD='p\'w', MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1, MASTER_HEARTBEAT_PERIOD=0.5`},
		{"maria named change", maria.ChangeSourceSQL(named), `CHANGE MASTER 'm1' TO MASTER_HOST='127.0.0.1', MASTER_PORT=3306, MASTER_USER='repl', MASTER_PASSWORD='p\'w', MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1, MASTER_HEARTBEAT_PERIOD=0.5`},
		{"maria start named", maria.StartReplicaSQL("m1"), `START SLAVE 'm1'`},
		{"maria reset named", maria.ResetReplicaAllSQL("m1"), `RESET SLAVE 'm1' ALL`},
		{"maria show", maria.ShowReplicaStatusSQL(), `SHOW ALL SLAVES STATUS`},
		{"mysql84 change", my84.ChangeSourceSQL(named), `CHANGE REPLICATION SOURCE TO SOURCE_HOST='127.0.0.1', SOURCE_PORT=3306, SOURCE_USER='repl', SOURCE_PASSWORD='p\'w', SOURCE_AUTO_POSITION=1, SOURCE_CONNECT_RETRY=1, SOURCE_HEARTBEAT_PERIOD=0.5, GET_SOURCE_PUBLIC_KEY=1 FOR CHANNEL 'm1'`},
		{"mysql84 start", my84.StartReplicaSQL(""), `START REPLICA`},
		{"mysql84 reset", my84.ResetReplicaAllSQL("m1"), `RESET REPLICA ALL FOR CHANNEL 'm1'`},
		{"mysql57 reset", my57.ResetReplicaAllSQL("m1"), `RESET SLAVE ALL FOR CHANNEL 'm1'`},
		{"maria reset default", maria.ResetReplicaAllSQL(""), `RESET SLAVE ALL`},
		{"mysql84 show", my84.ShowReplicaStatusSQL(), `SHOW REPLICA STATUS`},
		{"mysql84 replicas", my84.ShowReplicasSQL(), `SHOW REPLICAS`},
		{"mysql8021 change", my80.ChangeSourceSQL(src), `CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=3306, MASTER_USER='repl', MASTER_PASSWORD='p\'w', MASTER_AUTO_POSITION=1, MASTER_CONNECT_RETRY=1, MASTER_HEARTBEAT_PERIOD=0.5, GET_MASTER_PUBLIC_KEY=1`},
		{"mysql8021 start", my80.StartReplicaSQL(""), `START SLAVE`},
		{"mysql57 change", my57.ChangeSourceSQL(named), `CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=3306, MASTER_USER='repl', MASTER_PASSWORD='p\'w', MASTER_AUTO_POSITION=1, MASTER_CONNECT_RETRY=1, MASTER_HEARTBEAT_PERIOD=0.5 FOR CHANNEL 'm1'`},
		{"mysql57 stop", my57.StopReplicaSQL("m1"), `STOP SLAVE FOR CHANNEL 'm1'`},
		{"mysql57 replicas", my57.ShowReplicasSQL(), `SHOW SLAVE HOSTS`},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, tt.got, tt.want)
		}
	}
}

// dialectFor builds the dialect of a flavor and a version string.
func dialectFor(t *testing.T, f dbpilot.Flavor, version string) Dialect {
	t.Helper()
	v, err := dbpilot.ParseVersion(version)
	if err != nil {
		t.Fatal(err)
	}
	return Dialect{Flavor: f, Version: v}
}

// backupVersions are the servers every backup statement is checked for.
var backupVersions = []struct {
	flavor  dbpilot.Flavor
	version string
}{
	{dbpilot.FlavorMariaDB, "10.3.39"},
	{dbpilot.FlavorMariaDB, "10.4.34"},
	{dbpilot.FlavorMariaDB, "10.11.6-MariaDB-log"},
	{dbpilot.FlavorMySQL, "5.7.44"},
	{dbpilot.FlavorMySQL, "8.0.36"},
	{dbpilot.FlavorMySQL, "8.4.0"},
}

func TestDialectBackupStatements(t *testing.T) {
	const (
		mariaPos = "SELECT @@GLOBAL.gtid_binlog_pos, @@GLOBAL.gtid_slave_pos, @@GLOBAL.gtid_current_pos"
		mysqlPos = "SELECT @@GLOBAL.gtid_executed"
	)
	want := map[string]struct {
		lock, gtid, binlog, setPos string
		needsEmpty                 bool
	}{
		"10.3.39":             {"FLUSH TABLES WITH READ LOCK", mariaPos, "SHOW MASTER STATUS", "SET GLOBAL gtid_slave_pos='0-1-5'", false},
		"10.4.34":             {"BACKUP STAGE BLOCK_COMMIT", mariaPos, "SHOW MASTER STATUS", "SET GLOBAL gtid_slave_pos='0-1-5'", false},
		"10.11.6-MariaDB-log": {"BACKUP STAGE BLOCK_COMMIT", mariaPos, "SHOW MASTER STATUS", "SET GLOBAL gtid_slave_pos='0-1-5'", false},
		"5.7.44":              {"FLUSH TABLES WITH READ LOCK", mysqlPos, "SHOW MASTER STATUS", "SET GLOBAL gtid_purged='0-1-5'", true},
		"8.0.36":              {"FLUSH TABLES WITH READ LOCK", mysqlPos, "SHOW MASTER STATUS", "SET GLOBAL gtid_purged='+0-1-5'", false},
		"8.4.0":               {"FLUSH TABLES WITH READ LOCK", mysqlPos, "SHOW BINARY LOG STATUS", "SET GLOBAL gtid_purged='+0-1-5'", false},
	}
	for _, tc := range backupVersions {
		t.Run(string(tc.flavor)+" "+tc.version, func(t *testing.T) {
			d := dialectFor(t, tc.flavor, tc.version)
			w := want[tc.version]
			if got := d.ConsistencyLock().Kind; got != w.lock {
				t.Errorf("ConsistencyLock().Kind = %q, want %q", got, w.lock)
			}
			if got := d.GTIDPositionSQL(); got != w.gtid {
				t.Errorf("GTIDPositionSQL = %q, want %q", got, w.gtid)
			}
			if got := d.BinlogStatusSQL(); got != w.binlog {
				t.Errorf("BinlogStatusSQL = %q, want %q", got, w.binlog)
			}
			if got := d.SetGTIDPositionSQL("0-1-5"); got != w.setPos {
				t.Errorf("SetGTIDPositionSQL = %q, want %q", got, w.setPos)
			}
			if got := d.SetGTIDPositionNeedsEmptyState(); got != w.needsEmpty {
				t.Errorf("SetGTIDPositionNeedsEmptyState = %v, want %v", got, w.needsEmpty)
			}
			reset := "RESET MASTER"
			if tc.version == "8.4.0" {
				reset = "RESET BINARY LOGS AND GTIDS"
			}
			if got := d.ResetBinaryLogSQL(); got != reset {
				t.Errorf("ResetBinaryLogSQL = %q, want %q", got, reset)
			}
		})
	}
}

func TestDialectConsistencyLock(t *testing.T) {
	ftwrl := ConsistencyLock{Kind: "FLUSH TABLES WITH READ LOCK", Take: []string{"FLUSH TABLES WITH READ LOCK"}, Release: "UNLOCK TABLES"}
	stage := ConsistencyLock{Kind: "BACKUP STAGE BLOCK_COMMIT", Take: []string{"BACKUP STAGE START", "BACKUP STAGE BLOCK_COMMIT"}, Release: "BACKUP STAGE END"}
	tests := []struct {
		flavor  dbpilot.Flavor
		version string
		want    ConsistencyLock
	}{
		{dbpilot.FlavorMariaDB, "10.4.1", stage},
		{dbpilot.FlavorMariaDB, "10.11.6-MariaDB-log", stage},
		{dbpilot.FlavorMariaDB, "11.4.2", stage},
		{dbpilot.FlavorMariaDB, "10.4.0", ftwrl},
		{dbpilot.FlavorMariaDB, "10.3.39", ftwrl},
		{dbpilot.FlavorMySQL, "8.0.36", ftwrl},
		{dbpilot.FlavorMySQL, "8.4.0", ftwrl},
		{dbpilot.FlavorMySQL, "10.5.0", ftwrl}, // version alone does not decide
		{dbpilot.FlavorPercona, "8.0.35", ftwrl},
		{dbpilot.FlavorMySQL, "5.7.44", ftwrl},
	}
	for _, tc := range tests {
		if got := dialectFor(t, tc.flavor, tc.version).ConsistencyLock(); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s %s: ConsistencyLock = %+v, want %+v", tc.flavor, tc.version, got, tc.want)
		}
	}
}

func TestDialectBinlogStatusSQL(t *testing.T) {
	tests := []struct {
		flavor  dbpilot.Flavor
		version string
		want    string
	}{
		{dbpilot.FlavorMySQL, "8.1.0", "SHOW MASTER STATUS"},
		{dbpilot.FlavorMySQL, "8.2.0", "SHOW BINARY LOG STATUS"},
		{dbpilot.FlavorPercona, "8.4.2", "SHOW BINARY LOG STATUS"},
		{dbpilot.FlavorPercona, "8.0.35", "SHOW MASTER STATUS"},
		{dbpilot.FlavorMariaDB, "11.4.2", "SHOW MASTER STATUS"}, // MariaDB's own numbering
	}
	for _, tc := range tests {
		if got := dialectFor(t, tc.flavor, tc.version).BinlogStatusSQL(); got != tc.want {
			t.Errorf("%s %s: BinlogStatusSQL = %q, want %q", tc.flavor, tc.version, got, tc.want)
		}
	}
}

func TestDialectSetGTIDPositionSQL(t *testing.T) {
	const uuidSet = "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5"
	tests := []struct {
		flavor  dbpilot.Flavor
		version string
		pos     string
		want    string
	}{
		{dbpilot.FlavorMariaDB, "10.11.6", "0-1-100,1-2-5", "SET GLOBAL gtid_slave_pos='0-1-100,1-2-5'"},
		{dbpilot.FlavorMariaDB, "10.3.39", "0-1-1", "SET GLOBAL gtid_slave_pos='0-1-1'"},
		{dbpilot.FlavorMySQL, "8.0.36", uuidSet, "SET GLOBAL gtid_purged='+" + uuidSet + "'"},
		{dbpilot.FlavorMySQL, "8.4.0", uuidSet, "SET GLOBAL gtid_purged='+" + uuidSet + "'"},
		{dbpilot.FlavorPercona, "8.0.35", uuidSet, "SET GLOBAL gtid_purged='+" + uuidSet + "'"},
		{dbpilot.FlavorMySQL, "5.7.44", uuidSet, "SET GLOBAL gtid_purged='" + uuidSet + "'"},
		{dbpilot.FlavorPercona, "5.7.40", uuidSet, "SET GLOBAL gtid_purged='" + uuidSet + "'"},
		{dbpilot.FlavorMariaDB, "10.11.6", "it's", `SET GLOBAL gtid_slave_pos='it\'s'`},
	}
	for _, tc := range tests {
		if got := dialectFor(t, tc.flavor, tc.version).SetGTIDPositionSQL(tc.pos); got != tc.want {
			t.Errorf("%s %s: %s, want %s", tc.flavor, tc.version, got, tc.want)
		}
	}
}

func TestDialectParseGTIDPosition(t *testing.T) {
	s := func(v string) *string { return &v }
	maria := dialectFor(t, dbpilot.FlavorMariaDB, "10.11.6")
	my := dialectFor(t, dbpilot.FlavorMySQL, "8.0.36")
	tests := []struct {
		name string
		d    Dialect
		row  []*string
		want dbpilot.GTIDState
	}{
		{"mariadb", maria, []*string{s("0-1-100"), s("0-2-90"), s("0-1-100")}, dbpilot.GTIDState{BinlogPos: "0-1-100", SlavePos: "0-2-90", CurrentPos: "0-1-100"}},
		{"mariadb NULL and empty", maria, []*string{s(""), nil, s("")}, dbpilot.GTIDState{}},
		{"mysql long set", my, []*string{s("3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5,\n4e11fa47-71ca-11e1-9e33-c80aa9429562:1-3")},
			dbpilot.GTIDState{Executed: "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5,4e11fa47-71ca-11e1-9e33-c80aa9429562:1-3"}},
		{"mysql empty", my, []*string{s("")}, dbpilot.GTIDState{}},
	}
	for _, tc := range tests {
		got, err := tc.d.ParseGTIDPosition(tc.row)
		if err != nil || got != tc.want {
			t.Errorf("%s: ParseGTIDPosition = %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		d   Dialect
		row []*string
	}{{maria, []*string{s("0-1-1")}}, {my, []*string{s("a"), s("b")}}, {my, nil}} {
		_, err := tc.d.ParseGTIDPosition(tc.row)
		if dbpilot.ErrorCode(err) != dbpilot.EINTERNAL || !strings.Contains(err.Error(), "read GTID position") {
			t.Errorf("%s: %d values: %v, want EINTERNAL", tc.d.Flavor, len(tc.row), err)
		}
	}
}

func TestDialectStopReceivers(t *testing.T) {
	for _, tt := range []struct {
		flavor  dbpilot.Flavor
		version string
		want    string
	}{
		{dbpilot.FlavorMariaDB, "10.11.6-MariaDB", "STOP ALL SLAVES IO_THREAD"},
		{dbpilot.FlavorMySQL, "8.4.0", "STOP REPLICA IO_THREAD"},
		{dbpilot.FlavorMySQL, "5.7.44-log", "STOP SLAVE IO_THREAD"},
	} {
		if got := dialectFor(t, tt.flavor, tt.version).flavor().stopReceivers(); got != tt.want {
			t.Errorf("%s %s: %q, want %q", tt.flavor, tt.version, got, tt.want)
		}
	}
}
