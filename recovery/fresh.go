package recovery

import (
	"context"
	"sync"
	"time"

	"github.com/dbpilot/dbpilot"
)

// ReadTimeout bounds each read of ReadAll: a recovery never waits on an
// unresponsive server (a SIGSTOPped primary kept the plan waiting for the
// 30 s query timeout).
const ReadTimeout = 2 * time.Second

// ReadAll reads every key afresh through insp, in parallel, each within
// ReadTimeout: what a plan is made from. A failed read is an unreachable
// instance with its error, stamped now().
func ReadAll(ctx context.Context, insp dbpilot.Inspector, keys []dbpilot.InstanceKey, now func() time.Time) []*dbpilot.Instance {
	ctx, cancel := context.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	out := make([]*dbpilot.Instance, len(keys))
	var wg sync.WaitGroup
	for i, k := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			inst, err := insp.Inspect(ctx, k)
			if err != nil {
				inst = &dbpilot.Instance{Key: k, LastError: err.Error(), ObservedAt: now()}
			}
			out[i] = inst
		}()
	}
	wg.Wait()
	return out
}

// ReadMembers reads the members of a cluster afresh for a failover plan
// (ReadAll), except its old primary, confirmed dead: it keeps its last
// observation, unreachable. A hung old primary would cost the plan the
// whole read bound for an answer it does not give.
func ReadMembers(ctx context.Context, insp dbpilot.Inspector, members []*dbpilot.Instance, old dbpilot.InstanceKey, now func() time.Time) []*dbpilot.Instance {
	var keys []dbpilot.InstanceKey
	var dead *dbpilot.Instance
	for _, m := range members {
		if m.Key.Equal(old) {
			cp := *m
			cp.Reachable = false
			dead = &cp
			continue
		}
		keys = append(keys, m.Key)
	}
	fresh := ReadAll(ctx, insp, keys, now)
	if dead != nil {
		fresh = append(fresh, dead)
	}
	return fresh
}
