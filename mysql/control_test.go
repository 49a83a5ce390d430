package mysql

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	driver "github.com/go-sql-driver/mysql"
)

// recorder is an execer that records statements and answers queries from
// canned results; statements listed in fail return that error.
type recorder struct {
	log     []string
	results map[string]*Rows
	fail    map[string]error
}

func (r *recorder) Exec(_ context.Context, stmts ...string) error {
	for _, s := range stmts {
		r.log = append(r.log, s)
		if err := r.fail[s]; err != nil {
			return err
		}
	}
	return nil
}

func (r *recorder) Query(_ context.Context, q string, _ ...any) (*Rows, error) {
	r.log = append(r.log, q)
	if err := r.fail[q]; err != nil {
		return nil, err
	}
	if res, ok := r.results[q]; ok {
		return res, nil
	}
	return &Rows{}, nil
}

// rows builds a result: cols, then one []string per row ("NULL" is NULL).
func rows(cols []string, vals ...[]string) *Rows {
	r := &Rows{Columns: cols}
	for _, v := range vals {
		row := make([]*string, len(v))
		for i := range v {
			if v[i] != "NULL" {
				s := v[i]
				row[i] = &s
			}
		}
		r.Values = append(r.Values, row)
	}
	return r
}

var (
	mariaID = serverIdent{Flavor: dbpilot.FlavorMariaDB, Version: dbpilot.Version{Major: 10, Minor: 11, Patch: 6}}
	my84ID  = serverIdent{Flavor: dbpilot.FlavorMySQL, Version: dbpilot.Version{Major: 8, Minor: 4, Patch: 0}}
	my80ID  = serverIdent{Flavor: dbpilot.FlavorMySQL, Version: dbpilot.Version{Major: 8, Minor: 0, Patch: 20}}
	my56ID  = serverIdent{Flavor: dbpilot.FlavorMySQL, Version: dbpilot.Version{Major: 5, Minor: 6, Patch: 51}}
	testKey = dbpilot.InstanceKey{Host: "db1", Port: 3306}
)

func newCtl(id serverIdent, r *recorder) *ctl {
	return &ctl{x: r, key: testKey, user: "admin", id: id, d: id.dialect()}
}

func slaveStatus(chans ...[]string) *Rows {
	return rows([]string{"Connection_name", "Master_Host", "Master_Port", "Slave_IO_Running", "Slave_SQL_Running"}, chans...)
}

func TestChangeSourceSQL(t *testing.T) {
	cs := ChangeSource{Source: dbpilot.InstanceKey{Host: "10.0.0.2", Port: 3306}, User: "repl", Password: "pw", ConnectRetry: time.Second, HeartbeatPeriod: time.Second}
	base := `CHANGE MASTER TO MASTER_HOST='10.0.0.2', MASTER_PORT=3306, MASTER_USER='repl', MASTER_PASSWORD='pw', MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1, MASTER_HEARTBEAT_PERIOD=1`
	tests := []struct {
		name   string
		id     serverIdent
		ignore []uint32
		want   string
		code   string
	}{
		{"maria ignore", mariaID, []uint32{2, 1, 2}, base + ", DO_DOMAIN_IDS=(), IGNORE_DOMAIN_IDS=(1,2)", ""},
		{"maria no ignore clears the setting", mariaID, nil, base + ", IGNORE_DOMAIN_IDS=()", ""},
		{"mysql", my84ID, nil, `CHANGE REPLICATION SOURCE TO SOURCE_HOST='10.0.0.2', SOURCE_PORT=3306, SOURCE_USER='repl', SOURCE_PASSWORD='pw', SOURCE_AUTO_POSITION=1, SOURCE_CONNECT_RETRY=1, SOURCE_HEARTBEAT_PERIOD=1, GET_SOURCE_PUBLIC_KEY=1`, ""},
		{"mysql refuses domains", my84ID, []uint32{1}, "", dbpilot.EUNSUPPORTED},
	}
	for _, tt := range tests {
		got, err := changeSourceSQL(tt.id.dialect(), cs, tt.ignore)
		if tt.code != "" {
			if dbpilot.ErrorCode(err) != tt.code {
				t.Errorf("%s: error %v, want code %s", tt.name, err, tt.code)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s:\n got %s (%v)\nwant %s", tt.name, got, err, tt.want)
		}
	}
}

func TestChangeSourceStopsRunningChannelFirst(t *testing.T) {
	r := &recorder{results: map[string]*Rows{"SHOW ALL SLAVES STATUS": slaveStatus(
		[]string{"", "10.0.0.1", "3306", "Connecting", "Yes"},
		[]string{"other", "10.0.0.9", "3306", "Yes", "Yes"},
	)}}
	s := newCtl(mariaID, r)
	err := s.changeSource(context.Background(), dbpilot.InstanceKey{Host: "10.0.0.2", Port: 3307}, Credentials{User: "repl", Password: "s3cret"}, nil,
		dbpilot.ChangeSourceOptions{IgnoreDomains: []uint32{3}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"SHOW ALL SLAVES STATUS", "STOP SLAVE",
		`CHANGE MASTER TO MASTER_HOST='10.0.0.2', MASTER_PORT=3307, MASTER_USER='repl', MASTER_PASSWORD='s3cret', MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1, MASTER_HEARTBEAT_PERIOD=1, DO_DOMAIN_IDS=(), IGNORE_DOMAIN_IDS=(3)`}
	if strings.Join(r.log, "\n") != strings.Join(want, "\n") {
		t.Errorf("statements:\n%s\nwant\n%s", strings.Join(r.log, "\n"), strings.Join(want, "\n"))
	}

	// A named channel that is stopped is changed at once.
	r = &recorder{results: map[string]*Rows{"SHOW ALL SLAVES STATUS": slaveStatus([]string{"m1", "10.0.0.1", "3306", "No", "No"})}}
	s = newCtl(mariaID, r)
	if err := s.changeSource(context.Background(), dbpilot.InstanceKey{Host: "h", Port: 1}, Credentials{User: "repl"}, nil, dbpilot.ChangeSourceOptions{Channel: "m1"}); err != nil {
		t.Fatal(err)
	}
	if len(r.log) != 2 || !strings.HasPrefix(r.log[1], "CHANGE MASTER 'm1' TO ") || !strings.HasSuffix(r.log[1], "IGNORE_DOMAIN_IDS=()") {
		t.Errorf("statements: %q", r.log)
	}
}

func TestChangeSourceErrorHidesPassword(t *testing.T) {
	stmt := `CHANGE MASTER TO MASTER_HOST='h', MASTER_PORT=1, MASTER_USER='repl', MASTER_PASSWORD='s3cret', MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1, MASTER_HEARTBEAT_PERIOD=1, IGNORE_DOMAIN_IDS=()`
	r := &recorder{fail: map[string]error{stmt: &driver.MySQLError{Number: ErParseError, Message: "You have an error in your SQL syntax near 's3cret', MASTER_USE_GTID'"}}}
	s := newCtl(mariaID, r)
	err := s.changeSource(context.Background(), dbpilot.InstanceKey{Host: "h", Port: 1}, Credentials{User: "repl", Password: "s3cret"}, nil, dbpilot.ChangeSourceOptions{})
	if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.HasPrefix(err.Error(), "mysql: change source on db1:3306: ") || ServerErrorNumber(err) != ErParseError {
		t.Errorf("error = %v (number %d)", err, ServerErrorNumber(err))
	}
}

func TestStopStartReset(t *testing.T) {
	ctx := context.Background()
	notSlave := &driver.MySQLError{Number: ErBadSlave, Message: "The server is not configured as slave"}

	// MariaDB: all channels, each reset by name.
	r := &recorder{results: map[string]*Rows{"SHOW ALL SLAVES STATUS": slaveStatus(
		[]string{"", "a", "1", "Yes", "Yes"}, []string{"m2", "b", "2", "No", "No"})}}
	s := newCtl(mariaID, r)
	if err := s.stopReplica(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.startReplica(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.resetReplicaAll(ctx); err != nil {
		t.Fatal(err)
	}
	want := "STOP ALL SLAVES|START ALL SLAVES|SHOW ALL SLAVES STATUS|STOP ALL SLAVES|RESET SLAVE ALL|RESET SLAVE 'm2' ALL"
	if got := strings.Join(r.log, "|"); got != want {
		t.Errorf("maria:\n got %s\nwant %s", got, want)
	}

	// MySQL 8.4: REPLICA words, one reset for every channel.
	r = &recorder{}
	s = newCtl(my84ID, r)
	_ = s.stopReplica(ctx)
	_ = s.startReplica(ctx)
	_ = s.resetReplicaAll(ctx)
	if got, want := strings.Join(r.log, "|"), "STOP REPLICA|START REPLICA|STOP REPLICA|RESET REPLICA ALL"; got != want {
		t.Errorf("mysql 8.4:\n got %s\nwant %s", got, want)
	}
	r = &recorder{}
	s = newCtl(my80ID, r)
	_ = s.resetReplicaAll(ctx)
	if got, want := strings.Join(r.log, "|"), "STOP SLAVE|RESET SLAVE ALL"; got != want {
		t.Errorf("mysql 8.0.20:\n got %s\nwant %s", got, want)
	}

	// Idempotent: nothing configured is no error.
	r = &recorder{fail: map[string]error{"STOP REPLICA": notSlave, "START REPLICA": notSlave, "RESET REPLICA ALL": notSlave}}
	s = newCtl(my84ID, r)
	if err := s.stopReplica(ctx); err != nil {
		t.Errorf("stop on a non-replica: %v", err)
	}
	if err := s.startReplica(ctx); err != nil {
		t.Errorf("start on a non-replica: %v", err)
	}
	if err := s.resetReplicaAll(ctx); err != nil {
		t.Errorf("reset on a non-replica: %v", err)
	}
	// ... but a configured channel that will not start is.
	r = &recorder{fail: map[string]error{"START REPLICA": notSlave}, results: map[string]*Rows{
		"SHOW REPLICA STATUS": rows([]string{"Channel_Name", "Source_Host", "Source_Port", "Replica_IO_Running", "Replica_SQL_Running"}, []string{"", "", "3306", "No", "No"})}}
	s = newCtl(my84ID, r)
	if err := s.startReplica(ctx); err == nil || !strings.HasPrefix(err.Error(), "mysql: start replica on db1:3306") {
		t.Errorf("start of a misconfigured channel: %v", err)
	}
	// Other errors fail, wrapped.
	r = &recorder{fail: map[string]error{"STOP ALL SLAVES": &driver.MySQLError{Number: ErSpecificAccess, Message: "denied"}}}
	s = newCtl(mariaID, r)
	if err := s.stopReplica(ctx); dbpilot.ErrorCode(err) != dbpilot.EAUTH || !strings.HasPrefix(err.Error(), "mysql: stop replica on db1:3306: ") {
		t.Errorf("stop denied: %v (code %s)", err, dbpilot.ErrorCode(err))
	}
}

func TestReadOnlySQL(t *testing.T) {
	tests := []struct {
		id   serverIdent
		on   bool
		want string
	}{
		{mariaID, true, "SET GLOBAL read_only=ON"},
		{mariaID, false, "SET GLOBAL read_only=OFF"},
		{my84ID, true, "SET GLOBAL super_read_only=ON"},
		{my84ID, false, "SET GLOBAL super_read_only=OFF|SET GLOBAL read_only=OFF"},
		{my56ID, true, "SET GLOBAL read_only=ON"},
		{my56ID, false, "SET GLOBAL read_only=OFF"},
	}
	for _, tt := range tests {
		if got := strings.Join(readOnlySQL(tt.id, tt.on), "|"); got != tt.want {
			t.Errorf("%s %s on=%v: %s, want %s", tt.id.Flavor, tt.id.Version, tt.on, got, tt.want)
		}
	}
}

func TestWaitSQL(t *testing.T) {
	q, ok, to := waitSQL(mariaID.dialect(), "0-1-5,1-2-3", 1500*time.Millisecond)
	if q != "SELECT MASTER_GTID_WAIT('0-1-5,1-2-3', 1.5)" || ok != "0" || to != "-1" {
		t.Errorf("maria: %s %s %s", q, ok, to)
	}
	q, ok, to = waitSQL(my84ID.dialect(), "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5", 1500*time.Millisecond)
	if q != "SELECT WAIT_FOR_EXECUTED_GTID_SET('3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5', 2)" || ok != "0" || to != "1" {
		t.Errorf("mysql: %s %s %s", q, ok, to)
	}
}

func TestWaitForGTIDOutcomes(t *testing.T) {
	ctx := context.Background()
	wait := "SELECT MASTER_GTID_WAIT('0-1-9', 2)"
	r := &recorder{results: map[string]*Rows{wait: rows([]string{"r"}, []string{"0"})}}
	if err := newCtl(mariaID, r).waitForGTID(ctx, "0-1-9", 2*time.Second); err != nil {
		t.Errorf("reached: %v", err)
	}
	r = &recorder{results: map[string]*Rows{
		wait:                               rows([]string{"r"}, []string{"-1"}),
		"SELECT @@GLOBAL.gtid_current_pos": rows([]string{"p"}, []string{"0-1-7"}),
	}}
	err := newCtl(mariaID, r).waitForGTID(ctx, "0-1-9", 2*time.Second)
	if dbpilot.ErrorCode(err) != dbpilot.EUNAVAIL || err.Error() != "mysql: wait for GTID on db1:3306: position 0-1-9 not reached within 2s; reached 0-1-7" {
		t.Errorf("timeout: %v (code %s)", err, dbpilot.ErrorCode(err))
	}
	myWait := "SELECT WAIT_FOR_EXECUTED_GTID_SET('u:1-3', 1)"
	r = &recorder{results: map[string]*Rows{
		myWait:                          rows([]string{"r"}, []string{"1"}),
		"SELECT @@GLOBAL.gtid_executed": rows([]string{"p"}, []string{"u:1-2,\nv:1"}),
	}}
	err = newCtl(my84ID, r).waitForGTID(ctx, "u:1-3", time.Second)
	if dbpilot.ErrorCode(err) != dbpilot.EUNAVAIL || !strings.HasSuffix(err.Error(), "reached u:1-2,v:1") {
		t.Errorf("mysql timeout: %v", err)
	}
	r = &recorder{results: map[string]*Rows{myWait: rows([]string{"r"}, []string{"NULL"})}}
	if err := newCtl(my84ID, r).waitForGTID(ctx, "u:1-3", time.Second); dbpilot.ErrorCode(err) != dbpilot.EINTERNAL {
		t.Errorf("NULL result: %v", err)
	}
}

func TestSemiSyncSQL(t *testing.T) {
	maria := map[string]string{"rpl_semi_sync_master_enabled": "OFF", "rpl_semi_sync_slave_enabled": "ON"}
	if got := strings.Join(semiSyncSQL(maria, true, false), "|"); got != "SET GLOBAL rpl_semi_sync_master_enabled=ON|SET GLOBAL rpl_semi_sync_slave_enabled=OFF" {
		t.Errorf("maria: %s", got)
	}
	if got := semiSyncSQL(maria, false, true); len(got) != 0 {
		t.Errorf("already set: %q", got)
	}
	// MySQL 8.0.26+ plugins: new names; both vocabularies loaded: new wins.
	both := map[string]string{"rpl_semi_sync_source_enabled": "OFF", "rpl_semi_sync_master_enabled": "OFF", "Rpl_semi_sync_replica_enabled": "OFF"}
	if got := strings.Join(semiSyncSQL(both, true, true), "|"); got != "SET GLOBAL rpl_semi_sync_source_enabled=ON|SET GLOBAL rpl_semi_sync_replica_enabled=ON" {
		t.Errorf("mysql: %s", got)
	}
	// No plugin: nothing to do.
	if got := semiSyncSQL(map[string]string{}, true, true); len(got) != 0 {
		t.Errorf("no plugin: %q", got)
	}
	r := &recorder{results: map[string]*Rows{semiSyncVarsSQL: rows([]string{"Variable_name", "Value"}, []string{"rpl_semi_sync_slave_enabled", "OFF"})}}
	if err := newCtl(my80ID, r).setSemiSync(context.Background(), true, true); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.log, "|"); got != semiSyncVarsSQL+"|SET GLOBAL rpl_semi_sync_slave_enabled=ON" {
		t.Errorf("replica plugin only: %s", got)
	}
}

func TestKillClients(t *testing.T) {
	pl := rows([]string{"ID", "USER", "COMMAND", "INFO"},
		[]string{"5", "dbpilot", "Query", processlistAllSQL}, // ourselves
		[]string{"6", "app", "Sleep", ""},                    // a client
		[]string{"7", "dbpilot", "Sleep", ""},                // another admin connection
		[]string{"8", "repl", "Binlog Dump", ""},             // a replica's dump thread
		[]string{"9", "repl", "Binlog Dump GTID", ""},
		[]string{"10", "system user", "Slave_IO", ""},
		[]string{"11", "system user", "Slave_worker", ""},
		[]string{"12", "event_scheduler", "Daemon", ""},
		[]string{"13", "system user", "Connect", ""}, // MySQL replica IO thread
		[]string{"14", "unauthenticated user", "Connect", ""},
		[]string{"15", "app", "Query", ""}, // gone before the kill
		// dbpilot's liveness session: never killed (a KILL of it blocked
		// the server for 2 s now and then).
		[]string{"16", "dbpilot", "Query", "SELECT /* " + LivenessMarker + " */ SLEEP(30)"},
	)
	r := &recorder{
		results: map[string]*Rows{"SELECT CONNECTION_ID()": rows([]string{"id"}, []string{"5"}), processlistAllSQL: pl},
		fail:    map[string]error{"KILL CONNECTION 15": &driver.MySQLError{Number: erNoSuchThread, Message: "Unknown thread id: 15"}},
	}
	n, err := newCtl(mariaID, r).killClients(context.Background())
	if err != nil || n != 3 {
		t.Errorf("killed %d, %v; want 3", n, err)
	}
	want := "SELECT CONNECTION_ID()|" + processlistAllSQL + "|KILL CONNECTION 6|KILL CONNECTION 7|KILL CONNECTION 14|KILL CONNECTION 15"
	if got := strings.Join(r.log, "|"); got != want {
		t.Errorf("statements:\n got %s\nwant %s", got, want)
	}
	r.fail["KILL CONNECTION 7"] = &driver.MySQLError{Number: ErSpecificAccess, Message: "denied"}
	r.log = nil
	if n, err := newCtl(mariaID, r).killClients(context.Background()); n != 1 || dbpilot.ErrorCode(err) != dbpilot.EAUTH {
		t.Errorf("kill denied: %d, %v", n, err)
	}
}

func TestSetReplicaPositionSQL(t *testing.T) {
	r := &recorder{}
	if err := newCtl(mariaID, r).setReplicaPosition(context.Background(), "0-1-5,1-2-3"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.log, "|"); got != "SET GLOBAL gtid_slave_pos='0-1-5,1-2-3'" {
		t.Errorf("statement: %s", got)
	}
	if err := newCtl(my84ID, &recorder{}).setReplicaPosition(context.Background(), "x"); dbpilot.ErrorCode(err) != dbpilot.EUNSUPPORTED {
		t.Errorf("mysql: %v", err)
	}
}

func TestWrapOp(t *testing.T) {
	k := dbpilot.InstanceKey{Host: "h", Port: 1}
	// A DB error is renamed after the operation, keeping its code and cause.
	inner := Classify(&driver.MySQLError{Number: ErAccessDenied, Message: "denied"}, k, "u", "exec STOP ALL SLAVES")
	err := wrapOp(inner, k, "u", "stop replica", "")
	if dbpilot.ErrorCode(err) != dbpilot.EAUTH || !strings.HasPrefix(err.Error(), "mysql: stop replica on h:1: access denied") || ServerErrorNumber(err) != ErAccessDenied {
		t.Errorf("wrapped: %v (code %s)", err, dbpilot.ErrorCode(err))
	}
	timeout := Classify(context.DeadlineExceeded, k, "u", "exec X")
	if err := wrapOp(timeout, k, "u", "set semi-sync", ""); dbpilot.ErrorCode(err) != dbpilot.EUNAVAIL || err.Error() != "mysql: set semi-sync on h:1: timed out" {
		t.Errorf("timeout: %v", err)
	}
	if err := wrapOp(errControllerClosed, k, "u", "stop replica", ""); err.Error() != "mysql: stop replica on h:1: controller closed" || dbpilot.ErrorCode(err) != dbpilot.EUNAVAIL {
		t.Errorf("closed: %v", err)
	}
	if err := wrapOp(errors.New("boom pw1"), k, "u", "x", "pw1"); strings.Contains(err.Error(), "pw1") {
		t.Errorf("secret shown: %v", err)
	}
}

func TestControllerClosed(t *testing.T) {
	c := NewController(Options{Credentials: Credentials{User: "u", Password: "p"}}, Credentials{User: "r", Password: "q"})
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.StopReplica(context.Background(), testKey); dbpilot.ErrorCode(err) != dbpilot.EUNAVAIL || !strings.Contains(err.Error(), "closed") {
		t.Errorf("after close: %v", err)
	}
}

// TestKillTargets: the fence of a returning primary kills client sessions,
// never the server's own threads, itself, the liveness session, or a
// standby fence still running (it would be cut off half-way).
func TestKillTargets(t *testing.T) {
	rows := []map[string]string{
		{"ID": "1", "USER": "system user", "COMMAND": "Daemon"},
		{"ID": "2", "USER": "repl", "COMMAND": "Binlog Dump GTID"},
		{"ID": "3", "USER": "dbpilot", "COMMAND": "Query", "INFO": "SELECT /* dbpilot:liveness */ SLEEP(30)"},
		{"ID": "4", "USER": "dbpilot", "COMMAND": "Query", "INFO": "/* dbpilot:standby-fence */ SET GLOBAL read_only = ON"},
		{"ID": "5", "USER": "app", "COMMAND": "Query", "INFO": "INSERT INTO t VALUES (1)"},
		{"ID": "6", "USER": "dbpilot", "COMMAND": "Query", "INFO": "SELECT 1"},
		{"ID": "7", "USER": "app", "COMMAND": "Sleep"},
	}
	got := strings.Join(killTargets(rows, "6"), ",")
	if got != "5,7" {
		t.Errorf("kill targets = %s, want 5,7", got)
	}
}
