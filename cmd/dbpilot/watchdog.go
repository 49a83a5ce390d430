package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/watchdog"
	"github.com/spf13/cobra"
)

func (a *app) watchdogCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "watchdog",
		Short: "Query watchdog: match sessions by rules and log or kill them (pt-kill)",
		Long: `The query watchdog reads a server's processlist and open InnoDB transactions
and applies rules from a YAML file: match on command, state, user, host, db,
info (regular expressions), busy time, idle time in an open transaction,
transaction age and rows locked; act with log, kill_query or kill_connection.

Rules are in dry-run unless they say dry_run: false, and kill at most
max_kills_per_minute sessions (default 10). Replication threads, system and
event scheduler threads and dbpilot's own sessions are never matched.

  rules:
    - name: runaway-select
      command: Query
      info: '(?i)^select'
      busy: 30s
      except: {users: [backup]}
      action: kill_query
      dry_run: false
    - name: idle-in-trx
      idle_in_trx: 60s
      action: kill_connection
      victims: all        # default oldest: one per evaluation
    - builtin: replica_applier_blocked   # off unless listed: on replicas, kill the
      wait: 10s                          # sessions whose metadata locks block the applier

With the wait/lock/metadata/sql/mdl instrument enabled, the blockers come
from performance_schema.metadata_locks; otherwise from a processlist
heuristic (sessions running longer than the applier waits, on its table).` + exitHelp,
	}
	cmd.AddCommand(a.watchdogTestCommand(), a.watchdogRunCommand())
	return cmd
}

// watchdogTarget is one server the watchdog reads: its own single
// connection (so that dbpilot's session is the one the snapshot names as
// Self) and its flavor and role.
type watchdogTarget struct {
	db        *mysql.DB
	flavor    dbpilot.Flavor
	role      watchdog.Role
	inspected time.Time
	rules     []*watchdog.Rule // to know whether to read metadata locks
}

func openWatchdogTarget(ctx context.Context, key dbpilot.InstanceKey, opts mysql.Options, rules []*watchdog.Rule) (*watchdogTarget, error) {
	opts.MaxConns = 1
	db, err := mysql.Open(ctx, key, opts)
	if err != nil {
		return nil, err
	}
	t := &watchdogTarget{db: db, rules: rules}
	if err := t.inspect(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return t, nil
}

// inspect reads the server's flavor and role (a replica has a replication
// channel).
func (t *watchdogTarget) inspect(ctx context.Context) error {
	inst, err := t.db.Inspect(ctx)
	if err != nil {
		return err
	}
	t.flavor, t.role, t.inspected = inst.Flavor, watchdog.RolePrimary, time.Now()
	if inst.IsReplica() {
		t.role = watchdog.RoleReplica
	}
	return nil
}

// snapshot reads the processlist; the role is read again every minute.
func (t *watchdogTarget) snapshot(ctx context.Context) (watchdog.Snapshot, error) {
	if time.Since(t.inspected) > time.Minute {
		if err := t.inspect(ctx); err != nil {
			return watchdog.Snapshot{}, err
		}
	}
	pl, err := t.db.Processlist(ctx, t.flavor)
	if err != nil {
		return watchdog.Snapshot{}, err
	}
	s := watchdogSnapshot(pl, t.role)
	if watchdog.NeedsMDL(t.rules, s) {
		// Without them (an error, the instrument off) replica_applier_blocked
		// uses its processlist heuristic.
		if waits, enabled, err := t.db.MDLWaits(ctx); err == nil {
			s.MDLKnown = enabled
			for _, w := range waits {
				s.MDL = append(s.MDL, watchdog.MDLWait(w))
			}
		}
	}
	return s, nil
}

// watchdogSnapshot converts a processlist read to the watchdog's input.
func watchdogSnapshot(pl *mysql.Processlist, role watchdog.Role) watchdog.Snapshot {
	s := watchdog.Snapshot{At: pl.At, Role: role, Self: pl.Self,
		Processes: make([]watchdog.Process, len(pl.Processes)), Trx: make([]watchdog.Trx, len(pl.Trx))}
	for i, p := range pl.Processes {
		s.Processes[i] = watchdog.Process(p)
	}
	for i, x := range pl.Trx {
		s.Trx[i] = watchdog.Trx(x)
	}
	return s
}

// selectRules keeps the rules named (all when names is empty).
func selectRules(file string, rules []*watchdog.Rule, names []string) ([]*watchdog.Rule, error) {
	if len(names) == 0 {
		return rules, nil
	}
	var out []*watchdog.Rule
	for _, n := range names {
		found := false
		for _, r := range rules {
			if r.Name == n {
				out, found = append(out, r), true
			}
		}
		if !found {
			known := make([]string, len(rules))
			for i, r := range rules {
				known[i] = r.Name
			}
			return nil, dbpilot.Errorf(dbpilot.ENOTFOUND, "watchdog: no rule %q in %s (rules: %s)", n, file, strings.Join(known, ", "))
		}
	}
	return out, nil
}

// sessionView is a session as the watchdog commands print it.
type sessionView struct {
	ID            uint64   `json:"id"`
	User          string   `json:"user"`
	Host          string   `json:"host"`
	DB            string   `json:"db"`
	Command       string   `json:"command"`
	TimeSeconds   float64  `json:"time_s"`
	State         string   `json:"state"`
	Info          string   `json:"info"`
	TrxAgeSeconds *float64 `json:"trx_age_s,omitempty"`
	TrxRowsLocked *int64   `json:"trx_rows_locked,omitempty"`
	Reasons       []string `json:"reasons"`
}

func viewOf(m watchdog.Match) sessionView {
	s := m.Session
	v := sessionView{ID: s.ID, User: s.User, Host: s.Host, DB: s.DB, Command: s.Command,
		TimeSeconds: s.Time.Seconds(), State: s.State, Info: s.Info, Reasons: m.Reasons}
	if s.Trx != nil {
		age, rows := s.Trx.Age.Seconds(), s.Trx.RowsLocked
		v.TrxAgeSeconds, v.TrxRowsLocked = &age, &rows
	}
	return v
}

// truncate shortens s to n runes on one line.
func truncate(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func (a *app) watchdogTestCommand() *cobra.Command {
	var tf targetFlags
	var rulesFile string
	var ruleNames []string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "test --rules FILE [--rule NAME] HOST:PORT | --sandbox NAME [--node N]",
		Short: "Show the sessions a rule would match right now, without acting",
		Long: `Read the processlist and open InnoDB transactions of the server (or of each
node of a sandbox) once and show, for each rule (or only --rule NAME), the
sessions it matches now with why, oldest first, and the sessions whose
conditions hold but which are never matched (replication and system threads,
dbpilot's own sessions, the rule's except list). Nothing is killed.` + exitHelp,
		Example: `  dbpilot watchdog test --rules rules.yaml --rule runaway-select 127.0.0.1:3306
  dbpilot watchdog test --rules rules.yaml --sandbox demo --node 2 --json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			rules, err := loadWatchdogRules(rulesFile, ruleNames)
			if err != nil {
				return err
			}
			keys, opts, err := tf.resolve(args)
			if err != nil {
				return err
			}
			type ruleReport struct {
				Instance string        `json:"instance"`
				Role     watchdog.Role `json:"role"`
				Rule     string        `json:"rule"`
				Action   string        `json:"action"`
				DryRun   bool          `json:"dry_run"`
				Matches  []sessionView `json:"matches"`
				Excluded []sessionView `json:"excluded"`
			}
			var reports []ruleReport
			for _, k := range keys {
				t, err := openWatchdogTarget(cmd.Context(), k, opts, rules)
				if err != nil {
					return err
				}
				s, err := t.snapshot(cmd.Context())
				t.db.Close()
				if err != nil {
					return err
				}
				for _, r := range rules {
					rep := ruleReport{Instance: k.String(), Role: s.Role, Rule: r.Name, Action: string(r.Action),
						DryRun: r.DryRun, Matches: []sessionView{}, Excluded: []sessionView{}}
					ms, ex := r.Matches(s, watchdog.Own{})
					for _, m := range ms {
						rep.Matches = append(rep.Matches, viewOf(m))
					}
					for _, m := range ex {
						rep.Excluded = append(rep.Excluded, viewOf(m))
					}
					reports = append(reports, rep)
				}
			}
			if asJSON {
				return writeJSON(a.stdout, reports)
			}
			for i, rep := range reports {
				if i > 0 {
					fmt.Fprintln(a.stdout)
				}
				mode := rep.Action
				if rep.DryRun && rep.Action != string(watchdog.ActionLog) {
					mode += ", dry-run"
				}
				fmt.Fprintf(a.stdout, "%s (%s), rule %s (%s): %d session(s) match\n", rep.Instance, rep.Role, rep.Rule, mode, len(rep.Matches))
				if len(rep.Matches) > 0 {
					printSessions(a.stdout, rep.Matches)
				}
				for _, e := range rep.Excluded {
					fmt.Fprintf(a.stdout, "  never matched: id %d %s@%s %s: %s\n", e.ID, e.User, e.Host, e.Command, strings.Join(e.Reasons, "; "))
				}
			}
			return nil
		},
	}
	tf.register(cmd)
	cmd.Flags().StringVar(&rulesFile, "rules", "", "YAML rules file (required)")
	cmd.Flags().StringArrayVar(&ruleNames, "rule", nil, "only this rule (repeatable; default every rule)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func loadWatchdogRules(file string, names []string) ([]*watchdog.Rule, error) {
	if file == "" {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "watchdog: give the rules file with --rules FILE")
	}
	rules, err := watchdog.LoadFile(file)
	if err != nil {
		return nil, err
	}
	return selectRules(file, rules, names)
}

func printSessions(w io.Writer, views []sessionView) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  ID\tUSER\tHOST\tDB\tCOMMAND\tTIME\tSTATE\tINFO\tWHY")
	for _, v := range views {
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%.1fs\t%s\t%s\t%s\n", v.ID, v.User, v.Host, v.DB, v.Command,
			v.TimeSeconds, truncate(v.State, 30), truncate(v.Info, 60), strings.Join(v.Reasons, ", "))
	}
	tw.Flush()
}

// watchdogEvent is one line of `watchdog run`.
type watchdogEvent struct {
	Time     time.Time         `json:"time"`
	Instance string            `json:"instance"`
	Rule     string            `json:"rule"`
	Action   watchdog.Action   `json:"action"`
	Decision watchdog.Decision `json:"decision"`
	Result   string            `json:"result,omitempty"` // killed, or the kill's error
	Session  sessionView       `json:"session"`
}

func (a *app) watchdogRunCommand() *cobra.Command {
	var tf targetFlags
	var rulesFile string
	var ruleNames []string
	var interval, duration time.Duration
	var asJSON, dryRun bool
	cmd := &cobra.Command{
		Use:   "run --rules FILE HOST:PORT | --sandbox NAME [--node N] [--interval 1s] [--duration D]",
		Short: "Evaluate the rules every interval and act on the matches (pt-kill)",
		Long: `Read the processlist of each server every --interval, evaluate the rules and
act: rules in dry-run (the default) and action log only print; others run
KILL QUERY or KILL CONNECTION, at most max_kills_per_minute per rule and
server. One line per match and action. A session is reported once while it
keeps matching; a KILL that fails (session already gone, missing privilege)
is printed once and not retried.

Runs until interrupted, or for --duration.` + exitHelp,
		Example: `  dbpilot watchdog run --rules rules.yaml 127.0.0.1:3306
  dbpilot watchdog run --rules rules.yaml --sandbox demo --interval 500ms --json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if interval <= 0 {
				return dbpilot.Errorf(dbpilot.EINVALID, "watchdog: --interval must be positive")
			}
			rules, err := loadWatchdogRules(rulesFile, ruleNames)
			if err != nil {
				return err
			}
			if dryRun {
				for i, r := range rules {
					c := *r
					c.DryRun = true
					rules[i] = &c
				}
			}
			keys, opts, err := tf.resolve(args)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if duration > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, duration)
				defer cancel()
			}
			targets := make([]*watchdogTarget, 0, len(keys))
			defer func() {
				for _, t := range targets {
					t.db.Close()
				}
			}()
			for _, k := range keys {
				t, err := openWatchdogTarget(ctx, k, opts, rules)
				if err != nil {
					return err
				}
				targets = append(targets, t)
			}
			out := &eventWriter{w: a.stdout, json: asJSON}
			var wg sync.WaitGroup
			for _, t := range targets {
				wg.Add(1)
				go func() {
					defer wg.Done()
					a.watchdogLoop(ctx, t, watchdog.NewEvaluator(rules, watchdog.Own{}, nil), interval, out)
				}()
			}
			wg.Wait()
			return nil
		},
	}
	tf.register(cmd)
	cmd.Flags().StringVar(&rulesFile, "rules", "", "YAML rules file (required)")
	cmd.Flags().StringArrayVar(&ruleNames, "rule", nil, "only this rule (repeatable; default every rule)")
	cmd.Flags().Var(durationFlag(&interval, time.Second), "interval", "evaluation interval")
	cmd.Flags().Var(durationFlag(&duration, 0), "duration", "stop after this long (default: until interrupted)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "put every rule in dry-run, whatever the file says")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per line")
	return cmd
}

// watchdogLoop evaluates one server every interval until ctx ends.
func (a *app) watchdogLoop(ctx context.Context, t *watchdogTarget, ev *watchdog.Evaluator, interval time.Duration, out *eventWriter) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	lastErr := ""
	for {
		s, err := t.snapshot(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			if msg := err.Error(); msg != lastErr { // once per distinct error, not every second
				a.log.Warn("watchdog: read processlist", "instance", t.db.Key.String(), "err", msg)
				lastErr = msg
			}
		case err == nil:
			lastErr = ""
			for _, m := range ev.Evaluate(s) {
				e := watchdogEvent{Time: time.Now(), Instance: t.db.Key.String(), Rule: m.Rule, Action: m.Action,
					Decision: m.Decision, Session: viewOf(m)}
				if m.Decision == watchdog.DecisionKill {
					// The kill outlives an interrupt of the loop: its own timeout bounds it.
					kerr := t.db.Kill(context.WithoutCancel(ctx), m.Session.ID, m.Action == watchdog.ActionKillQuery)
					e.Result = "killed"
					if kerr != nil {
						e.Result = "failed: " + kerr.Error()
					}
				}
				out.write(e)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// eventWriter prints events from several loops, one line each.
type eventWriter struct {
	mu   sync.Mutex
	w    io.Writer
	json bool
}

func (o *eventWriter) write(e watchdogEvent) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.json {
		b, _ := json.Marshal(e)
		fmt.Fprintln(o.w, string(b))
		return
	}
	s := e.Session
	line := fmt.Sprintf("%s %s rule=%s action=%s decision=%s id=%d user=%s host=%s db=%s command=%s time=%.1fs state=%q info=%q why=%q",
		e.Time.Format(time.RFC3339), e.Instance, e.Rule, e.Action, e.Decision, s.ID, s.User, s.Host, s.DB, s.Command,
		s.TimeSeconds, truncate(s.State, 40), truncate(s.Info, 80), strings.Join(s.Reasons, ", "))
	if e.Result != "" {
		line += fmt.Sprintf(" result=%q", e.Result)
	}
	fmt.Fprintln(o.w, line)
}
