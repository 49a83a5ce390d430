package topology

import (
	"fmt"
	"strings"

	"github.com/dbpilot/dbpilot"
)

// Verdict is the outcome of holistic failure detection of a primary.
type Verdict struct {
	State string // dbpilot.ClusterOK, ClusterUnreachable or ClusterDead
	// Reason is one line of evidence.
	Reason string
	// Replicas is how many replicas of the primary were asked; Reachable how
	// many of them answered; Lost how many of the reachable ones lost their
	// connection to it.
	Replicas, Reachable, Lost int
}

// Problem returns the problem the verdict names on primary: DeadPrimary
// (critical) for a dead primary, UnreachablePrimary (critical) for one that
// dbpilot cannot reach but that is not confirmed dead, and false for a
// primary that answers.
func (v Verdict) Problem(primary dbpilot.InstanceKey) (dbpilot.Problem, bool) {
	p := dbpilot.Problem{Severity: dbpilot.SeverityCritical, Instance: primary, Message: v.Reason,
		Detail: map[string]string{"replicas": fmt.Sprint(v.Replicas), "reachable_replicas": fmt.Sprint(v.Reachable), "lost": fmt.Sprint(v.Lost)}}
	switch v.State {
	case dbpilot.ClusterDead:
		p.Code = dbpilot.ProblemDeadPrimary
	case dbpilot.ClusterUnreachable:
		p.Code = dbpilot.ProblemUnreachablePrimary
	default:
		return dbpilot.Problem{}, false
	}
	return p, true
}

// AssessPrimary decides, like orchestrator's DeadMaster analysis, whether a
// primary dbpilot cannot reach is dead: only when every reachable replica of
// it has lost its replication connection too (IO thread not running, or
// connecting with an error). When some replica still receives from it, the
// primary is merely unreachable from dbpilot: alert, no failover. With no
// reachable replica at all, nothing confirms the failure: unreachable.
//
// replicas are the observed instances that have a channel from primary.
// Analyze names the verdict as a problem (DeadPrimary, UnreachablePrimary)
// from one crawl; serve calls it again on a fresh re-probe of the primary
// and its replicas before it recovers.
func AssessPrimary(primaryReachable bool, primary dbpilot.InstanceKey, replicas []*dbpilot.Instance) Verdict {
	if primaryReachable {
		return Verdict{State: dbpilot.ClusterOK, Reason: "primary " + primary.String() + " answers"}
	}
	v := Verdict{Replicas: len(replicas)}
	var still []string
	for _, r := range replicas {
		if !r.Reachable {
			continue
		}
		ch := r.Channel(primary)
		if ch == nil {
			continue
		}
		v.Reachable++
		if lostSource(ch) {
			v.Lost++
		} else {
			still = append(still, r.Key.String())
		}
	}
	switch {
	case v.Reachable == 0:
		v.State = dbpilot.ClusterUnreachable
		v.Reason = fmt.Sprintf("primary %s is unreachable and none of its %d replicas can be read to confirm it is dead", primary, len(replicas))
	case len(still) > 0:
		v.State = dbpilot.ClusterUnreachable
		v.Reason = fmt.Sprintf("dbpilot cannot reach primary %s, but replicas still replicate from it (%s): not dead", primary, strings.Join(still, ", "))
	default:
		v.State = dbpilot.ClusterDead
		v.Reason = fmt.Sprintf("primary %s is unreachable and all %d reachable replicas lost it", primary, v.Reachable)
	}
	return v
}

// lostSource reports whether a channel has lost its source: the IO thread is
// stopped, or it is (re)connecting — MariaDB/MySQL report "Connecting" while
// retrying, usually with Last_IO_Errno 2003/2013.
func lostSource(ch *dbpilot.ReplicationChannel) bool {
	return ch.IORunning != dbpilot.IORunning
}
