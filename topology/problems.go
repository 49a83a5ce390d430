package topology

import "github.com/dbpilot/dbpilot"

// ProblemKind describes one problem code Analyze names.
type ProblemKind struct {
	Code dbpilot.ProblemCode
	// Priority orders kinds by urgency, 1 first, as vtorc orders its
	// analyses: a cluster's worst problem is the one of lowest priority
	// number among those of the highest severity.
	Priority int
	// Action says what serve does about it.
	Action string
}

// ProblemKinds is every problem Analyze names, most urgent first.
var ProblemKinds = []ProblemKind{
	{dbpilot.ProblemDeadPrimary, 1, "automatic failover (auto_failover), unless blocked by a recent recovery"},
	{dbpilot.ProblemMultipleWritable, 2, "alert: fence every writable server but the primary (dbpilot fences a returning old primary itself); no automatic failover meanwhile"},
	{dbpilot.ProblemUnreachablePrimary, 3, "alert only: not confirmed dead, no failover"},
	{dbpilot.ProblemClusterOverlap, 4, "alert: automatic recovery of both clusters is suspended until the configuration is fixed"},
	{dbpilot.ProblemRefusesDbpilot, 5, "alert: the server is alive; no failover; fix dbpilot's account or the server's connection limits"},
	{dbpilot.ProblemNonPrimaryComponent, 6, "alert: the Galera node refuses queries; no automatic bootstrap"},
	{dbpilot.ProblemUnreachable, 7, "alert; a returning old primary is fenced"},
	{dbpilot.ProblemPrimaryReadOnly, 8, "alert: writes fail"},
	{dbpilot.ProblemClusterSizeMismatch, 9, "alert"},
	{dbpilot.ProblemReplicationIOStopped, 10, "alert"},
	{dbpilot.ProblemReplicationSQLStopped, 11, "alert"},
	{dbpilot.ProblemFlowControlActive, 12, "alert"},
	{dbpilot.ProblemErrantGTID, 13, "alert; the replica is not promoted while it has errant GTIDs"},
	{dbpilot.ProblemFencedOldPrimary, 14, "alert: it stays read_only outside the cluster until 'dbpilot rejoin' (--reclone with errant transactions), or serve rejoins it itself (rejoin: true) when it has none"},
	{dbpilot.ProblemNoLogReplicaUpdates, 15, "alert"},
	{dbpilot.ProblemReplicaLagging, 16, "alert"},
	{dbpilot.ProblemNodeNotSynced, 17, "alert"},
	{dbpilot.ProblemSSTInProgress, 18, "alert"},
	{dbpilot.ProblemNodeDesynced, 19, "alert"},
	{dbpilot.ProblemDesyncLeftOn, 20, "alert"},
	{dbpilot.ProblemRecvQueueGrowing, 21, "alert"},
	{dbpilot.ProblemSemiSyncNoReplicas, 22, "alert"},
	{dbpilot.ProblemReplicaNotReadOnly, 23, "alert"},
	{dbpilot.ProblemNoBinlog, 24, "alert"},
	{dbpilot.ProblemNoGTID, 25, "alert"},
	{dbpilot.ProblemSlowFailureDetection, 26, "alert"},
	{dbpilot.ProblemSemiSyncPrimaryOnReplica, 27, "alert; a failover or switchover turns the primary side off on the servers it moves, first, and back on after"},
	{dbpilot.ProblemSmallCommitGroups, 28, "advice only (serve, from its metrics: applyrate.Advise); nothing is changed"},
	{dbpilot.ProblemOptimisticRetries, 29, "advice only (serve, from its metrics: applyrate.Advise); nothing is changed"},
}

// Priority returns the priority of a problem code (ProblemKinds), or a number
// after all of them for an unknown code.
func Priority(code dbpilot.ProblemCode) int {
	for _, k := range ProblemKinds {
		if k.Code == code {
			return k.Priority
		}
	}
	return len(ProblemKinds) + 1
}

var severityRank = map[dbpilot.Severity]int{dbpilot.SeverityCritical: 0, dbpilot.SeverityWarning: 1, dbpilot.SeverityInfo: 2}

// Worst returns the most urgent problem of ps: highest severity first, then
// lowest Priority, then the first given. It reports false for no problems.
func Worst(ps []dbpilot.Problem) (dbpilot.Problem, bool) {
	if len(ps) == 0 {
		return dbpilot.Problem{}, false
	}
	rank := func(p dbpilot.Problem) (int, int) {
		s, ok := severityRank[p.Severity]
		if !ok {
			s = len(severityRank)
		}
		return s, Priority(p.Code)
	}
	best := ps[0]
	bs, bp := rank(best)
	for _, p := range ps[1:] {
		if s, pr := rank(p); s < bs || s == bs && pr < bp {
			best, bs, bp = p, s, pr
		}
	}
	return best, true
}
