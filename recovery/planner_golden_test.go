package recovery

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/internal/testutil"
)

// plCaseArgs is testdata/plans/<case>/args.json.
type plCaseArgs struct {
	Kind    string            `json:"kind"` // failover, switchover, relocate
	Dead    string            `json:"dead,omitempty"`
	Primary string            `json:"primary,omitempty"`
	To      string            `json:"to,omitempty"`
	Replica string            `json:"replica,omitempty"`
	Target  string            `json:"target,omitempty"`
	Rules   map[string]string `json:"rules,omitempty"`
	// MaxLag bounds a switchover's candidate ("10s"; empty: the default).
	MaxLag string `json:"max_lag,omitempty"`
}

func plLoadCase(t testing.TB, dir string) ([]*dbpilot.Instance, plCaseArgs) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "instances.json"))
	if err != nil {
		t.Fatal(err)
	}
	var in []*dbpilot.Instance
	if err := json.Unmarshal(b, &in); err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	b, err = os.ReadFile(filepath.Join(dir, "args.json"))
	if err != nil {
		t.Fatal(err)
	}
	var a plCaseArgs
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		t.Fatalf("%s/args.json: %v", dir, err)
	}
	return in, a
}

func plMustKey(t testing.TB, s string) dbpilot.InstanceKey {
	t.Helper()
	if s == "" {
		return dbpilot.InstanceKey{}
	}
	k, err := dbpilot.ParseInstanceKey(s)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// plRunCase runs the planner a case asks for. Relocation returns no plan.
func plRunCase(t testing.TB, in []*dbpilot.Instance, a plCaseArgs) (*Plan, error) {
	t.Helper()
	rules := Rules{}
	for k, r := range a.Rules {
		rules[plMustKey(t, k)] = dbpilot.PromotionRule(r)
	}
	switch a.Kind {
	case "failover":
		return PlanFailover("lab", plMustKey(t, a.Dead), in, rules)
	case "switchover":
		var opt SwitchoverOptions
		if a.MaxLag != "" {
			d, err := time.ParseDuration(a.MaxLag)
			if err != nil {
				t.Fatalf("max_lag: %v", err)
			}
			opt.MaxLag = d
		}
		return PlanSwitchover("lab", findInstance(in, plMustKey(t, a.Primary)), in, plMustKey(t, a.To), rules, opt)
	case "relocate":
		return nil, CheckRelocate(findInstance(in, plMustKey(t, a.Replica)), findInstance(in, plMustKey(t, a.Target)), in)
	}
	t.Fatalf("unknown kind %q", a.Kind)
	return nil, nil
}

func plErrText(err error) []byte {
	if err == nil {
		return nil
	}
	return fmt.Appendf(nil, "%s: %v\n", dbpilot.ErrorCode(err), err)
}

func TestGoldenPlans(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "plans", "*", "args.json"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no test cases: %v", err)
	}
	for _, f := range dirs {
		dir := filepath.Dir(f)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			in, a := plLoadCase(t, dir)
			plan, err := plRunCase(t, in, a)
			if err != nil {
				var e *dbpilot.Error
				if !errors.As(err, &e) {
					t.Errorf("error %v is not a *dbpilot.Error", err)
				}
			}
			testutil.Golden(t, filepath.Join(dir, "error.golden.txt"), plErrText(err))
			if a.Kind == "relocate" {
				var ok []byte
				if err == nil {
					ok = []byte("ok\n")
				}
				testutil.Golden(t, filepath.Join(dir, "ok.golden.txt"), ok)
				return
			}
			var txt, js []byte
			if plan != nil {
				txt = []byte(plan.String())
				b, err := json.MarshalIndent(plan, "", "  ")
				if err != nil {
					t.Fatal(err)
				}
				js = append(b, '\n')
			}
			testutil.Golden(t, filepath.Join(dir, "plan.golden.txt"), txt)
			testutil.Golden(t, filepath.Join(dir, "plan.golden.json"), js)

			// Planning is a pure function of the set of instances.
			rev := slices.Clone(in)
			slices.Reverse(rev)
			again, err2 := plRunCase(t, rev, a)
			if fmt.Sprint(err) != fmt.Sprint(err2) {
				t.Errorf("the error depends on the order of instances:\n%v\n%v", err, err2)
			}
			if plan != nil && (again == nil || again.String() != plan.String()) {
				t.Errorf("the plan depends on the order of instances")
			}
		})
	}
}
