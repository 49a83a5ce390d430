package alert

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/metrics"
)

// checkRulesFire evaluates the built-in rules named in want at at over st
// and checks that each fires on exactly the instances (ports) want gives,
// every firing series rendering a summary; check, when set, looks at each
// series too.
func checkRulesFire(t *testing.T, st *metrics.Store, at time.Time, want map[string][]int, check func(r Rule, labels map[string]string)) {
	t.Helper()
	seen := 0
	for _, r := range DefaultRules() {
		w, ok := want[r.Name]
		if !ok {
			continue
		}
		seen++
		series, err := st.QueryInstant(context.Background(), r.Expr, at)
		if err != nil {
			t.Errorf("%s: %v", r.Name, err)
			continue
		}
		var got []int
		for _, s := range series {
			k, err := dbpilot.ParseInstanceKey(s.Labels["instance"])
			if err != nil {
				t.Errorf("%s: instance %q", r.Name, s.Labels["instance"])
				continue
			}
			got = append(got, k.Port)
			if sum, err := r.render(s.Labels, s.Points[len(s.Points)-1].V); err != nil || sum == "" {
				t.Errorf("%s: summary %q, %v", r.Name, sum, err)
			}
			if check != nil {
				check(r, s.Labels)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, w) {
			t.Errorf("%s fires on %v, want %v", r.Name, got, w)
		}
	}
	if seen != len(want) {
		t.Errorf("%d of the %d rules are built in", seen, len(want))
	}
}

// ruleSeries opens a metrics store for a rule test and returns it, a time
// ten minutes ago, and write, which writes samples of collector for the
// instance 127.0.0.1:port of cluster c in role, s seconds after it, as
// serve writes them.
func ruleSeries(t *testing.T, role string) (st *metrics.Store, t0 time.Time, write func(port, s int, collector string, samples ...dbpilot.Sample)) {
	t.Helper()
	t0 = time.Now().Add(-10 * time.Minute).Truncate(time.Second)
	st, err := metrics.Open(metrics.Options{Dir: t.TempDir(), MinFreeBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	write = func(port, s int, collector string, samples ...dbpilot.Sample) {
		t.Helper()
		b := dbpilot.Batch{Instance: dbpilot.InstanceKey{Host: "127.0.0.1", Port: port}, Cluster: "c", Role: role,
			Collector: collector, Time: t0.Add(time.Duration(s) * time.Second), Samples: samples}
		if err := st.Write(context.Background(), b); err != nil {
			t.Fatal(err)
		}
	}
	return st, t0, write
}
