package daemon

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/dbpilot/dbpilot"
)

// primaryProbe is the re-probe of a cluster's failing primary: at most one
// attempt in flight, shared by the confirmation rounds. A hung primary
// (SIGSTOP, a frozen host) accepts TCP and never greets: every attempt
// lasts the whole probe timeout, and a round that waited for its own
// attempt each time confirmed the failure once per probe timeout instead of
// every failingEvery.
type primaryProbe struct {
	mu     sync.Mutex
	key    dbpilot.InstanceKey
	done   chan struct{}     // closed when the attempt in flight ends; nil when none is
	last   *dbpilot.Instance // the last finished attempt: Reachable, or LastError/RefusedErrno
	failed bool              // the last finished attempt got no answer at all
}

// reprobe returns what the primary key answered: the result of the attempt
// in flight (one is started when none is), or — when the previous attempt
// already got no answer at all and the one in flight has not answered
// within failingEvery — no answer. Any answer, an error packet included,
// is proof of life (Instance.Answers); a primary that answers resets it.
func (d *Daemon) reprobe(ctx context.Context, cs *clusterState, key dbpilot.InstanceKey) *dbpilot.Instance {
	pp := &cs.reprobe
	pp.mu.Lock()
	if !pp.key.Equal(key) {
		pp.key, pp.done, pp.last, pp.failed = key, nil, nil, false
	}
	if pp.done == nil {
		done := make(chan struct{})
		pp.done = done
		go func() {
			defer close(done)
			pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.cfg.Detection.ConfirmTimeout.D())
			defer cancel()
			res := &dbpilot.Instance{Key: key}
			if _, err := d.probe.Inspect(pctx, key); err != nil {
				res.LastError, res.RefusedErrno = err.Error(), dbpilot.ServerErrno(err)
			} else {
				res.Reachable = true
			}
			pp.mu.Lock()
			defer pp.mu.Unlock()
			if pp.done == done {
				pp.done, pp.last, pp.failed = nil, res, !res.Answers()
			}
		}()
	}
	done, failedBefore := pp.done, pp.failed
	pp.mu.Unlock()

	var grace <-chan time.Time
	if failedBefore {
		t := time.NewTimer(failingEvery)
		defer t.Stop()
		grace = t.C
	}
	start := time.Now()
	select {
	case <-done:
		pp.mu.Lock()
		defer pp.mu.Unlock()
		if pp.last == nil || !pp.last.Key.Equal(key) {
			return &dbpilot.Instance{Key: key, LastError: fmt.Sprintf("mysql: probe %s: superseded", key)}
		}
		r := *pp.last
		return &r
	case <-grace:
		return &dbpilot.Instance{Key: key, LastError: fmt.Sprintf("mysql: probe %s: no answer for %s, after a probe that got none", key, time.Since(start).Round(time.Millisecond))}
	case <-ctx.Done():
		return &dbpilot.Instance{Key: key, LastError: fmt.Sprintf("mysql: probe %s: %v", key, ctx.Err())}
	}
}

// answered records that the primary answered a probe of the tick: a later
// failure starts with a whole attempt again.
func (pp *primaryProbe) answered() {
	pp.mu.Lock()
	pp.failed = false
	pp.mu.Unlock()
}
