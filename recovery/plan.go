// Package recovery changes replication topologies: failover of a dead
// primary, planned switchover, and relocation of replicas. A planner (pure:
// observed instances in, a plan out) decides and explains each decision; an
// executor applies a plan through a dbpilot.ReplicationController and audits every step.
// An Engine per cluster holds the failure detection state, decides when a
// dead primary is recovered, runs the failover, fences and rejoins old
// primaries and resumes an interrupted recovery; the daemon feeds it its
// observations.
package recovery

import (
	"github.com/dbpilot/dbpilot"
)

// Plan is what a recovery will do and why. Planners fill it from observed
// state; the executor applies it; String renders it for people (dry runs,
// the audit log, `dbpilot recoveries`).
type Plan struct {
	Kind       string              `json:"kind"` // dbpilot.RecoveryFailover*, RecoverySwitchover
	Cluster    string              `json:"cluster"`
	OldPrimary dbpilot.InstanceKey `json:"old_primary"`
	// Candidate is the replica to promote.
	Candidate dbpilot.InstanceKey `json:"candidate"`
	// Reason says why the candidate won, in one line.
	Reason string `json:"reason"`
	// Candidates lists every replica considered, best first, with why each
	// is or is not eligible.
	Candidates []Candidate `json:"candidates"`
	// CatchUp lists what the candidate must fetch from other replicas before
	// promotion, because they received more in some GTID domain (or, on
	// MySQL, some source UUID).
	CatchUp []CatchUp `json:"catch_up,omitempty"`
	// Repoint lists the other replicas to move under the candidate.
	Repoint []dbpilot.InstanceKey `json:"repoint,omitempty"`
	// Lost lists replicas that cannot follow the candidate, with the reason.
	Lost []Lost `json:"lost,omitempty"`
	// TargetPosition is, for a switchover, the old primary's GTID position the
	// candidate must reach before promotion.
	TargetPosition string `json:"target_position,omitempty"`
}

// Candidate is one replica considered for promotion.
type Candidate struct {
	Key      dbpilot.InstanceKey   `json:"key"`
	Eligible bool                  `json:"eligible"`
	Rule     dbpilot.PromotionRule `json:"rule"`
	// Position is what the replica has received (MariaDB Gtid_IO_Pos merged
	// with gtid_current_pos; MySQL retrieved ∪ executed).
	Position string `json:"position"`
	// Notes explain ineligibility or ranking, one short phrase each.
	Notes []string `json:"notes,omitempty"`
}

// CatchUp is a temporary replication of the candidate from a replica that
// received more in some domains.
type CatchUp struct {
	From dbpilot.InstanceKey `json:"from"`
	// Domains (MariaDB) the candidate must fetch from From; replication from
	// From ignores every other domain (IGNORE_DOMAIN_IDS).
	Domains []uint32 `json:"domains,omitempty"`
	// Until is the GTID position the candidate must reach.
	Until string `json:"until"`
}

// Lost is a replica that cannot follow the new primary.
type Lost struct {
	Key    dbpilot.InstanceKey `json:"key"`
	Reason string              `json:"reason"`
}

// Rules maps instances to promotion rules; missing instances are neutral.
type Rules map[dbpilot.InstanceKey]dbpilot.PromotionRule

// Rule returns the rule for k (by normalized key), neutral by default.
func (r Rules) Rule(k dbpilot.InstanceKey) dbpilot.PromotionRule {
	nk := k.Normalized()
	for key, rule := range r {
		if key.Normalized() == nk && rule != "" {
			return rule
		}
	}
	return dbpilot.PromoteNeutral
}
