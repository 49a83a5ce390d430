package dbpilot

import "strings"

// Role is what an API token may do through serve's HTTP API. Each role may
// do everything the roles below it may.
type Role string

// Roles, least to most allowed.
const (
	// RoleViewer reads: clusters, recoveries, audit, alerts, metrics.
	RoleViewer Role = "viewer"
	// RoleOperator also acts on a healthy topology: ack, relocate,
	// switchover (and sends bench metrics).
	RoleOperator Role = "operator"
	// RoleAdmin also fails over, rejoins old primaries, and everything
	// that changes serve's own settings.
	RoleAdmin Role = "admin"
)

// Roles are the roles, least to most allowed.
var Roles = []Role{RoleViewer, RoleOperator, RoleAdmin}

// rank orders the roles; 0 for an unknown one.
func (r Role) rank() int {
	for i, x := range Roles {
		if x == r {
			return i + 1
		}
	}
	return 0
}

// Valid reports whether r is one of Roles.
func (r Role) Valid() bool { return r.rank() > 0 }

// Allows reports whether a token of role r may do what needs role need.
func (r Role) Allows(need Role) bool { return r.Valid() && need.Valid() && r.rank() >= need.rank() }

// RoleNames lists the roles for a message: "viewer, operator or admin".
func RoleNames() string {
	s := make([]string, len(Roles))
	for i, r := range Roles {
		s[i] = string(r)
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}
