package daemon

import (
	"fmt"
	"strings"

	"github.com/dbpilot/dbpilot"
)

// Verdict is the outcome of holistic failure detection.
type Verdict struct {
	State string // dbpilot.ClusterOK, ClusterUnreachable or ClusterDead
	// Reason is one line of evidence.
	Reason string
	// Replicas is how many replicas of the primary were asked; Lost how many
	// of the reachable ones lost their connection to it.
	Replicas, Reachable, Lost int
}

// Assess decides, like orchestrator's DeadMaster analysis, whether a primary
// dbpilot cannot reach is dead: only when every reachable replica of it has
// lost its replication connection too (IO thread not running, or connecting
// with an error). When some replica still receives from it, the primary is
// merely unreachable from dbpilot: alert, no failover. With no reachable
// replica at all, nothing confirms the failure: unreachable.
//
// replicas are the freshly observed instances that have a channel from
// primary.
func Assess(primaryReachable bool, primary dbpilot.InstanceKey, replicas []*dbpilot.Instance) Verdict {
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
	switch ch.IORunning {
	case dbpilot.IORunning:
		return false
	case dbpilot.IOConnecting:
		return true
	}
	return true
}
