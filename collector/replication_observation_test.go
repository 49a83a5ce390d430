package collector

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
)

// FromObservation builds from discovery's observation (its channels and
// GTID positions, as Inspect reads them) exactly the samples Collect reads
// from the server, on every recorded case: the series must not change when
// the runner switches between the two.
func TestReplicationFromObservationEqualsCollect(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "replication", "*", "*", "target.json"))
	if err != nil || len(dirs) < 3 {
		t.Fatalf("replication cases: %d, %v", len(dirs), err)
	}
	for _, tj := range dirs {
		dir := filepath.Dir(tj)
		t.Run(filepath.Base(filepath.Dir(dir))+"/"+filepath.Base(dir), func(t *testing.T) {
			target, _ := rhiLoadTarget(t, dir)
			q := &rhiReplay{dir: dir, run: 1}
			want, werr := NewReplication().Collect(context.Background(), q, target)

			obs := observationOf(t, q, target)
			got, gerr := NewReplication().(ObservingCollector).FromObservation(context.Background(), q, target, obs)
			if (werr == nil) != (gerr == nil) {
				t.Fatalf("errors differ: Collect %v, FromObservation %v", werr, gerr)
			}
			if g, w := rhiFormat(got), rhiFormat(want); g != w {
				t.Errorf("FromObservation:\n%s\nCollect:\n%s", g, w)
			}
			if len(want) == 0 {
				t.Error("the case gives no samples: nothing compared")
			}
		})
	}
}

// observationOf builds what Inspect would observe of a recorded case: its
// replica status and GTID variables.
func observationOf(t *testing.T, q *rhiReplay, target Target) *dbpilot.Instance {
	t.Helper()
	d := mysql.Dialect{Flavor: target.Flavor, Version: target.Version}
	rows, err := q.Query(context.Background(), d.ShowReplicaStatusSQL())
	if err != nil {
		t.Fatal(err)
	}
	chans, err := mysql.ReplicaStatus(target.Flavor, rows)
	if err != nil {
		t.Fatal(err)
	}
	obs := &dbpilot.Instance{Key: target.Key, Reachable: true, Flavor: target.Flavor, Version: target.Version, Channels: chans, ObservedAt: time.Now()}
	sql := replMySQLGTIDSQL
	if target.Flavor == dbpilot.FlavorMariaDB {
		sql = replMariaGTIDSQL
	}
	if g, err := q.Query(context.Background(), sql); err == nil && len(g.Values) == 1 && len(g.Values[0]) == 2 {
		a, b := mysql.Str(g.Values[0], 0), mysql.Str(g.Values[0], 1)
		if target.Flavor == dbpilot.FlavorMariaDB {
			obs.GTID.CurrentPos, obs.GTID.SlavePos = a, b
		} else {
			obs.GTID.Mode, obs.GTID.Executed = a, b
		}
	}
	return obs
}

// The runner takes an observation once, only when it is newer than the
// collector's last run and at most an interval old, and only for a
// collector that takes observations.
func TestRunnerObservationChoice(t *testing.T) {
	now := time.Now()
	r := &Runner{}
	s := &runnerSlot{c: NewReplication(), interval: time.Second}
	if r.observation(s, now) != nil {
		t.Fatal("an observation before any was given")
	}
	r.Observe(&dbpilot.Instance{Reachable: false, ObservedAt: now})
	if r.observation(s, now) != nil {
		t.Fatal("an unreachable observation was taken")
	}
	fresh := &dbpilot.Instance{Reachable: true, ObservedAt: now.Add(-300 * time.Millisecond)}
	r.Observe(fresh)
	if got := r.observation(s, now); got != fresh {
		t.Fatalf("fresh observation not taken: %v", got)
	}
	if r.observation(s, now.Add(time.Second/2)) != nil {
		t.Fatal("the same observation was taken twice")
	}
	s2 := &runnerSlot{c: NewReplication(), interval: time.Second}
	if r.observation(s2, now.Add(2*time.Second)) != nil {
		t.Fatal("an observation older than the interval was taken")
	}
	s3 := &runnerSlot{c: NewGlobalStatus(), interval: time.Second}
	if r.observation(s3, now) != nil {
		t.Fatal("a collector that does not take observations got one")
	}
	s4 := &runnerSlot{c: NewReplication(), interval: time.Second, lastT: now}
	if r.observation(s4, now) != nil {
		t.Fatal("an observation older than the last batch was taken")
	}
}
