package httpapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"

	"github.com/dbpilot/dbpilot"
)

// Token is an API token the Server accepts: requests that present Secret
// act as Name with Role.
type Token struct {
	Name   string
	Role   dbpilot.Role
	Secret string
}

// Action is a write endpoint and the role it needs (Actions).
type Action struct {
	// Name is the action's name in GET /api/whoami's "actions".
	Name string
	// Method and Path are the endpoint (Path as the mux pattern has it).
	Method, Path string
	// Role is the least role that may call it.
	Role dbpilot.Role
}

// Actions are the API's write endpoints and the role each needs: viewers
// read, operators also act on a healthy topology, admins do everything
// (docs/security.md, "Tokens and roles"). Every read needs a viewer token
// when ServerOptions.ReadRequiresToken is set, none otherwise.
var Actions = []Action{
	{Name: "ack", Method: http.MethodPost, Path: "/api/clusters/{name}/ack", Role: dbpilot.RoleOperator},
	{Name: "relocate", Method: http.MethodPost, Path: "/api/relocate", Role: dbpilot.RoleOperator},
	{Name: "switchover", Method: http.MethodPost, Path: "/api/clusters/{name}/switchover", Role: dbpilot.RoleOperator},
	{Name: "bench_metrics", Method: http.MethodPost, Path: "/api/bench/metrics", Role: dbpilot.RoleOperator},
	{Name: "failover", Method: http.MethodPost, Path: "/api/clusters/{name}/failover", Role: dbpilot.RoleAdmin},
	{Name: "rejoin", Method: http.MethodPost, Path: "/api/clusters/{name}/rejoin", Role: dbpilot.RoleAdmin},
}

// knownToken is a Token as the Server keeps it: the secret's hash.
type knownToken struct {
	name string
	role dbpilot.Role
	hash [sha256.Size]byte
}

// lookup returns the token whose secret is secret. Every known token is
// compared, each comparison of hashes in constant time, so that the time
// taken tells nothing of which token came close.
func (s *Server) lookup(secret string) (knownToken, bool) {
	got := sha256.Sum256([]byte(secret))
	var found knownToken
	ok := false
	for _, t := range s.tokens {
		if subtle.ConstantTimeCompare(got[:], t.hash[:]) == 1 {
			found, ok = t, true
		}
	}
	return found, ok
}

// need wraps a handler that needs a token of role need (or more); what
// names it in refusals ("switchover", "reading"). The request's context
// carries the token's name for the audit log (dbpilot.WithActor).
func (s *Server) need(need dbpilot.Role, what string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if len(s.tokens) == 0 {
			s.writeErrorStatus(w, http.StatusForbidden, &errorBody{
				Code:  dbpilot.EAUTH,
				Error: fmt.Sprintf("%s needs an API token, but dbpilot serve has no API token configured; configure token or tokens to allow it", what),
			})
			return
		}
		t, ok := s.authenticate(w, r, what)
		if !ok {
			return
		}
		if !t.role.Allows(need) {
			s.log.Warn("http refused: role too low", "path", r.URL.Path, "token", t.name, "role", t.role, "needs", need)
			s.writeErrorStatus(w, http.StatusForbidden, &errorBody{
				Code:  dbpilot.EAUTH,
				Error: fmt.Sprintf("%s needs a token of role %s or more; token %q has role %s", what, need, t.name, t.role),
			})
			return
		}
		h(w, r.WithContext(dbpilot.WithActor(r.Context(), actorOf(t, r.Header.Get(ActorHeader)))))
	}
}

// ActorHeader carries, on a request another serve forwards to the leader
// of a cluster (coordination), who asked that serve: the audit records
// "token:NAME via token:FORWARDER". It is taken from an admin token only
// (a forwarding serve presents its admin token); others' is ignored.
const ActorHeader = "X-Dbpilot-Actor"

// actorOf is who acts with token t: "token:NAME", or the forwarded actor
// via it.
func actorOf(t knownToken, forwarded string) string {
	actor := "token:" + t.name
	if forwarded == "" || t.role != dbpilot.RoleAdmin || len(forwarded) > 200 {
		return actor
	}
	for _, c := range forwarded {
		if c < ' ' || c > '~' {
			return actor
		}
	}
	return forwarded + " via " + actor
}

// authenticate finds the request's token; it answers 401 and returns false
// when there is none or it is wrong.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request, what string) (knownToken, bool) {
	secret, ok := bearer(r.Header.Get("Authorization"))
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="dbpilot"`)
		s.writeErrorStatus(w, http.StatusUnauthorized, &errorBody{
			Code:  dbpilot.EAUTH,
			Error: fmt.Sprintf("missing API token: %s needs Authorization: Bearer <token>", what),
		})
		return knownToken{}, false
	}
	t, ok := s.lookup(secret)
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="dbpilot", error="invalid_token"`)
		s.writeErrorStatus(w, http.StatusUnauthorized, &errorBody{
			Code:  dbpilot.EAUTH,
			Error: "wrong API token",
		})
		return knownToken{}, false
	}
	return t, true
}

// Whoami is GET /api/whoami's answer: the token presented, its role and
// the actions (Action.Name) it may do. Without a token (where reads need
// none) all three are empty: the console then shows every control and asks
// for a token when one is used.
type Whoami struct {
	Name    string       `json:"name"`
	Role    dbpilot.Role `json:"role"`
	Actions []string     `json:"actions"`
}

// whoami answers GET /api/whoami. A token presented must be right (401
// otherwise), also where reads need none.
func (s *Server) whoami(w http.ResponseWriter, r *http.Request) {
	if _, ok := bearer(r.Header.Get("Authorization")); !ok && !s.opt.ReadRequiresToken {
		s.writeJSON(w, http.StatusOK, Whoami{Actions: []string{}})
		return
	}
	if len(s.tokens) == 0 {
		s.writeJSON(w, http.StatusOK, Whoami{Actions: []string{}})
		return
	}
	t, ok := s.authenticate(w, r, "reading")
	if !ok {
		return
	}
	s.writeJSON(w, http.StatusOK, Whoami{Name: t.name, Role: t.role, Actions: actionsOf(t.role)})
}

// actionsOf names the actions role may do.
func actionsOf(role dbpilot.Role) []string {
	as := []string{}
	for _, a := range Actions {
		if role.Allows(a.Role) {
			as = append(as, a.Name)
		}
	}
	return as
}

// Whoami asks serve which token the client holds and what it may do.
func (c *Client) Whoami(ctx context.Context) (*Whoami, error) {
	var who Whoami
	if err := c.get(ctx, "/api/whoami", nil, &who); err != nil {
		return nil, err
	}
	return &who, nil
}
