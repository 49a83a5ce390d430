package daemon

import (
	"context"
	"fmt"
	"strings"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/recovery"
)

// executor returns the recovery executor acting through the controller
// for fence (see controller).
func (d *Daemon) executor(fence *dbpilot.Fence) *recovery.Executor {
	standby, _ := d.live.(StandbyFencer)
	return &recovery.Executor{Ctl: d.controller(fence), Audit: auditor{d}, Recloner: d.recloner, Standby: standby,
		Clock: recovery.Clock{Now: d.now, Sleep: d.sleep}, Opt: recovery.Options{
			ApplyTimeout:  d.cfg.Recovery.ApplyTimeout.D(),
			RepointVerify: d.cfg.Recovery.RepointVerify.D(),
			KillGrace:     d.cfg.Recovery.KillGrace.D(),
			MaxLag:        d.cfg.Switchover.MaxLag.D(),
			DrainTimeout:  d.cfg.Switchover.DrainTimeout.D(),
		}}
}

// auditor routes the executor's audit events through the daemon's log and store.
type auditor struct{ d *Daemon }

func (a auditor) Audit(ctx context.Context, e dbpilot.AuditEvent) error {
	if e.Event == dbpilot.AuditPromote {
		defer faultPoint("after-promotion") // once the promotion is recorded
	}
	a.d.audit(ctx, e)
	return nil
}

// inspectAll reads every key afresh through the controller, in parallel,
// each within recovery.ReadTimeout (recovery.ReadAll).
func (d *Daemon) inspectAll(ctx context.Context, keys []dbpilot.InstanceKey) []*dbpilot.Instance {
	return recovery.ReadAll(ctx, d.ctl, keys, d.now)
}

func keysOf(in []*dbpilot.Instance) []dbpilot.InstanceKey {
	out := make([]dbpilot.InstanceKey, len(in))
	for i, x := range in {
		out[i] = x.Key
	}
	return out
}

// runHooks runs a hook list; for pre-failover, a failure vetoes (returned
// as an error).
func (d *Daemon) runHooks(ctx context.Context, cs *clusterState, rec *dbpilot.Recovery, phase string, cmds []string, hc HooksConfig) error {
	if len(cmds) == 0 {
		return nil
	}
	var lost []string
	for _, k := range rec.LostReplicas {
		lost = append(lost, k.String())
	}
	env := map[string]string{
		"DBPILOT_CLUSTER":       cs.cfg.Name,
		"DBPILOT_KIND":          rec.Kind,
		"DBPILOT_PHASE":         phase,
		"DBPILOT_RECOVERY_ID":   fmt.Sprint(rec.ID),
		"DBPILOT_OLD_PRIMARY":   rec.OldPrimary.String(),
		"DBPILOT_NEW_PRIMARY":   "",
		"DBPILOT_LOST_REPLICAS": strings.Join(lost, ","),
		"DBPILOT_ERROR":         rec.Error,
	}
	if !rec.NewPrimary.IsZero() {
		env["DBPILOT_NEW_PRIMARY"] = rec.NewPrimary.String()
	}
	// Recorded before the first hook starts: a serve killed while they run
	// has its successor skip them (hooksStarted), never run them twice.
	d.audit(ctx, dbpilot.AuditEvent{Cluster: cs.cfg.Name, RecoveryID: rec.ID, Event: dbpilot.AuditHook,
		Message: fmt.Sprintf("%s hooks starting (%d)", phase, len(cmds)), Detail: map[string]string{"phase": phase, "state": "starting"}})
	for _, c := range cmds {
		res := runHookTracked(ctx, c, env, hc.Timeout.D(), d.hooks.track)
		detail := map[string]string{"command": c, "exit_code": fmt.Sprint(res.ExitCode), "took_ms": fmt.Sprint(res.Took.Milliseconds())}
		if res.Output != "" {
			detail["output"] = res.Output
		}
		msg := fmt.Sprintf("%s hook %q succeeded", phase, c)
		if res.Err != nil {
			msg = fmt.Sprintf("%s hook %q failed: %v", phase, c, res.Err)
		}
		d.audit(ctx, dbpilot.AuditEvent{Cluster: cs.cfg.Name, RecoveryID: rec.ID, Event: dbpilot.AuditHook, Message: msg, Detail: detail})
		if phase != "pre-failover" || res.Err == nil {
			continue
		}
		if res.TimedOut && hc.OnTimeout == "continue" {
			continue
		}
		return dbpilot.Errorf(dbpilot.ECONFLICT, "vetoed by pre-failover hook %q: %v", c, res.Err)
	}
	return nil
}

// withoutFenced drops the MultipleWritable problems of instances just made
// read_only.
func withoutFenced(ps []dbpilot.Problem, fenced []*dbpilot.Instance) []dbpilot.Problem {
	out := ps[:0:0]
	for _, p := range ps {
		drop := false
		for _, f := range fenced {
			if p.Code == dbpilot.ProblemMultipleWritable && p.Instance.Equal(f.Key) {
				drop = true
			}
		}
		if !drop {
			out = append(out, p)
		}
	}
	return out
}
