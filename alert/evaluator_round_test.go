package alert

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
)

// seriesQuerier answers every instant query with the same series.
type seriesQuerier []dbpilot.Series

func (q seriesQuerier) QueryInstant(ctx context.Context, expr string, t time.Time) ([]dbpilot.Series, error) {
	return q, nil
}

func (q seriesQuerier) QueryRange(ctx context.Context, expr string, start, end time.Time, step time.Duration) ([]dbpilot.Series, error) {
	return nil, errors.New("not implemented")
}

// failingStore refuses to save.
type failingStore struct{}

func (failingStore) SaveAlert(ctx context.Context, a *dbpilot.Alert) error {
	return errors.New("disk full")
}

func (failingStore) Alerts(ctx context.Context, f dbpilot.AlertFilter) ([]*dbpilot.Alert, error) {
	return nil, nil
}

func downRule(t *testing.T) []Rule {
	t.Helper()
	rules, err := ParseRules("x.yaml", []byte("rules:\n  - alert: Down\n    expr: mysql_up == 0\n"))
	if err != nil {
		t.Fatal(err)
	}
	return rules
}

func TestEvaluatorSeriesWithoutPoints(t *testing.T) {
	q := seriesQuerier{{Labels: db1}}
	e := NewEvaluator(downRule(t), Options{Querier: q})
	if err := e.Evaluate(context.Background(), t0); err != nil {
		t.Fatal(err)
	}
	if act := e.Active(); len(act) != 0 {
		t.Errorf("a series without points raised %+v", act)
	}
}

func TestEvaluatorDuplicateLabelSet(t *testing.T) {
	// The same labels once __name__ is dropped.
	other := map[string]string{"__name__": "mysql_up_too"}
	for k, v := range db1 {
		if k != "__name__" {
			other[k] = v
		}
	}
	q := seriesQuerier{
		{Labels: db1, Points: []dbpilot.Point{{V: 1}}},
		{Labels: other, Points: []dbpilot.Point{{V: 2}}},
	}
	e := NewEvaluator(downRule(t), Options{Querier: q})
	err := e.Evaluate(context.Background(), t0)
	want := `rule Down: the query returned the label set {cluster="main", instance="db1:3306", role="primary"} twice; the second is ignored`
	if err == nil || err.Error() != want {
		t.Errorf("error:\n%v\nwant:\n%s", err, want)
	}
	act := e.Active()
	if len(act) != 1 || act[0].Value != 1 || act[0].State != dbpilot.AlertFiring {
		t.Errorf("active %+v", act)
	}
}

func TestEvaluatorSaveError(t *testing.T) {
	q := newFakeQuerier()
	q.set(down, 0, db1)
	e := NewEvaluator(downRule(t), Options{Querier: q, Store: failingStore{}})
	err := e.Evaluate(context.Background(), t0)
	if err == nil || !strings.Contains(err.Error(), `alert: save Down {cluster="main", instance="db1:3306", role="primary"}: disk full`) {
		t.Errorf("error %v", err)
	}
	// The state is kept in memory.
	if act := e.Active(); len(act) != 1 || act[0].State != dbpilot.AlertFiring {
		t.Errorf("active %+v", act)
	}
}

func TestEvaluatorCancelled(t *testing.T) {
	q := newFakeQuerier()
	q.set(down, 0, db1)
	e := NewEvaluator(downRule(t), Options{Querier: q})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := e.Evaluate(ctx, t0); !errors.Is(err, context.Canceled) {
		t.Errorf("error %v", err)
	}
	if act := e.Active(); len(act) != 0 {
		t.Errorf("a cancelled round raised %+v", act)
	}
}
