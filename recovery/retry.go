package recovery

import (
	"context"
	"errors"
	"fmt"

	"github.com/dbpilot/dbpilot"
)

// MaxCandidates is how many candidates a failover tries when the chosen one
// fails before it is promoted.
const MaxCandidates = 3

// Retry says how FailoverRetrying plans again after a candidate failed.
type Retry struct {
	// Cluster and OldPrimary name the failover; Rules are the cluster's
	// promotion rules (a failed candidate is added as must_not).
	Cluster    string
	OldPrimary dbpilot.InstanceKey
	Rules      Rules
	// Members reads the cluster's members afresh for a new plan.
	Members func(ctx context.Context) []*dbpilot.Instance
	// Replanned is told of each new plan, already in rec (nil: nothing).
	Replanned func(ctx context.Context)
}

// FailoverRetrying runs the failover of plan p (Failover); a candidate that
// fails before its promotion (EUNAVAIL, not a lost leadership) is excluded
// and the failover planned again over a fresh read of the members, up to
// MaxCandidates. Each plan is audited before it runs, each failed
// candidate after. rec receives the plan that ran and its outcome.
func (e *Executor) FailoverRetrying(ctx context.Context, p *Plan, rec *dbpilot.Recovery, rt Retry) error {
	rules := rt.Rules
	for attempt := 1; ; attempt++ {
		e.auditEvent(ctx, dbpilot.AuditEvent{Cluster: rt.Cluster, RecoveryID: rec.ID, Instance: p.Candidate, Event: dbpilot.AuditPlan, Message: p.Reason, Detail: map[string]string{"plan": p.String()}})
		err := e.Failover(ctx, p, rec)
		if err == nil {
			rec.NewPrimary = p.Candidate
			return nil
		}
		// A candidate that died before promotion: plan again without it.
		if dbpilot.ErrorCode(err) != dbpilot.EUNAVAIL || attempt >= MaxCandidates || ctx.Err() != nil || errors.Is(err, dbpilot.ErrLeadershipLost) {
			return err
		}
		e.auditEvent(ctx, dbpilot.AuditEvent{Cluster: rt.Cluster, RecoveryID: rec.ID, Instance: p.Candidate, Event: dbpilot.AuditCandidateFailed,
			Message: fmt.Sprintf("candidate %s failed (%v); planning again without it", p.Candidate, err)})
		rules = rules.With(p.Candidate, dbpilot.PromoteMustNot)
		next, perr := PlanFailover(rt.Cluster, rt.OldPrimary, rt.Members(ctx), rules)
		if perr != nil {
			return fmt.Errorf("%w; no other candidate: %v", err, perr)
		}
		p = next
		rec.Plan = p.String()
		rec.NewPrimary = p.Candidate
		rec.LostReplicas = nil
		if rt.Replanned != nil {
			rt.Replanned(ctx)
		}
	}
}

// With returns a copy of r with k's rule set to rule.
func (r Rules) With(k dbpilot.InstanceKey, rule dbpilot.PromotionRule) Rules {
	out := Rules{}
	for key, v := range r {
		out[key] = v
	}
	out[k] = rule
	return out
}

// auditEvent records e as it is (outside a run); a failing auditor is
// ignored, as the daemon's own audit does.
func (e *Executor) auditEvent(ctx context.Context, ev dbpilot.AuditEvent) {
	if e.Audit == nil {
		return
	}
	_ = e.Audit.Audit(ctx, ev)
}
