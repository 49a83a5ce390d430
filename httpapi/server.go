package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dbpilot/dbpilot"
)

// ServerOptions configure a Server.
type ServerOptions struct {
	// Token is an admin token named "admin" (dbpilot serve's token and
	// token_file), besides Tokens. With neither, every POST is refused
	// (403): writes need a configured token.
	Token string
	// Tokens are the tokens with a name and a role: each write needs the
	// role Actions give it.
	Tokens []Token
	// Logger receives one line per request; nil discards.
	Logger *slog.Logger
	// Version is dbpilot's version, reported by /api/health when the
	// service leaves Health.Version empty.
	Version string
	// ReadRequiresToken makes every request, reads included, present the
	// token: serve sets it when it listens on a non-loopback address
	// (ui.read_requires_token).
	ReadRequiresToken bool
}

// Server serves the API for a ClusterService. It is an http.Handler.
type Server struct {
	svc    dbpilot.ClusterService
	opt    ServerOptions
	tokens []knownToken
	log    *slog.Logger
	mux    *http.ServeMux

	stopStreams     chan struct{} // closed by StopStreams
	stopStreamsOnce sync.Once
}

// StopStreams ends every event stream (GET /api/clusters/{name}/events),
// open or opened later: serve calls it when it shuts down, as
// http.Server.Shutdown waits for handlers and a stream never ends by itself.
func (s *Server) StopStreams() { s.stopStreamsOnce.Do(func() { close(s.stopStreams) }) }

// NewServer returns a Server answering from svc.
func NewServer(svc dbpilot.ClusterService, opt ServerOptions) *Server {
	s := &Server{svc: svc, opt: opt, log: opt.Logger, mux: http.NewServeMux(), stopStreams: make(chan struct{})}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if opt.Token != "" {
		s.tokens = append(s.tokens, knownToken{name: "admin", role: dbpilot.RoleAdmin, hash: sha256.Sum256([]byte(opt.Token))})
	}
	for _, t := range opt.Tokens {
		s.tokens = append(s.tokens, knownToken{name: t.Name, role: t.Role, hash: sha256.Sum256([]byte(t.Secret))})
	}

	s.mux.HandleFunc("GET /api/health", s.read(s.health))
	s.mux.HandleFunc("GET /api/whoami", s.whoami)
	s.mux.HandleFunc("GET /api/clusters", s.read(s.clusters))
	s.mux.HandleFunc("GET /api/clusters/{name}", s.read(s.cluster))
	s.mux.HandleFunc("GET /api/clusters/{name}/events", s.read(s.clusterEvents))
	s.mux.HandleFunc("GET /api/recoveries", s.read(s.recoveries))
	s.mux.HandleFunc("GET /api/recoveries/{id}", s.read(s.recovery))
	s.mux.HandleFunc("GET /api/audit", s.read(s.audit))
	s.mux.HandleFunc("GET /api/coordination", s.read(s.coordination))
	handlers := map[string]http.HandlerFunc{
		"failover": s.failover, "switchover": s.switchover, "relocate": s.relocate,
		"rejoin": s.rejoin, "ack": s.ack, "bench_metrics": s.benchMetrics,
	}
	for _, a := range Actions {
		s.mux.HandleFunc(a.Method+" "+a.Path, s.need(a.Role, a.Name, handlers[a.Name]))
	}
	s.registerAlerts()
	s.registerQueries()
	s.registerReport()
	s.registerHistory()
	return s
}

// Protect wraps a handler serve mounts beside the API (the metrics query
// API, /metrics) with the API's rule for reads: the token when
// ReadRequiresToken is set.
func (s *Server) Protect(h http.Handler) http.Handler {
	return s.read(h.ServeHTTP)
}

// read wraps a read handler: it needs a token (a viewer's is enough) only
// when ReadRequiresToken is set.
func (s *Server) read(h http.HandlerFunc) http.HandlerFunc {
	if !s.opt.ReadRequiresToken {
		return h
	}
	return s.need(dbpilot.RoleViewer, "reading (serve listens off-loopback)", h)
}

// HTTPServer returns an http.Server for s on addr with timeouts fit for the
// API: short for reading requests, long enough for writing the answer of a
// failover (which may take two minutes).
func (s *Server) HTTPServer(addr string) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      5 * time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
}

// ServeHTTP routes, logs and recovers from panics.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rw := &statusWriter{ResponseWriter: w}
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			s.log.Error("http panic", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(p))
			if rw.status == 0 {
				s.writeError(rw, dbpilot.Errorf(dbpilot.EINTERNAL, "internal error in %s %s; see the serve log", r.Method, r.URL.Path), nil)
			}
		}
		level := slog.LevelInfo
		if rw.status >= 500 {
			level = slog.LevelError
		}
		// Only these: never headers (Authorization) nor bodies.
		s.log.Log(r.Context(), level, "http request",
			"method", r.Method, "path", r.URL.Path, "status", rw.statusCode(),
			"duration", time.Since(start), "remote", r.RemoteAddr)
	}()

	rw.Header().Set("Cache-Control", "no-store")
	rw.Header().Set("X-Content-Type-Options", "nosniff")
	if _, pattern := s.mux.Handler(r); pattern == "" {
		s.noRoute(rw, r)
		return
	}
	s.mux.ServeHTTP(rw, withSource(r))
}

// noRoute answers a request no route takes with a JSON 404 or 405, keeping
// the status and Allow header the mux chose.
func (s *Server) noRoute(w http.ResponseWriter, r *http.Request) {
	h, _ := s.mux.Handler(r)
	cw := &captureWriter{header: http.Header{}}
	h.ServeHTTP(cw, r)
	switch cw.status {
	case http.StatusMethodNotAllowed:
		if allow := cw.header.Get("Allow"); allow != "" {
			w.Header().Set("Allow", allow)
		}
		s.writeErrorStatus(w, http.StatusMethodNotAllowed, &errorBody{
			Code:  dbpilot.EINVALID,
			Error: fmt.Sprintf("method %s not allowed on %s (allowed: %s)", r.Method, r.URL.Path, cw.header.Get("Allow")),
		})
	case http.StatusNotFound, 0:
		s.writeErrorStatus(w, http.StatusNotFound, &errorBody{
			Code:  dbpilot.ENOTFOUND,
			Error: fmt.Sprintf("no API endpoint %s %s", r.Method, r.URL.Path),
		})
	default: // a redirect to the clean path, say
		for k, v := range cw.header {
			w.Header()[k] = v
		}
		w.WriteHeader(cw.status)
	}
}

// withSource puts the request's X-Dbpilot-Source (web, cli; "api" when
// absent or malformed) into its context, for the audit log.
func withSource(r *http.Request) *http.Request {
	src := r.Header.Get(SourceHeader)
	if !validSource(src) {
		src = dbpilot.SourceAPI
	}
	ctx := dbpilot.WithSource(r.Context(), src)
	if r.Header.Get(PeerHeader) != "" {
		ctx = dbpilot.WithPeerRead(ctx)
	}
	return r.WithContext(ctx)
}

// PeerHeader marks a read one serve asks of another (dbpilot.WithPeerRead):
// the serve answers from its own observations and metrics, without asking
// its peers in turn.
const PeerHeader = "X-Dbpilot-Peer"

// validSource accepts a short lower-case word: it goes into the audit log.
func validSource(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for _, c := range s {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}

// bearer returns the token of an "Authorization: Bearer TOKEN" header.
func bearer(h string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// coordination answers GET /api/coordination: the serves, the leader of
// each cluster and the lease; "single" for a serve that acts alone.
func (s *Server) coordination(w http.ResponseWriter, r *http.Request) {
	st := &dbpilot.CoordinationStatus{State: dbpilot.CoordinationSingle, Members: []dbpilot.CoordMember{}, Leaders: []dbpilot.ClusterLeader{}}
	if c, ok := s.svc.(dbpilot.CoordinationReporter); ok {
		st = c.CoordinationStatus(r.Context())
	}
	s.writeJSON(w, http.StatusOK, st)
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	h, err := s.svc.Health(r.Context())
	if err != nil {
		s.writeError(w, err, nil)
		return
	}
	if h == nil {
		h = &dbpilot.Health{}
	}
	if h.Version == "" {
		c := *h
		c.Version = s.opt.Version
		h = &c
	}
	s.writeJSON(w, http.StatusOK, h)
}

func (s *Server) clusters(w http.ResponseWriter, r *http.Request) {
	cs, err := s.svc.Clusters(r.Context())
	if err != nil {
		s.writeError(w, err, nil)
		return
	}
	if cs == nil {
		cs = []*dbpilot.ClusterStatus{}
	}
	s.writeJSON(w, http.StatusOK, cs)
}

func (s *Server) cluster(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	c, err := s.svc.ClusterStatus(r.Context(), name)
	if err == nil && c == nil {
		err = dbpilot.Errorf(dbpilot.ENOTFOUND, "no cluster %q", name)
	}
	if err != nil {
		s.writeError(w, err, nil)
		return
	}
	s.writeJSON(w, http.StatusOK, c)
}

func (s *Server) recoveries(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := dbpilot.RecoveryFilter{Cluster: q.Get("cluster")}
	var err error
	if f.Limit, err = intParam(q.Get("limit"), "limit"); err != nil {
		s.writeError(w, err, nil)
		return
	}
	rs, err := s.svc.Recoveries(r.Context(), f)
	if err != nil {
		s.writeError(w, err, nil)
		return
	}
	if rs == nil {
		rs = []*dbpilot.Recovery{}
	}
	s.writeJSON(w, http.StatusOK, rs)
}

func (s *Server) recovery(w http.ResponseWriter, r *http.Request) {
	v := r.PathValue("id")
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id <= 0 {
		s.writeError(w, dbpilot.Errorf(dbpilot.EINVALID, "invalid recovery id %q: want a number", v), nil)
		return
	}
	rs, err := s.svc.Recoveries(r.Context(), dbpilot.RecoveryFilter{ID: id, Limit: 1})
	if err == nil && len(rs) == 0 {
		err = dbpilot.Errorf(dbpilot.ENOTFOUND, "no recovery %d", id)
	}
	if err != nil {
		s.writeError(w, err, nil)
		return
	}
	s.writeJSON(w, http.StatusOK, rs[0])
}

func (s *Server) audit(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := dbpilot.AuditFilter{Cluster: q.Get("cluster")}
	var err error
	if f.Limit, err = intParam(q.Get("limit"), "limit"); err != nil {
		s.writeError(w, err, nil)
		return
	}
	if v := q.Get("recovery"); v != "" {
		f.RecoveryID, err = strconv.ParseInt(v, 10, 64)
		if err != nil || f.RecoveryID < 0 {
			s.writeError(w, dbpilot.Errorf(dbpilot.EINVALID, "invalid recovery %q: want a recovery id", v), nil)
			return
		}
	}
	if v := q.Get("since"); v != "" {
		f.Since, err = time.Parse(time.RFC3339, v)
		if err != nil {
			s.writeError(w, dbpilot.Errorf(dbpilot.EINVALID, "invalid since %q: want an RFC 3339 time such as 2006-01-02T15:04:05Z", v), nil)
			return
		}
	}
	es, err := s.svc.AuditEvents(r.Context(), f)
	if err != nil {
		s.writeError(w, err, nil)
		return
	}
	if es == nil {
		es = []dbpilot.AuditEvent{}
	}
	s.writeJSON(w, http.StatusOK, es)
}

// intParam parses an optional non-negative integer query parameter.
func intParam(v, name string) (int, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, dbpilot.Errorf(dbpilot.EINVALID, "invalid %s %q: want a number of 0 or more", name, v)
	}
	return n, nil
}

// failover and switchover pass "to" on as OperationOptions.To: whether a
// failover may be given a target is the service's decision, as it is when the
// CLI calls the service directly.
func (s *Server) failover(w http.ResponseWriter, r *http.Request) {
	opt, ok := s.operationOptions(w, r)
	if !ok {
		return
	}
	rec, err := s.svc.Failover(r.Context(), r.PathValue("name"), opt)
	s.writeRecovery(w, rec, err)
}

func (s *Server) switchover(w http.ResponseWriter, r *http.Request) {
	opt, ok := s.operationOptions(w, r)
	if !ok {
		return
	}
	rec, err := s.svc.Switchover(r.Context(), r.PathValue("name"), opt)
	s.writeRecovery(w, rec, err)
}

// operationOptions reads an operationRequest body.
func (s *Server) operationOptions(w http.ResponseWriter, r *http.Request) (dbpilot.OperationOptions, bool) {
	var req operationRequest
	if !s.decode(w, r, &req) {
		return dbpilot.OperationOptions{}, false
	}
	opt := dbpilot.OperationOptions{DryRun: req.DryRun, ForceWithoutCoordination: req.ForceWithoutCoordination, Force: req.Force, Forwarded: req.Forwarded}
	var err error
	if req.To != "" {
		if opt.To, err = parseKey("to", req.To); err != nil {
			s.writeError(w, err, nil)
			return opt, false
		}
	}
	if opt.MaxLag, err = durationParam("max_lag", req.MaxLag); err != nil {
		s.writeError(w, err, nil)
		return opt, false
	}
	if opt.DrainTimeout, err = durationParam("drain_timeout", req.DrainTimeout); err != nil {
		s.writeError(w, err, nil)
		return opt, false
	}
	return opt, true
}

// durationParam parses an optional Go duration ("30s") of a request body;
// whether its value is acceptable is the service's decision.
func durationParam(name, v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, dbpilot.Errorf(dbpilot.EINVALID, "invalid %s %q: want a duration such as 10s", name, v)
	}
	return d, nil
}

func (s *Server) relocate(w http.ResponseWriter, r *http.Request) {
	var req relocateRequest
	if !s.decode(w, r, &req) {
		return
	}
	replica, err := parseKey("replica", req.Replica)
	if err != nil {
		s.writeError(w, err, nil)
		return
	}
	below, err := parseKey("below", req.Below)
	if err != nil {
		s.writeError(w, err, nil)
		return
	}
	maxLag, err := durationParam("max_lag", req.MaxLag)
	if err != nil {
		s.writeError(w, err, nil)
		return
	}
	rec, err := s.svc.Relocate(r.Context(), replica, dbpilot.OperationOptions{DryRun: req.DryRun, To: below, Forwarded: req.Forwarded, MaxLag: maxLag})
	s.writeRecovery(w, rec, err)
}

func (s *Server) rejoin(w http.ResponseWriter, r *http.Request) {
	var req rejoinRequest
	if !s.decode(w, r, &req) {
		return
	}
	instance, err := parseKey("instance", req.Instance)
	if err != nil {
		s.writeError(w, err, nil)
		return
	}
	rec, err := s.svc.Rejoin(r.Context(), r.PathValue("name"), instance, dbpilot.OperationOptions{DryRun: req.DryRun, Reclone: req.Reclone, Forwarded: req.Forwarded})
	s.writeRecovery(w, rec, err)
}

func (s *Server) ack(w http.ResponseWriter, r *http.Request) {
	var req ackRequest
	if !s.decode(w, r, &req) {
		return
	}
	n, err := s.svc.Ack(r.Context(), r.PathValue("name"), req.By, req.Comment)
	if err != nil {
		s.writeError(w, err, nil)
		return
	}
	s.writeJSON(w, http.StatusOK, ackResponse{Acked: n})
}

// parseKey parses a host:port field of a request body.
func parseKey(field, v string) (dbpilot.InstanceKey, error) {
	if v == "" {
		return dbpilot.InstanceKey{}, dbpilot.Errorf(dbpilot.EINVALID, "missing %q: want HOST:PORT", field)
	}
	k, err := dbpilot.ParseInstanceKey(v)
	if err != nil {
		return k, dbpilot.Errorf(dbpilot.EINVALID, "invalid %q: %s", field, err.Error())
	}
	return k, nil
}

// decode reads a JSON request body into v; an empty body leaves v zero.
// Unknown fields are refused, so that a misspelt "dry_run" cannot turn a
// dry run into a real failover. On failure it writes the error and returns
// false.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	body := http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		// Nothing but white space may follow the object.
		if _, terr := dec.Token(); terr != io.EOF {
			err = errors.New("unexpected data after the JSON object")
		}
	}
	if err == nil || err == io.EOF { // io.EOF: no body at all
		return true
	}
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		s.writeErrorStatus(w, http.StatusRequestEntityTooLarge, &errorBody{
			Code:  dbpilot.EINVALID,
			Error: fmt.Sprintf("request body larger than %d bytes", tooBig.Limit),
		})
		return false
	}
	s.writeError(w, dbpilot.Errorf(dbpilot.EINVALID, "invalid JSON body: %s", jsonMessage(err)), nil)
	return false
}

// jsonMessage turns a decoding error into a line naming the field.
func jsonMessage(err error) string {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr) && typeErr.Field != "":
		return fmt.Sprintf("field %q must be a JSON %s, not %s", typeErr.Field, jsonType(typeErr.Type.Kind().String()), typeErr.Value)
	case errors.As(err, &syntaxErr):
		return fmt.Sprintf("%s at byte %d", syntaxErr.Error(), syntaxErr.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "unexpected end of the body"
	}
	// Unknown fields: `json: unknown field "x"`.
	return strings.TrimPrefix(err.Error(), "json: ")
}

func jsonType(kind string) string {
	switch kind {
	case "bool":
		return "boolean"
	case "string":
		return "string"
	case "struct", "map":
		return "object"
	case "slice", "array":
		return "array"
	}
	return "number"
}

// writeRecovery answers an operation: the recovery, or the error along with
// the recovery if the service returned one.
func (s *Server) writeRecovery(w http.ResponseWriter, rec *dbpilot.Recovery, err error) {
	if err != nil {
		s.writeError(w, err, rec)
		return
	}
	if rec == nil {
		rec = &dbpilot.Recovery{}
	}
	s.writeJSON(w, http.StatusOK, rec)
}

// writeError answers err with the status of its code.
func (s *Server) writeError(w http.ResponseWriter, err error, rec *dbpilot.Recovery) {
	code := dbpilot.ErrorCode(err)
	if code == dbpilot.EINTERNAL && errors.Is(err, context.DeadlineExceeded) {
		code = dbpilot.EUNAVAIL
	}
	s.writeErrorStatus(w, StatusOf(code), &errorBody{Error: err.Error(), Code: code, Recovery: rec})
}

func (s *Server) writeErrorStatus(w http.ResponseWriter, status int, body *errorBody) {
	if status >= 500 {
		s.log.Error("http error", "status", status, "code", body.Code, "error", body.Error)
	}
	s.writeJSON(w, status, body)
}

func (s *Server) writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		s.log.Error("http encode", "error", err)
		status = http.StatusInternalServerError
		b, _ = json.Marshal(errorBody{Code: dbpilot.EINTERNAL, Error: "cannot encode the response: " + err.Error()})
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// statusWriter records the status written.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) statusCode() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}

// captureWriter records what the mux's own 404 and 405 handlers write.
type captureWriter struct {
	header http.Header
	status int
}

func (w *captureWriter) Header() http.Header { return w.header }

func (w *captureWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *captureWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return len(b), nil
}

// benchMetricsWriter is the service's side of POST /api/bench/metrics
// (daemon.Daemon.WriteBenchMetrics).
type benchMetricsWriter interface {
	WriteBenchMetrics(ctx context.Context, b dbpilot.Batch) error
}

// benchMetrics stores one interval of a `dbpilot bench` run in serve's
// metrics: a dbpilot.Batch of dbpilot_bench_* samples.
func (s *Server) benchMetrics(w http.ResponseWriter, r *http.Request) {
	bw, ok := s.svc.(benchMetricsWriter)
	if !ok {
		s.writeError(w, dbpilot.Errorf(dbpilot.EUNSUPPORTED, "this serve does not store bench metrics"), nil)
		return
	}
	var b dbpilot.Batch
	if !s.decode(w, r, &b) {
		return
	}
	if err := bw.WriteBenchMetrics(r.Context(), b); err != nil {
		s.writeError(w, err, nil)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
