// Package coord coordinates several dbpilot serve processes through etcd:
// one election per cluster (the leader alone changes the cluster's
// topology), fencing tokens checked before every mutating statement, and
// the recovery state every serve shares. It implements dbpilot.Coordinator;
// a serve without coordination does not use it.
//
// Layout under Options.Prefix (default /dbpilot):
//
//	members/{id}               a serve, on its session lease (JSON CoordMember)
//	clusters/{name}/leader/{lease}  the election (etcd's concurrency.Election
//	                           layout: the key of the lowest create revision leads)
//	clusters/{name}/recovery   the cluster's last recovery (JSON SharedRecovery)
//	recovery-id                the counter of recovery IDs
//
// Leases are etcd's: no serve compares its clock with another's. etcd is
// reached through its v3 HTTP/JSON gateway (internal/etcdhttp), not gRPC.
package coord

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/internal/etcdhttp"
)

// Options configure the etcd coordinator.
type Options struct {
	Endpoints []string
	// Prefix is the root of dbpilot's keys (default /dbpilot).
	Prefix string
	// LeaseTTL is the session lease: a serve that stops answering loses
	// its leaderships this long after its last keepalive (default 5 s).
	LeaseTTL    time.Duration
	DialTimeout time.Duration // default 2 s
	// RequestTimeout bounds every etcd request (default 1 s).
	RequestTimeout time.Duration
	Username       string
	Password       string
	// TLS: CAFile verifies the servers; CertFile/KeyFile authenticate us.
	CAFile, CertFile, KeyFile string
	InsecureSkipVerify        bool

	// Member is this serve's id (unique among serves); API the address
	// other serves forward write requests to.
	Member  string
	API     string
	Version string
	// Clusters are the clusters to campaign for.
	Clusters []string
	Logger   *slog.Logger
}

func (o *Options) defaults() {
	if o.Prefix == "" {
		o.Prefix = "/dbpilot"
	}
	o.Prefix = strings.TrimRight(o.Prefix, "/")
	if o.LeaseTTL == 0 {
		o.LeaseTTL = 5 * time.Second
	}
	if o.DialTimeout == 0 {
		o.DialTimeout = 2 * time.Second
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Etcd is the etcd coordinator. Start connects it, Run keeps its session
// and elections until its context ends.
type Etcd struct {
	opt Options
	cli *etcdhttp.Client // set by Start
	log *slog.Logger

	mu      sync.Mutex
	sess    *session      // nil while unavailable
	sessGen chan struct{} // closed when sess changes
	reason  string        // why coordination is unavailable
	lastKA  time.Time
	leading map[string]*leadership
	seen    map[string]dbpilot.ClusterLeader // leaders seen by the watch
	members map[string]dbpilot.CoordMember
	recs    map[string]*dbpilot.SharedRecovery
	onRec   func(*dbpilot.SharedRecovery)
	// onHandover: see OnHandover.
	onHandover func(cluster string, give func()) bool
	started    time.Time
	metrics    *coordMetrics
}

// session is a lease of this serve's, kept alive by runSession; done is
// closed when it is lost or given up.
type session struct {
	lease int64
	done  chan struct{}
}

// Lease is the session's lease ID.
func (s *session) Lease() int64 { return s.lease }

// Done is closed when the session ends.
func (s *session) Done() <-chan struct{} { return s.done }

type leadership struct {
	key   string
	fence dbpilot.Fence
	since time.Time
}

var _ dbpilot.Coordinator = (*Etcd)(nil)

// New returns a coordinator for opt; it does not connect (Start does).
func New(opt Options) (*Etcd, error) {
	opt.defaults()
	if len(opt.Endpoints) == 0 {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "coordination.etcd.endpoints: none given")
	}
	if opt.Member == "" {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "coordination: no member id (serve --id)")
	}
	if opt.LeaseTTL < 2*time.Second {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "coordination.etcd.lease_ttl: %s is below 2s", opt.LeaseTTL)
	}
	return &Etcd{opt: opt, log: opt.Logger, sessGen: make(chan struct{}), leading: map[string]*leadership{},
		seen: map[string]dbpilot.ClusterLeader{}, members: map[string]dbpilot.CoordMember{},
		recs: map[string]*dbpilot.SharedRecovery{}, reason: "not connected yet", metrics: newCoordMetrics()}, nil
}

// OnRecovery sets a function called (from the watch goroutine) with every
// shared recovery written by any serve: the daemon mirrors them into its
// state store.
func (e *Etcd) OnRecovery(fn func(*dbpilot.SharedRecovery)) {
	e.mu.Lock()
	e.onRec = fn
	e.mu.Unlock()
}

// Member implements dbpilot.Coordinator.
func (e *Etcd) Member() string { return e.opt.Member }

func (e *Etcd) key(parts ...string) string {
	return e.opt.Prefix + "/" + strings.Join(parts, "/")
}

func (e *Etcd) electionPrefix(cluster string) string { return e.key("clusters", cluster, "leader") }
func (e *Etcd) recoveryKey(cluster string) string    { return e.key("clusters", cluster, "recovery") }

// Start connects to etcd. Wrong credentials or TLS files fail at once
// with one clear line; unreachable endpoints do not (serve then monitors
// only, and Run keeps trying).
func (e *Etcd) Start(ctx context.Context) error {
	cfg := etcdhttp.Config{
		Endpoints:      e.opt.Endpoints,
		DialTimeout:    e.opt.DialTimeout,
		RequestTimeout: e.opt.RequestTimeout,
		// As the gRPC client's keepalive pings were: a silent connection
		// (a watch to a host gone) is found within about two TTLs.
		KeepAlive: e.opt.LeaseTTL / 2,
		Username:  e.opt.Username,
		Password:  e.opt.Password,
	}
	if e.opt.CAFile != "" || e.opt.CertFile != "" || e.opt.InsecureSkipVerify {
		tc, err := e.tlsConfig()
		if err != nil {
			return err
		}
		cfg.TLS = tc
	}
	cli, err := etcdhttp.New(cfg)
	if err != nil {
		return dbpilot.WrapError(dbpilot.EINVALID, err, "coordination.etcd.endpoints")
	}
	e.started = time.Now()
	e.cli = cli
	// One request now (after the login, with credentials), to tell a bad
	// password from an unreachable server.
	rctx, cancel := context.WithTimeout(ctx, e.opt.DialTimeout)
	err = cli.Authenticate(rctx)
	if err == nil {
		_, err = cli.Range(rctx, etcdhttp.RangeRequest{Key: []byte(e.key("members") + "/"), RangeEnd: etcdhttp.PrefixEnd(e.key("members") + "/"), CountOnly: true})
	}
	cancel()
	switch {
	case err == nil:
	case isAuthError(err):
		cli.Close()
		return e.authError(err)
	default:
		e.setUnavailable(fmt.Sprintf("etcd unreachable at %s: %v", strings.Join(e.opt.Endpoints, ","), err))
		e.log.Warn("coordination: etcd does not answer; monitoring only until it does (no automatic recovery)", "endpoints", strings.Join(e.opt.Endpoints, ","), "err", err)
	}
	return nil
}

// authError is the one line a refused login or permission gives (never
// with the password): coordination: etcd at URL refused user "x":
// authentication failed, invalid user ID or password.
func (e *Etcd) authError(err error) error {
	return &dbpilot.Error{Code: dbpilot.EAUTH, Err: descError{err},
		Message: fmt.Sprintf("coordination: etcd at %s refused user %q", strings.Join(e.opt.Endpoints, ","), e.opt.Username)}
}

// descError shows etcd's refusal without its "etcdserver: " prefix.
type descError struct{ err error }

func (d descError) Error() string {
	var ee *etcdhttp.Error
	if errors.As(d.err, &ee) {
		return ee.Desc()
	}
	return d.err.Error()
}

func (d descError) Unwrap() error { return d.err }

// isAuthError tells a refused login from an unreachable server.
func isAuthError(err error) bool { return etcdhttp.IsAuth(err) }

func (e *Etcd) tlsConfig() (*tls.Config, error) {
	tc := &tls.Config{InsecureSkipVerify: e.opt.InsecureSkipVerify, MinVersion: tls.VersionTLS12} //nolint:gosec // asked for in the config
	if e.opt.CAFile != "" {
		pem, err := os.ReadFile(e.opt.CAFile)
		if err != nil {
			return nil, dbpilot.WrapError(dbpilot.EINVALID, err, "coordination.etcd.ca_file")
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, dbpilot.Errorf(dbpilot.EINVALID, "coordination.etcd.ca_file: no PEM certificate in %s", e.opt.CAFile)
		}
		tc.RootCAs = pool
	}
	if e.opt.CertFile != "" || e.opt.KeyFile != "" {
		cert, err := tls.LoadX509KeyPair(e.opt.CertFile, e.opt.KeyFile)
		if err != nil {
			return nil, dbpilot.WrapError(dbpilot.EINVALID, err, "coordination.etcd.cert_file/key_file")
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// Close releases the session (the leaderships end at once) and the client.
func (e *Etcd) Close() error {
	e.mu.Lock()
	s := e.sess
	e.sess = nil
	e.mu.Unlock()
	if s != nil && e.cli != nil {
		e.revoke(s.lease)
	}
	if e.cli != nil {
		return e.cli.Close()
	}
	return nil
}

func (e *Etcd) setUnavailable(reason string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.reason = reason
	e.metrics.available.Set(0)
}

// session returns the current session, or nil and why there is none.
func (e *Etcd) session() (*session, <-chan struct{}) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.sess, e.sessGen
}

// alive reports whether the session's lease was confirmed by etcd within
// its TTL (monotonic clock: a paused process sees the time it lost).
func (e *Etcd) alive() (bool, string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.sess == nil {
		return false, e.reason
	}
	if age := time.Since(e.lastKA); age >= e.opt.LeaseTTL {
		return false, fmt.Sprintf("etcd has not confirmed this serve's lease for %s (ttl %s)", age.Round(time.Millisecond), e.opt.LeaseTTL)
	}
	return true, ""
}
