package simulator

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/collector"
	"github.com/dbpilot/dbpilot/daemon"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/topology"
	driver "github.com/go-sql-driver/mysql"
)

// startFleet starts a fleet on free ports, closed at the end of the test.
func startFleet(t *testing.T, instances, size int) *Fleet {
	t.Helper()
	f := New(Options{Instances: instances, ClusterSize: size})
	if err := f.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// open connects with the real driver, as dbpilot does.
func open(t *testing.T, in *Instance) *sql.DB {
	t.Helper()
	cfg := driver.NewConfig()
	cfg.User, cfg.Passwd = "anyone", "anything"
	cfg.Net, cfg.Addr = "tcp", in.Key()
	cfg.Timeout = time.Second
	cfg.Params = map[string]string{"sql_mode": "''"}
	c, err := driver.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	t.Cleanup(func() { db.Close() })
	return db
}

func rowsOf(t *testing.T, db *sql.DB, q string) (cols []string, rows [][]sql.NullString) {
	t.Helper()
	r, err := db.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer r.Close()
	cols, _ = r.Columns()
	for r.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := r.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, vals)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return cols, rows
}

func column(cols []string, row []sql.NullString, name string) sql.NullString {
	for i, c := range cols {
		if c == name {
			return row[i]
		}
	}
	return sql.NullString{}
}

func TestWireProtocol(t *testing.T) {
	f := startFleet(t, 5, 5)
	c := f.Clusters()[0]
	primary, replica := c.Members[0], c.Members[1]
	pdb, rdb := open(t, primary), open(t, replica)
	if err := pdb.Ping(); err != nil {
		t.Fatal(err)
	}

	var version, comment string
	if err := pdb.QueryRow("SELECT @@global.version, @@global.version_comment").Scan(&version, &comment); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(version, "MariaDB") || comment != serverVersionComment {
		t.Errorf("version %q %q", version, comment)
	}
	var ro, sid, port int
	if err := rdb.QueryRow("SELECT @@global.read_only, @@global.server_id, @@port").Scan(&ro, &sid, &port); err != nil {
		t.Fatal(err)
	}
	if ro != 1 || sid != int(replica.ServerID) || port != replica.Port {
		t.Errorf("replica read_only %d server_id %d port %d", ro, sid, port)
	}

	cols, rows := rowsOf(t, pdb, "SHOW SLAVE HOSTS")
	if len(rows) != 4 {
		t.Fatalf("SHOW SLAVE HOSTS: %d rows, want 4", len(rows))
	}
	if got := column(cols, rows[0], "Port").String; got != strconv.Itoa(replica.Port) {
		t.Errorf("first replica port %s, want %d", got, replica.Port)
	}

	cols, rows = rowsOf(t, rdb, "SHOW ALL SLAVES STATUS")
	if len(rows) != 1 {
		t.Fatalf("SHOW ALL SLAVES STATUS: %d rows", len(rows))
	}
	for name, want := range map[string]string{"Slave_IO_Running": "Yes", "Slave_SQL_Running": "Yes",
		"Master_Port": strconv.Itoa(primary.Port), "Seconds_Behind_Master": "0", "Using_Gtid": "Slave_Pos"} {
		if got := column(cols, rows[0], name).String; got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if _, rows := rowsOf(t, pdb, "SHOW ALL SLAVES STATUS"); len(rows) != 0 {
		t.Errorf("the primary has %d channels", len(rows))
	}

	// Counters and GTID positions move with time.
	questions := func() int {
		var name string
		var v int
		if err := pdb.QueryRow("SHOW GLOBAL STATUS LIKE 'Questions'").Scan(&name, &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	var gtid1, gtid2 string
	q1 := questions()
	pdb.QueryRow("SELECT @@global.gtid_current_pos").Scan(&gtid1)
	// The simulated primary writes on its own: its position moves.
	testutil.WaitFor(t, 10*time.Second, "gtid_current_pos moves", func() (bool, string) {
		pdb.QueryRow("SELECT @@global.gtid_current_pos").Scan(&gtid2)
		return gtid2 != gtid1, gtid2
	})
	if q2 := questions(); q2 <= q1 {
		t.Errorf("Questions did not move: %d then %d", q1, q2)
	}
	if gtid1 == gtid2 || !strings.HasPrefix(gtid1, "0-"+strconv.Itoa(int(primary.ServerID))+"-") {
		t.Errorf("gtid_current_pos %q then %q", gtid1, gtid2)
	}

	_, rows = rowsOf(t, pdb, "SHOW GLOBAL STATUS WHERE Variable_name IN ('Uptime', 'Threads_connected')")
	if len(rows) != 2 {
		t.Errorf("WHERE IN: %d rows", len(rows))
	}
	_, rows = rowsOf(t, pdb, "SHOW GLOBAL VARIABLES")
	if len(rows) < 500 {
		t.Errorf("SHOW GLOBAL VARIABLES: %d rows", len(rows))
	}

	// What the simulator does not know is an error, and counted.
	_, err := pdb.Exec("SELECT * FROM no_such_table")
	var me *driver.MySQLError
	if !errors.As(err, &me) || me.Number != 1064 {
		t.Errorf("unknown statement: %v", err)
	}
	if n := f.Stats().Unknown["SELECT * FROM no_such_table"]; n != 1 {
		t.Errorf("unknown statements counted %d, want 1", n)
	}
	if _, err := pdb.Exec("SET SESSION max_statement_time = 1.000"); err != nil {
		t.Errorf("SET: %v", err)
	}
}

// TestInspectDiscoverAnalyze reads a simulated cluster with dbpilot's own
// inspection, discovery and analysis, and sees its primary die.
func TestInspectDiscoverAnalyze(t *testing.T) {
	f := startFleet(t, 10, 5)
	c := f.Clusters()[1]
	pk := dbpilot.InstanceKey{Host: "127.0.0.1", Port: c.Members[0].Port}
	in := mysql.NewInspector(mysql.Options{Credentials: mysql.Credentials{User: "dbpilot", Password: "x"}, ConnectTimeout: time.Second, QueryTimeout: 2 * time.Second})
	defer in.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	inst, err := in.Inspect(ctx, pk)
	if err != nil {
		t.Fatal(err)
	}
	if inst.Flavor != dbpilot.FlavorMariaDB || inst.ServerID != c.Members[0].ServerID || inst.ReadOnly || len(inst.Replicas) != 4 || inst.GTID.CurrentPos == "" {
		t.Errorf("primary inspected as %+v", inst)
	}

	all, err := topology.Discover(ctx, in, []dbpilot.InstanceKey{pk}, topology.Options{Concurrency: 8, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	clusters := topology.Clusters(all)
	if len(clusters) != 1 || len(clusters[0].Instances) != 5 || len(clusters[0].Primaries) != 1 || !clusters[0].Primaries[0].Equal(pk) {
		var b bytes.Buffer
		topology.RenderText(&b, clusters, nil)
		t.Fatalf("want one cluster of primary %s and 4 replicas, got:\n%s", pk, b.String())
	}
	for _, i := range clusters[0].Instances {
		if !i.Key.Equal(pk) && (i.Channel(pk) == nil || i.Channel(pk).IORunning != dbpilot.IORunning) {
			t.Errorf("%s does not replicate from %s", i.Key, pk)
		}
	}
	if problems := topology.Analyze(clusters[0].Instances, topology.AnalyzeOptions{}); len(problems) != 0 {
		t.Errorf("problems on a healthy simulated cluster: %+v", problems)
	}

	// Kill: the primary is unreachable and every replica lost it.
	if _, err := f.Kill(pk.Port); err != nil {
		t.Fatal(err)
	}
	if _, err := in.Inspect(ctx, pk); dbpilot.ErrorCode(err) != dbpilot.EUNAVAIL {
		t.Errorf("dead primary inspected: %v", err)
	}
	var replicas []*dbpilot.Instance
	for _, m := range c.Members[1:] {
		r, err := in.Inspect(ctx, dbpilot.InstanceKey{Host: "127.0.0.1", Port: m.Port})
		if err != nil {
			t.Fatal(err)
		}
		if ch := r.Channel(pk); ch == nil || ch.IORunning != dbpilot.IOConnecting || ch.LastIOErrno != 2003 {
			t.Errorf("replica %d after the kill: channel %+v", m.Port, ch)
		}
		replicas = append(replicas, r)
	}
	if v := topology.AssessPrimary(&dbpilot.Instance{Key: pk}, replicas); v.State != dbpilot.ClusterDead {
		t.Errorf("verdict %s: %s", v.State, v.Reason)
	}

	// Revive: back to healthy.
	if _, err := f.Revive(pk.Port); err != nil {
		t.Fatal(err)
	}
	if _, err := in.Inspect(ctx, pk); err != nil {
		t.Errorf("revived primary: %v", err)
	}
	r, err := in.Inspect(ctx, dbpilot.InstanceKey{Host: "127.0.0.1", Port: c.Members[1].Port})
	if err != nil || r.Channel(pk).IORunning != dbpilot.IORunning {
		t.Errorf("replica after revive: %v", err)
	}
}

// TestLivenessSeesKill: serve's liveness session (a SLEEP) fails at once
// when the instance is killed.
func TestLivenessSeesKill(t *testing.T) {
	f := startFleet(t, 1, 1)
	in := f.Clusters()[0].Members[0]
	lv := &mysql.Liveness{Options: mysql.Options{Credentials: mysql.Credentials{User: "x"}}}
	connected := make(chan struct{})
	errc := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		errc <- lv.Hold(ctx, dbpilot.InstanceKey{Host: "127.0.0.1", Port: in.Port}, func() { close(connected) })
	}()
	select {
	case <-connected:
	case <-time.After(10 * time.Second):
		t.Fatal("liveness session did not connect")
	}
	testutil.WaitFor(t, 10*time.Second, "the liveness session's statement running", func() (bool, string) {
		return in.sleepers.Load() > 0, ""
	})
	killed, _ := f.Kill(in.Port)
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("Hold returned no error after the kill")
		}
		// At once, from the closed connection, not after a probe's
		// timeout (seconds); 1 s leaves room for a loaded machine.
		if d := time.Since(killed); d > time.Second {
			t.Errorf("liveness saw the kill after %s", d)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("liveness session did not notice the kill")
	}
}

// TestCollectors runs every collector serve runs on a simulated primary and
// replica: none fails, and the heartbeat lag of a healthy replica is 0.
func TestCollectors(t *testing.T) {
	f := startFleet(t, 2, 2)
	c := f.Clusters()[0]
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	version, _ := dbpilot.ParseVersion(serverVersion)
	for _, role := range []string{"primary", "replica"} {
		m := c.Members[0]
		if role == "replica" {
			m = c.Members[1]
		}
		key := dbpilot.InstanceKey{Host: "127.0.0.1", Port: m.Port}
		db, err := mysql.Open(ctx, key, mysql.Options{Credentials: mysql.Credentials{User: "x"}})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		target := dbpilot.MonitorTarget{Key: key, Flavor: dbpilot.FlavorMariaDB, Version: version, Role: role,
			ServerID: m.ServerID, PrimaryServerID: c.Members[0].ServerID}
		// The statements collector (performance_schema on) runs twice: its
		// series come from what ran between two reads.
		cols := append(daemon.Collectors(), collector.NewStatements(collector.StatementsOptions{}))
		for _, col := range cols {
			samples, err := col.Collect(ctx, db, target)
			if col.Name() == "statements" {
				time.Sleep(1100 * time.Millisecond)
				samples, err = col.Collect(ctx, db, target)
				src := ""
				calls := 0
				for _, s := range samples {
					if s.Name == collector.MetricQuerySource && s.Value == 1 {
						src = s.Labels[0].Value
					}
					if s.Name == collector.MetricQueryCalls {
						calls++
					}
				}
				if src != string(dbpilot.QuerySourcePerformanceSchema) || calls == 0 {
					t.Errorf("statements on the %s: source %q, %d digests with calls: %v", role, src, calls, samples)
				}
			}
			if err != nil {
				t.Errorf("%s on the %s: %v", col.Name(), role, err)
			}
			if col.Name() == "heartbeat" && role == "replica" {
				found := false
				for _, s := range samples {
					if s.Name == "dbpilot_heartbeat_lag_seconds" {
						found = true
						if s.Value != 0 {
							t.Errorf("replica heartbeat lag %v, want 0", s.Value)
						}
					}
				}
				if !found {
					t.Errorf("no heartbeat lag on the replica: %v", samples)
				}
			}
			if len(samples) == 0 && col.Name() != "galera" {
				t.Errorf("%s on the %s: no samples", col.Name(), role)
			}
		}
	}
	if u := f.Stats().Unknown; len(u) != 0 {
		t.Errorf("statements the simulator does not know: %v", u)
	}
}

// TestControlAndConfig: the HTTP control endpoint kills and revives, and
// the written configuration is one serve loads.
func TestControlAndConfig(t *testing.T) {
	f := startFleet(t, 7, 5)
	srv := httptest.NewServer(f.Handler())
	defer srv.Close()
	var info []ClusterInfo
	resp, err := http.Get(srv.URL + "/clusters")
	if err != nil {
		t.Fatal(err)
	}
	json.NewDecoder(resp.Body).Decode(&info)
	resp.Body.Close()
	if len(info) != 2 || len(info[0].Replicas) != 4 || len(info[1].Replicas) != 1 || info[0].Replicas[0].Source != info[0].Primary.Key {
		t.Fatalf("clusters: %+v", info)
	}
	port := info[0].Primary.Port
	for _, step := range []struct {
		path  string
		alive bool
	}{{"/kill", false}, {"/revive", true}} {
		resp, err := http.Post(srv.URL+step.path+"?port="+strconv.Itoa(port), "", nil)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %v %v", step.path, err, resp)
		}
		resp.Body.Close()
		if got := f.Instance(port).alive.Load(); got != step.alive {
			t.Errorf("after %s alive=%v", step.path, got)
		}
	}
	if resp, _ := http.Post(srv.URL+"/kill?port=1", "", nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("kill of an unknown port: %d", resp.StatusCode)
	}

	dir := t.TempDir()
	path := filepath.Join(dir, "serve.yaml")
	var b bytes.Buffer
	if err := f.WriteConfig(&b, ConfigOptions{Listen: "127.0.0.1:0", State: filepath.Join(dir, "state.db")}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := daemon.LoadConfig(path)
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if len(cfg.Clusters) != 2 || cfg.Clusters[1].Seeds[0] != info[1].Primary.Key || cfg.Clusters[0].AutoFailover {
		t.Errorf("config clusters: %+v", cfg.Clusters)
	}
}

func TestLikeMatch(t *testing.T) {
	for _, c := range []struct {
		pat, s string
		want   bool
	}{
		{`rpl\_semi\_sync\_%`, "rpl_semi_sync_master_status", true},
		{`rpl\_semi\_sync\_%`, "rplxsemi_sync_master_status", false},
		{"wsrep%", "wsrep_ready", true},
		{"wsrep%", "xwsrep", false},
		{"rpl_semi_sync%", "rpl_semi_sync_slave_enabled", true},
		{"rpl_semi_sync_%enabled", "rpl_semi_sync_master_enabled", true},
		{"rpl_semi_sync_%enabled", "rpl_semi_sync_master_timeout", false},
		{"uptime", "uptime", true},
		{"up_ime", "uptime", true},
	} {
		if got := likeMatch(c.pat, c.s); got != c.want {
			t.Errorf("likeMatch(%q, %q) = %v", c.pat, c.s, got)
		}
	}
}

func TestTemplates(t *testing.T) {
	tm := loadTemplates()
	if len(tm.status) < 400 || len(tm.variables) < 500 || len(tm.replicaCols) < 50 || len(tm.innodbMetrics.rows) < 50 {
		t.Fatalf("templates: %d status, %d variables, %d replica columns, %d innodb metrics",
			len(tm.status), len(tm.variables), len(tm.replicaCols), len(tm.innodbMetrics.rows))
	}
	for name := range statusDynamics {
		found := false
		for _, nv := range tm.status {
			found = found || nv.lower == name
		}
		if !found {
			t.Errorf("moving status variable %s is not in the recording", name)
		}
	}
	for name := range instanceVariables {
		if _, ok := tm.variable(name); !ok {
			t.Errorf("instance variable %s is not in the recording", name)
		}
	}
}

func TestMain(m *testing.M) {
	mysql.SilenceDriverLog() // killed instances reset connections on purpose
	os.Exit(m.Run())
}

// TestMultiStatements: several statements in one query (as an inspection
// sends them) get one result each, in order; the first that fails ends
// the query with its error.
func TestMultiStatements(t *testing.T) {
	f := startFleet(t, 2, 2)
	m := f.Clusters()[0].Members[1]
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	db, err := mysql.Open(ctx, dbpilot.InstanceKey{Host: "127.0.0.1", Port: m.Port}, mysql.Options{Credentials: mysql.Credentials{User: "x"}, MultiStatements: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := db.QueryMulti(ctx, "SELECT @@global.server_id, @@global.read_only", "SHOW GLOBAL STATUS WHERE Variable_name IN ('Uptime', 'Slaves_connected')", "SHOW ALL SLAVES STATUS", "SELECT 1")
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 4 || *res[0].Values[0][0] != strconv.FormatUint(uint64(m.ServerID), 10) || len(res[1].NameValues()) != 2 ||
		len(res[2].Values) != 1 || res[2].Maps()[0]["Slave_IO_Running"] != "Yes" || *res[3].Values[0][0] != "1" {
		t.Errorf("results: %+v", res)
	}
	// A statement under SET STATEMENT ... FOR is answered as itself.
	if r, err := db.Query(ctx, "SET STATEMENT max_statement_time=0.800 FOR SHOW GLOBAL STATUS WHERE Variable_name IN ('Uptime')"); err != nil || len(r.NameValues()) != 1 {
		t.Errorf("SET STATEMENT ... FOR: %v %v", r, err)
	}
	if _, err := db.QueryMulti(ctx, "SELECT 1", "SELECT @@global.no_such_variable", "SELECT 3"); mysql.ServerErrorNumber(err) != 1193 {
		t.Errorf("an unknown variable second: %v, want error 1193", err)
	}
	if u := f.Stats().Unknown; len(u) != 0 {
		t.Errorf("statements the simulator does not know: %v", u)
	}
	for _, tt := range []struct {
		q    string
		want []string
	}{
		{"SELECT 1", []string{"SELECT 1"}},
		{"SELECT 1; SELECT 2;", []string{"SELECT 1", "SELECT 2"}},
		{"SELECT 'a;b'; SHOW GLOBAL VARIABLES LIKE 'x\\';y'", []string{"SELECT 'a;b'", "SHOW GLOBAL VARIABLES LIKE 'x\\';y'"}},
	} {
		if got := splitStatements(tt.q); !slices.Equal(got, tt.want) {
			t.Errorf("splitStatements(%q) = %q, want %q", tt.q, got, tt.want)
		}
	}
}
