package recovery

import (
	"context"
	"log/slog"

	"github.com/dbpilot/dbpilot"
)

// Shared is the bookkeeping of recoveries shared between coordinated
// serves: a recovery is recorded in the coordination state before its
// first mutating step, under the leader's fence, and its steps and end
// after, so that a serve that takes the leadership over resumes it rather
// than starting another. A serve alone (no Coord, or no fence) records
// nothing here: it resumes from its state store.
type Shared struct {
	Coord dbpilot.Coordinator // nil: a serve alone
	Log   *slog.Logger        // nil: slog's default
}

// Begin records rec in the coordination state and gives it the shared ID.
// resumed is the shared recovery taken over from a serve that stopped, nil
// for a new one. It returns nil, nil when nothing is shared.
func (s Shared) Begin(ctx context.Context, fence *dbpilot.Fence, rec *dbpilot.Recovery, resumed *dbpilot.SharedRecovery) (*dbpilot.SharedRecovery, error) {
	if fence == nil || s.Coord == nil {
		return nil, nil
	}
	sr := &dbpilot.SharedRecovery{Kind: rec.Kind, OldPrimary: rec.OldPrimary, Candidate: rec.NewPrimary, Started: rec.Started}
	if resumed != nil {
		sr = resumed
		sr.ResumedBy = append(sr.ResumedBy, fence.Member)
		sr.Candidate = rec.NewPrimary
		sr.Member, sr.Token = fence.Member, fence.Token
	}
	if err := s.Coord.BeginRecovery(ctx, *fence, sr); err != nil {
		return nil, err
	}
	rec.ID = sr.ID
	return sr, nil
}

// Update records the recovery's progress (step, "" for none) or its end; a
// failure is logged (the leadership may be gone: the next leader reads the
// servers).
func (s Shared) Update(ctx context.Context, fence *dbpilot.Fence, sr *dbpilot.SharedRecovery, rec *dbpilot.Recovery, step string) {
	if sr == nil || fence == nil || s.Coord == nil {
		return
	}
	sr.Candidate = rec.NewPrimary
	if step != "" {
		sr.Steps = append(sr.Steps, step)
	}
	if !rec.Ended.IsZero() {
		sr.Ended = rec.Ended
		sr.State = dbpilot.SharedDone
		if !rec.Success {
			sr.State, sr.Error = dbpilot.SharedFailed, rec.Error
		}
	}
	if err := s.Coord.UpdateRecovery(context.WithoutCancel(ctx), *fence, sr); err != nil {
		log := s.Log
		if log == nil {
			log = slog.Default()
		}
		log.Warn("coordination: record recovery progress", "cluster", sr.Cluster, "recovery", sr.ID, "err", err)
	}
}
