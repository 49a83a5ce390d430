// Package etcdhttp is a small etcd v3 client over etcd's HTTP/JSON gateway
// (POST /v3/... on the client URL, served by etcd 3.4 and later by
// default), written with net/http alone: the key-value, transaction,
// lease, watch and authentication calls dbpilot's coordinator needs, and
// nothing else.
//
// The gateway maps etcd's protobuf messages to JSON: 64-bit integers are
// strings, bytes are base64, enums are their names, and fields holding
// their zero value are left out (a PUT event has no "type"; a lease
// keepalive answered with no TTL means the lease is gone).
package etcdhttp

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Config configures a Client.
type Config struct {
	// Endpoints are etcd client URLs (http://host:port or https://...); an
	// address without a scheme gets https:// when TLS is set, else http://.
	Endpoints []string
	// TLS is used for https:// endpoints.
	TLS *tls.Config
	// DialTimeout bounds connecting to one endpoint (default 2 s).
	DialTimeout time.Duration
	// KeepAlive is the TCP keepalive of the connections: probes after this
	// long idle, every KeepAlive, the connection dropped after 3 unanswered
	// (a watch on a host that died or is cut off ends). Default 15 s.
	KeepAlive time.Duration
	// RequestTimeout bounds every unary request, and a watch until etcd
	// confirms it (0: only the caller's context).
	RequestTimeout time.Duration
	// Username and Password, when both are set, are exchanged for a token
	// (POST /v3/auth/authenticate) sent with every request.
	Username, Password string
}

// Client talks to one etcd cluster. It is safe for concurrent use.
type Client struct {
	cfg Config
	eps []string
	hc  *http.Client
	cur atomic.Int32 // index of the endpoint in use

	authMu  sync.Mutex // serialises authentication
	tokMu   sync.Mutex
	token   string
	authOff bool // etcd said authentication is not enabled
}

// New returns a client for cfg. It does no I/O.
func New(cfg Config) (*Client, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("etcd: no endpoint")
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 2 * time.Second
	}
	c := &Client{cfg: cfg}
	for _, ep := range cfg.Endpoints {
		ep = strings.TrimRight(strings.TrimSpace(ep), "/")
		if !strings.Contains(ep, "://") {
			if cfg.TLS != nil {
				ep = "https://" + ep
			} else {
				ep = "http://" + ep
			}
		}
		u, err := url.Parse(ep)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return nil, fmt.Errorf("etcd endpoint %q: want http://host:port or https://host:port", ep)
		}
		c.eps = append(c.eps, ep)
	}
	if cfg.KeepAlive <= 0 {
		cfg.KeepAlive = 15 * time.Second
	}
	dialer := &net.Dialer{Timeout: cfg.DialTimeout,
		KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: cfg.KeepAlive, Interval: cfg.KeepAlive, Count: 3}}
	tr := &http.Transport{
		DialContext:         dialer.DialContext,
		TLSClientConfig:     cfg.TLS,
		TLSHandshakeTimeout: cfg.DialTimeout,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     90 * time.Second,
		// HTTP/1.1 everywhere (no ForceAttemptHTTP2): the gateway serves it
		// on plain and TLS client URLs alike.
	}
	// No Client.Timeout: watches stream for as long as their context lasts.
	c.hc = &http.Client{Transport: tr}
	return c, nil
}

// Close closes the client's idle connections; requests in flight end
// with their contexts.
func (c *Client) Close() error {
	c.hc.CloseIdleConnections()
	return nil
}

// Error is etcd's refusal of a request: the gRPC status the gateway
// carries (Code) and etcd's message, e.g. "etcdserver: permission denied".
type Error struct {
	Endpoint string
	Code     int // gRPC status code
	Message  string
}

func (e *Error) Error() string { return e.Message }

// Desc is the message without etcd's "etcdserver: " prefix.
func (e *Error) Desc() string { return strings.TrimPrefix(e.Message, "etcdserver: ") }

// etcd's messages (api/v3rpc/rpctypes), stable since etcd 3.0.
const (
	msgAuthFailed       = "etcdserver: authentication failed, invalid user ID or password"
	msgInvalidToken     = "etcdserver: invalid auth token"
	msgAuthOldRevision  = "etcdserver: revision of auth store is old"
	msgUserEmpty        = "etcdserver: user name is empty"
	msgPermissionDenied = "etcdserver: permission denied"
	msgAuthNotEnabled   = "etcdserver: authentication is not enabled"
	msgLeaseNotFound    = "etcdserver: requested lease not found"
	msgNoLeader         = "etcdserver: no leader"
)

// hasMessage reports whether err is etcd's refusal (an *Error, or a watch
// canceled with a reason such as "rpc error: code = PermissionDenied desc
// = etcdserver: permission denied") with one of msgs.
func hasMessage(err error, msgs ...string) bool {
	var text string
	var e *Error
	var ce *CanceledError
	switch {
	case errors.As(err, &e):
		text = e.Message
	case errors.As(err, &ce):
		text = ce.Reason
	default:
		return false
	}
	for _, m := range msgs {
		if strings.Contains(text, m) {
			return true
		}
	}
	return false
}

// IsAuth reports whether err is etcd refusing the credentials or the
// permission (wrong password, invalid token, permission denied, no user
// name, authentication not enabled), as opposed to a failure to reach it.
func IsAuth(err error) bool {
	return hasMessage(err, msgAuthFailed, msgInvalidToken, msgAuthOldRevision, msgUserEmpty, msgPermissionDenied, msgAuthNotEnabled)
}

// IsLeaseNotFound reports whether err says the lease does not exist.
func IsLeaseNotFound(err error) bool { return hasMessage(err, msgLeaseNotFound) }

// IsNoLeader reports whether err says the member answering has no leader.
func IsNoLeader(err error) bool { return hasMessage(err, msgNoLeader) }

// tokenError: a token to renew (expired, or from before an auth change).
func tokenError(err error) bool {
	return hasMessage(err, msgInvalidToken, msgAuthOldRevision, msgUserEmpty)
}

// gatewayError is the body of a refused request: grpc-gateway v1 writes
// {"error": "...", "message": "...", "code": N} for unary calls and
// {"error": {"grpc_code": N, "message": "...", ...}} inside a stream.
type gatewayError struct {
	Error    json.RawMessage `json:"error"`
	Message  string          `json:"message"`
	Code     int             `json:"code"`
	GRPCCode int             `json:"grpc_code"`
}

// parseError reads an error object (the whole body, or a stream's
// "error" member) into *Error.
func parseError(ep string, raw []byte) *Error {
	var g gatewayError
	if err := json.Unmarshal(raw, &g); err != nil {
		return &Error{Endpoint: ep, Code: 2, Message: fmt.Sprintf("etcd gateway: unexpected answer %.200q", raw)}
	}
	e := &Error{Endpoint: ep, Code: g.Code, Message: g.Message}
	if g.GRPCCode != 0 {
		e.Code = g.GRPCCode
	}
	if len(g.Error) > 0 {
		var s string
		if json.Unmarshal(g.Error, &s) == nil {
			if e.Message == "" {
				e.Message = s
			}
		} else if inner := parseError(ep, g.Error); inner.Message != "" {
			if e.Message == "" {
				e.Message = inner.Message
			}
			if e.Code == 0 {
				e.Code = inner.Code
			}
		}
	}
	if e.Message == "" {
		e.Message = fmt.Sprintf("etcd gateway: unexpected answer %.200q", raw)
	}
	return e
}

// Authenticate exchanges the configured user and password for a token.
// Without both it does nothing; when etcd has authentication disabled it
// goes on without a token (as etcd's own client does).
func (c *Client) Authenticate(ctx context.Context) error {
	c.authMu.Lock()
	defer c.authMu.Unlock()
	return c.authenticateLocked(ctx)
}

func (c *Client) authenticateLocked(ctx context.Context) error {
	if c.cfg.Username == "" || c.cfg.Password == "" {
		return nil
	}
	ctx, cancel := c.unaryContext(ctx)
	defer cancel()
	in := struct {
		Name     string `json:"name"`
		Password string `json:"password"`
	}{c.cfg.Username, c.cfg.Password}
	var out struct {
		Header ResponseHeader `json:"header"`
		Token  string         `json:"token"`
	}
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	err = c.roundTrip(ctx, "/v3/auth/authenticate", body, false, false, &out)
	switch {
	case hasMessage(err, msgAuthNotEnabled):
		c.setToken("", true)
		return nil
	case err != nil:
		return err
	case out.Token == "":
		return &Error{Endpoint: c.endpoint(), Code: 2, Message: "etcd gateway: authenticate returned no token"}
	}
	c.setToken(out.Token, false)
	return nil
}

func (c *Client) setToken(tok string, off bool) {
	c.tokMu.Lock()
	c.token, c.authOff = tok, off
	c.tokMu.Unlock()
}

func (c *Client) getToken() (string, bool) {
	c.tokMu.Lock()
	defer c.tokMu.Unlock()
	return c.token, c.authOff
}

// ensureToken authenticates before the first request that needs it.
func (c *Client) ensureToken(ctx context.Context) error {
	if c.cfg.Username == "" || c.cfg.Password == "" {
		return nil
	}
	if tok, off := c.getToken(); tok != "" || off {
		return nil
	}
	c.authMu.Lock()
	defer c.authMu.Unlock()
	if tok, off := c.getToken(); tok != "" || off {
		return nil
	}
	return c.authenticateLocked(ctx)
}

// reauth renews the token once per stale token, however many requests
// saw it refused.
func (c *Client) reauth(ctx context.Context, stale string) error {
	c.authMu.Lock()
	defer c.authMu.Unlock()
	if tok, _ := c.getToken(); tok != stale {
		return nil
	}
	return c.authenticateLocked(ctx)
}

func (c *Client) canAuth() bool { return c.cfg.Username != "" && c.cfg.Password != "" }

func (c *Client) endpoint() string { return c.eps[int(c.cur.Load())%len(c.eps)] }

// next moves off endpoint i (when it is still the current one).
func (c *Client) next(i int) {
	c.cur.CompareAndSwap(int32(i), int32((i+1)%len(c.eps)))
}

func (c *Client) unaryContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if c.cfg.RequestTimeout > 0 {
		return context.WithTimeout(ctx, c.cfg.RequestTimeout)
	}
	return context.WithCancel(ctx)
}

// Do sends one unary request: in is marshalled to JSON and POSTed to path
// (e.g. "/v3/kv/range"), the answer unmarshalled into out. requireLeader
// makes etcd refuse it when the member has no leader instead of waiting.
// An invalid or expired token is renewed and the request sent once more.
func (c *Client) Do(ctx context.Context, path string, in, out any, requireLeader bool) error {
	ctx, cancel := c.unaryContext(ctx)
	defer cancel()
	body, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("etcd %s: %w", path, err)
	}
	if err := c.ensureToken(ctx); err != nil {
		return err
	}
	tok, _ := c.getToken()
	err = c.roundTrip(ctx, path, body, true, requireLeader, out)
	if err != nil && tokenError(err) && c.canAuth() {
		if aerr := c.reauth(ctx, tok); aerr != nil {
			return aerr
		}
		err = c.roundTrip(ctx, path, body, true, requireLeader, out)
	}
	return err
}

// post sends body to path on the current endpoint, moving to the next
// ones while connecting fails. It returns the response (200 or not) and
// the index of the endpoint that answered.
func (c *Client) post(ctx context.Context, path string, body []byte, withToken, requireLeader bool) (*http.Response, int, error) {
	n := len(c.eps)
	start := int(c.cur.Load()) % n
	var last error
	for k := range n {
		i := (start + k) % n
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.eps[i]+path, bytes.NewReader(body))
		if err != nil {
			return nil, i, err
		}
		req.Header.Set("Content-Type", "application/json")
		if withToken {
			if tok, _ := c.getToken(); tok != "" {
				req.Header.Set("Authorization", tok)
			}
		}
		if requireLeader {
			// grpc-gateway passes Grpc-Metadata-* on as gRPC metadata:
			// etcd's clientv3.WithRequireLeader.
			req.Header.Set("Grpc-Metadata-Hasleader", "true")
		}
		resp, err := c.hc.Do(req)
		if err == nil {
			c.cur.Store(int32(i))
			return resp, i, nil
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		last = err
		if !errors.Is(ctx.Err(), context.Canceled) { // not the caller's doing
			c.next(i)
		}
		if ctx.Err() != nil || !dialError(err) {
			// Sent, perhaps received: not repeated elsewhere (a write may
			// have been applied). The next request tries the next endpoint.
			return nil, i, err
		}
	}
	return nil, start, last
}

// dialError: the connection was never made, so nothing was sent.
func dialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// roundTrip posts body and decodes a unary answer.
func (c *Client) roundTrip(ctx context.Context, path string, body []byte, withToken, requireLeader bool, out any) error {
	resp, i, err := c.post(ctx, path, body, withToken, requireLeader)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		c.next(i)
		return err
	}
	if resp.StatusCode != http.StatusOK {
		e := parseError(c.eps[i], b)
		if e.Code == 14 { // Unavailable (no leader): another member may have one
			c.next(i)
		}
		return e
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("etcd at %s: %s: decode %.200q: %w", c.eps[i], path, b, err)
	}
	return nil
}
