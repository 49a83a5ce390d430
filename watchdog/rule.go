// Package watchdog holds the query watchdog's rules and their evaluation:
// which sessions of a server's processlist a rule matches, and what to do
// with them (log, KILL QUERY, KILL CONNECTION), with dry-run and a kill-rate
// guard. It is pure: a snapshot of the processlist and of InnoDB's open
// transactions goes in, matches with their decisions come out; reading the
// snapshot and acting on it is done through package mysql.
package watchdog

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot"
	"go.yaml.in/yaml/v3"
)

// Action is what a rule does with the sessions it matches.
type Action string

// Actions.
const (
	ActionLog            Action = "log"
	ActionKillQuery      Action = "kill_query"
	ActionKillConnection Action = "kill_connection"
)

// Kills reports whether the action kills something.
func (a Action) Kills() bool { return a == ActionKillQuery || a == ActionKillConnection }

// Role restricts a rule to primaries or replicas.
type Role string

// Roles. A server with a replication channel is a replica; any other is a
// primary.
const (
	RoleAny     Role = "any"
	RolePrimary Role = "primary"
	RoleReplica Role = "replica"
)

// Victims says which of the matching sessions a rule acts on per evaluation.
type Victims string

// Victims.
const (
	VictimsOldest Victims = "oldest" // the one with the largest Time (pt-kill's default)
	VictimsAll    Victims = "all"
)

// DefaultMaxKillsPerMinute is a rule's kill-rate guard when it names none.
const DefaultMaxKillsPerMinute = 10

// Except lists sessions a rule never matches.
type Except struct {
	Users []string `json:"users,omitempty"`
	Hosts []string `json:"hosts,omitempty"` // compared without the :port
	IDs   []uint64 `json:"ids,omitempty"`
}

// Rule is one watchdog rule. Every condition given must hold (AND); a rule
// must give at least one.
//
// command, state, user, host and db are regular expressions matched against
// the whole value (command and state without regard to case; host without
// its :port); info is a regular expression searched in the statement text.
type Rule struct {
	Name string `json:"name"`

	Command *regexp.Regexp `json:"-"`
	State   *regexp.Regexp `json:"-"`
	User    *regexp.Regexp `json:"-"`
	Host    *regexp.Regexp `json:"-"`
	DB      *regexp.Regexp `json:"-"`
	Info    *regexp.Regexp `json:"-"`

	// Busy: the session runs a command (anything but Sleep) for at least this long.
	Busy time.Duration `json:"busy,omitempty"`
	// IdleInTrx: the session sleeps at least this long with an InnoDB
	// transaction open.
	IdleInTrx time.Duration `json:"idle_in_trx,omitempty"`
	// TrxAge: the session's InnoDB transaction is at least this old.
	TrxAge time.Duration `json:"trx_age,omitempty"`
	// RowsLocked: the session's InnoDB transaction locks at least this many rows.
	RowsLocked int64 `json:"rows_locked,omitempty"`

	Role              Role    `json:"role"`
	Victims           Victims `json:"victims"`
	Except            Except  `json:"except"`
	Action            Action  `json:"action"`
	DryRun            bool    `json:"dry_run"`
	MaxKillsPerMinute int     `json:"max_kills_per_minute"`

	// Builtin names a built-in rule (BuiltinReplicaApplierBlocked) whose
	// matching is its own: it has no conditions of the fields above.
	Builtin string `json:"builtin,omitempty"`
	// Wait is how long a replication applier must have waited for a
	// metadata lock before the built-in replica_applier_blocked rule acts.
	Wait time.Duration `json:"wait,omitempty"`

	// Source is where the rule was read ("rules.yaml:12").
	Source string `json:"source,omitempty"`
}

// BuiltinReplicaApplierBlocked is the built-in rule that frees a replica's
// applier (the SQL thread or a parallel worker) waiting for a metadata
// lock held by user sessions (a long SELECT on the table an ALTER from the
// primary changes): the victims are the sessions that hold it. It is off
// unless listed ("- builtin: replica_applier_blocked") and applies on
// replicas only; see applier.go.
const BuiltinReplicaApplierBlocked = "replica_applier_blocked"

// DefaultApplierWait is how long an applier waits for a metadata lock
// before replica_applier_blocked acts, unless the rule gives wait.
const DefaultApplierWait = 10 * time.Second

// builtinFields are the keys a built-in rule may have.
var builtinFields = []string{"builtin", "name", "wait", "except", "action", "dry_run", "max_kills_per_minute"}

// ruleFields are the keys a rule may have, in the order of the docs.
var ruleFields = []string{"name", "builtin", "command", "state", "user", "host", "db", "info",
	"busy", "idle_in_trx", "trx_age", "rows_locked", "role", "victims", "except",
	"action", "dry_run", "max_kills_per_minute"}

// LoadFile reads a rules file: a YAML document with a top-level "rules:" list.
func LoadFile(path string) ([]*Rule, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, dbpilot.Errorf(dbpilot.ENOTFOUND, "watchdog: rules file %s not found", path)
		}
		return nil, dbpilot.WrapError(dbpilot.EINVALID, err, "watchdog: read rules file %s", path)
	}
	return Parse(path, data)
}

// Parse reads the rules of a rules file; file names the file in errors.
func Parse(file string, data []byte) ([]*Rule, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, dbpilot.WrapError(dbpilot.EINVALID, err, "watchdog: %s", file)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "watchdog: %s: no rules (want a top-level \"rules:\" list)", file)
	}
	top := doc.Content[0]
	if top.Kind != yaml.MappingNode {
		return nil, posErr(file, top, "want a mapping with a \"rules:\" list")
	}
	var rules *yaml.Node
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], top.Content[i+1]
		if k.Value != "rules" {
			return nil, posErr(file, k, "unknown field %q (want \"rules\")", k.Value)
		}
		rules = v
	}
	if rules == nil {
		return nil, posErr(file, top, "no \"rules:\" list")
	}
	return ParseNode(file, rules)
}

// ParseNode reads a YAML sequence of rules (the "rules:" list of a rules
// file, or of serve's config); file names the file in errors, which give
// the line and the field.
func ParseNode(file string, n *yaml.Node) ([]*Rule, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, posErr(file, n, "rules: want a list of rules")
	}
	var out []*Rule
	seen := map[string]int{}
	for _, rn := range n.Content {
		r, err := parseRule(file, rn)
		if err != nil {
			return nil, err
		}
		if line, dup := seen[r.Name]; dup {
			return nil, posErr(file, rn, "rule %q: name already used at line %d", r.Name, line)
		}
		seen[r.Name] = rn.Line
		out = append(out, r)
	}
	return out, nil
}

func posErr(file string, n *yaml.Node, format string, args ...any) error {
	return dbpilot.Errorf(dbpilot.EINVALID, "watchdog: %s:%d: %s", file, n.Line, fmt.Sprintf(format, args...))
}

func parseRule(file string, n *yaml.Node) (*Rule, error) {
	if n.Kind != yaml.MappingNode {
		return nil, posErr(file, n, "a rule is a mapping (name:, action:, ...)")
	}
	r := &Rule{Role: RoleAny, Victims: VictimsOldest, Action: ActionLog, DryRun: true,
		MaxKillsPerMinute: DefaultMaxKillsPerMinute, Source: fmt.Sprintf("%s:%d", file, n.Line)}
	name, builtin := ruleName(n)
	if name == "" {
		return nil, posErr(file, n, "rule without a name")
	}
	r.Name = name
	if builtin != nil {
		return parseBuiltin(file, n, builtin, r)
	}
	fail := func(node *yaml.Node, field, format string, args ...any) error {
		return posErr(file, node, "rule %q: field %q: %s", name, field, fmt.Sprintf(format, args...))
	}
	conditions := 0
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		field := k.Value
		if seen[field] {
			return nil, fail(k, field, "given twice")
		}
		seen[field] = true
		switch field {
		case "name":
		case "wait":
			return nil, fail(k, field, "only for a built-in rule (builtin: %s)", BuiltinReplicaApplierBlocked)
		case "command", "state", "user", "host", "db", "info":
			if err := parsePatternField(r, field, v, fail); err != nil {
				return nil, err
			}
			conditions++
		case "busy", "idle_in_trx", "trx_age":
			if err := parseDurationField(r, field, v, fail); err != nil {
				return nil, err
			}
			conditions++
		case "rows_locked":
			nr, err := strconv.ParseInt(v.Value, 10, 64)
			if err != nil || nr <= 0 || v.Kind != yaml.ScalarNode {
				return nil, fail(v, field, "want a positive number of rows, got %q", v.Value)
			}
			r.RowsLocked = nr
			conditions++
		case "role":
			switch Role(v.Value) {
			case RoleAny, RolePrimary, RoleReplica:
				r.Role = Role(v.Value)
			default:
				return nil, fail(v, field, "want primary, replica or any, got %q", v.Value)
			}
		case "victims":
			switch Victims(v.Value) {
			case VictimsOldest, VictimsAll:
				r.Victims = Victims(v.Value)
			default:
				return nil, fail(v, field, "want oldest or all, got %q", v.Value)
			}
		case "action", "dry_run", "max_kills_per_minute", "except":
			if err := parseActionField(r, field, v, fail); err != nil {
				return nil, err
			}
		default:
			return nil, fail(k, field, "unknown field (known: %s)", strings.Join(ruleFields, ", "))
		}
	}
	if conditions == 0 {
		return nil, posErr(file, n, "rule %q: no condition: it would match every session (give busy, idle_in_trx, info, user, ...)", name)
	}
	return r, nil
}

// ruleName returns the name of the rule n and its builtin: field, if any.
// A built-in rule is named after itself unless named.
func ruleName(n *yaml.Node) (string, *yaml.Node) {
	name := ""
	var builtin *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		switch n.Content[i].Value {
		case "name":
			name = n.Content[i+1].Value
		case "builtin":
			builtin = n.Content[i+1]
		}
	}
	if name == "" && builtin != nil {
		name = builtin.Value
	}
	return name, builtin
}

// parsePatternField reads a condition on a processlist column: command,
// state, user, host, db (whole value; command and state case-insensitive)
// or info (anywhere in the statement).
func parsePatternField(r *Rule, field string, v *yaml.Node, fail func(node *yaml.Node, field, format string, args ...any) error) error {
	if v.Kind != yaml.ScalarNode {
		return fail(v, field, "want a regular expression")
	}
	expr := v.Value
	switch field {
	case "info":
	case "command", "state":
		expr = "(?i)^(?:" + expr + ")$"
	default:
		expr = "^(?:" + expr + ")$"
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return fail(v, field, "invalid regular expression %q: %v", v.Value, regexpReason(err))
	}
	switch field {
	case "command":
		r.Command = re
	case "state":
		r.State = re
	case "user":
		r.User = re
	case "host":
		r.Host = re
	case "db":
		r.DB = re
	case "info":
		r.Info = re
	}
	return nil
}

// parseDurationField reads a condition on a time: busy, idle_in_trx or
// trx_age.
func parseDurationField(r *Rule, field string, v *yaml.Node, fail func(node *yaml.Node, field, format string, args ...any) error) error {
	d, err := time.ParseDuration(v.Value)
	if err != nil || d <= 0 || v.Kind != yaml.ScalarNode {
		return fail(v, field, "want a positive duration such as 30s, got %q", v.Value)
	}
	switch field {
	case "busy":
		r.Busy = d
	case "idle_in_trx":
		r.IdleInTrx = d
	case "trx_age":
		r.TrxAge = d
	}
	return nil
}

// parseActionField reads the fields every rule has, built-in or not:
// action, dry_run, max_kills_per_minute and except.
func parseActionField(r *Rule, field string, v *yaml.Node, fail func(node *yaml.Node, field, format string, args ...any) error) error {
	switch field {
	case "action":
		switch Action(v.Value) {
		case ActionLog, ActionKillQuery, ActionKillConnection:
			r.Action = Action(v.Value)
		default:
			return fail(v, field, "want log, kill_query or kill_connection, got %q", v.Value)
		}
	case "dry_run":
		b, err := strconv.ParseBool(v.Value)
		if err != nil || v.Kind != yaml.ScalarNode {
			return fail(v, field, "want true or false, got %q", v.Value)
		}
		r.DryRun = b
	case "max_kills_per_minute":
		m, err := strconv.Atoi(v.Value)
		if err != nil || m < 1 || v.Kind != yaml.ScalarNode {
			return fail(v, field, "want a number ≥ 1 (use dry_run: true to stop kills), got %q", v.Value)
		}
		r.MaxKillsPerMinute = m
	case "except":
		return parseExcept(v, &r.Except, func(node *yaml.Node, sub, format string, args ...any) error {
			return fail(node, "except."+sub, format, args...)
		})
	}
	return nil
}

// parseBuiltin reads a built-in rule: "builtin:" and the fields that may
// override its defaults (action kill_connection, victims all, role replica,
// wait DefaultApplierWait; dry_run true as for every rule).
func parseBuiltin(file string, n, b *yaml.Node, r *Rule) (*Rule, error) {
	fail := func(node *yaml.Node, field, format string, args ...any) error {
		return posErr(file, node, "rule %q: field %q: %s", r.Name, field, fmt.Sprintf(format, args...))
	}
	if b.Kind != yaml.ScalarNode || b.Value != BuiltinReplicaApplierBlocked {
		return nil, fail(b, "builtin", "unknown built-in rule %q (known: %s)", b.Value, BuiltinReplicaApplierBlocked)
	}
	// KILL CONNECTION: a metadata lock is held until the transaction ends,
	// and KILL QUERY ends only the statement (a SELECT in an open
	// transaction would keep blocking the applier).
	r.Builtin, r.Role, r.Victims, r.Action, r.Wait = b.Value, RoleReplica, VictimsAll, ActionKillConnection, DefaultApplierWait
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		field := k.Value
		if seen[field] {
			return nil, fail(k, field, "given twice")
		}
		seen[field] = true
		switch field {
		case "builtin", "name":
		case "wait":
			d, err := time.ParseDuration(v.Value)
			if err != nil || d <= 0 || v.Kind != yaml.ScalarNode {
				return nil, fail(v, field, "want a positive duration such as 5s, got %q", v.Value)
			}
			r.Wait = d
		case "action", "dry_run", "max_kills_per_minute", "except":
			if err := parseActionField(r, field, v, fail); err != nil {
				return nil, err
			}
		default:
			return nil, fail(k, field, "not a field of built-in rule %s (known: %s)", b.Value, strings.Join(builtinFields, ", "))
		}
	}
	return r, nil
}

type failFunc func(node *yaml.Node, field, format string, args ...any) error

func parseExcept(n *yaml.Node, e *Except, fail failFunc) error {
	if n.Kind != yaml.MappingNode {
		return fail(n, "", "want a mapping with users, hosts or ids")
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		var list []string
		switch v.Kind {
		case yaml.ScalarNode:
			list = []string{v.Value}
		case yaml.SequenceNode:
			for _, c := range v.Content {
				if c.Kind != yaml.ScalarNode {
					return fail(c, k.Value, "want a list of values")
				}
				list = append(list, c.Value)
			}
		default:
			return fail(v, k.Value, "want a list of values")
		}
		switch k.Value {
		case "users":
			e.Users = append(e.Users, list...)
		case "hosts":
			e.Hosts = append(e.Hosts, list...)
		case "ids":
			for _, s := range list {
				id, err := strconv.ParseUint(s, 10, 64)
				if err != nil {
					return fail(v, k.Value, "want connection ids, got %q", s)
				}
				e.IDs = append(e.IDs, id)
			}
		default:
			return fail(k, k.Value, "unknown field (known: users, hosts, ids)")
		}
	}
	return nil
}

// regexpReason keeps the reason of a regexp error without repeating the
// expression (regexp quotes the wrapped form).
func regexpReason(err error) string {
	var se *syntax.Error
	if errors.As(err, &se) {
		return string(se.Code)
	}
	return err.Error()
}
