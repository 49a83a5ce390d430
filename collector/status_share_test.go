package collector

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
)

// TestStatusShare: every global_status run, the every-second one too,
// keeps in the share what inspections read of the status (lower-cased
// names, from the recorded SHOW GLOBAL STATUS) and when it was read, by
// normalized instance key; the every-second statement reads those
// variables without writing the ones outside its set.
func TestStatusShare(t *testing.T) {
	rows := gsFixture(t, "status/mariadb-10.11.txt")
	for _, n := range mysql.InspectStatusNames() {
		if !strings.Contains(gsHotQuery, "'"+n+"'") {
			t.Errorf("the every-second statement does not read %s", n)
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
			if want[n] != st[n] || !strings.Contains(strings.Join(mysql.InspectStatusNames(), " "), n) {
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
	share.Forget(key)
	if st, _ := share.SharedStatus(key); st != nil {
		t.Errorf("forgotten, still shared: %v", st)
	}
}
