package httpapi

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot"
)

// Timeouts of a Client's calls, unless the caller's context ends sooner.
const (
	// DefaultReadTimeout bounds a read (health, clusters, recoveries, audit).
	DefaultReadTimeout = 30 * time.Second
	// DefaultOperationTimeout bounds a failover, switchover, relocation or
	// ack: a failover may take two minutes.
	DefaultOperationTimeout = 3 * time.Minute
	// DefaultRecloneTimeout bounds a rejoin with reclone: a dump and a
	// restore of the cluster's data.
	DefaultRecloneTimeout = 6 * time.Hour
)

// Client calls a dbpilot serve's API. It implements dbpilot.ClusterService,
// dbpilot.AlertService and dbpilot.MetricsQuerier; errors the server reports
// come back as *dbpilot.Error with the server's code and message.
type Client struct {
	base    *url.URL
	baseErr error
	token   string

	// HTTP is the client used; it has no overall timeout, calls are bounded
	// by ReadTimeout and OperationTimeout.
	HTTP             *http.Client
	ReadTimeout      time.Duration
	OperationTimeout time.Duration
	// RecloneTimeout bounds a rejoin with reclone instead of
	// OperationTimeout, when longer.
	RecloneTimeout time.Duration
	// UserAgent is sent with every request.
	UserAgent string
	// Source is sent as X-Dbpilot-Source, for serve's audit log.
	Source string
}

var _ dbpilot.ClusterService = (*Client)(nil)

// NewClient returns a client of the serve at baseURL ("http://127.0.0.1:7070"
// or "https://..."; a bare "host:port" means http) that sends token as a
// bearer token. https:// trusts the system's roots, or the CA of
// TrustCAFile.
func NewClient(baseURL, token string) *Client {
	c := &Client{
		token:            token,
		ReadTimeout:      DefaultReadTimeout,
		OperationTimeout: DefaultOperationTimeout,
		RecloneTimeout:   DefaultRecloneTimeout,
		UserAgent:        "dbpilot",
		Source:           dbpilot.SourceCLI,
		HTTP: &http.Client{
			Transport: &http.Transport{
				Proxy:                 http.ProxyFromEnvironment,
				DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
				TLSHandshakeTimeout:   10 * time.Second,
				MaxIdleConns:          4,
				IdleConnTimeout:       90 * time.Second,
				ExpectContinueTimeout: time.Second,
			},
			// The API never redirects; following one could send the
			// token elsewhere.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
	c.base, c.baseErr = parseBaseURL(baseURL)
	return c
}

func parseBaseURL(s string) (*url.URL, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "httpapi: the dbpilot serve address is empty")
	}
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "httpapi: invalid dbpilot serve address %q: want http://HOST:PORT or https://HOST:PORT", s)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawQuery, u.Fragment, u.RawPath = "", "", ""
	return u, nil
}

// BaseURL returns the server's address as the client uses it.
func (c *Client) BaseURL() string {
	if c.base == nil {
		return ""
	}
	return c.base.String()
}

// Health implements dbpilot.ClusterService.
func (c *Client) Health(ctx context.Context) (*dbpilot.Health, error) {
	var h dbpilot.Health
	if err := c.get(ctx, "/api/health", nil, &h); err != nil {
		return nil, err
	}
	return &h, nil
}

// Clusters implements dbpilot.ClusterService.
func (c *Client) Clusters(ctx context.Context) ([]*dbpilot.ClusterStatus, error) {
	var cs []*dbpilot.ClusterStatus
	if err := c.get(ctx, "/api/clusters", nil, &cs); err != nil {
		return nil, err
	}
	return cs, nil
}

// ClusterStatus implements dbpilot.ClusterService.
func (c *Client) ClusterStatus(ctx context.Context, name string) (*dbpilot.ClusterStatus, error) {
	if err := checkCluster(name); err != nil {
		return nil, err
	}
	var cs dbpilot.ClusterStatus
	if err := c.get(ctx, "/api/clusters/"+url.PathEscape(name), nil, &cs); err != nil {
		return nil, err
	}
	return &cs, nil
}

// Recoveries implements dbpilot.ClusterService.
func (c *Client) Recoveries(ctx context.Context, f dbpilot.RecoveryFilter) ([]*dbpilot.Recovery, error) {
	q := url.Values{}
	if f.Cluster != "" {
		q.Set("cluster", f.Cluster)
	}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	var rs []*dbpilot.Recovery
	if err := c.get(ctx, "/api/recoveries", q, &rs); err != nil {
		return nil, err
	}
	return rs, nil
}

// Recovery returns one recovery by id (ENOTFOUND when there is none).
func (c *Client) Recovery(ctx context.Context, id int64) (*dbpilot.Recovery, error) {
	var r dbpilot.Recovery
	if err := c.get(ctx, "/api/recoveries/"+strconv.FormatInt(id, 10), nil, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// AuditEvents implements dbpilot.ClusterService.
func (c *Client) AuditEvents(ctx context.Context, f dbpilot.AuditFilter) ([]dbpilot.AuditEvent, error) {
	q := url.Values{}
	if f.Cluster != "" {
		q.Set("cluster", f.Cluster)
	}
	if f.RecoveryID != 0 {
		q.Set("recovery", strconv.FormatInt(f.RecoveryID, 10))
	}
	if !f.Since.IsZero() {
		q.Set("since", f.Since.Format(time.RFC3339Nano))
	}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	var es []dbpilot.AuditEvent
	if err := c.get(ctx, "/api/audit", q, &es); err != nil {
		return nil, err
	}
	return es, nil
}

// Failover implements dbpilot.ClusterService.
func (c *Client) Failover(ctx context.Context, cluster string, opt dbpilot.OperationOptions) (*dbpilot.Recovery, error) {
	if err := checkCluster(cluster); err != nil {
		return nil, err
	}
	req := operationRequest{DryRun: opt.DryRun, ForceWithoutCoordination: opt.ForceWithoutCoordination, Force: opt.Force, Forwarded: opt.Forwarded}
	if !opt.To.IsZero() {
		req.To = opt.To.String()
	}
	return c.operation(ctx, "/api/clusters/"+url.PathEscape(cluster)+"/failover", req)
}

// Switchover implements dbpilot.ClusterService.
func (c *Client) Switchover(ctx context.Context, cluster string, opt dbpilot.OperationOptions) (*dbpilot.Recovery, error) {
	if err := checkCluster(cluster); err != nil {
		return nil, err
	}
	req := operationRequest{DryRun: opt.DryRun, ForceWithoutCoordination: opt.ForceWithoutCoordination, Forwarded: opt.Forwarded,
		MaxLag: durationText(opt.MaxLag), DrainTimeout: durationText(opt.DrainTimeout)}
	if !opt.To.IsZero() {
		req.To = opt.To.String()
	}
	return c.operation(ctx, "/api/clusters/"+url.PathEscape(cluster)+"/switchover", req)
}

// Relocate implements dbpilot.ClusterService.
func (c *Client) Relocate(ctx context.Context, replica dbpilot.InstanceKey, opt dbpilot.OperationOptions) (*dbpilot.Recovery, error) {
	req := relocateRequest{DryRun: opt.DryRun, Forwarded: opt.Forwarded, MaxLag: durationText(opt.MaxLag)}
	if !replica.IsZero() {
		req.Replica = replica.String()
	}
	if !opt.To.IsZero() {
		req.Below = opt.To.String()
	}
	return c.operation(ctx, "/api/relocate", req)
}

// Rejoin implements dbpilot.ClusterService.
func (c *Client) Rejoin(ctx context.Context, cluster string, instance dbpilot.InstanceKey, opt dbpilot.OperationOptions) (*dbpilot.Recovery, error) {
	if err := checkCluster(cluster); err != nil {
		return nil, err
	}
	req := rejoinRequest{DryRun: opt.DryRun, Reclone: opt.Reclone, Forwarded: opt.Forwarded}
	if !instance.IsZero() {
		req.Instance = instance.String()
	}
	cc := c
	if opt.Reclone && !opt.DryRun && c.RecloneTimeout > c.OperationTimeout {
		copied := *c
		copied.OperationTimeout = c.RecloneTimeout
		cc = &copied
	}
	return cc.operation(ctx, "/api/clusters/"+url.PathEscape(cluster)+"/rejoin", req)
}

// durationText is d as a request body carries it; "" for zero (the
// service's setting).
func durationText(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

// Ack implements dbpilot.ClusterService.
func (c *Client) Ack(ctx context.Context, cluster, by, comment string) (int, error) {
	if err := checkCluster(cluster); err != nil {
		return 0, err
	}
	var resp ackResponse
	err := c.do(ctx, http.MethodPost, "/api/clusters/"+url.PathEscape(cluster)+"/ack", nil, ackRequest{By: by, Comment: comment}, &resp, nil)
	if err != nil {
		return 0, err
	}
	return resp.Acked, nil
}

// checkCluster refuses an empty cluster name, which no route takes.
func checkCluster(name string) error {
	if name == "" {
		return dbpilot.Errorf(dbpilot.EINVALID, "httpapi: cluster name is empty")
	}
	return nil
}

// operation posts a topology change. A failed operation returns the
// recovery record too when the server sent one.
func (c *Client) operation(ctx context.Context, path string, body any) (*dbpilot.Recovery, error) {
	var rec dbpilot.Recovery
	var failed *dbpilot.Recovery
	if err := c.do(ctx, http.MethodPost, path, nil, body, &rec, &failed); err != nil {
		return failed, err
	}
	return &rec, nil
}

func (c *Client) get(ctx context.Context, path string, q url.Values, out any) error {
	return c.do(ctx, http.MethodGet, path, q, nil, out, nil)
}

// do sends one request and decodes the JSON answer into out, or turns an
// error answer into a *dbpilot.Error (and its recovery into *failed).
func (c *Client) do(ctx context.Context, method, path string, q url.Values, body, out any, failed **dbpilot.Recovery) error {
	resp, data, err := c.send(ctx, method, path, q, body)
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		return c.errorAnswer(method, path, resp, data, failed)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return c.unreadable(err, method, path)
		}
	}
	return nil
}

// send sends one request and reads the whole answer, whatever its status;
// only a request that gets no answer fails.
func (c *Client) send(ctx context.Context, method, path string, q url.Values, body any) (*http.Response, []byte, error) {
	if c.baseErr != nil {
		return nil, nil, c.baseErr
	}
	timeout := c.ReadTimeout
	if method != http.MethodGet {
		timeout = c.OperationTimeout
	}
	callCtx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		callCtx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}

	target := c.base.String() + path // path is escaped already
	if len(q) > 0 {
		target += "?" + q.Encode()
	}

	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, nil, fmt.Errorf("httpapi: encode request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(callCtx, method, target, rd)
	if err != nil {
		return nil, nil, dbpilot.WrapError(dbpilot.EINVALID, err, "httpapi: bad request to %s", c.base)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.UserAgent != "" {
		req.Header.Set("User-Agent", c.UserAgent)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.Source != "" {
		req.Header.Set(SourceHeader, c.Source)
	}
	if a := dbpilot.ActorOf(ctx); a != "" {
		req.Header.Set(ActorHeader, a) // a request serve forwards: who asked it
	}
	if dbpilot.IsPeerRead(ctx) {
		req.Header.Set(PeerHeader, "1") // answer from your own observations only
	}

	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, nil, c.transportError(ctx, callCtx, method, path, timeout, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, nil, c.transportError(ctx, callCtx, method, path, timeout, err)
	}
	return resp, data, nil
}

// errorAnswer turns an error answer into a *dbpilot.Error: the API's own
// code and message, or a code guessed from the status (a proxy's answer).
// The recovery of a failed operation goes into *failed.
func (c *Client) errorAnswer(method, path string, resp *http.Response, data []byte, failed **dbpilot.Recovery) error {
	var eb errorBody
	if json.Unmarshal(data, &eb) == nil && eb.Code != "" && eb.Error != "" {
		if failed != nil {
			*failed = eb.Recovery
		}
		return &dbpilot.Error{Code: eb.Code, Message: eb.Error}
	}
	return dbpilot.Errorf(codeOfStatus(resp.StatusCode), "httpapi: dbpilot serve at %s answered %s %s: %s",
		c.base, method, path, statusLine(resp.Status, data))
}

// unreadable is a successful answer that cannot be decoded.
func (c *Client) unreadable(err error, method, path string) error {
	return dbpilot.WrapError(dbpilot.EINTERNAL, err, "httpapi: unreadable answer from dbpilot serve at %s to %s %s", c.base, method, path)
}

// transportError explains a request that got no answer.
func (c *Client) transportError(ctx, callCtx context.Context, method, path string, timeout time.Duration, err error) error {
	if ctx.Err() != nil {
		// The caller gave up (interrupt, its own deadline).
		return fmt.Errorf("httpapi: %s %s: %w", method, path, ctx.Err())
	}
	if callCtx.Err() != nil {
		return dbpilot.Errorf(dbpilot.EUNAVAIL, "httpapi: dbpilot serve at %s did not answer %s %s within %s", c.base, method, path, timeout)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var unknownCA x509.UnknownAuthorityError
	if errors.As(err, &unknownCA) {
		return dbpilot.WrapError(dbpilot.EUNAVAIL, err, "httpapi: dbpilot serve at %s has a certificate no trusted CA signed (give its CA with --server-ca FILE or $DBPILOT_SERVER_CA)", c.base)
	}
	return dbpilot.WrapError(dbpilot.EUNAVAIL, err, "httpapi: cannot reach dbpilot serve at %s", c.base)
}

// statusLine summarizes a non-API error answer.
func statusLine(status string, body []byte) string {
	line, _, _ := strings.Cut(strings.TrimSpace(string(body)), "\n")
	if len(line) > 200 {
		line = line[:200] + "..."
	}
	if line == "" {
		return status
	}
	return status + ": " + line
}

// WriteBenchMetrics sends one interval of a `dbpilot bench` run to serve's
// metrics: POST /api/bench/metrics.
func (c *Client) WriteBenchMetrics(ctx context.Context, b dbpilot.Batch) error {
	return c.do(ctx, http.MethodPost, "/api/bench/metrics", nil, b, nil, nil)
}
