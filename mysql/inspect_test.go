package mysql

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	driver "github.com/go-sql-driver/mysql"
)

const (
	uuid1 = "73f86016-978b-11ee-ade5-8d2a2a562feb"
	uuid2 = "4a6f2c9f-0e88-11ef-a1b3-0242ac110002"
	uuid3 = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
)

func i64(n int64) *int64 { return &n }

func key(s string) dbpilot.InstanceKey {
	k, err := dbpilot.ParseInstanceKey(s)
	if err != nil {
		panic(err)
	}
	return k
}

// diff reports every field of got that differs from want, recursively.
func diff(t *testing.T, name string, got, want any) {
	t.Helper()
	var walk func(path string, g, w reflect.Value)
	walk = func(path string, g, w reflect.Value) {
		switch {
		case strings.HasSuffix(path, ".ReadStartedAt"):
			// A time of the run (checked apart: TestInspectRecorded).
		case g.Kind() == reflect.Struct && g.Type().PkgPath() == "github.com/dbpilot/dbpilot":
			for i := 0; i < g.NumField(); i++ {
				walk(path+"."+g.Type().Field(i).Name, g.Field(i), w.Field(i))
			}
		case g.Kind() == reflect.Slice && g.Len() == w.Len():
			for i := 0; i < g.Len(); i++ {
				walk(fmt.Sprintf("%s[%d]", path, i), g.Index(i), w.Index(i))
			}
		case g.Kind() == reflect.Pointer && !g.IsNil() && !w.IsNil():
			walk(path, g.Elem(), w.Elem())
		default:
			if !reflect.DeepEqual(g.Interface(), w.Interface()) {
				t.Errorf("%s%s = %s, want %s", name, path, show(g), show(w))
			}
		}
	}
	walk("", reflect.ValueOf(got), reflect.ValueOf(want))
}

func show(v reflect.Value) string {
	if v.Kind() == reflect.Pointer && !v.IsNil() {
		return "&" + show(v.Elem())
	}
	if v.Kind() == reflect.String {
		return fmt.Sprintf("%q", v.Interface())
	}
	return fmt.Sprintf("%v", v.Interface())
}

// Replication channels as the recorded outputs show them. MariaDB's are real
// recordings; MySQL's are written from the reference manual.
var (
	mariaReplicaChannel = dbpilot.ReplicationChannel{
		Source: key("127.0.0.1:25301"), SourceUser: "repl",
		IORunning: dbpilot.IORunning, SQLRunning: true,
		IOStateText:   "Waiting for master to send event",
		SQLStateText:  "Slave has read all relay log; waiting for more updates",
		SecondsBehind: i64(0), UsingGTID: "Slave_Pos", GTIDIOPos: "0-1-8",
		SourceLogFile: "mysql-bin.000001", ReadSourceLogPos: 1835,
		RelaySourceLogFile: "mysql-bin.000001", ExecSourceLogPos: 1835, RelayLogSpace: 2437,
		SourceServerID: 1, ConnectRetry: 1, HeartbeatPeriod: time.Second, ParallelMode: "optimistic",
		ReceivedHeartbeats: 264,
	}
	mysql80Channels = []dbpilot.ReplicationChannel{{
		Source: key("127.0.0.1:13000"), SourceUser: "root",
		IORunning: dbpilot.IORunning, SQLRunning: true,
		IOStateText:   "Waiting for source to send event",
		SQLStateText:  "Replica has read all relay log; waiting for more updates",
		SecondsBehind: i64(0), UsingGTID: "Auto_Position",
		RetrievedGTIDSet: uuid1 + ":1-3", ExecutedGTIDSet: uuid1 + ":1-3," + uuid2 + ":1-1042",
		SourceLogFile: "master-bin.000001", ReadSourceLogPos: 927,
		RelaySourceLogFile: "master-bin.000001", ExecSourceLogPos: 927, RelayLogSpace: 1355,
		SourceServerID: 1, SourceUUID: uuid1, ConnectRetry: 1,
	}, {
		Name: "src_b", Source: key("10.0.0.21:3306"), SourceUser: "repl",
		IORunning: dbpilot.IOConnecting, SQLRunning: true,
		IOStateText:      "Connecting to source",
		SQLStateText:     "Replica has read all relay log; waiting for more updates",
		LastIOErrno:      2003,
		LastIOError:      "error connecting to source 'repl@10.0.0.21:3306' - retry-time: 60 retries: 3 message: Can't connect to MySQL server on '10.0.0.21:3306' (111)",
		UsingGTID:        "Auto_Position",
		RetrievedGTIDSet: uuid2 + ":1-1042", ExecutedGTIDSet: uuid1 + ":1-3," + uuid2 + ":1-1042",
		SourceLogFile: "binlog.000007", ReadSourceLogPos: 4419,
		RelaySourceLogFile: "binlog.000007", ExecSourceLogPos: 4419, RelayLogSpace: 5290,
		SourceServerID: 21, SourceUUID: uuid2, ConnectRetry: 60,
	}}
	mysql57Channel = dbpilot.ReplicationChannel{
		Source: key("localhost:13000"), SourceUser: "repl",
		IORunning: dbpilot.IORunning, SQLRunning: true,
		IOStateText:   "Waiting for master to send event",
		SQLStateText:  "Reading event from the relay log",
		SecondsBehind: i64(0), UsingGTID: "Auto_Position",
		RetrievedGTIDSet: uuid3 + ":1-5", ExecutedGTIDSet: uuid3 + ":1-5",
		SourceLogFile: "source-bin.000002", ReadSourceLogPos: 1307,
		RelaySourceLogFile: "source-bin.000002", ExecSourceLogPos: 1307, RelayLogSpace: 1858,
		SourceServerID: 1, SourceUUID: uuid3, ConnectRetry: 60,
	}
)

func TestParseReplicaStatusRecorded(t *testing.T) {
	const dupKey = "Could not execute Write_rows_v1 event on table app.t; Duplicate entry '10' for key 'PRIMARY', Error_code: 1062; handler error HA_ERR_FOUND_DUPP_KEY; the event's master log mysql-bin.000001, end_log_pos 1581"
	sqlError := mariaReplicaChannel
	sqlError.SQLRunning = false
	sqlError.SQLStateText = ""
	sqlError.LastSQLErrno = 1062
	sqlError.LastSQLError = dupKey
	sqlError.SecondsBehind = nil
	sqlError.ExecSourceLogPos = 1393
	sqlError.HeartbeatPeriod = 500 * time.Millisecond

	noReportHost := mariaReplicaChannel
	noReportHost.ConnectRetry = 60
	noReportHost.HeartbeatPeriod = 30 * time.Second // default: slave_net_timeout / 2

	m1 := mariaReplicaChannel
	m1.Name = "m1"
	m1.GTIDIOPos = "0-1-9"
	m1.ReadSourceLogPos, m1.ExecSourceLogPos, m1.RelayLogSpace = 2050, 2050, 2655
	m5 := dbpilot.ReplicationChannel{
		Name: "m5", Source: key("127.0.0.1:25305"), SourceUser: "repl",
		IORunning: dbpilot.IORunning, SQLRunning: true,
		IOStateText:   "Waiting for master to send event",
		SQLStateText:  "Waiting until MASTER_DELAY seconds after master executed event",
		SecondsBehind: i64(3), UsingGTID: "Slave_Pos", GTIDIOPos: "5-5-8",
		SourceLogFile: "mysql-bin.000001", ReadSourceLogPos: 1777,
		RelaySourceLogFile: "mysql-bin.000001", ExecSourceLogPos: 1568, RelayLogSpace: 2382,
		SourceServerID: 5, ConnectRetry: 1, HeartbeatPeriod: 2 * time.Second, SQLDelay: 5, ParallelMode: "optimistic",
	}

	gone := dbpilot.ReplicationChannel{
		Name: "gone", Source: key("127.0.0.1:25309"), SourceUser: "repl",
		IORunning: dbpilot.IOConnecting, SQLRunning: true,
		IOStateText:  "Connecting to master",
		SQLStateText: "Slave has read all relay log; waiting for more updates",
		LastIOErrno:  2003,
		LastIOError:  `error connecting to master 'repl@127.0.0.1:25309' - retry-time: 2  maximum-retries: 100000  message: Can't connect to server on '127.0.0.1' (111 "Connection refused")`,
		UsingGTID:    "Current_Pos", GTIDIOPos: "0-1-8",
		ReadSourceLogPos: 4, ExecSourceLogPos: 4, RelayLogSpace: 256,
		ConnectRetry: 2, HeartbeatPeriod: 30 * time.Second, ParallelMode: "optimistic",
	}
	m1Err := mariaReplicaChannel
	m1Err.Name = "m1"
	m1Err.RelayLogSpace = 2440
	m5Err := dbpilot.ReplicationChannel{
		Name: "m5", Source: key("127.0.0.1:25305"), SourceUser: "repl",
		IORunning: dbpilot.IORunning, SQLRunning: false,
		IOStateText:  "Waiting for master to send event",
		LastSQLErrno: 1396,
		// The server quotes the failed statement, password included.
		LastSQLError: `Error 'Operation CREATE USER failed for 'repl'@'127.0.0.1'' on query. Default database: ''. Query: 'CREATE USER repl@'127.0.0.1' IDENTIFIED BY '***''`,
		UsingGTID:    "Slave_Pos", GTIDIOPos: "5-5-6",
		SourceLogFile: "mysql-bin.000001", ReadSourceLogPos: 1359,
		RelaySourceLogFile: "mysql-bin.000001", ExecSourceLogPos: 328, RelayLogSpace: 1964,
		SourceServerID: 5, ConnectRetry: 1, HeartbeatPeriod: 2 * time.Second, SQLDelay: 5, ParallelMode: "optimistic",
	}

	mysql8021 := dbpilot.ReplicationChannel{
		Source: key("db1.example.com:3306"), SourceUser: "repl",
		IORunning: dbpilot.IORunning, SQLRunning: false,
		IOStateText:   "Waiting for master to send event",
		LastSQLErrno:  1062,
		LastSQLError:  "Could not execute Write_rows event on table app.t; Duplicate entry '10' for key 't.PRIMARY', Error_code: 1062; handler error HA_ERR_FOUND_DUPP_KEY; the event's master log binlog.000003, end_log_pos 1581",
		UsingGTID:     "No",
		SourceLogFile: "binlog.000003", ReadSourceLogPos: 2210,
		RelaySourceLogFile: "binlog.000003", ExecSourceLogPos: 1290, RelayLogSpace: 2723,
		SourceServerID: 1, SourceUUID: uuid1, ConnectRetry: 60, SQLDelay: 3600,
	}
	// SHOW REPLICA STATUS has no heartbeat column: Inspect reads it from
	// performance_schema (see TestInspectRecorded).
	tests := []struct {
		file   string
		flavor dbpilot.Flavor
		want   []dbpilot.ReplicationChannel
		// heartbeats are the rows' Slave_received_heartbeats (MariaDB;
		// MySQL's SHOW REPLICA STATUS has none).
		heartbeats []uint64
	}{
		{"mariadb-10.11/primary/replica_status.txt", dbpilot.FlavorMariaDB, nil, nil},
		{"mariadb-10.11/replica/replica_status.txt", dbpilot.FlavorMariaDB, []dbpilot.ReplicationChannel{mariaReplicaChannel}, []uint64{264}},
		{"mariadb-10.11/replica-sql-error/replica_status.txt", dbpilot.FlavorMariaDB, []dbpilot.ReplicationChannel{sqlError}, []uint64{529}},
		{"mariadb-10.11/replica-no-report-host/replica_status.txt", dbpilot.FlavorMariaDB, []dbpilot.ReplicationChannel{noReportHost}, []uint64{5}},
		{"mariadb-10.11/multisource/replica_status.txt", dbpilot.FlavorMariaDB, []dbpilot.ReplicationChannel{m1, m5}, []uint64{279, 138}},
		{"mariadb-10.11/multisource-errors/replica_status.txt", dbpilot.FlavorMariaDB, []dbpilot.ReplicationChannel{gone, m1Err, m5Err}, []uint64{0, 265, 132}},
		{"mysql-8.0/replica/replica_status.txt", dbpilot.FlavorMySQL, mysql80Channels, nil},
		{"mysql-8.0/replica/replica_status.txt", dbpilot.FlavorPercona, mysql80Channels, nil},
		{"mysql-8.0.21/replica_status.txt", dbpilot.FlavorMySQL, []dbpilot.ReplicationChannel{mysql8021}, nil},
		{"mysql-5.7/replica/replica_status.txt", dbpilot.FlavorMySQL, []dbpilot.ReplicationChannel{mysql57Channel}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			rows := verticalMaps(readTestdata(t, tt.file))
			if len(rows) != len(tt.want) {
				t.Fatalf("%d rows, want %d", len(rows), len(tt.want))
			}
			for i, row := range rows {
				got, err := parseReplicaStatusRow(tt.flavor, row)
				if err != nil {
					t.Fatalf("row %d: %v", i+1, err)
				}
				want := tt.want[i]
				want.ReceivedHeartbeats = 0
				if tt.heartbeats != nil {
					want.ReceivedHeartbeats = tt.heartbeats[i]
				}
				// SHOW REPLICA/SLAVE STATUS carries no heartbeat period on MySQL.
				want.HeartbeatUnknown = tt.flavor.IsMySQLFamily()
				diff(t, fmt.Sprintf("row %d", i+1), got, want)
			}
		})
	}
}

func TestParseReplicaStatusRowVocabulary(t *testing.T) {
	// The same row in the three vocabularies, with a case that differs
	// between releases (Channel_name before 8.0.22, Channel_Name after).
	old := map[string]string{"Master_Host": "h", "Master_Port": "3307", "Slave_IO_Running": "Yes", "Slave_SQL_Running": "Yes",
		"Seconds_Behind_Master": "7", "Master_Server_Id": "9", "Channel_name": "c", "Auto_Position": "1", "Master_UUID": "u"}
	renamed := map[string]string{"Source_Host": "h", "Source_Port": "3307", "Replica_IO_Running": "Yes", "Replica_SQL_Running": "Yes",
		"Seconds_Behind_Source": "7", "Source_Server_Id": "9", "Channel_Name": "c", "Auto_Position": "1", "Source_UUID": "u"}
	lower := map[string]string{"source_host": "h", "SOURCE_PORT": "3307", "replica_io_running": "yes", "replica_sql_running": "YES",
		"seconds_behind_source": "7", "source_server_id": "9", "CHANNEL_NAME": "c", "auto_position": "1", "source_uuid": "u"}
	want := dbpilot.ReplicationChannel{Name: "c", Source: key("h:3307"), IORunning: dbpilot.IORunning, SQLRunning: true,
		SecondsBehind: i64(7), SourceServerID: 9, UsingGTID: "Auto_Position", SourceUUID: "u", HeartbeatUnknown: true}
	for i, row := range []map[string]string{old, renamed, lower} {
		got, err := parseReplicaStatusRow(dbpilot.FlavorMySQL, row)
		if err != nil {
			t.Fatal(err)
		}
		diff(t, fmt.Sprintf("vocabulary %d", i), got, want)
	}
}

func TestParseReplicaStatusRowErrors(t *testing.T) {
	for _, row := range []map[string]string{
		{},
		{"Variable_name": "x"},
		{"Master_Host": "h", "Master_Port": "port"},
		{"Master_Host": "h", "Master_Port": "70000"},
		{"Master_Host": "h", "Seconds_Behind_Master": "-"},
		{"Master_Host": "h", "Slave_heartbeat_period": "NaN"},
		{"Master_Host": "h", "Slave_heartbeat_period": "-1"},
		{"Master_Host": "h", "Read_Master_Log_Pos": "-4"},
	} {
		if c, err := parseReplicaStatusRow(dbpilot.FlavorMariaDB, row); err == nil {
			t.Errorf("parseReplicaStatusRow(%q) = %+v, want an error", row, c)
		}
	}
}

func TestDetectFlavor(t *testing.T) {
	tests := []struct {
		version, comment string
		flavor           dbpilot.Flavor
		v                [3]int
	}{
		{"10.11.6-MariaDB-log", "MariaDB Server", dbpilot.FlavorMariaDB, [3]int{10, 11, 6}},
		{"10.11.19-MariaDB-0+deb12u1-log", "Debian 12", dbpilot.FlavorMariaDB, [3]int{10, 11, 19}},
		{"5.5.5-10.6.16-MariaDB", "", dbpilot.FlavorMariaDB, [3]int{10, 6, 16}},
		{"11.4.2-MariaDB-ubu2404", "mariadb.org binary distribution", dbpilot.FlavorMariaDB, [3]int{11, 4, 2}},
		{"8.0.36", "MySQL Community Server - GPL", dbpilot.FlavorMySQL, [3]int{8, 0, 36}},
		{"8.4.0", "MySQL Community Server - GPL", dbpilot.FlavorMySQL, [3]int{8, 4, 0}},
		{"5.7.44-log", "MySQL Community Server (GPL)", dbpilot.FlavorMySQL, [3]int{5, 7, 44}},
		{"8.0.36-28", "Percona Server (GPL), Release 28, Revision 47601f19", dbpilot.FlavorPercona, [3]int{8, 0, 36}},
		{"5.7.44-48-log", "Percona Server (GPL), Release 48, Revision 497f936a373", dbpilot.FlavorPercona, [3]int{5, 7, 44}},
		{"8.0.36-0ubuntu0.22.04.1", "(Ubuntu)", dbpilot.FlavorMySQL, [3]int{8, 0, 36}},
	}
	for _, tt := range tests {
		f := DetectFlavor(tt.version, tt.comment)
		if f != tt.flavor {
			t.Errorf("DetectFlavor(%q, %q) = %s, want %s", tt.version, tt.comment, f, tt.flavor)
		}
		v, err := parseServerVersion(tt.version, f)
		if err != nil {
			t.Errorf("parseServerVersion(%q): %v", tt.version, err)
			continue
		}
		if [3]int{v.Major, v.Minor, v.Patch} != tt.v || v.Raw != tt.version {
			t.Errorf("parseServerVersion(%q) = %+v, want %v", tt.version, v, tt.v)
		}
	}
}

func TestParseSemiSync(t *testing.T) {
	tests := []struct {
		dir  string
		want dbpilot.SemiSyncState
	}{
		{"mariadb-10.11/primary", dbpilot.SemiSyncState{PrimaryEnabled: true, PrimaryActive: true, PrimaryClients: 1, PrimaryTimeout: 2500 * time.Millisecond}},
		{"mariadb-10.11/replica", dbpilot.SemiSyncState{PrimaryTimeout: 10 * time.Second, ReplicaEnabled: true, ReplicaActive: true}},
		{"mariadb-10.11/multisource", dbpilot.SemiSyncState{PrimaryTimeout: 10 * time.Second}},
		// Source/replica names (8.0.26+ plugins).
		{"mysql-8.4/primary", dbpilot.SemiSyncState{PrimaryEnabled: true, PrimaryActive: true, PrimaryClients: 1, PrimaryTimeout: 10 * time.Second}},
		{"mysql-8.0/replica", dbpilot.SemiSyncState{ReplicaEnabled: true, ReplicaActive: true}},
		// Master/slave names, both plugins loaded.
		{"mysql-5.7/replica", dbpilot.SemiSyncState{PrimaryTimeout: 10 * time.Second, ReplicaEnabled: true, ReplicaActive: true}},
	}
	for _, tt := range tests {
		vars := nameValues(verticalMaps(readTestdata(t, tt.dir+"/semisync_variables.txt")))
		status := nameValues(verticalMaps(readTestdata(t, tt.dir+"/status.txt")))
		diff(t, tt.dir, parseSemiSync(vars, status), tt.want)
	}
	// No plugin: nothing at all.
	if got := parseSemiSync(nil, map[string]string{"Uptime": "5"}); got != (dbpilot.SemiSyncState{}) {
		t.Errorf("no plugin: %+v", got)
	}
	// MariaDB's recorded SHOW GLOBAL STATUS LIKE 'Rpl_semi%' agrees with the
	// narrower status query Inspect runs.
	got := parseSemiSync(nameValues(verticalMaps(readTestdata(t, "mariadb-10.11/primary/semisync_variables.txt"))),
		nameValues(verticalMaps(readTestdata(t, "mariadb-10.11/primary/semisync_status.txt"))))
	diff(t, "mariadb primary, full status", got, tests[0].want)
}

func TestReplicasFromProcesslist(t *testing.T) {
	tests := []struct {
		file string
		port int
		want []dbpilot.InstanceKey
	}{
		// Every replica of a local sandbox connects from 127.0.0.1.
		{"mariadb-10.11/primary/processlist.txt", 25301, []dbpilot.InstanceKey{key("127.0.0.1:25301"), key("127.0.0.1:25301"), key("127.0.0.1:25301"), key("127.0.0.1:25301")}},
		{"mariadb-10.11/replica/processlist.txt", 25302, nil}, // Slave_IO/Slave_SQL threads are not dump threads
		{"mysql-8.4/primary/processlist.txt", 3306, []dbpilot.InstanceKey{key("10.0.0.12:3306"), key("10.0.0.13:3306")}},
		{"mysql-8.0/replica/processlist.txt", 3306, nil},
	}
	for _, tt := range tests {
		got := parseProcesslistReplicas(verticalMaps(readTestdata(t, tt.file)), tt.port)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.file, got, tt.want)
		}
	}
	for in, want := range map[string]string{
		"10.0.0.5:51234": "10.0.0.5", "[fe80::1]:51234": "fe80::1", "fe80::1:51234": "fe80::1",
		"::1": "::1", "db2": "db2", "localhost": "localhost", "db2.example.com:3306": "db2.example.com", "": "",
	} {
		if got := processlistHost(in); got != want {
			t.Errorf("processlistHost(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseReplicaHosts(t *testing.T) {
	keys, hostless := parseReplicaHosts(verticalMaps(readTestdata(t, "mariadb-10.11/primary/replica_hosts.txt")), 25301)
	// MariaDB reports the replica's address as Host when report_host is unset
	// (server 6 has none).
	want := []dbpilot.InstanceKey{key("127.0.0.1:25306"), key("127.0.0.1:25304"), key("127.0.0.1:25303"), key("127.0.0.1:25302")}
	if !reflect.DeepEqual(keys, want) || hostless != 0 {
		t.Errorf("mariadb: %v, %d hostless; want %v", keys, hostless, want)
	}
	keys, hostless = parseReplicaHosts(verticalMaps(readTestdata(t, "mysql-8.4/primary/replica_hosts.txt")), 3306)
	if want := []dbpilot.InstanceKey{key("10.0.0.12:3306")}; !reflect.DeepEqual(keys, want) || hostless != 1 {
		t.Errorf("mysql: %v, %d hostless; want %v, 1", keys, hostless, want)
	}
}

func TestMergeReplicas(t *testing.T) {
	self := key("127.0.0.1:3306")
	got := mergeReplicas(self,
		[]dbpilot.InstanceKey{key("db3:3306"), key("localhost:3306"), key("db2:3306")},
		[]dbpilot.InstanceKey{key("DB2:3306"), key("db1:3307"), key("db3:3306")})
	want := []dbpilot.InstanceKey{key("db1:3307"), key("db2:3306"), key("db3:3306")}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("mergeReplicas = %v, want %v", got, want)
	}
	if got := newHosts([]dbpilot.InstanceKey{key("10.0.0.12:3306")}, []dbpilot.InstanceKey{key("10.0.0.12:3306"), key("10.0.0.13:3306")}); !reflect.DeepEqual(got, []dbpilot.InstanceKey{key("10.0.0.13:3306")}) {
		t.Errorf("newHosts = %v", got)
	}
}

func TestRedactPasswords(t *testing.T) {
	for in, want := range map[string]string{
		"Query: 'CREATE USER a@'%' IDENTIFIED BY 'se\\'cret''":                  "Query: 'CREATE USER a@'%' IDENTIFIED BY '***''",
		"ALTER USER a IDENTIFIED WITH mysql_native_password BY 'x' REQUIRE SSL": "ALTER USER a IDENTIFIED WITH mysql_native_password BY '***' REQUIRE SSL",
		"SET PASSWORD FOR a = PASSWORD('x')":                                    "SET PASSWORD FOR a = PASSWORD('***')",
		"GRANT ALL ON *.* TO a IDENTIFIED BY PASSWORD '*AB12'":                  "GRANT ALL ON *.* TO a IDENTIFIED BY PASSWORD '***'",
		"CHANGE MASTER TO MASTER_PASSWORD = 'x', MASTER_HOST='h'":               "CHANGE MASTER TO MASTER_PASSWORD = '***', MASTER_HOST='h'",
		"Duplicate entry '10' for key 'PRIMARY'":                                "Duplicate entry '10' for key 'PRIMARY'",
	} {
		if got := redactPasswords(in); got != want {
			t.Errorf("redactPasswords(%q)\n = %q\nwant %q", in, got, want)
		}
	}
}

// recordedDirs lists the testdata directories a whole inspection runs on.
var recordedDirs = []string{
	"mariadb-10.11/primary", "mariadb-10.11/replica", "mariadb-10.11/replica-sql-error",
	"mariadb-10.11/replica-no-report-host", "mariadb-10.11/multisource", "mariadb-10.11/multisource-errors",
	"mysql-8.0/replica", "mysql-8.4/primary", "mysql-5.7/replica",
}

// TestRecordedVariables checks that each recorded variables.txt answers the
// SELECT Inspect runs today; re-record (testdata/README.md) when it changes.
func TestRecordedVariables(t *testing.T) {
	for _, dir := range recordedDirs {
		vr := parseVertical(readTestdata(t, dir+"/version.txt"))
		if len(vr) != 1 || len(vr[0].vals) != 2 || vr[0].vals[0] == nil || vr[0].vals[1] == nil {
			t.Fatalf("%s/version.txt: want one row of 2 values", dir)
		}
		flavor := DetectFlavor(*vr[0].vals[0], *vr[0].vals[1])
		v, err := parseServerVersion(*vr[0].vals[0], flavor)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, n := range variableNames(serverIdent{Flavor: flavor, Version: v}) {
			want = append(want, "@@global."+n)
		}
		got := parseVertical(readTestdata(t, dir+"/variables.txt"))
		if len(got) != 1 || !reflect.DeepEqual(got[0].cols, want) {
			t.Errorf("%s/variables.txt columns:\n got %v\nwant %v", dir, got[0].cols, want)
		}
	}
}

func TestInspectRecorded(t *testing.T) {
	mariaPrimary := &dbpilot.Instance{
		Key: key("127.0.0.1:25301"), Reachable: true,
		Flavor:         dbpilot.FlavorMariaDB,
		Version:        dbpilot.Version{Major: 10, Minor: 11, Patch: 19, Raw: "10.11.19-MariaDB-0+deb12u1-log"},
		VersionComment: "Debian 12",
		ServerID:       1, Hostname: "vm", Port: 25301, ReportHost: "127.0.0.1", ReportPort: 25301, Uptime: 280 * time.Second,
		LogBin: true, BinlogFormat: "ROW", LogReplicaUpdates: true, SlaveNetTimeout: time.Minute,
		GTID:     dbpilot.GTIDState{Mode: "ON", BinlogPos: "0-1-8", CurrentPos: "0-1-8", BinlogState: "0-1-8", StrictMode: true},
		SemiSync: dbpilot.SemiSyncState{PrimaryEnabled: true, PrimaryActive: true, PrimaryClients: 1, PrimaryTimeout: 2500 * time.Millisecond},
		Replicas: []dbpilot.InstanceKey{key("127.0.0.1:25302"), key("127.0.0.1:25303"), key("127.0.0.1:25304"), key("127.0.0.1:25306")},
	}
	mariaReplica := &dbpilot.Instance{
		Key: key("127.0.0.1:25302"), Reachable: true,
		Flavor:         dbpilot.FlavorMariaDB,
		Version:        dbpilot.Version{Major: 10, Minor: 11, Patch: 19, Raw: "10.11.19-MariaDB-0+deb12u1-log"},
		VersionComment: "Debian 12",
		ServerID:       2, Hostname: "vm", Port: 25302, ReportHost: "127.0.0.1", ReportPort: 25302, Uptime: 279 * time.Second,
		ReadOnly: true, LogBin: true, BinlogFormat: "ROW", LogReplicaUpdates: true, SlaveNetTimeout: time.Minute,
		GTID:     dbpilot.GTIDState{Mode: "ON", BinlogPos: "0-1-8", SlavePos: "0-1-8", CurrentPos: "0-1-8", BinlogState: "0-1-8", StrictMode: true},
		Channels: []dbpilot.ReplicationChannel{mariaReplicaChannel},
		SemiSync: dbpilot.SemiSyncState{PrimaryTimeout: 10 * time.Second, ReplicaEnabled: true, ReplicaActive: true},
	}
	mysql80 := &dbpilot.Instance{
		Key: key("10.0.0.2:3306"), Reachable: true,
		Flavor:         dbpilot.FlavorMySQL,
		Version:        dbpilot.Version{Major: 8, Minor: 0, Patch: 36, Raw: "8.0.36"},
		VersionComment: "MySQL Community Server - GPL",
		ServerID:       2, ServerUUID: "8fc4a8f2-17bc-11f1-b8e4-00155d1a0118", Hostname: "replica1", Port: 3306, ReportPort: 3306,
		Uptime: 24 * time.Hour, ReadOnly: true, SuperReadOnly: true,
		LogBin: true, BinlogFormat: "ROW", LogReplicaUpdates: true, SlaveNetTimeout: time.Minute,
		GTID:     dbpilot.GTIDState{Mode: "ON", Executed: uuid1 + ":1-3," + uuid2 + ":1-1042", EnforceGTIDConsistency: "ON"},
		Channels: append([]dbpilot.ReplicationChannel(nil), mysql80Channels...),
		SemiSync: dbpilot.SemiSyncState{ReplicaEnabled: true, ReplicaActive: true},
	}
	mysql80.Channels[0].HeartbeatPeriod = 30 * time.Second
	mysql80.Channels[1].HeartbeatPeriod = 5 * time.Second
	mysql84 := &dbpilot.Instance{
		Key: key("10.0.0.11:3306"), Reachable: true,
		Flavor:         dbpilot.FlavorMySQL,
		Version:        dbpilot.Version{Major: 8, Minor: 4, Patch: 0, Raw: "8.4.0"},
		VersionComment: "MySQL Community Server - GPL",
		ServerID:       1, ServerUUID: uuid1, Hostname: "db1", Port: 3306, ReportHost: "10.0.0.11", ReportPort: 3306,
		Uptime: time.Hour, LogBin: true, BinlogFormat: "ROW", LogReplicaUpdates: true, SlaveNetTimeout: time.Minute,
		GTID:     dbpilot.GTIDState{Mode: "ON", Executed: uuid1 + ":1-1207", Purged: uuid1 + ":1-2", EnforceGTIDConsistency: "ON"},
		SemiSync: dbpilot.SemiSyncState{PrimaryEnabled: true, PrimaryActive: true, PrimaryClients: 1, PrimaryTimeout: 10 * time.Second},
		// 10.0.0.12 is listed by SHOW REPLICAS; the replica without
		// report_host is found in the processlist and assumed on port 3306.
		Replicas: []dbpilot.InstanceKey{key("10.0.0.12:3306"), key("10.0.0.13:3306")},
	}
	mysql57 := &dbpilot.Instance{
		Key: key("10.0.0.3:3306"), Reachable: true,
		Flavor:         dbpilot.FlavorMySQL,
		Version:        dbpilot.Version{Major: 5, Minor: 7, Patch: 44, Raw: "5.7.44-log"},
		VersionComment: "MySQL Community Server (GPL)",
		ServerID:       2, ServerUUID: "5b4c3f1e-9a2d-11ee-8c90-0242ac120003", Hostname: "replica57", Port: 3306, ReportPort: 3306,
		Uptime: 2 * time.Hour, ReadOnly: true,
		LogBin: true, BinlogFormat: "ROW", LogReplicaUpdates: true, SlaveNetTimeout: time.Minute,
		GTID:     dbpilot.GTIDState{Mode: "ON", Executed: uuid3 + ":1-5", EnforceGTIDConsistency: "ON"},
		Channels: []dbpilot.ReplicationChannel{mysql57Channel},
		SemiSync: dbpilot.SemiSyncState{PrimaryTimeout: 10 * time.Second, ReplicaEnabled: true, ReplicaActive: true},
	}
	mysql57.Channels[0].HeartbeatPeriod = 30 * time.Second

	tests := []struct {
		dir     string
		want    *dbpilot.Instance
		queries []string // statements run, first words
	}{
		{"mariadb-10.11/primary", mariaPrimary, []string{"SELECT @@global.version, @@global.version_comment", "SELECT @@global.version, @@global.version_comment, @@global.server_id", "SHOW GLOBAL STATUS", "SHOW ALL SLAVES STATUS", "SHOW SLAVE HOSTS"}},
		// Slaves_connected 0: no SHOW SLAVE HOSTS, no processlist.
		{"mariadb-10.11/replica", mariaReplica, []string{"SELECT @@global.version, @@global.version_comment", "SELECT @@global.version, @@global.version_comment, @@global.server_id", "SHOW GLOBAL STATUS", "SHOW ALL SLAVES STATUS"}},
		{"mysql-8.0/replica", mysql80, []string{"SELECT @@global.version, @@global.version_comment", "SELECT @@global.version, @@global.version_comment, @@global.server_id", "SHOW GLOBAL STATUS", "SHOW GLOBAL VARIABLES LIKE", "SHOW REPLICA STATUS", "SELECT CHANNEL_NAME, HEARTBEAT_INTERVAL", "SHOW REPLICAS", "SELECT ID, USER, HOST, COMMAND FROM information_schema.PROCESSLIST"}},
		{"mysql-8.4/primary", mysql84, []string{"SELECT @@global.version, @@global.version_comment", "SELECT @@global.version, @@global.version_comment, @@global.server_id", "SHOW GLOBAL STATUS", "SHOW GLOBAL VARIABLES LIKE", "SHOW REPLICA STATUS", "SHOW REPLICAS", "SELECT ID, USER, HOST, COMMAND FROM information_schema.PROCESSLIST"}},
		{"mysql-5.7/replica", mysql57, []string{"SELECT @@global.version, @@global.version_comment", "SELECT @@global.version, @@global.version_comment, @@global.server_id", "SHOW GLOBAL STATUS", "SHOW GLOBAL VARIABLES LIKE", "SHOW SLAVE STATUS", "SELECT CHANNEL_NAME, HEARTBEAT_INTERVAL", "SHOW SLAVE HOSTS", "SELECT ID, USER, HOST, COMMAND FROM information_schema.PROCESSLIST"}},
	}
	for _, tt := range tests {
		t.Run(tt.dir, func(t *testing.T) {
			rec := &recorded{dir: tt.dir}
			s := session{q: rec, key: tt.want.Key, user: "dbpilot"}
			before := time.Now()
			got, id, err := s.inspect(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got.ObservedAt.Before(before) || got.ObservedAt.After(time.Now()) {
				t.Errorf("ObservedAt = %v", got.ObservedAt)
			}
			if got.ReadStartedAt.Before(before) || got.ReadStartedAt.After(got.ObservedAt) {
				t.Errorf("ReadStartedAt = %v, not between %v and ObservedAt %v", got.ReadStartedAt, before, got.ObservedAt)
			}
			got.ObservedAt = time.Time{}
			diff(t, "", *got, *tt.want)
			checkQueries(t, rec.queries, tt.queries)

			// A second inspection with what the first learned skips the version query.
			rec.queries = nil
			again, _, err := s.inspect(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			again.ObservedAt = time.Time{}
			diff(t, "again", *again, *tt.want)
			checkQueries(t, rec.queries, tt.queries[1:])
		})
	}
}

func checkQueries(t *testing.T, got, want []string) {
	t.Helper()
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		ok = strings.HasPrefix(got[i], want[i])
	}
	if !ok {
		t.Errorf("queries:\n got %q\nwant %q", got, want)
	}
}

func TestInspectRecordedDirs(t *testing.T) {
	// Every recorded server inspects without error.
	for _, dir := range recordedDirs {
		s := session{q: &recorded{dir: dir}, key: key("127.0.0.1:3306")}
		if _, _, err := s.inspect(context.Background(), nil); err != nil {
			t.Errorf("%s: %v", dir, err)
		}
	}
}

func TestInspectOptionalParts(t *testing.T) {
	denied := &driver.MySQLError{Number: 1142, Message: "SELECT command denied to user 'dbpilot'@'127.0.0.1' for table 'replication_connection_configuration'"}
	rec := &recorded{dir: "mysql-8.0/replica", errs: map[string]error{
		"heartbeat.txt":          denied,
		"semisync_variables.txt": &driver.MySQLError{Number: ErSpecificAccess, Message: "Access denied"},
		"replica_hosts.txt":      &driver.MySQLError{Number: ErSpecificAccess, Message: "Access denied; you need (at least one of) the REPLICATION SLAVE privilege(s)"},
		"processlist.txt":        denied,
	}}
	s := session{q: rec, key: key("10.0.0.2:3306"), user: "dbpilot"}
	got, _, err := s.inspect(context.Background(), nil)
	if err != nil {
		t.Fatalf("optional parts refused: %v", err)
	}
	if len(got.Channels) != 2 || got.Channels[0].HeartbeatPeriod != 0 || !got.Channels[0].HeartbeatUnknown || got.SemiSync.ReplicaEnabled || got.Replicas != nil {
		t.Errorf("got %+v", got)
	}
}

func TestInspectErrors(t *testing.T) {
	const k = "10.0.0.2:3306"
	tests := []struct {
		file, code, msg string
		err             error
	}{
		{"replica_status.txt", dbpilot.EAUTH, `mysql: read replica status on 10.0.0.2:3306: user "dbpilot" lacks a privilege`,
			&driver.MySQLError{Number: ErSpecificAccess, Message: "Access denied; you need (at least one of) the SUPER, REPLICATION CLIENT privilege(s) for this operation"}},
		// A connection lost in an optional part fails the whole inspection.
		{"heartbeat.txt", dbpilot.EUNAVAIL, "mysql: read replica heartbeat periods on 10.0.0.2:3306", driver.ErrInvalidConn},
		{"status.txt", dbpilot.EUNAVAIL, "mysql: read status on 10.0.0.2:3306: timed out",
			dbpilot.WrapError(dbpilot.EUNAVAIL, errors.New("timed out"), "mysql: query SHOW GLOBAL STATUS WHERE on %s", k)},
		{"version.txt", dbpilot.EAUTH, `mysql: read version on 10.0.0.2:3306: access denied for user "dbpilot"`,
			&driver.MySQLError{Number: ErAccessDenied, Message: "Access denied for user 'dbpilot'@'10.0.0.1' (using password: YES)"}},
	}
	for _, tt := range tests {
		rec := &recorded{dir: "mysql-8.0/replica", errs: map[string]error{tt.file: tt.err}}
		s := session{q: rec, key: key(k), user: "dbpilot"}
		_, _, err := s.inspect(context.Background(), nil)
		if err == nil {
			t.Errorf("%s refused: no error", tt.file)
			continue
		}
		if code := dbpilot.ErrorCode(err); code != tt.code || !strings.HasPrefix(err.Error(), tt.msg) {
			t.Errorf("%s refused: %v (%s), want %q... (%s)", tt.file, err, code, tt.msg, tt.code)
		}
	}

	// A malformed number in the replica status names the column and server.
	rec := &recorded{dir: "mysql-8.0/replica"}
	s := session{q: &badRow{rec}, key: key(k), user: "dbpilot"}
	_, _, err := s.inspect(context.Background(), nil)
	if err == nil || !strings.Contains(err.Error(), "read replica status on 10.0.0.2:3306") || !strings.Contains(err.Error(), "master_port") {
		t.Errorf("malformed row: %v", err)
	}
}

// badRow corrupts Source_Port in the replica status.
type badRow struct{ *recorded }

func (b *badRow) Query(ctx context.Context, q string, args ...any) (*Rows, error) {
	r, err := b.recorded.Query(ctx, q, args...)
	if err == nil && recordedFile(q) == "replica_status.txt" {
		for i, c := range r.Columns {
			if c == "Source_Port" {
				bad := "33o6"
				r.Values[0][i] = &bad
			}
		}
	}
	return r, err
}

func TestInspectServerChanged(t *testing.T) {
	// What was learned of a MariaDB server no longer holds: the address now
	// answers as MySQL. The variables SELECT fails (unknown variable) and the
	// inspection detects the server again.
	rec := &recorded{dir: "mysql-8.0/replica", errs: map[string]error{}}
	maria := &serverIdent{Flavor: dbpilot.FlavorMariaDB, Version: dbpilot.Version{Major: 10, Minor: 11, Patch: 19, Raw: "10.11.19-MariaDB"}}
	s := session{q: &unknownVarOnce{recorded: rec}, key: key("10.0.0.2:3306")}
	got, id, err := s.inspect(context.Background(), maria)
	if err != nil {
		t.Fatal(err)
	}
	if got.Flavor != dbpilot.FlavorMySQL || id.Flavor != dbpilot.FlavorMySQL || len(got.Channels) != 2 {
		t.Errorf("got %s, %d channels", got.Flavor, len(got.Channels))
	}
	// Same flavor, new version: the variables answer, the version differs.
	rec.queries = nil
	old := &serverIdent{Flavor: dbpilot.FlavorMySQL, Version: dbpilot.Version{Major: 8, Minor: 0, Patch: 35, Raw: "8.0.35"}, Comment: "MySQL Community Server - GPL"}
	s = session{q: rec, key: key("10.0.0.2:3306")}
	got, id, err = s.inspect(context.Background(), old)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version.Raw != "8.0.36" || id.Version.Raw != "8.0.36" || rec.queries[1] != versionSQL {
		t.Errorf("version %s, queries %q", got.Version.Raw, rec.queries)
	}
}

// unknownVarOnce fails the first variables SELECT as a server without one of
// the variables would.
type unknownVarOnce struct {
	*recorded
	failed bool
}

func (u *unknownVarOnce) Query(ctx context.Context, q string, args ...any) (*Rows, error) {
	if !u.failed && recordedFile(q) == "variables.txt" {
		u.failed = true
		return nil, &driver.MySQLError{Number: ErUnknownSystemVar, Message: "Unknown system variable 'gtid_binlog_pos'"}
	}
	return u.recorded.Query(ctx, q, args...)
}

func TestInspectorClosed(t *testing.T) {
	in := NewInspector(Options{Credentials: Credentials{User: "u", Password: "p"}})
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := in.Inspect(context.Background(), key("127.0.0.1:1")); err == nil || dbpilot.ErrorCode(err) != dbpilot.EUNAVAIL {
		t.Errorf("Inspect after Close: %v", err)
	}
}

func TestInspectorUnreachable(t *testing.T) {
	in := NewInspector(Options{Credentials: Credentials{User: "u", Password: "secret-pw"}, ConnectTimeout: 200 * time.Millisecond})
	defer in.Close()
	// Port 1 on loopback refuses at once.
	_, err := in.Inspect(context.Background(), key("127.0.0.1:1"))
	if err == nil || dbpilot.ErrorCode(err) != dbpilot.EUNAVAIL {
		t.Fatalf("err = %v, want unavailable", err)
	}
	if strings.Contains(err.Error(), "secret-pw") {
		t.Errorf("password in error: %v", err)
	}
	if err := in.Forget(key("127.0.0.1:1")); err != nil {
		t.Error(err)
	}
}

func TestInspectorSerializesPerKey(t *testing.T) {
	in := NewInspector(Options{})
	defer in.Close()
	c, err := in.acquire(context.Background(), key("localhost:3306"))
	if err != nil {
		t.Fatal(err)
	}
	// The same server under another name waits; the context ends the wait.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := in.acquire(ctx, key("127.0.0.1:3306")); err == nil {
		t.Error("second acquire did not wait")
	}
	// Another server does not wait.
	c2, err := in.acquire(context.Background(), key("127.0.0.1:3307"))
	if err != nil {
		t.Fatal(err)
	}
	<-c2.sem
	<-c.sem
	c, err = in.acquire(context.Background(), key("127.0.0.1:3306"))
	if err != nil {
		t.Fatal(err)
	}
	<-c.sem
}

// recordedMulti answers like recorded, and several statements in one round
// trip (QueryMulti) too: from the same recordings, each as its own result,
// stopping at the first that fails, as a server does.
type recordedMulti struct {
	recorded
	multi [][]string // the statements of each QueryMulti
}

func (r *recordedMulti) MultiStatements() bool { return true }

func (r *recordedMulti) QueryMulti(ctx context.Context, stmts ...string) ([]*Rows, error) {
	r.multi = append(r.multi, stmts)
	out := make([]*Rows, 0, len(stmts))
	for _, q := range stmts {
		res, err := r.recorded.Query(ctx, q)
		if err != nil {
			return nil, err
		}
		out = append(out, res)
	}
	return out, nil
}

// TestInspectPrefetch: an inspection of a known server reads its variables,
// status, (MySQL) semi-sync variables and replica status in one round
// trip, and finds what the statements one by one found.
func TestInspectPrefetch(t *testing.T) {
	for _, dir := range recordedDirs {
		t.Run(dir, func(t *testing.T) {
			one := session{q: &recorded{dir: dir}, key: key("127.0.0.1:3306"), user: "dbpilot"}
			want, id, err := one.inspect(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			wantAgain, _, err := one.inspect(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			rec := &recordedMulti{recorded: recorded{dir: dir}}
			s := session{q: rec, key: key("127.0.0.1:3306"), user: "dbpilot"}
			got, id2, err := s.inspect(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if *id2 != *id {
				t.Errorf("identity %+v, want %+v", *id2, *id)
			}
			got.ObservedAt, want.ObservedAt, wantAgain.ObservedAt = time.Time{}, time.Time{}, time.Time{}
			diff(t, "", *got, *want)
			diff(t, "", *got, *wantAgain)
			if len(rec.multi) != 1 || !slices.Equal(rec.multi[0], inspectSQL(*id, true)) {
				t.Errorf("round trips of several statements: %q, want one of %q", rec.multi, inspectSQL(*id, true))
			}
			// Only what depends on the answers (replica lists, heartbeat
			// periods) goes on its own; nothing read ahead is read again.
			for _, q := range rec.queries[len(inspectSQL(*id, true)):] {
				if slices.Contains(inspectSQL(*id, true), q) {
					t.Errorf("%q read again after the round trip", q)
				}
			}
			if len(s.pre) != 0 {
				t.Errorf("results left read ahead: %d", len(s.pre))
			}
		})
	}
}

// TestInspectPrefetchErrors: a server error in the round trip (a variable
// the server behind the address does not know) falls back to the
// statements one by one, which detect the server again; a broken
// connection fails the inspection as a connection failure.
func TestInspectPrefetchErrors(t *testing.T) {
	const dir = "mariadb-10.11/replica"
	one := session{q: &recorded{dir: dir}, key: key("127.0.0.1:3306"), user: "dbpilot"}
	want, id, err := one.inspect(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want.ObservedAt = time.Time{}

	unknown := &driver.MySQLError{Number: 1193, Message: "Unknown system variable 'gtid_binlog_state'"}
	rec := &unknownVarMulti{recordedMulti: recordedMulti{recorded: recorded{dir: dir}}, err: unknown}
	s := session{q: rec, key: key("127.0.0.1:3306"), user: "dbpilot"}
	got, _, err := s.inspect(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	got.ObservedAt = time.Time{}
	diff(t, "after a server error", *got, *want)
	if len(rec.multi) != 1 || len(rec.queries) == 0 || !strings.HasPrefix(rec.queries[0], "SELECT @@global.") {
		t.Errorf("after a server error in the round trip: %d round trips, then %q; want the statements one by one", len(rec.multi), rec.queries)
	}

	broken := &unknownVarMulti{recordedMulti: recordedMulti{recorded: recorded{dir: dir}}, err: driver.ErrInvalidConn}
	s = session{q: broken, key: key("127.0.0.1:3306"), user: "dbpilot"}
	if _, _, err := s.inspect(context.Background(), id); dbpilot.ErrorCode(err) != dbpilot.EUNAVAIL {
		t.Errorf("broken connection: %v (code %s), want EUNAVAIL", err, dbpilot.ErrorCode(err))
	}
	if len(broken.queries) != 0 {
		t.Errorf("statements sent after a broken round trip: %q", broken.queries)
	}
}

// unknownVarMulti fails its round trips of several statements with err.
type unknownVarMulti struct {
	recordedMulti
	err error
}

func (u *unknownVarMulti) QueryMulti(ctx context.Context, stmts ...string) ([]*Rows, error) {
	u.multi = append(u.multi, stmts)
	return nil, u.err
}

// fixedShare is a StatusShare holding one status for every key.
type fixedShare struct {
	status map[string]string
	at     time.Time
}

func (f fixedShare) SharedStatus(dbpilot.InstanceKey) (map[string]string, time.Time) {
	return f.status, f.at
}

// TestInspectSharedStatus: with a collector's status shared, an inspection
// of a known server reads no status of its own and finds what it would
// have read; a status older than the share's age, or none, is read again.
func TestInspectSharedStatus(t *testing.T) {
	for _, dir := range []string{"mariadb-10.11/primary", "mariadb-10.11/replica", "mysql-8.0/replica"} {
		t.Run(dir, func(t *testing.T) {
			one := session{q: &recorded{dir: dir}, key: key("127.0.0.1:3306"), user: "dbpilot"}
			want, id, err := one.inspect(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			want.ObservedAt = time.Time{}
			// What a collector's read holds: the recorded status.
			r, err := (&recorded{dir: dir}).Query(context.Background(), statusSQL(*id))
			if err != nil {
				t.Fatal(err)
			}
			in := &Inspector{}
			in.ShareStatus(fixedShare{status: r.NameValues(), at: time.Now()}, time.Second)
			shared := in.sharedStatus(key("127.0.0.1:3306"))
			if shared == nil {
				t.Fatal("a fresh shared status not taken")
			}
			rec := &recordedMulti{recorded: recorded{dir: dir}}
			s := session{q: rec, key: key("127.0.0.1:3306"), user: "dbpilot", shared: shared}
			got, _, err := s.inspect(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			got.ObservedAt = time.Time{}
			diff(t, "", *got, *want)
			for _, q := range append(slices.Concat(rec.multi...), rec.queries...) {
				if strings.HasPrefix(q, "SHOW GLOBAL STATUS") {
					t.Errorf("status read although shared: %q", q)
				}
			}

			in.ShareStatus(fixedShare{status: r.NameValues(), at: time.Now().Add(-2 * time.Second)}, time.Second)
			if in.sharedStatus(key("127.0.0.1:3306")) != nil {
				t.Error("a shared status older than the age taken")
			}
			in.ShareStatus(fixedShare{}, time.Second)
			if in.sharedStatus(key("127.0.0.1:3306")) != nil {
				t.Error("no shared status, yet one taken")
			}
		})
	}
}

// TestInspectStatusNames: a share that keeps InspectStatusNames holds
// every status variable any inspection reads.
func TestInspectStatusNames(t *testing.T) {
	names := InspectStatusNames()
	for _, f := range []dbpilot.Flavor{dbpilot.FlavorMariaDB, dbpilot.FlavorMySQL, dbpilot.FlavorPercona} {
		for _, n := range statusNames(serverIdent{Flavor: f}) {
			if !slices.Contains(names, strings.ToLower(n)) {
				t.Errorf("%s: %s not in InspectStatusNames", f, n)
			}
		}
	}
}
