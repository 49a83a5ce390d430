package sqlite

import (
	"context"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
)

func TestAlertRoundTrip(t *testing.T) {
	ctx := context.Background()
	d, path := openTest(t)
	a := &dbpilot.Alert{
		Rule: "ReplicationIOStopped", Severity: "critical", State: dbpilot.AlertPending,
		Labels:  map[string]string{"instance": "db2:3306", "cluster": "main", "channel_name": ""},
		Summary: "replication IO thread stopped on db2:3306", Value: 0, ActiveAt: ts(10, 123),
	}
	if err := d.SaveAlert(ctx, a); err != nil {
		t.Fatal(err)
	}
	if a.ID == 0 {
		t.Fatal("SaveAlert did not set the ID")
	}
	a.State, a.FiredAt, a.Value, a.Suppressed = dbpilot.AlertFiring, ts(20, 5), -1.5, "primary db1:3306 of cluster main is down"
	if err := d.SaveAlert(ctx, a); err != nil {
		t.Fatal(err)
	}
	got, err := d.Alerts(ctx, dbpilot.AlertFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !reflect.DeepEqual(got[0], a) {
		t.Fatalf("alerts %+v\nwant %+v", got, a)
	}

	// A read-only handle reads them and cannot write.
	d.Close()
	ro, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if got, err := ro.Alerts(ctx, dbpilot.AlertFilter{State: dbpilot.AlertFiring}); err != nil || len(got) != 1 || !reflect.DeepEqual(got[0], a) {
		t.Errorf("read-only: %+v, %v", got, err)
	}
	if err := ro.SaveAlert(ctx, &dbpilot.Alert{Rule: "x", State: dbpilot.AlertPending}); err == nil {
		t.Error("read-only SaveAlert: no error")
	}
}

func TestAlertFilters(t *testing.T) {
	ctx := context.Background()
	d, _ := openTest(t)
	save := func(rule, cluster, state string, active, resolved time.Time) *dbpilot.Alert {
		t.Helper()
		a := &dbpilot.Alert{Rule: rule, Severity: "warning", State: state, ActiveAt: active, ResolvedAt: resolved,
			Labels: map[string]string{"cluster": cluster, "instance": "db1:3306"}}
		if state != dbpilot.AlertPending {
			a.FiredAt = active.Add(time.Second)
		}
		if err := d.SaveAlert(ctx, a); err != nil {
			t.Fatal(err)
		}
		return a
	}
	old := save("Old", "main", dbpilot.AlertResolved, ts(0, 0), ts(50, 0))
	firingMain := save("FiringMain", "main", dbpilot.AlertFiring, ts(100, 0), time.Time{})
	pendingOther := save("PendingOther", "other", dbpilot.AlertPending, ts(200, 0), time.Time{})
	resolvedMain := save("ResolvedMain", "main", dbpilot.AlertResolved, ts(300, 0), ts(400, 0))
	noCluster := &dbpilot.Alert{Rule: "NoLabels", State: dbpilot.AlertFiring, ActiveAt: ts(500, 0)}
	if err := d.SaveAlert(ctx, noCluster); err != nil {
		t.Fatal(err)
	}
	noCluster.Labels = map[string]string{} // as read back

	tests := []struct {
		name string
		f    dbpilot.AlertFilter
		want []*dbpilot.Alert
	}{
		{"all newest first", dbpilot.AlertFilter{}, []*dbpilot.Alert{noCluster, resolvedMain, pendingOther, firingMain, old}},
		{"cluster", dbpilot.AlertFilter{Cluster: "main"}, []*dbpilot.Alert{resolvedMain, firingMain, old}},
		{"firing", dbpilot.AlertFilter{State: dbpilot.AlertFiring}, []*dbpilot.Alert{noCluster, firingMain}},
		{"pending", dbpilot.AlertFilter{State: dbpilot.AlertPending}, []*dbpilot.Alert{pendingOther}},
		{"resolved in main", dbpilot.AlertFilter{Cluster: "main", State: dbpilot.AlertResolved}, []*dbpilot.Alert{resolvedMain, old}},
		// Since: still active, or resolved since.
		{"since", dbpilot.AlertFilter{Since: ts(60, 0)}, []*dbpilot.Alert{noCluster, resolvedMain, pendingOther, firingMain}},
		{"since after all resolved", dbpilot.AlertFilter{Since: ts(401, 0)}, []*dbpilot.Alert{noCluster, pendingOther, firingMain}},
		{"limit", dbpilot.AlertFilter{Limit: 2}, []*dbpilot.Alert{noCluster, resolvedMain}},
		{"unknown cluster", dbpilot.AlertFilter{Cluster: "nope"}, []*dbpilot.Alert{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := d.Alerts(ctx, tt.f)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got:")
				for _, a := range got {
					t.Errorf("  %+v", a)
				}
				t.Errorf("want:")
				for _, a := range tt.want {
					t.Errorf("  %+v", a)
				}
			}
		})
	}

	_, err := d.Alerts(ctx, dbpilot.AlertFilter{State: "burning"})
	wantCode(t, err, dbpilot.EINVALID)

	p, err := d.Prune(ctx, ts(100, 0))
	if err != nil || p.Alerts != 1 {
		t.Errorf("Prune: %+v, %v; want 1 alert", p, err)
	}
	if got, _ := d.Alerts(ctx, dbpilot.AlertFilter{}); len(got) != 4 {
		t.Errorf("after prune: %d alerts, want 4", len(got))
	}
}

func TestSaveAlertRefusals(t *testing.T) {
	ctx := context.Background()
	d, _ := openTest(t)
	wantCode(t, d.SaveAlert(ctx, &dbpilot.Alert{State: dbpilot.AlertPending}), dbpilot.EINVALID)
	wantCode(t, d.SaveAlert(ctx, &dbpilot.Alert{Rule: "x", State: "hot"}), dbpilot.EINVALID)
	wantCode(t, d.SaveAlert(ctx, &dbpilot.Alert{Rule: "x", State: dbpilot.AlertFiring, Value: math.NaN()}), dbpilot.EINVALID)
	wantCode(t, d.SaveAlert(ctx, &dbpilot.Alert{Rule: "x", State: dbpilot.AlertFiring, Value: math.Inf(1)}), dbpilot.EINVALID)
	wantCode(t, d.SaveAlert(ctx, &dbpilot.Alert{ID: 99, Rule: "x", State: dbpilot.AlertFiring}), dbpilot.ENOTFOUND)
	wantCode(t, d.SaveAlert(ctx, &dbpilot.Alert{Rule: "x", State: dbpilot.AlertFiring, ActiveAt: time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)}), dbpilot.EINVALID)
	if got, _ := d.Alerts(ctx, dbpilot.AlertFilter{}); len(got) != 0 {
		t.Errorf("refused alerts stored: %+v", got)
	}
}

// A state file written before alerts existed (schema 1) gains the table.
func TestAlertMigrationFromSchema1(t *testing.T) {
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	d, err := Open(filepath.Join(t.TempDir(), "v1.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	// Back to schema 1, then up again.
	if _, err := d.db.Exec(`DROP TABLE alerts; DROP TABLE query_digests; DROP TABLE query_stats; DROP TABLE query_sources;
		DROP TABLE query_source_minutes; ALTER TABLE recoveries DROP COLUMN writes_open; DROP TABLE topology_changes; DROP TABLE topology_history_start;
		DELETE FROM schema_version WHERE version > 1`); err != nil {
		t.Fatal(err)
	}
	if err := applyMigrations(context.Background(), d.db, d.path, ms); err != nil {
		t.Fatal(err)
	}
	if err := d.SaveAlert(context.Background(), &dbpilot.Alert{Rule: "x", State: dbpilot.AlertFiring}); err != nil {
		t.Errorf("after migrating from schema 1: %v", err)
	}
	if err := d.RecordQueries(context.Background(), dbpilot.QueryInterval{Source: dbpilot.QuerySource{Instance: "h:1"}}); err != nil {
		t.Errorf("after migrating from schema 1: %v", err)
	}
	if err := d.RecordChanges(context.Background(), []dbpilot.TopologyChange{{Cluster: "a", Kind: dbpilot.ChangeCluster}}); err != nil {
		t.Errorf("after migrating from schema 1: %v", err)
	}
}

// FiringAt selects the alerts that were firing at an instant: fired at or
// before it and not resolved by then.
func TestAlertsFiringAt(t *testing.T) {
	ctx := context.Background()
	d, _ := openTest(t)
	for _, a := range []*dbpilot.Alert{
		{Rule: "pending-only", State: dbpilot.AlertResolved, ActiveAt: ts(5, 0), ResolvedAt: ts(50, 0)},
		{Rule: "fired-resolved", State: dbpilot.AlertResolved, ActiveAt: ts(5, 0), FiredAt: ts(10, 0), ResolvedAt: ts(20, 0)},
		{Rule: "firing", State: dbpilot.AlertFiring, ActiveAt: ts(5, 0), FiredAt: ts(15, 0)},
	} {
		if err := d.SaveAlert(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		at   time.Time
		want []string
	}{
		{ts(9, 0), nil},
		{ts(10, 0), []string{"fired-resolved"}},
		{ts(15, 0), []string{"fired-resolved", "firing"}},
		{ts(20, 0), []string{"firing"}},
	} {
		got, err := d.Alerts(ctx, dbpilot.AlertFilter{FiringAt: c.at})
		if err != nil {
			t.Fatal(err)
		}
		var rules []string
		for _, a := range got {
			rules = append(rules, a.Rule)
		}
		slices.Sort(rules)
		if !slices.Equal(rules, c.want) {
			t.Errorf("firing at %s: %v, want %v", c.at.Sub(ts(0, 0)), rules, c.want)
		}
	}
}
