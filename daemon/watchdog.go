package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/alert"
	"github.com/dbpilot/dbpilot/watchdog"
	"go.yaml.in/yaml/v3"
)

// WatchdogConfig configures the query watchdog (issue 13 §2): rules given
// inline (rules:) or in a rules file (rules_file:), evaluated every
// Interval on each monitored instance's processlist, on the instance's
// monitoring sessions (a collector of its runner).
type WatchdogConfig struct {
	// Rules is the inline "rules:" list, kept as YAML so that errors name
	// the line (parsed by Validate with watchdog.ParseNode).
	Rules *yaml.Node `yaml:"rules"`
	// RulesFile is a rules file (a top-level "rules:" list) instead.
	RulesFile string `yaml:"rules_file"`
	// Interval is how often each instance is evaluated (default 1s).
	Interval Duration `yaml:"interval"`
	// Notify: false keeps the watchdog's events off alerts.webhook (by
	// default, with a webhook configured, every match and kill result is
	// posted there too, as a WatchdogPayload).
	Notify *bool `yaml:"notify"`

	rules []*watchdog.Rule // parsed by Validate; nil: no watchdog
}

// UnmarshalYAML keeps the rules' YAML for Validate, which parses it with
// the file's name.
func (w *WatchdogConfig) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: watchdog: want a mapping with rules (or rules_file) and interval", n.Line)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch k.Value {
		case "rules":
			w.Rules = v
		case "rules_file":
			if err := v.Decode(&w.RulesFile); err != nil {
				return fmt.Errorf("line %d: watchdog.rules_file: want a path", v.Line)
			}
		case "interval":
			if err := w.Interval.UnmarshalYAML(v); err != nil {
				return fmt.Errorf("line %d: watchdog.interval: %w", v.Line, err)
			}
		case "notify":
			var b bool
			if err := v.Decode(&b); err != nil {
				return fmt.Errorf("line %d: watchdog.notify: want true or false", v.Line)
			}
			w.Notify = &b
		default:
			return fmt.Errorf("line %d: watchdog: unknown field %q (known: rules, rules_file, interval, notify)", k.Line, k.Value)
		}
	}
	return nil
}

// WatchdogRules returns the parsed watchdog rules (nil: no watchdog).
func (c *Config) WatchdogRules() []*watchdog.Rule { return c.Watchdog.rules }

// watchdogNotifier posts the watchdog's events to alerts.webhook through an
// alert.Webhook of its own (its own queue: a burst of kills never crowds
// out alert notifications, nor the reverse). Notify never blocks a
// collector; a batch that finds the queue full is dropped, logged once
// until a batch is queued again. Closed by the daemon's Close, which waits
// for the queued batches up to the webhook timeout.
type watchdogNotifier struct {
	hook *alert.Webhook
	log  *slog.Logger

	mu       sync.Mutex
	dropping bool
}

// newWatchdogNotifier returns the watchdog's notifier, or nil without a
// watchdog, without alerts.webhook or with watchdog.notify: false.
func newWatchdogNotifier(cfg *Config, log *slog.Logger) *watchdogNotifier {
	if len(cfg.WatchdogRules()) == 0 || cfg.Alerts.Webhook == "" || (cfg.Watchdog.Notify != nil && !*cfg.Watchdog.Notify) {
		return nil
	}
	h := alert.NewWebhook(cfg.Alerts.Webhook, cfg.Alerts.WebhookTimeout.D())
	h.SetLogger(log)
	return &watchdogNotifier{hook: h, log: log}
}

func (n *watchdogNotifier) notify(ctx context.Context, events []alert.WatchdogEvent) {
	if n == nil || len(events) == 0 {
		return
	}
	err := n.hook.NotifyWatchdog(ctx, events)
	n.mu.Lock()
	defer n.mu.Unlock()
	if err == nil {
		n.dropping = false
		return
	}
	if !n.dropping {
		n.dropping = true
		n.log.Warn("watchdog: webhook events dropped (logged once until the queue has room again)", "err", err)
	}
}

// Close sends what is queued (up to the webhook timeout) and refuses more.
func (n *watchdogNotifier) Close() error { return n.hook.Close() }

// validateWatchdog parses the watchdog's rules: a bad rule refuses the
// configuration, naming the file, the line and the field.
func (c *Config) validateWatchdog() error {
	w := &c.Watchdog
	w.rules = nil
	var rules []*watchdog.Rule
	var err error
	switch {
	case w.Rules != nil && w.RulesFile != "":
		return errors.New("watchdog: give rules or rules_file, not both")
	case w.RulesFile != "":
		w.RulesFile = expandHome(w.RulesFile)
		rules, err = watchdog.LoadFile(w.RulesFile)
	case w.Rules != nil:
		file := c.path
		if file == "" {
			file = "config"
		}
		rules, err = watchdog.ParseNode(file, w.Rules)
	default:
		return nil
	}
	if err != nil {
		return err
	}
	if len(rules) == 0 {
		return errors.New("watchdog.rules: no rule (give at least one, or leave watchdog out)")
	}
	if w.Interval == 0 {
		w.Interval = Duration(time.Second)
	}
	if iv := w.Interval.D(); iv < 100*time.Millisecond || iv > time.Minute {
		return fmt.Errorf("watchdog.interval: %s is outside 100ms..1m", iv)
	}
	if c.Metrics.Disabled {
		return errors.New("watchdog: it runs on the monitoring sessions of each instance: metrics.disabled must be false")
	}
	w.rules = rules
	return nil
}

// Watchdog self-metrics, written in the watchdog collector's batches (with
// the instance's labels).
const (
	MetricWatchdogMatches = "dbpilot_watchdog_matches_total"
	MetricWatchdogKills   = "dbpilot_watchdog_kills_total"
)

// Kill results (the result label of MetricWatchdogKills and the audit).
const (
	killOK     = "killed"
	killGone   = "gone"   // the session ended before the KILL
	killDenied = "denied" // no privilege to kill it
	killFailed = "failed"
)

// watchSession is what the watchdog needs of one instance's monitoring
// session: the processlist, the metadata lock waits, KILL. wire.go adapts
// the collectors' session (mysql) to it.
type watchSession interface {
	// Processlist reads the sessions, their transactions and the
	// session's own id (Snapshot's Self, Processes and Trx).
	Processlist(ctx context.Context) (watchdog.Snapshot, error)
	// MDLWaits reads performance_schema's metadata lock waits; enabled is
	// false when the instrument is off.
	MDLWaits(ctx context.Context) (waits []watchdog.MDLWait, enabled bool, err error)
	// Kill runs a KILL statement once and returns its result (killOK,
	// killGone, killDenied or killFailed) and the error, if any.
	Kill(ctx context.Context, stmt string) (string, error)
}

// watchdogEval evaluates the watchdog's rules on one instance: one read of
// the processlist per run on the runner's monitoring session, an Evaluator
// kept across runs (dedup and the kill-rate guard), KILL on the same
// session, each match and action audited and counted. wire.go's
// watchdogCollector runs it as a collector.
type watchdogEval struct {
	ev       *watchdog.Evaluator
	interval time.Duration
	cluster  string
	audit    func(context.Context, dbpilot.AuditEvent)
	notifier *watchdogNotifier // nil: no webhook
	log      *slog.Logger

	mdlErr string // the last error reading metadata locks (logged once)

	mu      sync.Mutex
	matches map[[2]string]float64 // rule, decision
	kills   map[[2]string]float64 // rule, result
	written map[string]bool       // series written once (later samples are not FromZero)
}

func newWatchdogEval(rules []*watchdog.Rule, own watchdog.Own, interval time.Duration, cluster string,
	audit func(context.Context, dbpilot.AuditEvent), notifier *watchdogNotifier, log *slog.Logger) *watchdogEval {
	return &watchdogEval{ev: watchdog.NewEvaluator(rules, own, nil), interval: interval, cluster: cluster,
		audit: audit, notifier: notifier, log: log, matches: map[[2]string]float64{}, kills: map[[2]string]float64{}, written: map[string]bool{}}
}

func (w *watchdogEval) Name() string                   { return "watchdog" }
func (w *watchdogEval) DefaultInterval() time.Duration { return w.interval }

// watchdogRole is a monitored instance's role for rules: an instance with a
// replication channel (replica, intermediate) is a replica; a primary or a
// standalone server (and a ring member, which takes writes) a primary.
func watchdogRole(role string) watchdog.Role {
	switch role {
	case "replica", "intermediate":
		return watchdog.RoleReplica
	case "primary", "standalone":
		return watchdog.RolePrimary
	}
	return ""
}

// evaluate runs the rules once on the instance t over session q.
func (w *watchdogEval) evaluate(ctx context.Context, q watchSession, t dbpilot.MonitorTarget) ([]dbpilot.Sample, error) {
	s, err := q.Processlist(ctx)
	if err != nil {
		return w.samples(), err
	}
	s.At, s.Role = time.Now(), watchdogRole(t.Role)
	if watchdog.NeedsMDL(w.ev.Rules(), s) {
		w.readMDL(ctx, q, t.Key, &s)
	}
	var events []alert.WatchdogEvent
	for _, m := range w.ev.Evaluate(s) {
		result := ""
		if m.Decision == watchdog.DecisionKill {
			result = w.kill(ctx, q, t.Key, m)
		}
		w.record(ctx, t.Key, m, result)
		if w.notifier != nil {
			events = append(events, w.event(t.Key, m, result))
		}
	}
	w.notifier.notify(ctx, events) // one batch per evaluation
	return w.samples(), nil
}

// readMDL adds performance_schema's metadata lock waits to s, for
// replica_applier_blocked (a second statement, only while an applier
// waits). Without them (an error, the instrument disabled) the rule falls
// back to its processlist heuristic; an error is logged once.
func (w *watchdogEval) readMDL(ctx context.Context, q watchSession, key dbpilot.InstanceKey, s *watchdog.Snapshot) {
	waits, enabled, err := q.MDLWaits(ctx)
	if err != nil {
		if msg := err.Error(); msg != w.mdlErr {
			w.mdlErr = msg
			w.log.Warn("watchdog: read performance_schema.metadata_locks (falling back to the processlist heuristic)", "instance", key.String(), "err", err)
		}
		return
	}
	w.mdlErr = ""
	s.MDLKnown = enabled
	s.MDL = append(s.MDL, waits...)
}

// event is a match as the webhook receives it.
func (w *watchdogEval) event(key dbpilot.InstanceKey, m watchdog.Match, result string) alert.WatchdogEvent {
	s := m.Session
	return alert.WatchdogEvent{Time: time.Now().UTC(), Instance: key.String(), Cluster: w.cluster, Rule: m.Rule,
		Action: string(m.Action), Decision: string(m.Decision), Result: result, Reasons: m.Reasons,
		Session: alert.WatchdogSession{ID: s.ID, User: s.User, Host: s.Host, DB: s.DB, Command: s.Command, State: s.State,
			Info: truncateInfo(s.Info, 1000), TimeSeconds: s.Time.Seconds()}}
}

// kill runs KILL QUERY or KILL CONNECTION once (no retry: the evaluator does
// not return the session again) and returns the result.
func (w *watchdogEval) kill(ctx context.Context, q watchSession, key dbpilot.InstanceKey, m watchdog.Match) string {
	stmt := "KILL CONNECTION " + strconv.FormatUint(m.Session.ID, 10)
	if m.Action == watchdog.ActionKillQuery {
		stmt = "KILL QUERY " + strconv.FormatUint(m.Session.ID, 10)
	}
	result, err := q.Kill(ctx, stmt)
	if err != nil {
		w.log.Warn("watchdog: kill failed (not retried)", "instance", key.String(), "rule", m.Rule, "statement", stmt, "result", result, "err", err)
	}
	w.mu.Lock()
	w.kills[[2]string{m.Rule, result}]++
	w.mu.Unlock()
	return result
}

// record counts a match and writes it to the audit log.
func (w *watchdogEval) record(ctx context.Context, key dbpilot.InstanceKey, m watchdog.Match, result string) {
	w.mu.Lock()
	w.matches[[2]string{m.Rule, string(m.Decision)}]++
	w.mu.Unlock()
	if w.audit == nil {
		return
	}
	s := m.Session
	msg := fmt.Sprintf("watchdog rule %s matched session %d (%s@%s, %s %.1fs) on %s: %s", m.Rule, s.ID, s.User, s.Host,
		s.Command, s.Time.Seconds(), key, m.Decision)
	if result != "" {
		msg += " (" + string(m.Action) + ": " + result + ")"
	}
	detail := map[string]string{
		"rule": m.Rule, "action": string(m.Action), "decision": string(m.Decision),
		"session": strconv.FormatUint(s.ID, 10), "user": s.User, "host": s.Host, "db": s.DB,
		"command": s.Command, "state": s.State, "time_s": strconv.FormatFloat(s.Time.Seconds(), 'f', 1, 64),
		"info": truncateInfo(s.Info, 200), "reasons": strings.Join(m.Reasons, "; "),
	}
	if result != "" {
		detail["result"] = result
	}
	// The audit outlives the run's timeout: a match is never lost to it.
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	w.audit(actx, dbpilot.AuditEvent{Cluster: w.cluster, Instance: key, Event: dbpilot.AuditWatchdog, Message: msg, Detail: detail})
}

func truncateInfo(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// samples returns the watchdog's counters: every series seen so far, in
// every batch (a complete batch ends the series it lacks).
func (w *watchdogEval) samples() []dbpilot.Sample {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]dbpilot.Sample, 0, len(w.matches)+len(w.kills))
	add := func(name, help, second string, m map[[2]string]float64) {
		keys := make([][2]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			return keys[i][0] < keys[j][0] || keys[i][0] == keys[j][0] && keys[i][1] < keys[j][1]
		})
		for _, k := range keys {
			// A series' first sample starts from 0, so that rates count it.
			id := name + "\x00" + k[0] + "\x00" + k[1]
			first := !w.written[id]
			w.written[id] = true
			out = append(out, dbpilot.Sample{Name: name, Type: dbpilot.Counter, Help: help, Value: m[k], FromZero: first,
				Labels: []dbpilot.Label{{Name: "rule", Value: k[0]}, {Name: second, Value: k[1]}}})
		}
	}
	add(MetricWatchdogMatches, "Sessions the query watchdog matched, by rule and decision (log, kill, dry_run, rate_limited).", "decision", w.matches)
	add(MetricWatchdogKills, "KILL statements the query watchdog ran, by rule and result (killed, gone, denied, failed).", "result", w.kills)
	return out
}
