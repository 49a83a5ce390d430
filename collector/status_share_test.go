package collector

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
)

// TestStatusShare: every global_status run, the every-second one too,
// keeps in the share what inspections and semisync read of the status
// (mysql.InspectStatusNames and the semi-sync variables; lower-cased
// names, from the recorded SHOW GLOBAL STATUS) and when it was read, by
// normalized instance key; the every-second statement reads those
// variables without writing the ones outside its set.
func TestStatusShare(t *testing.T) {
	rows := gsFixture(t, "status/mariadb-10.11.txt")
	for n := range statusShareNames {
		if !strings.Contains(gsHotQuery, "'"+n+"'") {
			t.Errorf("the every-second statement does not read %s", n)
		}
	}
	for _, n := range mysql.InspectStatusNames() {
		if !statusShareNames[n] {
			t.Errorf("the share does not keep %s, which inspections read", n)
		}
	}
	q := &gsFakeQuerier{results: map[string]*mysql.Rows{gsQuery: rows, gsHotQuery: rows}}
	share := NewStatusShare()
	c := NewGlobalStatus().(*globalStatus)
	c.SetStatusShare(share)
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	c.now = func() time.Time { return now }
	key := dbpilot.InstanceKey{Host: "localhost", Port: 3306}
	if st, at := share.SharedStatus(key); st != nil || !at.IsZero() {
		t.Fatalf("empty share: %v at %v", st, at)
	}
	want := rows.NameValues()
	for run := range 2 { // the full run, then the every-second one
		samples, err := c.Collect(context.Background(), q, Target{Key: key, Flavor: dbpilot.FlavorMariaDB})
		if err != nil {
			t.Fatal(err)
		}
		st, at := share.SharedStatus(dbpilot.InstanceKey{Host: "127.0.0.1", Port: 3306})
		if !at.Equal(now) {
			t.Errorf("run %d: read at %v, want %v", run, at, now)
		}
		if st["uptime"] == "" || st["slaves_connected"] != want["slaves_connected"] || st["rpl_semi_sync_master_status"] != want["rpl_semi_sync_master_status"] {
			t.Errorf("run %d: shared %v", run, st)
		}
		for n := range st {
			if want[n] != st[n] || !statusShareNames[n] {
				t.Errorf("run %d: shared %s=%q (recorded %q)", run, n, st[n], want[n])
			}
		}
		if run == 1 {
			for _, s := range samples {
				if s.Name == "mysql_global_status_slaves_connected" {
					t.Error("slaves_connected written by the every-second run: it is read for the share only")
				}
			}
		}
		now = now.Add(time.Second)
	}
}

// TestSemiSyncSharedStatus: with global_status's read in the share,
// semisync reads only the variables (SHOW GLOBAL VARIABLES LIKE) and
// writes what its own status and variables read wrote; a share too old,
// or empty, sends it back to its own read.
func TestSemiSyncSharedStatus(t *testing.T) {
	for _, tc := range []struct {
		file   string
		flavor dbpilot.Flavor
	}{
		{"semisync/mariadb-10.11-primary.txt", dbpilot.FlavorMariaDB},
		{"semisync/mariadb-10.11-replica.txt", dbpilot.FlavorMariaDB},
		{"semisync/mariadb-10.11-fell-back.txt", dbpilot.FlavorMariaDB},
		{"semisync/mysql-8.4-primary.txt", dbpilot.FlavorMySQL},
		{"semisync/mysql-8.0-fell-back.txt", dbpilot.FlavorMySQL},
	} {
		t.Run(tc.file, func(t *testing.T) {
			union := gsFixture(t, tc.file)
			key := dbpilot.InstanceKey{Host: "127.0.0.1", Port: 3306}
			target := Target{Key: key, Flavor: tc.flavor}
			want, err := NewSemiSync().Collect(context.Background(), &gsFakeQuerier{results: map[string]*mysql.Rows{ssQuery(tc.flavor): union}}, target)
			if err != nil {
				t.Fatal(err)
			}
			// The same values as global_status and SHOW VARIABLES read them:
			// name, value; status names in the server's case.
			status := gsRows([]string{"Variable_name", "Value"}, []string{"Uptime", "1000"})
			vars := gsRows([]string{"Variable_name", "Value"})
			for _, row := range union.Values {
				kind, name, value := *row[0], *row[1], *row[2]
				if kind == "status" {
					status.Values = append(status.Values, gsRows(nil, []string{"R" + strings.ToLower(name[1:]), value}).Values[0])
				} else {
					vars.Values = append(vars.Values, gsRows(nil, []string{strings.ToLower(name), value}).Values[0])
				}
			}
			share := NewStatusShare()
			share.put(key, status, time.Now())
			c := NewSemiSync().(*semiSync)
			c.SetStatusShare(share)
			q := &gsFakeQuerier{results: map[string]*mysql.Rows{ssVariablesQuery: vars}}
			got, err := c.Collect(context.Background(), q, target)
			if err != nil {
				t.Fatal(err)
			}
			if len(q.queries) != 1 || q.queries[0] != ssVariablesQuery {
				t.Errorf("queries with a shared status: %q", q.queries)
			}
			g, w := gsIndex(t, got), gsIndex(t, want)
			if len(g) != len(w) {
				t.Errorf("%d series from the shared status, %d from its own read", len(g), len(w))
			}
			for k, s := range w {
				if g[k].Value != s.Value || g[k].Type != s.Type {
					t.Errorf("%s: %+v from the shared status, %+v from its own read", k, g[k], s)
				}
			}

			share.put(key, status, time.Now().Add(-2*ssShareAge))
			q = &gsFakeQuerier{results: map[string]*mysql.Rows{ssQuery(tc.flavor): union}}
			if _, err := c.Collect(context.Background(), q, target); err != nil || len(q.queries) != 1 || q.queries[0] != ssQuery(tc.flavor) {
				t.Errorf("with a shared status too old: queries %q, %v; want its own read", q.queries, err)
			}
		})
	}
}

// TestSemiSyncFromObservation: on MariaDB, with global_status's read
// shared and discovery's observation, semisync writes what its own read
// wrote, reading its other variables once a minute only; elsewhere, or
// with the share too old, it reads as always.
func TestSemiSyncFromObservation(t *testing.T) {
	version := dbpilot.Version{Major: 10, Minor: 11, Patch: 19}
	for _, file := range []string{"semisync/mariadb-10.11-primary.txt", "semisync/mariadb-10.11-replica.txt", "semisync/mariadb-10.11-fell-back.txt"} {
		t.Run(file, func(t *testing.T) {
			union := gsFixture(t, file)
			key := dbpilot.InstanceKey{Host: "127.0.0.1", Port: 3306}
			target := Target{Key: key, Flavor: dbpilot.FlavorMariaDB}
			want, err := NewSemiSync().Collect(context.Background(), &gsFakeQuerier{results: map[string]*mysql.Rows{ssQuery(dbpilot.FlavorMariaDB): union}}, target)
			if err != nil {
				t.Fatal(err)
			}
			status := gsRows([]string{"Variable_name", "Value"})
			vars := gsRows([]string{"Variable_name", "Value"})
			kv := map[string]string{}
			for _, row := range union.Values {
				kind, name, value := *row[0], strings.ToLower(*row[1]), *row[2]
				if kind == "status" {
					status.Values = append(status.Values, gsRows(nil, []string{name, value}).Values[0])
				} else {
					vars.Values = append(vars.Values, gsRows(nil, []string{name, value}).Values[0])
					kv[name] = value
				}
			}
			timeout, _ := strconv.Atoi(kv["rpl_semi_sync_master_timeout"])
			obs := &dbpilot.Instance{Key: key, Reachable: true, Flavor: dbpilot.FlavorMariaDB, Version: version, SemiSync: dbpilot.SemiSyncState{
				PrimaryEnabled: kv["rpl_semi_sync_master_enabled"] == "ON", ReplicaEnabled: kv["rpl_semi_sync_slave_enabled"] == "ON",
				PrimaryTimeout: time.Duration(timeout) * time.Millisecond}}
			share := NewStatusShare()
			share.put(key, status, time.Now())
			c := NewSemiSync().(*semiSync)
			c.SetStatusShare(share)
			q := &gsFakeQuerier{results: map[string]*mysql.Rows{ssVariablesQuery: vars}}
			for run := range 3 {
				got, err := c.FromObservation(context.Background(), q, target, obs)
				if err != nil {
					t.Fatal(err)
				}
				g, w := gsIndex(t, got), gsIndex(t, want)
				if len(g) != len(w) {
					t.Errorf("run %d: %d series from the observation, %d from its own read", run, len(g), len(w))
				}
				for k, s := range w {
					if g[k].Value != s.Value || g[k].Type != s.Type {
						t.Errorf("run %d: %s: %+v from the observation, %+v from its own read", run, k, g[k], s)
					}
				}
			}
			if len(q.queries) != 1 || q.queries[0] != ssVariablesQuery {
				t.Errorf("queries over 3 runs: %q, want the variables once", q.queries)
			}
			// The observation's flags win over the variables read a minute ago.
			off := *obs
			off.SemiSync.PrimaryEnabled = false
			got, err := c.FromObservation(context.Background(), q, target, &off)
			if err != nil {
				t.Fatal(err)
			}
			if s, ok := gsIndex(t, got)["dbpilot_semisync_primary_enabled"]; !ok || s.Value != 0 {
				t.Errorf("primary disabled since the variables were read: %+v", s)
			}

			share.put(key, status, time.Now().Add(-2*ssShareAge))
			q = &gsFakeQuerier{results: map[string]*mysql.Rows{ssQuery(dbpilot.FlavorMariaDB): union}}
			if _, err := c.FromObservation(context.Background(), q, target, obs); err != nil || len(q.queries) != 1 || q.queries[0] != ssQuery(dbpilot.FlavorMariaDB) {
				t.Errorf("with the shared status too old: queries %q, %v; want its own read", q.queries, err)
			}
		})
	}
	// MySQL (semi-sync a plugin that may be absent): as Collect, the
	// variables read every run.
	share := NewStatusShare()
	key := dbpilot.InstanceKey{Host: "127.0.0.1", Port: 3306}
	share.put(key, gsRows([]string{"Variable_name", "Value"}, []string{"Uptime", "1"}), time.Now())
	c := NewSemiSync().(*semiSync)
	c.SetStatusShare(share)
	q := &gsFakeQuerier{results: map[string]*mysql.Rows{ssVariablesQuery: gsRows([]string{"Variable_name", "Value"})}}
	obs := &dbpilot.Instance{Key: key, Reachable: true, Flavor: dbpilot.FlavorMySQL, Version: dbpilot.Version{Major: 8, Minor: 4}}
	for range 2 {
		if _, err := c.FromObservation(context.Background(), q, Target{Key: key, Flavor: dbpilot.FlavorMySQL}, obs); err != nil {
			t.Fatal(err)
		}
	}
	if len(q.queries) != 2 {
		t.Errorf("MySQL: queries %q; want the variables every run", q.queries)
	}
}

// TestInnoDBAndBinlogSharedStatus: with global_status's read in the share,
// innodb and binlog write what their own status reads wrote without
// sending them; a share too old sends them back to their reads.
func TestInnoDBAndBinlogSharedStatus(t *testing.T) {
	key := dbpilot.InstanceKey{Host: "127.0.0.1", Port: 3306}
	target := Target{Key: key, Flavor: dbpilot.FlavorMariaDB}
	status := gsRows([]string{"Variable_name", "Value"},
		[]string{"Innodb_buffer_pool_pages_dirty", "5"}, []string{"Innodb_buffer_pool_pages_total", "10"},
		[]string{"Innodb_buffer_pool_read_requests", "1000"}, []string{"Innodb_buffer_pool_reads", "10"},
		[]string{"Binlog_commits", "34"}, []string{"Binlog_group_commits", "14"})
	own := func() map[string]*mysql.Rows {
		return map[string]*mysql.Rows{innoGlobalStatusSQL: status, blCommitsQuery: status, blLogsQuery: gsFixture(t, "binlog/mariadb-10.11-binary-logs.txt")}
	}
	share := NewStatusShare()
	share.put(key, status, time.Now())
	for _, mk := range []func() Collector{NewInnoDB, NewBinlog} {
		want, shared := mk(), mk()
		shared.(interface{ SetStatusShare(*StatusShare) }).SetStatusShare(share)
		for run := range 2 { // binlog's ratio needs a previous reading
			q := &rhiStubQuerier{rows: own()}
			w, err := want.Collect(context.Background(), q, target)
			if err != nil {
				t.Fatal(err)
			}
			sq := &recordingQuerier{q: &rhiStubQuerier{rows: own()}}
			g, err := shared.Collect(context.Background(), sq, target)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := rhiFormat(g), rhiFormat(w); got != want || got == "" {
				t.Errorf("%s run %d: from the share\n%s\nfrom its own read\n%s", want, run, got, want)
			}
			for _, q := range sq.queries {
				if strings.HasPrefix(q, "SHOW GLOBAL STATUS") {
					t.Errorf("%s: status read although shared: %q", shared.Name(), q)
				}
			}
		}
	}
	share.put(key, status, time.Now().Add(-2*sharedStatusAge))
	c := NewBinlog()
	c.(interface{ SetStatusShare(*StatusShare) }).SetStatusShare(share)
	sq := &recordingQuerier{q: &rhiStubQuerier{rows: own()}}
	if _, err := c.Collect(context.Background(), sq, target); err != nil || !slices.Contains(sq.queries, blCommitsQuery) {
		t.Errorf("with the share too old: queries %q, %v; want its own status read", sq.queries, err)
	}
}

// recordingQuerier records the queries it passes on.
type recordingQuerier struct {
	q       Querier
	queries []string
}

func (r *recordingQuerier) Query(ctx context.Context, q string, args ...any) (*mysql.Rows, error) {
	r.queries = append(r.queries, q)
	return r.q.Query(ctx, q, args...)
}

func (r *recordingQuerier) Exec(ctx context.Context, stmts ...string) error {
	return r.q.Exec(ctx, stmts...)
}

// TestSemiSyncBetweenObservations: a run with no new observation takes the
// last one while it is at most ssShareAge old (no statement once the
// variables are read); with the shared status too old it reads its own.
func TestSemiSyncBetweenObservations(t *testing.T) {
	key := dbpilot.InstanceKey{Host: "127.0.0.1", Port: 3306}
	target := Target{Key: key, Flavor: dbpilot.FlavorMariaDB}
	union := gsFixture(t, "semisync/mariadb-10.11-primary.txt")
	status := gsRows([]string{"Variable_name", "Value"}, []string{"Rpl_semi_sync_master_status", "ON"}, []string{"Rpl_semi_sync_master_clients", "2"})
	share := NewStatusShare()
	share.put(key, status, time.Now())
	c := NewSemiSync().(*semiSync)
	c.SetStatusShare(share)
	obs := &dbpilot.Instance{Key: key, Reachable: true, Flavor: dbpilot.FlavorMariaDB, Version: dbpilot.Version{Major: 10, Minor: 11},
		ObservedAt: time.Now(), SemiSync: dbpilot.SemiSyncState{PrimaryEnabled: true, PrimaryTimeout: 10 * time.Second}}
	q := &gsFakeQuerier{results: map[string]*mysql.Rows{ssVariablesQuery: gsRows([]string{"Variable_name", "Value"}), ssQuery(dbpilot.FlavorMariaDB): union}}
	if _, err := c.FromObservation(context.Background(), q, target, obs); err != nil {
		t.Fatal(err)
	}
	got, err := c.Collect(context.Background(), q, target)
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := gsIndex(t, got)["dbpilot_semisync_primary_clients"]; !ok || s.Value != 2 || len(q.queries) != 1 {
		t.Errorf("between observations: clients %+v, queries %q; want 2 from the share and the variables read once", s, q.queries)
	}
	share.put(key, status, time.Now().Add(-2*ssShareAge))
	if _, err := c.Collect(context.Background(), q, target); err != nil || q.queries[len(q.queries)-1] != ssQuery(dbpilot.FlavorMariaDB) {
		t.Errorf("shared status too old: queries %q, %v; want its own read", q.queries, err)
	}
}

// TestInnoDBRedoVariablesCached: the redo log size variables are read on
// the first run and again after innoRedoEvery, not every run.
func TestInnoDBRedoVariablesCached(t *testing.T) {
	c := NewInnoDB().(*innodb)
	key := dbpilot.InstanceKey{Host: "127.0.0.1", Port: 3306}
	q := &recordingQuerier{q: &rhiStubQuerier{rows: map[string]*mysql.Rows{}}}
	count := func() int {
		n := 0
		for _, s := range q.queries {
			if s == RedoLogVariablesSQL {
				n++
			}
		}
		return n
	}
	for range 3 {
		if _, err := c.Collect(context.Background(), q, Target{Key: key, Flavor: dbpilot.FlavorMariaDB}); err != nil {
			t.Fatal(err)
		}
	}
	if n := count(); n != 1 {
		t.Errorf("redo variables read %d times in 3 runs, want 1", n)
	}
	c.mu.Lock()
	r := c.redo[key.Normalized()]
	r.at = r.at.Add(-innoRedoEvery)
	c.redo[key.Normalized()] = r
	c.mu.Unlock()
	if _, err := c.Collect(context.Background(), q, Target{Key: key, Flavor: dbpilot.FlavorMariaDB}); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 2 {
		t.Errorf("redo variables read %d times after a minute, want 2", n)
	}
}
