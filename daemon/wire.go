package daemon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/backup"
	"github.com/dbpilot/dbpilot/collector"
	"github.com/dbpilot/dbpilot/coord"
	"github.com/dbpilot/dbpilot/internal/stall"
	"github.com/dbpilot/dbpilot/metrics"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/remotewrite"
	"github.com/dbpilot/dbpilot/sandbox"
	"github.com/dbpilot/dbpilot/sqlite"
	"github.com/dbpilot/dbpilot/watchdog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.yaml.in/yaml/v3"
)

// This file is the only place where the daemon meets concrete adapters:
// coord (the etcd coordinator), mysql (probes, replication control,
// liveness sessions, credential files), backup (re-provisioning a server for rejoin --reclone),
// collector (metrics, the gated heartbeat, the statements collector and the
// watchdog's session: processlist, metadata locks, KILL), sqlite (state),
// metrics (the embedded TSDB), remotewrite (remote-write targets, a
// remote query API, and the URL checks and defaults the configuration is
// validated against: remoteWriteChecks) and sandbox (configuration from a sandbox). Everything
// else in the package works on the interfaces of Options and the small
// interfaces beside the features (watchSession, the binlog backup's
// gtidBinlogState).

// Wiring says how Open builds a daemon from its configuration.
type Wiring struct {
	// Store is the state store; nil opens the SQLite file cfg.State, owned
	// (closed) by the daemon. ReadOnly opens it without serve's lock, for
	// listings while a serve runs.
	Store    dbpilot.StateStore
	ReadOnly bool
	// Metrics turns on collection and alerts (serve) unless the
	// configuration disables metrics: MetricsStore when set, else the
	// embedded TSDB opened at cfg.Metrics.Dir and owned by the daemon.
	// AlertStore keeps alert states (nil: the state store, when it is one).
	Metrics      bool
	MetricsStore MetricsBackend
	AlertStore   dbpilot.AlertStore
	// Dial, when set, opens dbpilot's own connections to servers (tests cut
	// dbpilot's path to a primary with it, leaving replication alone).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Logger logs the daemon; TSDBLogger the embedded TSDB (nil: Logger).
	Logger, TSDBLogger *slog.Logger
	Version            string
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Coordinator and Forward: see Options (serve builds them with
	// NewCoordinator when coordination.etcd is configured).
	Coordinator dbpilot.Coordinator
	Forward     func(api string) dbpilot.ClusterService
}

// Wired is a daemon built by Open, with the embedded metrics store it
// opened (nil when metrics are off, given, or metrics.local is false), the
// remote-write targets it started, and the metrics handlers serve mounts.
type Wired struct {
	*Daemon
	TSDB   *metrics.Store
	Remote []*remotewrite.Sink
	// Exposition serves /metrics: the embedded store's (latest values and
	// dbpilot's own metrics), or without it only dbpilot's own metrics.
	// QueryAPI serves /api/metrics/: the embedded store's PromQL API, or
	// metrics.query_url's, or a 503 naming what is missing. Both are nil
	// when metrics are off.
	Exposition, QueryAPI http.Handler
	reg                  *prometheus.Registry // behind Exposition without the embedded store
}

// RegisterMetrics adds a collector of dbpilot's own metrics to those
// Exposition serves, with or without the embedded store. Without metrics
// (off) there is no /metrics and it does nothing.
func (out *Wired) RegisterMetrics(c prometheus.Collector) error {
	switch {
	case out.TSDB != nil:
		return out.TSDB.Register(c)
	case out.reg != nil:
		return out.reg.Register(c)
	}
	return nil
}

// Open builds a daemon from cfg (already validated): the state store, the
// metrics store, and the mysql and collector adapters of Wire. Close
// releases everything it opened.
func Open(cfg *Config, w Wiring) (*Wired, error) {
	var closers []io.Closer
	fail := func(err error) (*Wired, error) {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i].Close()
		}
		return nil, err
	}
	if w.Store == nil {
		var db *sqlite.DB
		var err error
		if w.ReadOnly {
			db, err = sqlite.OpenReadOnly(cfg.State)
		} else {
			db, err = sqlite.Open(cfg.State)
		}
		if err != nil {
			return fail(err)
		}
		closers = append(closers, db)
		w.Store = db
	}
	out := &Wired{}
	if w.Metrics && !cfg.Metrics.Disabled {
		if w.AlertStore == nil {
			w.AlertStore, _ = w.Store.(dbpilot.AlertStore)
		}
		if w.MetricsStore == nil && cfg.Metrics.LocalStore() {
			log := w.TSDBLogger
			if log == nil {
				log = w.Logger
			}
			ms, err := metrics.Open(metrics.Options{Dir: cfg.Metrics.Dir, Retention: cfg.Metrics.Retention.D(), Logger: log})
			if err != nil {
				return fail(err)
			}
			closers = append(closers, ms)
			out.TSDB = ms
			w.MetricsStore = ms
		}
		backend, err := out.wireRemote(cfg, w.MetricsStore, w.Logger, w.Version)
		for _, r := range out.Remote {
			closers = append(closers, r) // closed first: their last sends
		}
		if err != nil {
			return fail(err)
		}
		w.MetricsStore = backend
	} else {
		w.MetricsStore = nil
	}
	out.Daemon = Wire(cfg, w)
	out.closers = closers
	if out.Daemon.mon != nil {
		for _, c := range collectionMetrics() {
			if err := out.RegisterMetrics(c); err != nil {
				return fail(fmt.Errorf("metrics: collection self-metrics: %w", err))
			}
		}
	}
	return out, nil
}

// collectionMetrics are serve's metrics of its collection keeping up:
// runs waiting on serve itself now, and runs that gave up waiting.
func collectionMetrics() []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "dbpilot_collection_backlog",
			Help: "Collector runs waiting now for a session of their instance or a connection slot: collection behind because serve is, not because a server is.",
		}, func() float64 { return float64(collector.Backlog()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "dbpilot_collection_lagged_total",
			Help: "Collector runs that could not reach their server within their timeout because serve's collection was behind (the server was not asked; no mysql_up 0).",
		}, func() float64 { return float64(collector.Lagged()) }),
	}
}

// Wire returns a daemon for cfg acting through the mysql package (probe
// inspector, replication controller, liveness sessions) and, with
// w.MetricsStore, the collectors; it opens no store.
func Wire(cfg *Config, w Wiring) *Daemon {
	probe := adminOptions(cfg)
	probe.Dial = w.Dial
	admin := probe
	admin.ConnectTimeout = max(admin.ConnectTimeout, time.Second)
	admin.QueryTimeout = 30 * time.Second
	repl := mysql.Credentials{User: cfg.Replication.User, Password: cfg.Replication.Password}
	inspector := mysql.NewInspector(probe)
	opt := Options{
		Inspector:  inspector,
		Detector:   detector{probe: inspector, spare: mysql.NewInspector(probe)},
		Controller: mysql.NewController(admin, repl).WithReplicationTLS(replicationTLS(cfg)),
		Recloner:   recloner{admin: admin, repl: repl, replTLS: replicationTLS(cfg), tool: strings.TrimSuffix("dbpilot "+w.Version, " ")},
		Liveness:   &mysql.Liveness{Options: probe},
		Store:      w.Store,
		AlertStore: w.AlertStore,
		QueryStore: queryStoreOf(w.Store),
		History:    historyOf(w.Store),
		Now:        w.Now,
		Logger:     w.Logger,
		Version:    w.Version,

		Coordinator: w.Coordinator,
		Forward:     w.Forward,
	}
	if w.MetricsStore != nil {
		opt.Metrics = w.MetricsStore
		// Collectors' sessions connect with more patience than the probes:
		// detection does not wait on them, and at a fleet's scale (a serve
		// starting on 1000 instances, a network coming back) a connection
		// may take more than the probe timeout without the server being
		// down; giving up then only adds another connection to the storm.
		copts := probe
		// Their statements are bounded by each collector's own run
		// timeout (a share of its interval), not the probe's.
		copts.ConnectTimeout = max(probe.ConnectTimeout, collectorConnectTimeout)
		copts.QueryTimeout = max(probe.QueryTimeout, collectorConnectTimeout)
		cs := newCollectorStarter(cfg, copts, w.MetricsStore, w.Logger)
		// Discovery takes the status the global_status collector read
		// within the poll interval instead of reading it again.
		cs.share = collector.NewStatusShare()
		inspector.ShareStatus(cs.share, cfg.PollInterval.D())
		opt.Collectors = cs
	}
	d := New(cfg, opt)
	if cs, ok := opt.Collectors.(*collectorStarter); ok {
		cs.audit = d.audit // watchdog matches go to the daemon's audit log
		if cs.wdNotify != nil {
			d.closers = append(d.closers, cs.wdNotify) // its last webhook posts
		}
		if d.queryStore != nil {
			cs.queries = &statementsStarter{cfg: cfg.Queries, rec: d.queries}
		}
	}
	return d
}

// detector reads servers to confirm a failure (Options.Detector): through
// the monitoring probe's connection to the server when it is idle (warm,
// no handshake), through a spare inspector's own connection when a crawl
// holds it, never waiting for monitoring.
type detector struct {
	probe, spare *mysql.Inspector
}

func (d detector) Inspect(ctx context.Context, key dbpilot.InstanceKey) (*dbpilot.Instance, error) {
	return d.probe.InspectOr(ctx, key, d.spare)
}

// InspectReplica re-reads last's channels in one statement
// (mysql.Inspector.InspectReplicaOr).
func (d detector) InspectReplica(ctx context.Context, last *dbpilot.Instance) (*dbpilot.Instance, error) {
	return d.probe.InspectReplicaOr(ctx, last, d.spare)
}

// Forget drops the spare's connection to key (the probe's is the daemon's
// to forget).
func (d detector) Forget(key dbpilot.InstanceKey) error { return d.spare.Forget(key) }

// Close closes the spare inspector.
func (d detector) Close() error { return d.spare.Close() }

// recloner re-provisions a server with the backup package's clone
// (dbpilot.Recloner): a consistent dump of the source restored into the
// target, which is replaced (databases the source lacks dropped, binary log
// reset) and replicates from the source at the dump's GTID position.
type recloner struct {
	admin   mysql.Options
	repl    mysql.Credentials
	replTLS *mysql.TLSSettings
	tool    string
}

func (c recloner) Reclone(ctx context.Context, source, target dbpilot.InstanceKey) (*dbpilot.RecloneResult, error) {
	res, err := backup.Clone(ctx, source, c.admin, target, c.admin, backup.CloneOptions{
		Threads: 4, Replicate: true, Repl: c.repl, ReplTLS: c.replTLS, Replace: true, Tool: c.tool})
	if err != nil {
		return nil, err
	}
	out := &dbpilot.RecloneResult{Position: res.Position, Dropped: res.Dropped}
	if res.Restore != nil {
		out.Tables, out.Rows = res.Restore.Tables, res.Restore.Rows
	}
	return out, nil
}

// wireRemote starts the remote-write targets and returns the metrics
// backend: local (nil when metrics.local is false) fanned out to them,
// queried from local, metrics.query_url or nothing; it sets the metrics
// handlers.
func (out *Wired) wireRemote(cfg *Config, local MetricsBackend, log *slog.Logger, version string) (MetricsBackend, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if local != nil && len(cfg.Metrics.RemoteWrite) == 0 {
		if out.TSDB != nil {
			out.Exposition, out.QueryAPI = out.TSDB.Handler(), out.TSDB.APIHandler()
		}
		return local, nil
	}
	f := &fanout{local: local}
	for i := range cfg.Metrics.RemoteWrite {
		opt := cfg.Metrics.RemoteWrite[i].options()
		opt.Logger, opt.UserAgent = log.With("component", "remote_write"), strings.TrimSuffix("dbpilot/"+version, "/")
		sink, err := remotewrite.New(opt)
		if err != nil {
			return nil, err
		}
		out.Remote = append(out.Remote, sink)
		f.remote = append(f.remote, sink)
	}
	var api http.Handler
	switch {
	case local != nil:
		f.MetricsQuerier = local
	case cfg.Metrics.QueryURL != "":
		q, err := remotewrite.NewQuerier(remotewrite.QueryOptions{URL: cfg.Metrics.QueryURL})
		if err != nil {
			return nil, err
		}
		f.MetricsQuerier, api = q, q.APIHandler()
	default:
		u := remotewrite.Unqueryable{Reason: errNoQuerier.Error()}
		f.MetricsQuerier, api = u, u.APIHandler()
	}
	if out.TSDB != nil {
		for _, r := range out.Remote {
			if err := out.TSDB.Register(r); err != nil {
				return nil, fmt.Errorf("metrics: remote write self-metrics: %w", err)
			}
		}
		out.Exposition, out.QueryAPI = out.TSDB.Handler(), out.TSDB.APIHandler()
		return f, nil
	}
	if local == nil {
		out.reg = prometheus.NewRegistry()
		out.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		for _, r := range out.Remote {
			out.reg.MustRegister(r)
		}
		out.Exposition = promhttp.HandlerFor(out.reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)})
		out.QueryAPI = api
	}
	return f, nil
}

// fanout is the metrics backend with remote-write targets: every batch
// goes to the local store (when there is one) and is queued for each
// target, which never blocks; queries go to MetricsQuerier.
type fanout struct {
	local  MetricsBackend // nil: metrics.local is false
	remote []*remotewrite.Sink
	dbpilot.MetricsQuerier
}

func (f *fanout) Write(ctx context.Context, b dbpilot.Batch) error {
	var errs []error
	if f.local != nil {
		errs = append(errs, f.local.Write(ctx, b))
	}
	for _, r := range f.remote {
		errs = append(errs, r.Write(ctx, b))
	}
	return errors.Join(errs...)
}

func (f *fanout) Forget(k dbpilot.InstanceKey) {
	if f.local != nil {
		f.local.Forget(k)
	}
	for _, r := range f.remote {
		r.Forget(k)
	}
}

// Unqueryable reports why queries cannot be answered (no local store and
// no metrics.query_url), or nil.
func (f *fanout) Unqueryable() error {
	if u, ok := f.MetricsQuerier.(interface{ Unqueryable() error }); ok {
		return u.Unqueryable()
	}
	return nil
}

// collectorConnectTimeout is the least connect timeout of the collectors'
// sessions.
const collectorConnectTimeout = 2 * time.Second

// adminOptions returns the admin connection options with the probe
// timeouts and the TLS of each server's cluster.
func adminOptions(c *Config) mysql.Options {
	return mysql.Options{
		Credentials:    mysql.Credentials{User: c.Credentials.User, Password: c.Credentials.Password},
		ConnectTimeout: c.Detection.ProbeTimeout.D(),
		QueryTimeout:   c.Detection.ProbeTimeout.D(),
		TLS:            c.tls,
		TLSFor:         c.tlsFor(),
	}
}

// tlsRoutes gives each server its cluster's TLS when clusters have tls
// blocks of their own: a server is claimed by the first cluster that
// names it (its seeds, at load) or discovers it (before it is inspected:
// claimingInspector), as one server belongs to one cluster.
type tlsRoutes struct {
	mu    sync.Mutex
	byKey map[dbpilot.InstanceKey]*serverTLS
}

// of returns the TLS of key's cluster, nil when no cluster claimed it.
func (r *tlsRoutes) of(key dbpilot.InstanceKey) *mysql.TLS {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byKey[key.Normalized()]
}

func (r *tlsRoutes) claim(key dbpilot.InstanceKey, t *serverTLS) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.byKey[key.Normalized()]; !ok {
		r.byKey[key.Normalized()] = t
	}
}

// newTLSRoutes returns the routes of c's clusters, nil when none has a
// tls block (every server then uses the top-level tls).
func newTLSRoutes(c *Config) *tlsRoutes {
	own := false
	for _, cl := range c.Clusters {
		own = own || cl.TLS != nil
	}
	if !own {
		return nil
	}
	r := &tlsRoutes{byKey: map[dbpilot.InstanceKey]*serverTLS{}}
	for _, cl := range c.Clusters {
		for _, k := range cl.seeds {
			r.claim(k, cl.tls)
		}
	}
	return r
}

// tlsFor returns the Options.TLSFor of c: nil without routes.
func (c *Config) tlsFor() func(dbpilot.InstanceKey) *mysql.TLS {
	if c.tlsRoutes == nil {
		return nil
	}
	return c.tlsRoutes.of
}

// claimingInspector claims each server for a cluster's TLS before it is
// inspected (discovery).
type claimingInspector struct {
	dbpilot.Inspector
	routes *tlsRoutes
	tls    *serverTLS
}

func (c claimingInspector) Inspect(ctx context.Context, key dbpilot.InstanceKey) (*dbpilot.Instance, error) {
	c.routes.claim(key, c.tls)
	return c.Inspector.Inspect(ctx, key)
}

// discoveryInspector is the inspector of cl's discovery: the probe
// inspector, claiming the servers it finds for cl's TLS when clusters
// have their own, and saying which of its timeouts came while serve was
// stalled (errNotAsked).
func (c *Config) discoveryInspector(in dbpilot.Inspector, cl *ClusterConfig) dbpilot.Inspector {
	if c.tlsRoutes != nil {
		in = claimingInspector{Inspector: in, routes: c.tlsRoutes, tls: cl.tls}
	}
	return stallAwareInspector{Inspector: in, timeout: c.Detection.ProbeTimeout.D()}
}

// stallAwareInspector marks an inspection that timed out while serve
// could not run for a good part of the probe timeout (internal/stall):
// the server may have answered in time, so the crawl counts it as not
// inspected (topology.Options.NotAsked), not as unreachable.
type stallAwareInspector struct {
	dbpilot.Inspector
	timeout time.Duration
}

func (s stallAwareInspector) Inspect(ctx context.Context, key dbpilot.InstanceKey) (*dbpilot.Instance, error) {
	start := time.Now()
	inst, err := s.Inspector.Inspect(ctx, key)
	if err != nil && mysql.IsTimeout(err) && stall.Stalled(start, s.timeout) {
		return nil, fmt.Errorf("%w: %w", errNotAsked, err)
	}
	return inst, err
}

// serverTLS is TLS loaded from a TLSConfig (config.go keeps it without
// importing the adapter).
type serverTLS = mysql.TLS

// settings returns t in the mysql package's terms.
func (t TLSConfig) settings() mysql.TLSSettings {
	return mysql.TLSSettings{Mode: mysql.TLSMode(t.Mode), CA: expandHome(t.CA), Cert: expandHome(t.Cert), Key: expandHome(t.Key), ServerName: t.ServerName}
}

// loadServerTLS reads and checks the files of t; where names it in
// messages ("tls", "clusters[0].tls").
func loadServerTLS(t TLSConfig, where string) (*serverTLS, error) {
	return mysql.LoadTLS(t.settings(), where)
}

// checkReplicationTLS checks replication.tls (its files are on the
// servers).
func checkReplicationTLS(t TLSConfig, where string) error {
	return mysql.ValidateReplicationTLS(t.settings(), where)
}

// replicationTLS returns what CHANGE MASTER tells replicas: nil (their SSL
// settings left as they are) when replication.tls is empty.
func replicationTLS(c *Config) *mysql.TLSSettings {
	if c.Replication.TLS.IsZero() {
		return nil
	}
	s := c.Replication.TLS.settings()
	return &s
}

// Collectors returns every collector dbpilot runs, in a fixed order.
func Collectors() []collector.Collector {
	return []collector.Collector{
		collector.NewGlobalStatus(),
		collector.NewGlobalVariables(),
		collector.NewReplication(),
		collector.NewHeartbeat(),
		collector.NewInnoDB(),
		collector.NewProcesslist(),
		collector.NewBinlog(),
		collector.NewGalera(),
		collector.NewSemiSync(),
	}
}

// collectorStarter starts a collector.Runner per instance with the
// configured collectors and intervals.
// Hold holds every collector run of the process (collector.Hold).
func (s *collectorStarter) Hold(max time.Duration) func() { return collector.Hold(max) }

// Backlog is how many collector runs wait now for a session or a
// connection slot (collector.Backlog).
func (s *collectorStarter) Backlog() int64 { return collector.Backlog() }

type collectorStarter struct {
	opts    mysql.Options
	enabled map[string]bool        // nil: all
	full    time.Duration          // global_status's full interval
	allVars bool                   // global_variables writes every variable
	share   *collector.StatusShare // global_status keeps what discovery reads of the status (nil: none)
	idle    bool                   // global_status writes counters that never moved
	cfg     collector.Config
	sink    dbpilot.MetricSink
	log     *slog.Logger
	// The query watchdog (nil rules: none): a collector per instance.
	wdRules    []*watchdog.Rule
	wdOwn      watchdog.Own
	wdInterval time.Duration
	wdNotify   *watchdogNotifier // nil: no webhook for its events
	audit      func(context.Context, dbpilot.AuditEvent)
	// queries, when set, adds a statements collector per instance.
	queries *statementsStarter
	// heartbeat is the one heartbeat collector of every runner: a
	// replica's lag is measured against the heartbeats its primary's
	// runner saw.
	hbOnce    sync.Once
	heartbeat collector.Collector
}

func newCollectorStarter(cfg *Config, opts mysql.Options, sink dbpilot.MetricSink, log *slog.Logger) *collectorStarter {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &collectorStarter{opts: opts, cfg: collector.Config{Interval: map[string]time.Duration{}}, sink: sink, log: log, full: collector.DefaultFullStatusInterval}
	if f := cfg.Metrics.FullStatusInterval; f != nil {
		s.full = f.D()
	}
	s.wdRules, s.wdInterval = cfg.WatchdogRules(), cfg.Watchdog.Interval.D()
	// serve's own sessions (its monitoring user) are never matched.
	s.wdOwn = watchdog.Own{Users: []string{cfg.Credentials.User}}
	s.wdNotify = newWatchdogNotifier(cfg, log)
	s.allVars = cfg.Metrics.GlobalVariables == "all"
	s.idle = cfg.Metrics.IdleCounters == "write"
	s.cfg.WriteIdleCounters = s.idle
	for name, iv := range cfg.Metrics.Intervals {
		s.cfg.Interval[name] = iv.D()
	}
	if len(cfg.Metrics.Collectors) > 0 {
		s.enabled = map[string]bool{}
		for _, n := range cfg.Metrics.Collectors {
			s.enabled[n] = true
		}
	}
	return s
}

func (s *collectorStarter) Start(ctx context.Context, t dbpilot.MonitorTarget, base dbpilot.Batch, gate *HeartbeatGate) MetricsCollector {
	cols := s.collectors(gate)
	if s.queries != nil {
		cols = append(cols, s.queries.collector(base.Cluster, s.log.With("instance", t.Key.String())))
	}
	if len(s.wdRules) > 0 {
		cols = append(cols, newWatchdogCollector(s.wdRules, s.wdOwn, s.wdInterval, base.Cluster, s.audit, s.wdNotify, s.log))
	}
	r := collector.NewRunner(t, s.opts, cols, s.cfg, s.sink, base, s.log.With("instance", t.Key.String()))
	r.Start(ctx)
	return r
}

// collectors returns the enabled collectors of one instance, configured;
// the heartbeat collector behind gate (nil: ungated).
func (s *collectorStarter) collectors(gate *HeartbeatGate) []collector.Collector {
	var cs []collector.Collector
	for _, c := range Collectors() {
		if s.enabled == nil || s.enabled[c.Name()] {
			if f, ok := c.(interface{ SetFullInterval(time.Duration) }); ok {
				f.SetFullInterval(s.full)
			}
			if v, ok := c.(interface{ SetAllVariables(bool) }); ok {
				v.SetAllVariables(s.allVars)
			}
			if v, ok := c.(interface{ SetIdleCounters(bool) }); ok {
				v.SetIdleCounters(s.idle)
			}
			if v, ok := c.(interface{ SetStatusShare(*collector.StatusShare) }); ok && s.share != nil {
				v.SetStatusShare(s.share)
			}
			if c.Name() == "heartbeat" {
				s.hbOnce.Do(func() { s.heartbeat = c })
				c = s.heartbeat
				if gate != nil {
					c = gatedHeartbeat{Collector: c, gate: gate}
				}
			}
			cs = append(cs, c)
		}
	}
	return cs
}

// The monitor forgets departed instances through the starter.
var _ interface{ Forget(dbpilot.InstanceKey) } = (*collectorStarter)(nil)

// Forget drops what the shared collectors remember of an instance that
// left the fleet.
func (s *collectorStarter) Forget(k dbpilot.InstanceKey) {
	if f, ok := s.heartbeat.(interface{ Forget(dbpilot.InstanceKey) }); ok {
		f.Forget(k)
	}
}

// watchdogCollector runs the watchdog's evaluation as a collector, on the
// runner's monitoring session.
type watchdogCollector struct{ *watchdogEval }

func newWatchdogCollector(rules []*watchdog.Rule, own watchdog.Own, interval time.Duration, cluster string,
	audit func(context.Context, dbpilot.AuditEvent), notifier *watchdogNotifier, log *slog.Logger) watchdogCollector {
	return watchdogCollector{newWatchdogEval(rules, own, interval, cluster, audit, notifier, log)}
}

func (w watchdogCollector) Collect(ctx context.Context, q collector.Querier, t collector.Target) ([]dbpilot.Sample, error) {
	return w.evaluate(ctx, watchSQL{q: q, flavor: t.Flavor}, t)
}

// watchSQL is a watchSession over a collector's mysql session.
type watchSQL struct {
	q      collector.Querier
	flavor dbpilot.Flavor
}

func (s watchSQL) Processlist(ctx context.Context) (watchdog.Snapshot, error) {
	r, err := s.q.Query(ctx, mysql.ProcesslistSQL(s.flavor))
	if err != nil {
		return watchdog.Snapshot{}, err
	}
	pl, err := mysql.ParseProcesslist(r)
	if err != nil {
		return watchdog.Snapshot{}, err
	}
	snap := watchdog.Snapshot{Self: pl.Self,
		Processes: make([]watchdog.Process, len(pl.Processes)), Trx: make([]watchdog.Trx, len(pl.Trx))}
	for i, p := range pl.Processes {
		snap.Processes[i] = watchdog.Process(p)
	}
	for i, x := range pl.Trx {
		snap.Trx[i] = watchdog.Trx(x)
	}
	return snap, nil
}

func (s watchSQL) MDLWaits(ctx context.Context) ([]watchdog.MDLWait, bool, error) {
	r, err := s.q.Query(ctx, mysql.MDLWaitsSQL)
	if err != nil {
		return nil, false, err
	}
	waits, enabled := mysql.ParseMDLWaits(r)
	out := make([]watchdog.MDLWait, 0, len(waits))
	for _, x := range waits {
		out = append(out, watchdog.MDLWait(x))
	}
	return out, enabled, nil
}

// Server errors of KILL.
const (
	erNoSuchThrd = 1094 // ER_NO_SUCH_THREAD
	erKillDenied = 1095 // ER_KILL_DENIED_ERROR
)

func (s watchSQL) Kill(ctx context.Context, stmt string) (string, error) {
	err := s.q.Exec(ctx, stmt)
	switch {
	case err == nil:
		return killOK, nil
	case mysql.ServerErrorNumber(err) == erNoSuchThrd:
		return killGone, err
	case mysql.ServerErrorNumber(err) == erKillDenied:
		return killDenied, err
	}
	return killFailed, err
}

// gatedHeartbeat is the heartbeat collector behind a HeartbeatGate.
type gatedHeartbeat struct {
	collector.Collector
	gate *HeartbeatGate
}

func (h gatedHeartbeat) Collect(ctx context.Context, q collector.Querier, t collector.Target) ([]dbpilot.Sample, error) {
	mode, f := h.gate.mode()
	if mode == hbWrite {
		if t.Role != roleWriter || h.gate.coord == nil {
			return h.Collector.Collect(ctx, q, t)
		}
		s, err := h.Collector.Collect(ctx, fencedQuerier{Querier: q, gate: h.gate, fence: f}, t)
		if !errors.Is(err, dbpilot.ErrLeadershipLost) {
			return s, err
		}
		// Leadership lost between Lead and the write: nothing was
		// written; read as a follower does.
		mode = hbRead
	}
	if t.Role == roleWriter {
		t.Role, q = roleWriterNotLed, noWrites{q}
	}
	s, err := h.Collector.Collect(ctx, q, t)
	if mode == hbUnavailable {
		s = withoutLag(s)
	}
	return s, err
}

// fencedQuerier checks the leader's fence before every statement that
// writes (Exec); reads pass through. It is a comparable value: the
// collector compares the querier of a run with the one it made its table
// on, to make it again on a new connection.
type fencedQuerier struct {
	collector.Querier
	gate  *HeartbeatGate
	fence dbpilot.Fence
}

func (q fencedQuerier) Exec(ctx context.Context, stmts ...string) error {
	if err := q.gate.coord.Check(ctx, q.fence); err != nil {
		if !errors.Is(err, dbpilot.ErrLeadershipLost) {
			err = fmt.Errorf("%w: %w", dbpilot.ErrLeadershipLost, err)
		}
		return err
	}
	return q.Querier.Exec(ctx, stmts...)
}

// noWrites refuses every write: the heartbeat collector of a non-writer
// issues none, and must not.
type noWrites struct{ collector.Querier }

func (noWrites) Exec(context.Context, ...string) error {
	return dbpilot.Errorf(dbpilot.ECONFLICT, "heartbeat: this serve does not write on the instance now")
}

// statementsStarter makes the statements collector of each instance.
type statementsStarter struct {
	cfg QueriesConfig
	rec dbpilot.QueryRecorder
}

func (s *statementsStarter) collector(cluster string, log *slog.Logger) collector.Collector {
	return collector.NewStatements(collector.StatementsOptions{Interval: s.cfg.Interval.D(), Top: s.cfg.Top,
		Examples: s.cfg.Examples, Cluster: cluster, Recorder: s.rec, Log: log})
}

// The statements collector's defaults (queries.interval, queries.top).
const (
	defaultStatementsInterval = collector.DefaultStatementsInterval
	defaultStatementsTop      = collector.DefaultStatementsTop
)

// gtidBinlogState reads primary's @@GLOBAL.gtid_binlog_state for the binlog
// backup's setAside; ok is false where the server has none (MySQL) or the
// read failed. err is the failure to connect.
func gtidBinlogState(ctx context.Context, primary dbpilot.InstanceKey, conn mysql.Options) (string, bool, error) {
	db, err := mysql.Open(ctx, primary, conn)
	if err != nil {
		return "", false, err
	}
	defer db.Close()
	state, ok, err := db.QueryValue(ctx, "SELECT @@GLOBAL.gtid_binlog_state")
	if err != nil {
		return "", false, nil
	}
	return state, ok, nil
}

// readCredentialsFile reads a credentials file (mysql's option-file format,
// mode 0600).
func readCredentialsFile(path string) (CredentialsConfig, error) {
	c, err := mysql.ReadCredentialsFile(path)
	return CredentialsConfig{User: c.User, Password: c.Password}, err
}

// checkPrivateFile refuses a secret file others can read.
func checkPrivateFile(path string) error { return mysql.CheckPrivateFile(path) }

// ConfigFromSandbox builds a serve configuration for a sandbox: one cluster
// named after it with every node as a seed, its admin and replication
// accounts, automatic failover on, state and API token kept in the
// sandbox's directory (the token is generated once, mode 0600).
func ConfigFromSandbox(d *sandbox.Descriptor) (*Config, error) {
	tokenFile := TokenFile(d)
	tok, err := os.ReadFile(tokenFile)
	if errors.Is(err, fs.ErrNotExist) {
		b := make([]byte, 24)
		if _, err := rand.Read(b); err != nil {
			return nil, err
		}
		tok = []byte(hex.EncodeToString(b))
		if err := os.WriteFile(tokenFile, append(tok, '\n'), 0o600); err != nil {
			return nil, fmt.Errorf("write API token %s: %w", tokenFile, err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("read API token %s: %w", tokenFile, err)
	}
	cl := ClusterConfig{Name: d.Name, AutoFailover: true, SemiSync: d.SemiSync}
	for _, n := range d.Nodes {
		cl.Seeds = append(cl.Seeds, n.Key().String())
	}
	c := &Config{
		State:       filepath.Join(d.Dir, "state.db"),
		Token:       strings.TrimSpace(string(tok)),
		Credentials: CredentialsConfig{User: d.Admin.User, Password: d.Admin.Password},
		Replication: ReplicationConfig{CredentialsConfig: CredentialsConfig{User: d.Repl.User, Password: d.Repl.Password}},
		Clusters:    []ClusterConfig{cl},
	}
	if d.TLS != nil {
		// verify-identity with the sandbox's CA and client certificate,
		// for serve's connections and the replicas' alike (the nodes run
		// on this host and see the same files).
		ts := d.TLSSettings()
		c.TLS = TLSConfig{Mode: string(ts.Mode), CA: ts.CA, Cert: ts.Cert, Key: ts.Key}
		c.Replication.TLS = c.TLS
	}
	return c, nil
}

// TokenFile returns where ConfigFromSandbox keeps a sandbox's API token.
func TokenFile(d *sandbox.Descriptor) string { return filepath.Join(d.Dir, "api-token") }

// SandboxConfigYAML is the configuration ConfigFromSandbox builds, as a
// YAML file serve --config reads, to be extended (coordination, more
// clusters, alert rules) rather than rebuilt. Secrets stay out of it: the
// token and the accounts' passwords are referenced by files in the
// sandbox's directory (mode 0600, written when missing).
func SandboxConfigYAML(d *sandbox.Descriptor) ([]byte, error) {
	c, err := ConfigFromSandbox(d)
	if err != nil {
		return nil, err
	}
	adminFile, err := sandboxCredentialsFile(d, "admin.cnf", c.Credentials)
	if err != nil {
		return nil, err
	}
	replFile, err := sandboxCredentialsFile(d, "replication.cnf", c.Replication.CredentialsConfig)
	if err != nil {
		return nil, err
	}
	type creds struct {
		User string     `yaml:"user"`
		File string     `yaml:"file"`
		TLS  *TLSConfig `yaml:"tls,omitempty"`
	}
	type cluster struct {
		Name         string   `yaml:"name"`
		Seeds        []string `yaml:"seeds,flow"`
		AutoFailover bool     `yaml:"auto_failover"`
		SemiSync     bool     `yaml:"semi_sync"`
	}
	out := struct {
		Listen      string     `yaml:"listen"`
		State       string     `yaml:"state"`
		TokenFile   string     `yaml:"token_file"`
		Credentials creds      `yaml:"credentials,flow"`
		Replication creds      `yaml:"replication,flow"`
		TLS         *TLSConfig `yaml:"tls,omitempty,flow"`
		Clusters    []cluster  `yaml:"clusters"`
	}{
		Listen:      DefaultListen,
		State:       c.State,
		TokenFile:   TokenFile(d),
		Credentials: creds{User: c.Credentials.User, File: adminFile},
		Replication: creds{User: c.Replication.User, File: replFile},
	}
	if !c.TLS.IsZero() {
		out.TLS, out.Replication.TLS = &c.TLS, &c.Replication.TLS
	}
	for _, cl := range c.Clusters {
		out.Clusters = append(out.Clusters, cluster{Name: cl.Name, Seeds: cl.Seeds, AutoFailover: cl.AutoFailover, SemiSync: cl.SemiSync})
	}
	b, err := yaml.Marshal(out)
	if err != nil {
		return nil, err
	}
	head := fmt.Sprintf("# dbpilot serve configuration of sandbox %s (dbpilot serve --sandbox %s --print-config).\n# Extend it (see dbpilot serve --help) and run: dbpilot serve --config FILE\n", d.Name, d.Name)
	return append([]byte(head), b...), nil
}

// sandboxCredentialsFile writes, when missing, a [client] file with the
// account's user and password in the sandbox's directory (mode 0600) and
// returns its path.
func sandboxCredentialsFile(d *sandbox.Descriptor, name string, c CredentialsConfig) (string, error) {
	path := filepath.Join(d.Dir, name)
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	body := fmt.Sprintf("[client]\nuser=%s\npassword=%s\n", c.User, c.Password)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		return "", fmt.Errorf("write credentials file %s: %w", path, err)
	}
	return path, nil
}

// NewCoordinator returns the etcd coordinator of cfg (nil without
// coordination.etcd); the caller starts it (Start, then Run) and closes it.
func NewCoordinator(cfg *Config, log *slog.Logger, version string) (*coord.Etcd, error) {
	if !cfg.Coordinated() {
		return nil, nil
	}
	e := cfg.Coordination.Etcd
	names := make([]string, len(cfg.Clusters))
	for i, c := range cfg.Clusters {
		names[i] = c.Name
	}
	return coord.New(coord.Options{
		Endpoints: e.Endpoints, Prefix: e.Prefix, LeaseTTL: e.LeaseTTL.D(), DialTimeout: e.DialTimeout.D(), RequestTimeout: e.RequestTimeout.D(),
		Username: e.Username, Password: e.Password, CAFile: expandHome(e.CAFile), CertFile: expandHome(e.CertFile), KeyFile: expandHome(e.KeyFile),
		InsecureSkipVerify: e.InsecureSkipVerify,
		Member:             cfg.MemberID(), API: cfg.AdvertiseURL(), Version: version, Clusters: names, Logger: log,
	})
}

// remoteWriteChecks are remotewrite's checks and defaults for the
// configuration's metrics.remote_write and metrics.query_url
// (config_remote.go).
var remoteWriteChecks = remoteChecks{
	parseURL:          remotewrite.ParseURL,
	redacted:          remotewrite.Redacted,
	checkHeader:       remotewrite.CheckHeader,
	timeout:           remotewrite.DefaultTimeout,
	capacity:          remotewrite.DefaultCapacity,
	maxSamplesPerSend: remotewrite.DefaultMaxSamplesPerSend,
	batchSendDeadline: remotewrite.DefaultBatchSendDeadline,
	minBackoff:        remotewrite.DefaultMinBackoff,
	maxBackoff:        remotewrite.DefaultMaxBackoff,
}

// options converts a validated target to the sink's options.
func (r *RemoteWriteConfig) options() remotewrite.Options {
	o := remotewrite.Options{
		URL:               r.URL,
		Headers:           r.Headers,
		BearerToken:       r.BearerToken,
		Timeout:           r.Timeout.D(),
		Capacity:          *r.Queue.Capacity,
		MaxSamplesPerSend: *r.Queue.MaxSamplesPerSend,
		BatchSendDeadline: r.Queue.BatchSendDeadline.D(),
		MinBackoff:        r.Queue.MinBackoff.D(),
		MaxBackoff:        r.Queue.MaxBackoff.D(),
	}
	if r.BasicAuth != nil {
		o.Username, o.Password = r.BasicAuth.Username, r.BasicAuth.Password
	}
	return o
}
