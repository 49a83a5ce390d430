// Package httpapi is dbpilot serve's HTTP JSON API: a Server that exposes a
// dbpilot.ClusterService, and a Client that implements dbpilot.ClusterService,
// dbpilot.AlertService and dbpilot.MetricsQuerier by calling serve, so that
// every front end (the CLI, top) acts the same directly or through serve.
//
// Routes (JSON in and out):
//
//	GET  /api/health                       Health
//	GET  /api/clusters                     []ClusterStatus
//	GET  /api/clusters/{name}              ClusterStatus
//	GET  /api/recoveries?cluster=&limit=   []Recovery, newest first
//	GET  /api/recoveries/{id}              Recovery
//	GET  /api/recoveries/{id}/report       the incident report: one HTML page (text/html)
//	GET  /api/audit?cluster=&recovery=&since=RFC3339&limit=
//	                                       []AuditEvent, oldest first
//	GET  /api/alerts?cluster=&state=&since=&limit=
//	                                       []Alert, newest first
//	POST /api/clusters/{name}/failover     {"dry_run": bool, "to": "host:port"} → Recovery
//	POST /api/clusters/{name}/switchover   {"dry_run": bool, "to": "host:port"} → Recovery
//	POST /api/relocate                     {"replica": "host:port", "below": "host:port", "dry_run": bool} → Recovery
//	POST /api/clusters/{name}/rejoin       {"instance": "host:port", "dry_run": bool, "reclone": bool} → Recovery
//	POST /api/clusters/{name}/ack          {"by": "...", "comment": "..."} → {"acked": n}
//	GET  /api/whoami                       Whoami: the token's name, role, actions
//
// POST requests need "Authorization: Bearer TOKEN" of a token whose role
// may do them (Actions: viewer reads, operator also acks, relocates and
// switches over, admin also fails over and rejoins); too low a role is 403,
// no token or a wrong one 401, and a server without tokens refuses them
// (403). With ServerOptions.ReadRequiresToken (serve off-loopback) GET
// requests need a token too (a viewer's is enough). A Server with a
// Certificate's TLSConfig answers HTTPS; Client.TrustCAFile trusts a CA for
// https:// URLs. A request may name its source in the header
// X-Dbpilot-Source (web, cli); the audit log records it ("api" otherwise). Errors are {"error": "one line", "code": "<dbpilot code>"}
// with a status derived from the code (see StatusOf); a failed operation that
// produced a recovery record adds it as "recovery".
//
// The Client also reads the metrics query API that serve mounts beside this
// server (metrics.Store.APIHandler, Prometheus' shape; see metrics.go):
//
//	GET  /api/metrics/query?expr=&time=                    QueryInstant
//	GET  /api/metrics/query_range?expr=&start=&end=&step=  QueryRange
package httpapi

import (
	"net/http"

	"github.com/dbpilot/dbpilot"
)

// MaxBodyBytes limits request bodies.
const MaxBodyBytes = 1 << 20

// SourceHeader names who sends a request, for the audit log.
const SourceHeader = "X-Dbpilot-Source"

// errorBody is the JSON body of every error response.
type errorBody struct {
	Error string `json:"error"`
	Code  string `json:"code"`
	// Recovery is the record of a failed operation, when the service
	// returned one along with the error.
	Recovery *dbpilot.Recovery `json:"recovery,omitempty"`
}

// operationRequest is the body of failover and switchover.
type operationRequest struct {
	DryRun bool   `json:"dry_run"`
	To     string `json:"to,omitempty"`
	// ForceWithoutCoordination: failover only (see dbpilot.OperationOptions).
	ForceWithoutCoordination bool `json:"force_without_coordination,omitempty"`
	// Force: failover only (see dbpilot.OperationOptions).
	Force     bool `json:"force,omitempty"`
	Forwarded bool `json:"forwarded,omitempty"`
	// MaxLag and DrainTimeout (switchover only) override
	// switchover.max_lag and switchover.drain_timeout: Go durations
	// ("30s"); empty: the settings.
	MaxLag       string `json:"max_lag,omitempty"`
	DrainTimeout string `json:"drain_timeout,omitempty"`
}

// relocateRequest is the body of relocate.
type relocateRequest struct {
	Replica string `json:"replica"`
	Below   string `json:"below"`
	DryRun  bool   `json:"dry_run"`
	// Forwarded: see dbpilot.OperationOptions.
	Forwarded bool `json:"forwarded,omitempty"`
	// MaxLag overrides switchover.max_lag for the target's precheck.
	MaxLag string `json:"max_lag,omitempty"`
}

// rejoinRequest is the body of rejoin.
type rejoinRequest struct {
	Instance string `json:"instance"`
	DryRun   bool   `json:"dry_run"`
	Reclone  bool   `json:"reclone,omitempty"`
	// Forwarded: see dbpilot.OperationOptions.
	Forwarded bool `json:"forwarded,omitempty"`
}

// ackRequest is the body of ack.
type ackRequest struct {
	By      string `json:"by"`
	Comment string `json:"comment"`
}

// ackResponse answers ack.
type ackResponse struct {
	Acked int `json:"acked"`
}

// StatusOf returns the HTTP status for a dbpilot error code. EAUTH and
// EUNAVAIL come from the databases serve talks to, so they are upstream
// failures (502), not the API client's fault.
func StatusOf(code string) int {
	switch code {
	case dbpilot.EINVALID:
		return http.StatusBadRequest
	case dbpilot.ENOTFOUND:
		return http.StatusNotFound
	case dbpilot.ECONFLICT:
		return http.StatusConflict
	case dbpilot.EUNSUPPORTED:
		return http.StatusUnprocessableEntity
	case dbpilot.EAUTH, dbpilot.EUNAVAIL:
		return http.StatusBadGateway
	}
	return http.StatusInternalServerError
}

// codeOfStatus guesses a code for an error response that carries none (from
// a proxy, say).
func codeOfStatus(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusMethodNotAllowed:
		return dbpilot.EINVALID
	case http.StatusUnauthorized, http.StatusForbidden:
		return dbpilot.EAUTH
	case http.StatusNotFound:
		return dbpilot.ENOTFOUND
	case http.StatusConflict:
		return dbpilot.ECONFLICT
	case http.StatusUnprocessableEntity:
		return dbpilot.EUNSUPPORTED
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return dbpilot.EUNAVAIL
	}
	return dbpilot.EINTERNAL
}
