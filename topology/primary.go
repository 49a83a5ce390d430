package topology

import (
	"fmt"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot"
)

// Verdict is the outcome of holistic failure detection of a primary.
type Verdict struct {
	State string // dbpilot.ClusterOK, ClusterUnreachable or ClusterDead
	// Reason is one line of evidence.
	Reason string
	// Replicas is how many replicas of the primary were asked; Reachable how
	// many of them answered and voted (a replica whose IO thread was
	// stopped by hand does not); Lost how many of those lost their
	// connection to it.
	Replicas, Reachable, Lost int
	// Refused is set when the primary answered dbpilot with an error: it
	// is alive and refuses dbpilot's user.
	Refused bool
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
		if v.Refused {
			return dbpilot.Problem{}, false // Analyze reports RefusesDbpilot
		}
	default:
		return dbpilot.Problem{}, false
	}
	return p, true
}

// AssessPrimary decides, like orchestrator's DeadMaster analysis, whether a
// primary dbpilot cannot read is dead, with one difference that matters:
// an answer is proof of life. A primary that answered dbpilot with a MySQL
// error packet (primary.RefusedErrno: access denied, account locked, too
// many connections, host blocked) is alive and refuses dbpilot: no failover.
//
// Otherwise each replica of it votes from its channel (ChannelVote): a
// running IO thread, or one whose last error is the primary's answer (it
// refused the replication user, or sent a binlog error), saw a live
// primary; an IO thread that lost its connection (transport error) votes
// dead; an IO thread stopped by hand without an error does not vote. The
// primary is dead only when every voting replica says so and at least one
// votes; otherwise it is merely unreachable from dbpilot: alert, no
// failover.
//
// replicas are the observed instances that have a channel from primary.
// Analyze names the verdict as a problem (DeadPrimary, UnreachablePrimary,
// and RefusesDbpilot for a refusing primary) from one crawl; serve calls it
// again on a fresh re-probe of the primary and its replicas before it
// recovers.
func AssessPrimary(primary *dbpilot.Instance, replicas []*dbpilot.Instance) Verdict {
	key := primary.Key
	if primary.Reachable {
		return Verdict{State: dbpilot.ClusterOK, Reason: "primary " + key.String() + " answers"}
	}
	v := Verdict{Replicas: len(replicas)}
	if primary.RefusedErrno != 0 {
		v.State, v.Refused = dbpilot.ClusterUnreachable, true
		v.Reason = fmt.Sprintf("primary %s answers but refuses dbpilot (%s): it is alive; no failover", key, primary.LastError)
		return v
	}
	var still, silent []string
	for _, r := range replicas {
		if !r.Reachable {
			continue
		}
		ch := r.Channel(key)
		if ch == nil {
			continue
		}
		switch ChannelVote(ch) {
		case VoteDead:
			v.Reachable++
			v.Lost++
		case VoteAlive:
			v.Reachable++
			still = append(still, r.Key.String())
		default:
			silent = append(silent, r.Key.String())
		}
	}
	switch {
	case v.Reachable == 0 && len(silent) > 0:
		v.State = dbpilot.ClusterUnreachable
		v.Reason = fmt.Sprintf("primary %s is unreachable, and its replicas that can be read (%s) have their IO thread stopped without an error: nothing confirms it is dead", key, strings.Join(silent, ", "))
	case v.Reachable == 0:
		v.State = dbpilot.ClusterUnreachable
		v.Reason = fmt.Sprintf("primary %s is unreachable and none of its %d replicas can be read to confirm it is dead", key, len(replicas))
	case len(still) > 0:
		v.State = dbpilot.ClusterUnreachable
		v.Reason = fmt.Sprintf("dbpilot cannot reach primary %s, but replicas still see it alive (%s): not dead", key, strings.Join(still, ", "))
	default:
		v.State = dbpilot.ClusterDead
		v.Reason = fmt.Sprintf("primary %s is unreachable and all %d reachable replicas lost it", key, v.Reachable)
	}
	return v
}

// Vote is what a replica's channel says of its source's life.
type Vote int

// Votes of ChannelVote.
const (
	VoteNone  Vote = iota // the IO thread was stopped by hand: no evidence
	VoteAlive             // receiving, or the source answered with an error
	VoteDead              // the connection to the source failed in transport
)

// ChannelVote says what ch's IO thread knows of its source. A running IO
// thread saw it alive. An IO thread whose last error is the source's own
// answer (a server error number below 2000 that is not a network error:
// 1045 access denied, 4151 account locked, 1040, 1129, 1236 binlog error)
// saw it alive too. Client errors (2003 cannot connect, 2013 lost
// connection, 2006 gone away, ...) and the server-side network errors
// (1158-1161) vote dead, as does an IO thread connecting with no error yet
// (the moment between losing the source and the first failed reconnect).
// An IO thread stopped without an error was stopped by hand: no vote.
func ChannelVote(ch *dbpilot.ReplicationChannel) Vote {
	if ch.IORunning == dbpilot.IORunning {
		if Silent(ch) {
			return VoteDead // connected, but its source sends nothing: hung
		}
		return VoteAlive
	}
	switch errno := ch.LastIOErrno; {
	case errno == 0:
		if ch.IORunning == dbpilot.IOStopped {
			return VoteNone
		}
		return VoteDead // connecting, preparing: the connection was lost
	case transportErrno(errno):
		return VoteDead
	default:
		return VoteAlive
	}
}

// Silent reports whether a running IO thread has received nothing from its
// source — no event, no heartbeat — for SilentPeriods heartbeat periods
// (and at least MinSilence): its source hangs (SIGSTOP, a stalled disk) or
// the link is cut, long before slave_net_timeout makes the IO thread say so.
func Silent(ch *dbpilot.ReplicationChannel) bool {
	return ch.HeartbeatPeriod > 0 && !ch.HeartbeatUnknown &&
		ch.SourceSilentFor >= max(time.Duration(SilentPeriods*float64(ch.HeartbeatPeriod)), MinSilence)
}

// SilentPeriods and MinSilence: see Silent.
const (
	SilentPeriods = 2.5
	MinSilence    = 2 * time.Second
)

// transportErrno reports whether a replication IO error number is a
// transport failure rather than the source's answer.
func transportErrno(n int) bool {
	switch {
	case n >= 2000 && n < 3000: // CR_* client errors: 2003, 2013, 2006, 2002, 2026 ...
		return true
	case n >= 1158 && n <= 1161: // ER_NET_READ_ERROR .. ER_NET_WRITE_INTERRUPTED
		return true
	case n == 1184 || n == 1152 || n == 1153: // ER_NEW_ABORTING_CONNECTION, ER_ABORTING_CONNECTION, ER_NET_PACKET_TOO_LARGE
		return true
	}
	return false
}
