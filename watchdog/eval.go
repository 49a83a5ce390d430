package watchdog

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Process is one row of a server's processlist.
type Process struct {
	ID      uint64
	User    string
	Host    string // as the server shows it, with the client's :port
	DB      string
	Command string
	State   string
	Info    string
	// Time is how long the session has been in its current state (TIME_MS
	// on MariaDB, TIME in seconds on MySQL).
	Time time.Duration
}

// Trx is one row of information_schema.INNODB_TRX.
type Trx struct {
	ThreadID   uint64        // trx_mysql_thread_id: the processlist ID
	Age        time.Duration // now - trx_started, as the server computes it
	RowsLocked int64         // trx_rows_locked
	State      string        // trx_state: RUNNING, LOCK WAIT, ...
}

// Snapshot is what the watchdog evaluates: one read of a server's
// processlist and open InnoDB transactions.
type Snapshot struct {
	At   time.Time // when it was read (informational)
	Role Role      // RolePrimary or RoleReplica; "" when unknown (rules with a role then match nothing)
	// Self is the connection ID of the session that read the snapshot; it
	// is never matched.
	Self      uint64
	Processes []Process
	Trx       []Trx
	// MDLKnown says MDL was read from performance_schema.metadata_locks
	// (the wait/lock/metadata/sql/mdl instrument is enabled); MDL lists
	// the sessions that block others' pending table metadata locks. Read
	// only when NeedsMDL (replica_applier_blocked, an applier waiting).
	MDLKnown bool
	MDL      []MDLWait
}

// Session is a process with its InnoDB transaction, if it has one open.
type Session struct {
	Process
	Trx *Trx
}

// Sessions joins the processlist and the transactions on the thread ID.
func (s Snapshot) Sessions() []Session {
	byThread := make(map[uint64]*Trx, len(s.Trx))
	for i := range s.Trx {
		byThread[s.Trx[i].ThreadID] = &s.Trx[i]
	}
	out := make([]Session, len(s.Processes))
	for i, p := range s.Processes {
		out[i] = Session{Process: p, Trx: byThread[p.ID]}
	}
	return out
}

// Own identifies dbpilot's own sessions, which no rule ever matches:
// sessions of these users (serve's monitoring user), these connection IDs,
// and any statement carrying a "dbpilot:" marker comment.
type Own struct {
	Users []string
	IDs   []uint64
}

// Decision is what the evaluator decided for a match.
type Decision string

// Decisions.
const (
	DecisionLog         Decision = "log"          // action log: report only
	DecisionKill        Decision = "kill"         // the caller kills the session (KILL QUERY or KILL CONNECTION, per Match.Action)
	DecisionDryRun      Decision = "dry_run"      // the rule would kill it, but is in dry-run
	DecisionRateLimited Decision = "rate_limited" // the rule would kill it, but max_kills_per_minute is reached
	DecisionExcluded    Decision = "excluded"     // conditions hold but the session is never matched (Rule.Matches only)
)

// Match is a session matched by a rule, with why and what to do.
type Match struct {
	Rule     string   `json:"rule"`
	Action   Action   `json:"action"`
	Decision Decision `json:"decision"`
	Session  Session  `json:"session"`
	// Reasons say which conditions held ("busy 5.1s ≥ 2s"); for an
	// excluded session, why it is excluded.
	Reasons []string `json:"reasons"`
}

// HostName returns the client host of a processlist Host, without the :port.
func HostName(host string) string {
	i := strings.LastIndexByte(host, ':')
	if i <= 0 || i == len(host)-1 {
		return host
	}
	for _, c := range host[i+1:] {
		if c < '0' || c > '9' {
			return host
		}
	}
	h := host[:i]
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		return h[1 : len(h)-1]
	}
	if strings.Contains(h, ":") { // a bare IPv6 address: no port to strip
		return host
	}
	return h
}

// builtinExclusion says why a session can never be matched, or "".
func builtinExclusion(s Session, self uint64, own Own) string {
	switch {
	case s.ID == self || slices.Contains(own.IDs, s.ID):
		return "dbpilot's own session"
	case slices.Contains(own.Users, s.User):
		return "dbpilot's own session (user " + s.User + ")"
	case strings.Contains(s.Info, "dbpilot:"):
		return "dbpilot's own session (marker)"
	}
	switch s.Command {
	case "Binlog Dump", "Binlog Dump GTID":
		return "replication thread (" + s.Command + ")"
	case "Daemon":
		return "server thread (Daemon)"
	case "Killed":
		return "already being killed"
	}
	if strings.HasPrefix(s.Command, "Slave_") || strings.HasPrefix(s.Command, "Replica_") {
		return "replication thread (" + s.Command + ")"
	}
	switch s.User {
	case "system user":
		return "system thread (system user)"
	case "event_scheduler":
		return "event scheduler"
	case "unauthenticated user":
		return "not logged in yet"
	case "":
		return "server thread (no user)"
	}
	return ""
}

// conditions returns the reasons a session meets every condition of r, or
// ok false.
func (r *Rule) conditions(s Session) (reasons []string, ok bool) {
	re := func(name string, x *regexp.Regexp, v string) bool {
		if x == nil || x.MatchString(v) {
			if x != nil {
				reasons = append(reasons, fmt.Sprintf("%s %q", name, v))
			}
			return true
		}
		return false
	}
	if !re("command", r.Command, s.Command) || !re("state", r.State, s.State) ||
		!re("user", r.User, s.User) || !re("host", r.Host, HostName(s.Host)) || !re("db", r.DB, s.DB) {
		return nil, false
	}
	if r.Info != nil {
		if !r.Info.MatchString(s.Info) {
			return nil, false
		}
		reasons = append(reasons, "info ~ /"+r.Info.String()+"/")
	}
	if r.Busy > 0 {
		if s.Command == "Sleep" || s.Time < r.Busy {
			return nil, false
		}
		reasons = append(reasons, fmt.Sprintf("busy %s ≥ %s", round(s.Time), r.Busy))
	}
	if r.IdleInTrx > 0 {
		if s.Command != "Sleep" || s.Trx == nil || s.Time < r.IdleInTrx {
			return nil, false
		}
		reasons = append(reasons, fmt.Sprintf("idle in transaction %s ≥ %s", round(s.Time), r.IdleInTrx))
	}
	if r.TrxAge > 0 {
		if s.Trx == nil || s.Trx.Age < r.TrxAge {
			return nil, false
		}
		reasons = append(reasons, fmt.Sprintf("transaction age %s ≥ %s", round(s.Trx.Age), r.TrxAge))
	}
	if r.RowsLocked > 0 {
		if s.Trx == nil || s.Trx.RowsLocked < r.RowsLocked {
			return nil, false
		}
		reasons = append(reasons, fmt.Sprintf("rows locked %d ≥ %d", s.Trx.RowsLocked, r.RowsLocked))
	}
	return reasons, true
}

func round(d time.Duration) time.Duration {
	if d >= 10*time.Second {
		return d.Round(time.Second)
	}
	return d.Round(100 * time.Millisecond)
}

// except says why a session is in the rule's except list, or "".
func (r *Rule) except(s Session) string {
	switch {
	case slices.Contains(r.Except.IDs, s.ID):
		return fmt.Sprintf("except id %d", s.ID)
	case slices.Contains(r.Except.Users, s.User):
		return "except user " + s.User
	case slices.Contains(r.Except.Hosts, HostName(s.Host)):
		return "except host " + HostName(s.Host)
	}
	return ""
}

// roleMatches reports whether the rule applies to a server in role.
func (r *Rule) roleMatches(role Role) bool {
	return r.Role == RoleAny || r.Role == "" || r.Role == role
}

// Matches returns the sessions of s that r matches, oldest first, with no
// decision taken (Decision is empty), and those whose conditions hold but
// which are excluded (built-in exclusions or the rule's except list), with
// the reason. It neither acts nor changes any state: `watchdog test`.
func (r *Rule) Matches(s Snapshot, own Own) (matches, excluded []Match) {
	if !r.roleMatches(s.Role) {
		return nil, nil
	}
	if r.Builtin == BuiltinReplicaApplierBlocked {
		return r.applierMatches(s, own)
	}
	for _, sess := range s.Sessions() {
		reasons, ok := r.conditions(sess)
		if !ok {
			continue
		}
		why := builtinExclusion(sess, s.Self, own)
		if why == "" {
			why = r.except(sess)
		}
		m := Match{Rule: r.Name, Action: r.Action, Session: sess, Reasons: reasons}
		if why != "" {
			m.Decision = DecisionExcluded
			m.Reasons = []string{why}
			excluded = append(excluded, m)
			continue
		}
		matches = append(matches, m)
	}
	sortOldest(matches)
	sortOldest(excluded)
	return matches, excluded
}

// sortOldest orders matches by Time, then transaction age, descending, then ID.
func sortOldest(ms []Match) {
	sort.SliceStable(ms, func(i, j int) bool {
		a, b := ms[i].Session, ms[j].Session
		if a.Time != b.Time {
			return a.Time > b.Time
		}
		var ta, tb time.Duration
		if a.Trx != nil {
			ta = a.Trx.Age
		}
		if b.Trx != nil {
			tb = b.Trx.Age
		}
		if ta != tb {
			return ta > tb
		}
		return a.ID < b.ID
	})
}

// Evaluator applies rules to successive snapshots of one server. It keeps
// what a single evaluation cannot know: the kills of the last minute (the
// max_kills_per_minute guard) and the sessions already reported or acted
// on, so that a session is reported once while it keeps matching and a
// failed KILL is not retried. Use one Evaluator per server; it is safe for
// concurrent use, but evaluations of one server are meant to be sequential
// (a daemon calls Evaluate every second).
type Evaluator struct {
	rules []*Rule
	own   Own
	now   func() time.Time

	mu      sync.Mutex
	kills   map[string][]time.Time // rule → kill decisions in the last minute
	handled map[sessionKey]bool    // acted on or reported: not again while it matches
	limited map[sessionKey]bool    // reported as rate-limited: not reported again, still eligible
	waits   applierWaits           // since when each applier has been seen waiting for a metadata lock
}

type sessionKey struct {
	rule string
	id   uint64
	info string
}

// NewEvaluator returns an evaluator of rules; now is its clock (nil: time.Now).
func NewEvaluator(rules []*Rule, own Own, now func() time.Time) *Evaluator {
	if now == nil {
		now = time.Now
	}
	return &Evaluator{rules: rules, own: own, now: now,
		kills: map[string][]time.Time{}, handled: map[sessionKey]bool{}, limited: map[sessionKey]bool{}, waits: applierWaits{}}
}

// Rules returns the evaluator's rules.
func (e *Evaluator) Rules() []*Rule { return e.rules }

// Evaluate applies every rule to s and returns the new matches with their
// decisions, in rule order. A session is returned once while it keeps
// matching a rule (again after it stopped matching, e.g. a new statement);
// a kill the rate guard holds back is reported once as rate-limited and
// decided later when the guard allows. The caller executes DecisionKill
// matches (with Match.Action) and logs the others; a kill that fails is not
// returned again.
func (e *Evaluator) Evaluate(s Snapshot) []Match {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.now()
	// An applier's wait counts from when it was first seen waiting, at
	// most (see applierWaits).
	adjusted := e.waits.adjust(s, now)
	var out []Match
	for _, r := range e.rules {
		rs := s
		if r.Builtin != "" {
			rs = adjusted
		}
		matches, _ := r.Matches(rs, e.own)
		current := make(map[sessionKey]bool, len(matches))
		for _, m := range matches {
			current[sessionKey{r.Name, m.Session.ID, m.Session.Info}] = true
		}
		for k := range e.handled {
			if k.rule == r.Name && !current[k] {
				delete(e.handled, k)
			}
		}
		for k := range e.limited {
			if k.rule == r.Name && !current[k] {
				delete(e.limited, k)
			}
		}
		window := e.kills[r.Name][:0]
		for _, t := range e.kills[r.Name] {
			if now.Sub(t) < time.Minute {
				window = append(window, t)
			}
		}
		e.kills[r.Name] = window
		for _, m := range matches {
			k := sessionKey{r.Name, m.Session.ID, m.Session.Info}
			if e.handled[k] {
				continue
			}
			if d := e.decide(r, k, now); d != "" {
				m.Decision = d
				out = append(out, m)
			}
			if r.Victims == VictimsOldest {
				break
			}
		}
	}
	return out
}

// decide takes the decision for a session not handled yet, and records it;
// "" when there is nothing new to report (a rate-limited kill already
// reported).
func (e *Evaluator) decide(r *Rule, k sessionKey, now time.Time) Decision {
	if !r.Action.Kills() {
		e.handled[k] = true
		return DecisionLog
	}
	if len(e.kills[r.Name]) >= r.MaxKillsPerMinute {
		if e.limited[k] {
			return ""
		}
		e.limited[k] = true
		return DecisionRateLimited
	}
	e.kills[r.Name] = append(e.kills[r.Name], now)
	e.handled[k] = true
	delete(e.limited, k)
	if r.DryRun {
		return DecisionDryRun
	}
	return DecisionKill
}
