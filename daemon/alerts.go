package daemon

import (
	"context"
	"fmt"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/alert"
)

// MetricsBackend is what serve needs of the metrics store.
type MetricsBackend interface {
	dbpilot.MetricSink
	dbpilot.MetricsQuerier
	Forget(dbpilot.InstanceKey)
}

var _ dbpilot.AlertService = (*Daemon)(nil)

// unqueryable reports why the metrics backend cannot answer queries (serve
// keeps no local store and has no metrics.query_url), or nil.
func (d *Daemon) unqueryable() error {
	if u, ok := d.metrics.(interface{ Unqueryable() error }); ok {
		return u.Unqueryable()
	}
	return nil
}

// LoadAlertRules returns the configured rules, or the built-in ones.
func (c *Config) LoadAlertRules() ([]alert.Rule, error) {
	if c.Alerts.Rules == "" {
		return alert.DefaultRules(), nil
	}
	return alert.LoadRules(c.Alerts.Rules)
}

// newEvaluator builds the alert evaluator: topology-aware suppression
// (replica alerts wait while their primary is down or a recovery runs) and
// alerts that stop for servers no longer monitored.
func (d *Daemon) newEvaluator(rules []alert.Rule) *alert.Evaluator {
	notifiers := []alert.Notifier{alert.NewLogNotifier(d.log)}
	if d.cfg.Alerts.Webhook != "" {
		notifiers = append(notifiers, alert.NewWebhook(d.cfg.Alerts.Webhook, d.cfg.Alerts.WebhookTimeout.D()))
	}
	return alert.NewEvaluator(rules, alert.Options{
		Interval:  d.cfg.Alerts.Interval.D(),
		Querier:   d.metrics,
		Store:     d.alertStore,
		Notifiers: notifiers,
		Suppress:  d.suppress,
		Known: func(labels map[string]string) bool {
			inst, ok := labels["instance"]
			return !ok || d.mon.known(inst)
		},
		Logger: d.log,
	})
}

// suppress holds back alerts of non-primaries while their cluster's primary
// is down or a recovery runs: the cause is the primary, reported once.
//
// It also holds back the alerts of the cluster's primary that come from
// series of a replica role (labels role replica or intermediate): after a
// failover, the new primary's collectors write under its old role until
// the next observation retargets them, and its replication alerts
// (ReplicationLagHigh, ReplicationIOStopped), pending since the old primary
// died and past their `for` when the recovery ends, would fire on a server
// that no longer replicates. Those series end at the collectors' next run
// under the new role, and the alerts resolve unnotified.
func (d *Daemon) suppress(labels map[string]string) string {
	cs, ok := d.clusters[labels["cluster"]]
	if !ok {
		return ""
	}
	cs.mu.Lock()
	state := cs.status.State
	primary := cs.primary
	cs.mu.Unlock()
	if labels["instance"] == primary.String() {
		if role := labels["role"]; role == "replica" || role == "intermediate" {
			return fmt.Sprintf("%s is now the primary of cluster %s: the alert is of its former %s role", primary, cs.cfg.Name, role)
		}
		return ""
	}
	switch state {
	case dbpilot.ClusterRecovering:
		return fmt.Sprintf("a recovery of cluster %s is running", cs.cfg.Name)
	case dbpilot.ClusterDead, dbpilot.ClusterUnreachable:
		return fmt.Sprintf("primary %s of cluster %s is down", primary, cs.cfg.Name)
	}
	return ""
}

// Alerts lists alerts from the state store.
func (d *Daemon) Alerts(ctx context.Context, f dbpilot.AlertFilter) ([]*dbpilot.Alert, error) {
	if f.Cluster != "" {
		if _, err := d.cluster(f.Cluster); err != nil {
			return nil, err
		}
	}
	if d.alertStore == nil {
		return []*dbpilot.Alert{}, nil
	}
	return d.alertStore.Alerts(ctx, f)
}
