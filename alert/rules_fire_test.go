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
