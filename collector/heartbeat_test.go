package collector

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
)

func TestHBParseMicros(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1795254480.166758", 1795254480166758, true},
		{"1795254480.1", 1795254480100000, true},
		{"1795254480", 1795254480000000, true},
		{" 0.000001 ", 1, true},
		{"", 0, false},
		{".5", 0, false},
		{"1.1234567", 0, false},
		{"-1.5", 0, false},
		{"1.-5", 0, false},
		{"1e9", 0, false},
		{"9999999999999.0", 0, false},
	}
	for _, tt := range tests {
		got, ok := hbParseMicros(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("hbParseMicros(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func hbRows(rows ...[3]string) *mysql.Rows {
	r := &mysql.Rows{Columns: []string{"server_id", "UNIX_TIMESTAMP(ts)", "UNIX_TIMESTAMP(NOW(6))"}}
	for _, row := range rows {
		vals := make([]*string, 3)
		for i := range row {
			v := row[i]
			vals[i] = &v
		}
		r.Values = append(r.Values, vals)
	}
	return r
}

// TestHBSamplesWithoutBook: with nothing noted of the primary (not
// monitored by this serve, or unknown) the lag is the age of the primary's
// row in the replica's clock, as pt-heartbeat measures it.
func TestHBSamplesWithoutBook(t *testing.T) {
	rows := hbParseRows(hbRows(
		[3]string{"1", "1000.000000", "1010.500000"}, // old primary, stale
		[3]string{"2", "1009.750000", "1010.500000"}, // current primary
		[3]string{"3", "1011.000000", "1010.500000"}, // clock ahead of ours
	))
	book := &hbBook{w: map[dbpilot.InstanceKey]*hbWriter{}}
	lag := func(primary uint32) string {
		tg := Target{Key: dbpilot.InstanceKey{Host: "r", Port: 1}, ServerID: 9, PrimaryServerID: primary, PrimaryKey: dbpilot.InstanceKey{Host: "p", Port: 1}}
		var out []dbpilot.Sample
		for _, s := range hbSamples(rows, tg, book, time.Unix(0, 0)) {
			if s.Name == "dbpilot_heartbeat_lag_seconds" || s.Name == "dbpilot_heartbeat_age_seconds" {
				out = append(out, s)
			}
		}
		return rhiFormat(out)
	}
	if got := lag(2); got != "dbpilot_heartbeat_lag_seconds 0.75\ndbpilot_heartbeat_age_seconds 0.75\n" {
		t.Errorf("primary 2: %q", got)
	}
	if got := lag(1); got != "dbpilot_heartbeat_lag_seconds 10.5\ndbpilot_heartbeat_age_seconds 10.5\n" {
		t.Errorf("primary 1: %q", got)
	}
	if got := lag(0); got != "dbpilot_heartbeat_lag_seconds 0\ndbpilot_heartbeat_age_seconds 0\n" {
		t.Errorf("unknown primary: newest row, skew clamped: %q", got)
	}
	if got := lag(9); got != "" {
		t.Errorf("primary without a row: %q, want no lag", got)
	}
	if n := len(hbParseRows(hbRows([3]string{"1", "x", "1"}, [3]string{"x", "1", "1"}))); n != 0 {
		t.Errorf("malformed rows gave %d rows", n)
	}
}

// hbSim is a primary and a replica as one serve's heartbeat collector sees
// them, on a clock the test moves.
type hbSim struct {
	t      *testing.T
	hb     *heartbeat
	now    time.Time // serve's clock
	p, r   *rhiStubQuerier
	pt, rt Target
}

func newHBSim(t *testing.T, flavor dbpilot.Flavor, primaryRole string) *hbSim {
	t.Helper()
	ident := &mysql.Rows{Columns: []string{"a", "b"}, Values: [][]*string{{rhiPtr("2"), rhiPtr("0")}}}
	if flavor == dbpilot.FlavorMySQL {
		ident.Values[0][1] = nil
	}
	s := &hbSim{t: t, hb: NewHeartbeat().(*heartbeat), now: time.Unix(1795254000, 0),
		p: &rhiStubQuerier{rows: map[string]*mysql.Rows{hbIdentMariaSQL: ident, hbIdentMySQLSQL: ident}},
		r: &rhiStubQuerier{rows: map[string]*mysql.Rows{}}}
	s.hb.clock = func() time.Time { return s.now }
	pk := dbpilot.InstanceKey{Host: "10.0.0.2", Port: 3306}
	s.pt = Target{Key: pk, Flavor: flavor, Role: primaryRole, ServerID: 2, PrimaryServerID: 2, PrimaryKey: pk}
	s.rt = Target{Key: dbpilot.InstanceKey{Host: "10.0.0.3", Port: 3306}, Flavor: flavor, Role: "replica", ServerID: 3, PrimaryServerID: 2, PrimaryKey: pk}
	return s
}

// at sets serve's clock to base+d seconds.
func (s *hbSim) at(d float64) {
	s.now = time.Unix(1795254000, 0).Add(time.Duration(math.Round(d * float64(time.Second))))
}

// primary runs the collector on the primary, whose row reads ts with NOW(6)
// now (seconds).
func (s *hbSim) primary(ts, now string) {
	s.t.Helper()
	s.p.rows[hbReadSQL] = hbRows([3]string{"2", ts, now})
	if _, err := s.hb.Collect(context.Background(), s.p, s.pt); err != nil {
		s.t.Fatalf("primary: %v", err)
	}
}

// replica runs the collector on the replica over rows and returns its lag
// and age.
func (s *hbSim) replica(rows ...[3]string) (lag, age string) {
	s.t.Helper()
	s.r.rows[hbReadSQL] = hbRows(rows...)
	samples, err := s.hb.Collect(context.Background(), s.r, s.rt)
	if err != nil {
		s.t.Fatalf("replica: %v", err)
	}
	lag, age = "none", "none"
	for _, x := range samples {
		v := strconv.FormatFloat(x.Value, 'f', -1, 64)
		switch x.Name {
		case "dbpilot_heartbeat_lag_seconds":
			lag = v
		case "dbpilot_heartbeat_age_seconds":
			age = v
		}
	}
	return lag, age
}

// TestHeartbeatLagCaughtUp: an idle replica that holds the primary's newest
// heartbeat reads 0 wherever it is read between two writes (its age reads
// up to the write interval); read just after a write it has not applied
// yet, it reads the time since that write. Both flavors: MariaDB writes its
// gtid_domain_id, MySQL NULL.
func TestHeartbeatLagCaughtUp(t *testing.T) {
	for _, tc := range []struct {
		flavor dbpilot.Flavor
		domain string
	}{{dbpilot.FlavorMariaDB, "0"}, {dbpilot.FlavorMySQL, "NULL"}} {
		t.Run(string(tc.flavor), func(t *testing.T) {
			s := newHBSim(t, tc.flavor, "primary")
			s.at(0)
			s.primary("100.000000", "100.001000")
			if want := "REPLACE INTO dbpilot.heartbeat (server_id, ts, gtid_domain_id) VALUES (2, NOW(6), " + tc.domain + ")"; len(s.p.execs) != 3 || s.p.execs[2] != want {
				t.Fatalf("primary execs %q, want the write %q", s.p.execs, want)
			}
			for _, d := range []float64{0.1, 0.5, 0.9, 0.999} {
				s.at(d)
				now := strconv.FormatFloat(100+d, 'f', 6, 64)
				if lag, age := s.replica([3]string{"2", "100.000000", now}); lag != "0" || age != strconv.FormatFloat(d, 'f', -1, 64) {
					t.Errorf("%.3f s after the write: lag %s age %s, want 0 and %v", d, lag, age, d)
				}
			}
			// The primary writes 101.000000, committed by its read 1 ms
			// later; the replica, read 3 ms after that, has not applied it
			// yet: lag since the commit, not since the statement's start.
			s.at(1)
			s.primary("101.000000", "101.001000")
			s.at(1.003)
			if lag, _ := s.replica([3]string{"2", "100.000000", "101.004000"}); lag != "0.003" {
				t.Errorf("write not applied yet: lag %s, want 0.003 (since the commit)", lag)
			}
			s.at(1.005)
			if lag, _ := s.replica([3]string{"2", "101.000000", "101.006000"}); lag != "0" {
				t.Errorf("write applied: lag %s, want 0", lag)
			}
			// The primary itself reads 0.
			s.at(1.5)
			s.p.rows[hbReadSQL] = hbRows([3]string{"2", "101.000000", "101.501000"})
			samples, err := s.hb.Collect(context.Background(), &rhiStubQuerier{rows: s.p.rows}, Target{Key: s.pt.Key, Flavor: tc.flavor, Role: "replica", ServerID: 2, PrimaryServerID: 2})
			if v, ok := hbSampleValue(samples, "dbpilot_heartbeat_lag_seconds"); err != nil || !ok || v != 0 {
				t.Errorf("primary's own lag %v (%v), %v; want 0", v, ok, err)
			}
		})
	}
}

func hbSampleValue(samples []dbpilot.Sample, name string) (float64, bool) {
	for _, s := range samples {
		if s.Name == name {
			return s.Value, true
		}
	}
	return 0, false
}

// TestHeartbeatLagBehind: the replica's SQL thread stopped after it applied
// the heartbeat of 105 s; the primary kept writing every second. The lag is
// the time since the first heartbeat the replica lacks (106 s), in the
// primary's clock: the replica's clock, 2 s ahead here, does not enter it
// (the age does).
func TestHeartbeatLagBehind(t *testing.T) {
	s := newHBSim(t, dbpilot.FlavorMariaDB, "primary")
	for i := 0; i <= 10; i++ {
		s.at(float64(i))
		s.primary(fmt.Sprintf("%d.000000", 100+i), fmt.Sprintf("%d.000000", 100+i))
	}
	s.at(11) // the primary's clock reads 111.000000
	if lag, age := s.replica([3]string{"2", "105.000000", "113.000000"}); lag != "5" || age != "8" {
		t.Errorf("behind: lag %s age %s, want 5 and 8", lag, age)
	}
	// Seen again 2 s later without a new primary read (its runner is slow
	// but not stale): the lag went on rising with serve's clock.
	s.at(13)
	if lag, _ := s.replica([3]string{"2", "105.000000", "115.000000"}); lag != "7" {
		t.Errorf("2 s later: lag %s, want 7", lag)
	}
	// Caught up again.
	s.at(13)
	s.primary("113.000000", "113.000500")
	s.at(13.2)
	if lag, _ := s.replica([3]string{"2", "113.000000", "115.200000"}); lag != "0" {
		t.Errorf("caught up: lag %s, want 0", lag)
	}
}

// TestHeartbeatLagPrimaryNotWriting: a primary that is read but not written
// (another serve leads it, or nobody does) leaves a caught-up replica at 0
// however old the row, while a replica that lacks its last heartbeat still
// shows a rising lag. A primary no longer read (dead, unreachable) for more
// than three of its read intervals makes the lag the age, which rises.
func TestHeartbeatLagPrimaryNotWriting(t *testing.T) {
	s := newHBSim(t, dbpilot.FlavorMariaDB, "primary-not-written")
	s.primary("99.000000", "99.500000")
	s.at(1)
	s.primary("100.000000", "100.500000") // the last heartbeat anyone wrote
	for i := 2; i <= 20; i++ {
		s.at(float64(i))
		s.primary("100.000000", fmt.Sprintf("%d.500000", 99+i))
	}
	if len(s.p.execs) != 0 {
		t.Fatalf("written on a primary not ours to write: %q", s.p.execs)
	}
	s.at(20.5)
	if lag, age := s.replica([3]string{"2", "100.000000", "120.000000"}); lag != "0" || age != "20" {
		t.Errorf("caught up, primary not writing: lag %s age %s, want 0 and 20", lag, age)
	}
	if lag, _ := s.replica([3]string{"2", "99.000000", "120.000000"}); lag != "20" {
		t.Errorf("lacking the last heartbeat: lag %s, want 20", lag)
	}
	// The primary is no longer read: fresh for 3 s, then the age.
	s.at(22.9)
	if lag, _ := s.replica([3]string{"2", "100.000000", "122.400000"}); lag != "0" {
		t.Errorf("2.9 s after the last read: lag %s, want 0", lag)
	}
	s.at(23.5)
	if lag, age := s.replica([3]string{"2", "100.000000", "123.000000"}); lag != "23" || age != "23" {
		t.Errorf("primary not read for 3.5 s: lag %s age %s, want the age 23", lag, age)
	}
}

// TestHeartbeatLagSeveralWriters: the replica's table holds the rows of an
// old primary (server 1), the current one (2, domain 0) and a ring member
// writing in its own domain (4); serve also monitors another cluster whose
// primary has server_id 2 too. Only the current primary's row, measured
// against what was noted of that very instance, gives the lag.
func TestHeartbeatLagSeveralWriters(t *testing.T) {
	s := newHBSim(t, dbpilot.FlavorMariaDB, "primary")
	other := Target{Key: dbpilot.InstanceKey{Host: "10.9.0.2", Port: 3306}, Flavor: dbpilot.FlavorMariaDB, Role: "replica", ServerID: 2, PrimaryServerID: 2}
	ring := Target{Key: dbpilot.InstanceKey{Host: "10.0.0.4", Port: 3306}, Flavor: dbpilot.FlavorMariaDB, Role: "replica", ServerID: 4, PrimaryServerID: 2}
	for i := 0; i <= 5; i++ {
		s.at(float64(i))
		s.primary(fmt.Sprintf("%d.000000", 100+i), fmt.Sprintf("%d.000000", 100+i))
		// The other cluster's server 2 and the ring member 4 write too,
		// with other clocks.
		for _, w := range []struct {
			tg Target
			ts int
		}{{other, 500 + i}, {ring, 300 + i}} {
			q := &rhiStubQuerier{rows: map[string]*mysql.Rows{hbReadSQL: hbRows([3]string{strconv.Itoa(int(w.tg.ServerID)), fmt.Sprintf("%d.000000", w.ts), fmt.Sprintf("%d.000000", w.ts)})}}
			if _, err := s.hb.Collect(context.Background(), q, w.tg); err != nil {
				t.Fatal(err)
			}
		}
	}
	rows := [][3]string{
		{"1", "50.000000", "105.500000"},  // old primary
		{"2", "103.000000", "105.500000"}, // current primary: 104 and 105 missing
		{"4", "305.000000", "105.500000"}, // ring member, caught up
	}
	s.at(5.5)
	if lag, age := s.replica(rows...); lag != "1.5" || age != "2.5" {
		t.Errorf("lag %s age %s, want 1.5 (since 104) and 2.5", lag, age)
	}
	// The instance noted under the primary's key now has another server_id
	// (a new server at the old address): nothing to compare, the age.
	s.rt.PrimaryServerID = 1
	if lag, age := s.replica(rows...); lag != "55.5" || age != "55.5" {
		t.Errorf("old primary's row: lag %s age %s, want the age 55.5", lag, age)
	}
}

// TestHBBookHistory: the book keeps the last hbHistory heartbeats; a row
// older than all of them reads the primary's now minus its ts; a row that
// goes back in time starts the history again.
func TestHBBookHistory(t *testing.T) {
	b := &hbBook{w: map[dbpilot.InstanceKey]*hbWriter{}}
	k := dbpilot.InstanceKey{Host: "p", Port: 1}
	base := time.Unix(0, 0)
	for i := range hbHistory + 100 {
		b.note(k, 2, int64(i)*1e6, int64(i)*1e6+1000, base.Add(time.Duration(i)*time.Second), false)
	}
	at := base.Add(time.Duration(hbHistory+99) * time.Second)
	if n := len(b.w[k].hist); n != hbHistory {
		t.Errorf("history holds %d, want %d", n, hbHistory)
	}
	if lag, ok := b.lag(k, 2, 10*1e6, at); !ok || lag != int64(hbHistory+89)*1e6+1000 {
		t.Errorf("older than the history: %d %v", lag, ok)
	}
	if lag, ok := b.lag(k, 2, 200*1e6, at); !ok || lag != int64(hbHistory+99-201)*1e6+1000 {
		t.Errorf("within the history: %d %v", lag, ok)
	}
	b.note(k, 2, 5*1e6, 5*1e6, at, false)
	if h := b.w[k].hist; len(h) != 1 || h[0].ts != 5*1e6 {
		t.Errorf("back in time: history %v", h)
	}
	b.forget(k)
	if _, ok := b.lag(k, 2, 5*1e6, at); ok {
		t.Error("lag of a forgotten writer")
	}
}

// TestHeartbeatWritesOnlyOnPrimary: any role but "primary" reads and never
// writes.
func TestHeartbeatWritesOnlyOnPrimary(t *testing.T) {
	dir := "testdata/heartbeat/mariadb-10.11/primary"
	base, _ := rhiLoadTarget(t, dir)
	for _, role := range []string{"replica", "intermediate", "standalone", "", "Primary", "ring-member"} {
		tg := base
		tg.Role = role
		q := &rhiReplay{dir: dir, run: 1}
		samples, err := NewHeartbeat().Collect(context.Background(), q, tg)
		if err != nil || len(q.execs) != 0 || len(samples) != 4 { // 2 per row, lag and age
			t.Errorf("role %q: execs %v, %d samples, err %v", role, q.execs, len(samples), err)
		}
	}
}

// TestHeartbeatTableDropped: a write that finds no table makes it again and
// retries once.
func TestHeartbeatTableDropped(t *testing.T) {
	stub := &rhiStubQuerier{rows: map[string]*mysql.Rows{
		hbIdentMySQLSQL: {Columns: []string{"@@global.server_id", "NULL"}, Values: [][]*string{{rhiPtr("7"), nil}}},
		hbReadSQL:       hbRows([3]string{"7", "1.0", "1.5"}),
	}}
	q := &hbFlakyQuerier{rhiStubQuerier: stub}
	tg := Target{Key: dbpilot.InstanceKey{Host: "h", Port: 1}, Flavor: dbpilot.FlavorMySQL, Role: "primary", PrimaryServerID: 7}
	hb := NewHeartbeat()
	if _, err := hb.Collect(context.Background(), q, tg); err != nil {
		t.Fatal(err)
	}
	write := "REPLACE INTO dbpilot.heartbeat (server_id, ts, gtid_domain_id) VALUES (7, NOW(6), NULL)"
	if got := strings.Join(stub.execs, "\n"); got != hbCreateDBSQL+"\n"+hbCreateTableSQL+"\n"+write {
		t.Fatalf("first run execs:\n%s", got)
	}
	// The table disappears on the same connection: the write fails once,
	// the table is made again and the write retried.
	stub.execs = nil
	q.failFirst, q.err = write, rhiFileError("ERROR 1146 (42S02): Table 'dbpilot.heartbeat' doesn't exist")
	samples, err := hb.Collect(context.Background(), q, tg)
	if err != nil || len(samples) != 4 {
		t.Fatalf("after drop: %d samples, %v", len(samples), err)
	}
	if got := strings.Join(stub.execs, "\n"); got != hbCreateDBSQL+"\n"+hbCreateTableSQL+"\n"+write || !q.failed {
		t.Fatalf("after drop execs:\n%s", got)
	}
}

// hbFlakyQuerier fails the first Exec of one statement, then lets it pass.
type hbFlakyQuerier struct {
	*rhiStubQuerier
	failFirst string
	err       error
	failed    bool
}

func (f *hbFlakyQuerier) Exec(ctx context.Context, stmts ...string) error {
	if len(stmts) == 1 && stmts[0] == f.failFirst && !f.failed {
		f.failed = true
		return f.err
	}
	return f.rhiStubQuerier.Exec(ctx, stmts...)
}

// TestHeartbeatOncePerConnection: the table is made once per connection,
// again on a new one.
func TestHeartbeatOncePerConnection(t *testing.T) {
	mk := func() *rhiStubQuerier {
		return &rhiStubQuerier{rows: map[string]*mysql.Rows{
			hbIdentMariaSQL: {Columns: []string{"a", "b"}, Values: [][]*string{{rhiPtr("5"), rhiPtr("3")}}},
		}}
	}
	tg := Target{Key: dbpilot.InstanceKey{Host: "h", Port: 1}, Flavor: dbpilot.FlavorMariaDB, Role: "primary"}
	hb := NewHeartbeat()
	q1 := mk()
	for range 3 {
		if _, err := hb.Collect(context.Background(), q1, tg); err != nil {
			t.Fatal(err)
		}
	}
	if len(q1.execs) != 2+3 || q1.execs[2] != "REPLACE INTO dbpilot.heartbeat (server_id, ts, gtid_domain_id) VALUES (5, NOW(6), 3)" {
		t.Errorf("one connection, 3 runs: %q", q1.execs)
	}
	q2 := mk()
	if _, err := hb.Collect(context.Background(), q2, tg); err != nil {
		t.Fatal(err)
	}
	if len(q2.execs) != 3 {
		t.Errorf("new connection: %q", q2.execs)
	}
	if hbSameConn(q1, q2) || !hbSameConn(q1, q1) || hbSameConn(nil, q1) {
		t.Error("hbSameConn")
	}
	// Connections of a type that cannot be compared count as the same.
	type mapQuerier struct {
		Querier
		m map[string]string // a map makes the type incomparable
	}
	_ = mapQuerier{}.m
	if !hbSameConn(mapQuerier{}, mapQuerier{}) {
		t.Error("hbSameConn on an incomparable type")
	}
}

func TestHeartbeatConcurrentTargets(t *testing.T) {
	hb := NewHeartbeat()
	dir := "testdata/heartbeat/mariadb-10.11/primary"
	target, _ := rhiLoadTarget(t, dir)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tg := target
			tg.Key.Port = 3000 + i
			q := &rhiReplay{dir: dir}
			for run := 1; run <= 2; run++ {
				q.run = run
				if _, err := hb.Collect(context.Background(), q, tg); err != nil {
					t.Error(err)
				}
			}
			if len(q.execs) != 4 {
				t.Errorf("target %d: execs %q", i, q.execs)
			}
		}()
	}
	wg.Wait()
	hb.(*heartbeat).Forget(target.Key)
}

// TestHeartbeatNeverWritesOnReadOnly: a server the topology calls primary
// but that is read_only (a fenced old primary, a race during failover) gets
// no heartbeat write, even though an admin account could bypass read_only.
func TestHeartbeatNeverWritesOnReadOnly(t *testing.T) {
	dir := t.TempDir()
	ident, err := os.ReadFile(filepath.Join("testdata", "heartbeat", "mariadb-10.11", "primary", "ident.txt"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "ident.txt"), ident, 0o644)
	os.WriteFile(filepath.Join(dir, "read_only.txt"), []byte("*************************** 1. row ***************************\n@@global.read_only: 1\n"), 0o644)
	r := &rhiReplay{dir: dir, run: 1}
	v, _ := dbpilot.ParseVersion("10.11.19-MariaDB")
	tgt := Target{Key: dbpilot.InstanceKey{Host: "127.0.0.1", Port: 1}, Flavor: dbpilot.FlavorMariaDB, Version: v, Role: "primary", ServerID: 25511}
	_, err = NewHeartbeat().Collect(context.Background(), r, tgt)
	if err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("Collect on a read_only primary: %v, want the read-only report", err)
	}
	// Nothing at all: CREATE DATABASE/TABLE IF NOT EXISTS are binlogged
	// even when the objects exist, so they would be errant transactions too
	// (seen after a switchover: the old primary's monitoring connection,
	// killed and reopened, made the table again, and the new primary's next
	// transaction then stopped its replication with error 1950).
	if len(r.execs) != 0 {
		t.Errorf("statements run on a read_only server: %q", r.execs)
	}
}
