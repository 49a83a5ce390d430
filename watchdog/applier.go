package watchdog

// The built-in rule replica_applier_blocked.
//
// A replica applies the primary's DDL with an exclusive metadata lock (MDL)
// on the table; a user session on the replica that holds a shared one (a
// long SELECT on the table, or any statement of a transaction still open)
// makes the applier wait ("Waiting for table metadata lock") and the whole
// replica fall behind, since the statements after it wait too. The rule
// finds the appliers that have waited at least Rule.Wait and takes as
// victims the user sessions that hold the lock.
//
// Who holds it is known for sure only from performance_schema.metadata_locks
// (MariaDB 10.5+, MySQL 5.7+), which lists granted and pending locks when
// performance_schema is on and the wait/lock/metadata/sql/mdl instrument is
// enabled. MySQL 8.0 enables the instrument by default; MariaDB does not
// (nor do dbpilot's sandboxes, which run performance_schema with small
// sizing for query analytics): enabling it costs a little on every table
// open, a choice for the operator, not for the watchdog, which never
// changes performance_schema's setup. The read is cheap (the table holds
// at most performance_schema_max_metadata_locks rows) and is done only when
// an applier is seen waiting (NeedsMDL), in a second statement after the
// processlist.
//
// Without it (instrument disabled, performance_schema off, or the lock
// taken before the instrument was enabled, so that no granted lock
// appears), the victims come from a heuristic on the processlist: user
// sessions running a statement (not Sleep) for longer than the applier has
// waited, whose statement names the table the applier's statement names
// (ALTER/DROP/RENAME/TRUNCATE/OPTIMIZE TABLE, CREATE/DROP INDEX ... ON,
// INSERT/UPDATE/DELETE/REPLACE), and which do not wait for a metadata lock
// themselves (those queued behind the applier). It misses a session idle in
// an open transaction that read the table earlier (its statement is gone
// from the processlist): enable the instrument to catch those.
//
// Replication, system and dbpilot's own sessions are never victims (the
// built-in exclusions of every rule), nor are those in the rule's except.

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// MDLWait is one metadata lock wait as performance_schema.metadata_locks
// shows it: session Waiter waits for a lock on table Schema.Table that
// session Blocker holds.
type MDLWait struct {
	Waiter  uint64 `json:"waiter"`
	Blocker uint64 `json:"blocker"`
	Schema  string `json:"schema"`
	Table   string `json:"table"`
}

// isApplier reports whether a process is a replication applier: the SQL
// thread or a parallel worker (MariaDB: Slave_SQL, Slave_worker; MySQL: a
// "system user" thread).
func isApplier(p Process) bool {
	switch p.Command {
	case "Slave_IO", "Replica_IO", "Binlog Dump", "Binlog Dump GTID", "Daemon":
		return false
	}
	return strings.HasPrefix(p.Command, "Slave_") || strings.HasPrefix(p.Command, "Replica_") || p.User == "system user"
}

// waitsForMDL reports whether a process waits for a metadata lock.
func waitsForMDL(p Process) bool {
	return strings.Contains(strings.ToLower(p.State), "metadata lock")
}

// BlockedAppliers returns the replication appliers of s that wait for a
// metadata lock.
func (s Snapshot) BlockedAppliers() []Process {
	var out []Process
	for _, p := range s.Processes {
		if isApplier(p) && waitsForMDL(p) {
			out = append(out, p)
		}
	}
	return out
}

// NeedsMDL reports whether evaluating rules on s wants
// performance_schema's metadata locks (Snapshot.MDL): a
// replica_applier_blocked rule applies to s and an applier waits for a
// metadata lock. The caller reads them then, and only then.
func NeedsMDL(rules []*Rule, s Snapshot) bool {
	for _, r := range rules {
		if r.Builtin == BuiltinReplicaApplierBlocked && r.roleMatches(s.Role) {
			return len(s.BlockedAppliers()) > 0
		}
	}
	return false
}

// applierMatches is Matches for replica_applier_blocked: the sessions that
// block an applier waiting at least r.Wait for a metadata lock.
func (r *Rule) applierMatches(s Snapshot, own Own) (matches, excluded []Match) {
	sessions := s.Sessions()
	byID := make(map[uint64]Session, len(sessions))
	for _, sess := range sessions {
		byID[sess.ID] = sess
	}
	done := map[uint64]bool{}
	for _, a := range s.BlockedAppliers() {
		if a.Time < r.Wait {
			continue
		}
		why := fmt.Sprintf("blocks replication applier %d (%s) waiting %s ≥ %s for a metadata lock", a.ID, a.Command, round(a.Time), r.Wait)
		victims := map[uint64]string{}
		if s.MDLKnown {
			for _, w := range s.MDL {
				if w.Waiter == a.ID {
					victims[w.Blocker] = fmt.Sprintf("holds a metadata lock on %s.%s (performance_schema.metadata_locks)", w.Schema, w.Table)
				}
			}
		}
		if len(victims) == 0 {
			for _, t := range applierTables(a.Info, a.DB) {
				for _, sess := range sessions {
					if sess.ID == a.ID || isApplier(sess.Process) || sess.Command == "Sleep" || waitsForMDL(sess.Process) ||
						sess.Time < a.Time || !t.mentionedBy(sess.Process) {
						continue
					}
					if _, ok := victims[sess.ID]; !ok {
						victims[sess.ID] = fmt.Sprintf("running %s on %s, longer than the applier waits (processlist heuristic)", round(sess.Time), t)
					}
				}
			}
		}
		for id, how := range victims {
			sess, ok := byID[id]
			if !ok || done[id] {
				continue
			}
			done[id] = true
			m := Match{Rule: r.Name, Action: r.Action, Session: sess, Reasons: []string{why, how}}
			if x := builtinExclusion(sess, s.Self, own); x != "" || r.except(sess) != "" {
				if x == "" {
					x = r.except(sess)
				}
				m.Decision, m.Reasons = DecisionExcluded, []string{x}
				excluded = append(excluded, m)
				continue
			}
			matches = append(matches, m)
		}
	}
	sortOldest(matches)
	sortOldest(excluded)
	return matches, excluded
}

// table is a table an applier's statement names; schema "" when unknown.
type table struct{ schema, name string }

func (t table) String() string {
	if t.schema == "" {
		return t.name
	}
	return t.schema + "." + t.name
}

const identPattern = "(?:`(?:[^`]|``)+`|[A-Za-z0-9_$]+)"

var (
	qualifiedName = regexp.MustCompile(`^\s*(` + identPattern + `)(?:\s*\.\s*(` + identPattern + `))?`)
	// applierStmt finds the statement's table list after its verb.
	applierStmt = regexp.MustCompile(`(?is)^\s*(?:/\*.*?\*/\s*)*(?:` +
		`ALTER\s+(?:ONLINE\s+)?(?:IGNORE\s+)?TABLE(?:\s+IF\s+EXISTS)?` +
		`|(?P<list>DROP\s+(?:TEMPORARY\s+)?TABLES?(?:\s+IF\s+EXISTS)?|RENAME\s+TABLES?|OPTIMIZE\s+(?:NO_WRITE_TO_BINLOG\s+|LOCAL\s+)?TABLES?|ANALYZE\s+(?:NO_WRITE_TO_BINLOG\s+|LOCAL\s+)?TABLES?|REPAIR\s+(?:NO_WRITE_TO_BINLOG\s+|LOCAL\s+)?TABLES?)` +
		`|TRUNCATE(?:\s+TABLE)?` +
		`|(?:CREATE\s+(?:OR\s+REPLACE\s+)?(?:ONLINE\s+)?(?:UNIQUE\s+|FULLTEXT\s+|SPATIAL\s+)?|DROP\s+(?:ONLINE\s+)?)INDEX\s+(?:IF\s+(?:NOT\s+)?EXISTS\s+)?` + identPattern + `\s+ON` +
		`|INSERT(?:\s+(?:LOW_PRIORITY|DELAYED|HIGH_PRIORITY|IGNORE))*(?:\s+INTO)?` +
		`|REPLACE(?:\s+(?:LOW_PRIORITY|DELAYED))*(?:\s+INTO)?` +
		`|UPDATE(?:\s+(?:LOW_PRIORITY|IGNORE))*` +
		`|DELETE(?:\s+(?:LOW_PRIORITY|QUICK|IGNORE))*\s+FROM` +
		`)\s`)
	listGroup = applierStmt.SubexpIndex("list")
)

// applierTables returns the tables an applier's statement names (db is the
// applier's current schema, for unqualified names); nil when it names none
// the heuristic recognises.
func applierTables(info, db string) []table {
	loc := applierStmt.FindStringSubmatchIndex(info)
	if loc == nil {
		return nil
	}
	rest := info[loc[1]:]
	var out []table
	for {
		m := qualifiedName.FindStringSubmatch(rest)
		if m == nil {
			break
		}
		t := table{schema: db, name: unquote(m[1])}
		if m[2] != "" {
			t.schema, t.name = unquote(m[1]), unquote(m[2])
		}
		out = append(out, t)
		// A list (DROP TABLE a, b; RENAME TABLE a TO b, c TO d): the
		// next name after a comma.
		if loc[2*listGroup] < 0 {
			break
		}
		i := strings.IndexByte(rest, ',')
		if i < 0 {
			break
		}
		rest = rest[i+1:]
	}
	return out
}

func unquote(ident string) string {
	if len(ident) >= 2 && ident[0] == '`' {
		return strings.ReplaceAll(ident[1:len(ident)-1], "``", "`")
	}
	return ident
}

// mentionedBy reports whether a session's statement names the table:
// schema.name with the table's schema, or name alone in a session whose
// current schema is the table's (any session when the schema is unknown).
func (t table) mentionedBy(p Process) bool {
	q := func(s string) string { return "`?" + regexp.QuoteMeta(s) + "`?" }
	re, err := regexp.Compile("(?i)(?:^|[^A-Za-z0-9_$.`])(?:(" + identPattern + `)\s*\.\s*)?` + q(t.name) + "(?:$|[^A-Za-z0-9_$`])")
	if err != nil {
		return false
	}
	for _, m := range re.FindAllStringSubmatch(p.Info, -1) {
		switch {
		case m[1] != "":
			if t.schema == "" || strings.EqualFold(unquote(m[1]), t.schema) {
				return true
			}
		case t.schema == "" || strings.EqualFold(p.DB, t.schema):
			return true
		}
	}
	return false
}

// applierWaits tracks since when the watchdog has seen each applier wait
// for a metadata lock. The processlist's Time of the SQL thread and of
// parallel workers is the age of the event being applied (its timestamp on
// the primary), not the time in the current state: on a replica that lags
// it exceeds the wait. The evaluator uses the smaller of the two.
type applierWaits map[applierKey]time.Time

type applierKey struct {
	id   uint64
	info string
}

// adjust returns s with each blocked applier's Time capped at how long it
// has been seen waiting, and forgets appliers no longer waiting.
func (w applierWaits) adjust(s Snapshot, now time.Time) Snapshot {
	seen := map[applierKey]bool{}
	var procs []Process
	for i, p := range s.Processes {
		if !isApplier(p) || !waitsForMDL(p) {
			continue
		}
		k := applierKey{p.ID, p.Info}
		seen[k] = true
		first, ok := w[k]
		if !ok {
			first = now
			w[k] = now
		}
		if d := now.Sub(first); d < p.Time {
			if procs == nil {
				procs = slices.Clone(s.Processes)
			}
			procs[i].Time = d
		}
	}
	for k := range w {
		if !seen[k] {
			delete(w, k)
		}
	}
	if procs != nil {
		s.Processes = procs
	}
	return s
}
