package main

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/coord"
	"github.com/dbpilot/dbpilot/daemon"
	"github.com/dbpilot/dbpilot/httpapi"
	"github.com/dbpilot/dbpilot/sandbox"
	"github.com/dbpilot/dbpilot/web"
	"github.com/klauspost/compress/gzhttp"
	"github.com/spf13/cobra"
)

func (a *app) serveCommand() *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve [--config FILE | --sandbox NAME]",
		Short: "Run the daemon: discovery, 1 s failure detection, automated failover, HTTP API",
		Long: `Run dbpilot's daemon in the foreground. For every configured cluster it keeps
discovering the topology (new replicas appear by themselves), probes every
server once per poll interval over one persistent connection each, and
detects a dead primary holistically: dbpilot cannot reach it AND every
reachable replica lost its replication connection. When replicas still
receive events the primary is only UNREACHABLE: no failover. A dead primary
is recovered automatically (auto_failover), choosing the replica that
received the most in every GTID domain, catching it up from others where
needed; then an anti-flapping block holds further automatic recoveries until
'dbpilot ack CLUSTER' or block_period passes. A returning old primary is set
read_only (fenced) and shown as such with its errant transactions (the
GTIDs the new primary lacks) until 'dbpilot rejoin' attaches it below the
new primary (--reclone re-provisions one that has errant transactions).

It also collects metrics from every instance (global status and variables,
replication with heartbeat lag, InnoDB, processlist, binlog, Galera,
semi-sync; 1 s for status and replication), stores them in an embedded
time-series store, evaluates alert rules, and exposes everything to
Prometheus. metrics.remote_write also sends every sample to Prometheus or
VictoriaMetrics by remote write; with metrics.local: false serve keeps no
store and queries metrics.query_url instead.

The web console and the HTTP API (JSON) listen on 127.0.0.1:7070 by default,
over HTTPS with http_tls (or --http-tls-cert and --http-tls-key; SIGHUP
reads the certificate and key again without closing open connections):
  GET  /                                                    the web console (topology, charts, alerts, recoveries)
  GET  /api/health, /api/clusters, /api/clusters/{name}, /api/recoveries[/{id}], /api/audit, /api/alerts
  GET  /api/clusters/{name}/events                          (text/event-stream: the status at each change)
  GET  /api/clusters/{name}/at?t=TIME                       the cluster as it was at TIME (topology history)
  GET  /api/clusters/{name}/changes?from=&to=&limit=        the changes serve recorded, oldest first
  GET  /api/metrics/query?expr=&time= | &start=&end=&step=   (PromQL), /api/metrics/series?match[]=
  GET  /metrics                                             (Prometheus exposition, mysqld_exporter names)
  GET  /api/whoami                                          the token's name, role and allowed actions
  POST /api/clusters/{name}/failover|switchover|rejoin|ack, /api/relocate   (Authorization: Bearer TOKEN)
Reads need the token too when serve listens off-loopback (ui.read_requires_token).
The topology history keeps, in the state file for 'retention', every change
serve observes in a cluster (an instance joined or left, its role, source,
thread states, read_only and semi-sync; problems raised or cleared); TIME is
RFC 3339 or Unix seconds, fractions allowed.
Tokens have roles (tokens: in the config; 'dbpilot token new' makes one):
viewer reads, operator also acks, relocates and switches over, admin also
fails over and rejoins (token/token_file is an admin token named "admin").

Only one serve may use a state file: a second one is refused. Several
serves (each with its own state file) may watch the same clusters only with
coordination through etcd (coordination.etcd in the config, a distinct
--id per serve): they share the fleet. The leader of each cluster (an etcd
election per cluster, handed to the serve rendezvous hashing ranks first)
alone observes it and collects its instances' metrics, fails over, switches
over, relocates and fences, and checks its fencing token with etcd before
every statement that changes a server; the other serves send its servers
nothing. Every serve's API and console show the whole fleet: cluster status
is asked of the cluster's owner, metric queries of every serve, merged.
Requests for a cluster another serve leads are forwarded to it. With etcd
unreachable every serve observes and collects everything and none recovers
automatically (failover --force-without-coordination acts anyway,
audited); the primary is never demoted because etcd is gone.
GET /api/coordination shows members, leaders, owners and leases.

TLS to the servers: tls (mode disabled|preferred|required|verify-ca|
verify-identity, ca, cert, key, server_name; verify-identity by default with
a ca) secures serve's own connections, a cluster's tls replaces it for that
cluster, and replication.tls is what CHANGE MASTER tells replicas
(MASTER_SSL=1, MASTER_SSL_CA/CERT/KEY as paths on the replicas' hosts,
MASTER_SSL_VERIFY_SERVER_CERT=1 for verify-identity). A missing or bad TLS
file stops serve at start; a server whose certificate does not verify is
shown unreachable with the reason. A sandbox deployed with --tls is watched
over TLS by itself.

--sandbox NAME builds the configuration from a sandbox (state and API token
in the sandbox's directory); --print-config prints it as a file to extend.
--print-default-config prints every key at its default. --check-config
loads and validates the configuration (alert rules included), prints one
line and exits: 0 when serve would start with it, 2 (with what is wrong and
where) when not; it connects to nothing (the packaged systemd unit runs it
before serve).
Every key, with its type, default and meaning, is listed in
docs/config-reference.md in dbpilot's source tree. A configuration file
looks like:

` + daemon.Example,
		Example: `  dbpilot serve --sandbox demo
  dbpilot serve --sandbox demo --print-config > dbpilot.yaml
  dbpilot serve --config /etc/dbpilot/dbpilot.yml
  dbpilot serve --config /etc/dbpilot/dbpilot.yml --check-config`,
		Args: exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runServe(cmd.Context(), o) },
	}
	o.sf.registerConfigOnly(cmd)
	cmd.Flags().StringVar(&o.listen, "listen", "", "API address (overrides the config; default "+daemon.DefaultListen+")")
	cmd.Flags().StringVar(&o.tlsFiles.CertFile, "http-tls-cert", "", "PEM certificate (and intermediates) to answer HTTPS with (overrides http_tls.cert_file; with --http-tls-key); reloaded on SIGHUP")
	cmd.Flags().StringVar(&o.tlsFiles.KeyFile, "http-tls-key", "", "PEM private key of --http-tls-cert (overrides http_tls.key_file)")
	cmd.Flags().StringVar(&o.memberID, "id", "", "this serve's member id among coordinated serves (overrides coordination.id; default HOSTNAME:PORT); unique per serve")
	cmd.Flags().BoolVar(&o.printConfig, "print-config", false, "with --sandbox: print the YAML configuration built from the sandbox (secrets as 0600 files beside it) and exit, to extend it and run serve --config")
	cmd.Flags().BoolVar(&o.printDefaultConfig, "print-default-config", false, "print a configuration with every key at its default (placeholders for credentials, replication and clusters) and exit")
	cmd.Flags().BoolVar(&o.checkConfig, "check-config", false, "load and validate the configuration (--config or --sandbox) and exit: 0 valid, 2 not (one line saying what and where); connects to nothing")
	cmd.MarkFlagsMutuallyExclusive("check-config", "print-config")
	cmd.MarkFlagsMutuallyExclusive("check-config", "print-default-config")
	return cmd
}

// serveOptions are serve's flags.
type serveOptions struct {
	sf                                           serviceFlags
	listen, memberID                             string
	tlsFiles                                     daemon.HTTPTLSConfig
	printConfig, printDefaultConfig, checkConfig bool
}

// runServe is serve's run: print a configuration, check one, or serve.
func (a *app) runServe(ctx context.Context, o serveOptions) error {
	if o.printDefaultConfig {
		b, err := daemon.DefaultConfigYAML()
		if err != nil {
			return err
		}
		_, err = a.stdout.Write(b)
		return err
	}
	if o.printConfig {
		return a.printSandboxConfig(o.sf)
	}
	cfg, err := serveFlagsConfig(o.sf, o.listen, o.memberID, o.tlsFiles)
	if err != nil {
		return err
	}
	if o.checkConfig {
		// The HTTPS pair too: a unit must not start on a bad one.
		if _, err := loadServeCert(cfg); err != nil {
			return err
		}
		a.printConfigChecked(o.sf, cfg)
		return nil
	}
	return a.serve(ctx, cfg, o.sf.sandbox)
}

// printConfigChecked is serve --check-config's line for a valid configuration.
func (a *app) printConfigChecked(sf serviceFlags, cfg *daemon.Config) {
	src := "config " + sf.config
	if sf.config == "" {
		src = "sandbox " + sf.sandbox + "'s configuration"
	}
	fmt.Fprintf(a.stdout, "dbpilot serve: %s is valid: %d cluster(s), listen %s, state %s\n", src, len(cfg.Clusters), cfg.Listen, cfg.State)
}

// printSandboxConfig is serve --print-config: the configuration built
// from a sandbox, as a file to extend.
func (a *app) printSandboxConfig(sf serviceFlags) error {
	if sf.sandbox == "" || sf.config != "" {
		return dbpilot.Errorf(dbpilot.EINVALID, "serve: --print-config prints the configuration built from a sandbox: give --sandbox NAME")
	}
	d, err := sandbox.Load(sf.sandbox)
	if err != nil {
		return err
	}
	b, err := daemon.SandboxConfigYAML(d)
	if err != nil {
		return err
	}
	_, err = a.stdout.Write(b)
	return err
}

// serveFlagsConfig is serve's configuration: the file or sandbox, with
// --listen, --http-tls-cert/--http-tls-key and --id over it, its alert
// rules loaded once to fail early.
func serveFlagsConfig(sf serviceFlags, listen, memberID string, tlsFiles daemon.HTTPTLSConfig) (*daemon.Config, error) {
	cfg, err := sf.loadConfig()
	if err != nil {
		return nil, err
	}
	if tlsFiles.CertFile != "" || tlsFiles.KeyFile != "" {
		if tlsFiles.CertFile == "" || tlsFiles.KeyFile == "" {
			return nil, dbpilot.Errorf(dbpilot.EINVALID, "serve: give both --http-tls-cert and --http-tls-key, or neither")
		}
		cfg.HTTPTLS = tlsFiles
	}
	if listen != "" {
		cfg.Listen = listen
		if cfg.ReadsNeedToken() && !cfg.HasTokens() {
			return nil, dbpilot.Errorf(dbpilot.EINVALID, "serve: --listen %s is not loopback, where reading the API needs a token: configure token, token_file or tokens, or set ui.read_requires_token: false", listen)
		}
	}
	if memberID != "" {
		if !cfg.Coordinated() {
			return nil, dbpilot.Errorf(dbpilot.EINVALID, "serve: --id names this serve among coordinated serves: configure coordination.etcd")
		}
		if err := daemon.ValidMemberID(memberID); err != nil {
			return nil, dbpilot.Errorf(dbpilot.EINVALID, "serve: --id %v", err)
		}
		cfg.Coordination.ID = memberID
	}
	// A broken rule file fails now, with the rule name and line.
	if _, err := cfg.LoadAlertRules(); err != nil {
		return nil, dbpilot.WrapError(dbpilot.EINVALID, err, "alerts")
	}
	return cfg, nil
}

// serve runs the daemon of cfg with its HTTP server until ctx ends or the
// server fails; sandboxName ("" : none) tells where its token is.
func (a *app) serve(ctx context.Context, cfg *daemon.Config, sandboxName string) error {
	// The embedded TSDB's heap grows in bursts during compactions: a
	// soft limit keeps serve's memory flat (GOMEMLIMIT overrides). It
	// grows with the instances monitored (memLimitLoop): a fixed one
	// below the live heap of a large fleet makes the GC run without end.
	scaleMemLimit := os.Getenv("GOMEMLIMIT") == ""
	if scaleMemLimit {
		debug.SetMemoryLimit(memLimit(0))
	}
	log, tsdbLog := a.serveLoggers()
	// A certificate that cannot serve stops serve before anything starts.
	cert, err := loadServeCert(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	d, co, err := openServe(ctx, cfg, log, tsdbLog)
	if err != nil {
		return err
	}
	if co != nil {
		defer co.Close()
	}
	defer d.Close() // before co.Close
	// One server belongs to one cluster: refuse a configuration
	// whose clusters discover the same servers (exit 2).
	if err := d.CheckOverlap(ctx); err != nil {
		return err
	}
	srv, ln, err := listenServe(cfg, d, log, cert)
	if err != nil {
		return err
	}
	// SIGHUP never ends serve (systemctl reload): with http_tls it reloads
	// the certificate, without it there is nothing to reload.
	defer reloadOnHUP(ctx, cert, cfg.HTTPTLS.CertFile, log)()
	// Commands refused because this serve owns the state name
	// the address it really listens on (--listen included).
	if f := cfg.AddrFile(); f != "" {
		if err := os.WriteFile(f, []byte(serveURL(cfg.Listen, ln.Addr(), cert != nil)+"\n"), 0o600); err != nil {
			log.Warn("write the API address beside the state", "file", f, "err", err)
		} else {
			defer os.Remove(f)
		}
	}
	errc := make(chan error, 2)
	go func() {
		if cert != nil {
			errc <- srv.ServeTLS(ln, "", "")
			return
		}
		errc <- srv.Serve(ln)
	}()
	coordDone := make(chan struct{})
	if co != nil {
		go func() {
			defer close(coordDone)
			if err := co.Run(ctx); err != nil {
				errc <- err // two serves with one --id
			}
		}()
	} else {
		close(coordDone)
	}
	a.serveBanner(cfg, serveURL(cfg.Listen, ln.Addr(), cert != nil), sandboxName, co != nil)
	done := make(chan struct{})
	go func() {
		d.Run(ctx)
		close(done)
	}()
	if scaleMemLimit {
		go memLimitLoop(ctx, d.Monitored)
	}
	select {
	case <-ctx.Done():
	case err := <-errc:
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			cancel()
			<-done
			<-coordDone
			if dbpilot.ErrorCode(err) == dbpilot.ECONFLICT {
				return err
			}
			return fmt.Errorf("serve: HTTP server: %w", err)
		}
	}
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	_ = srv.Shutdown(sctx)
	cancel()
	<-done
	<-coordDone
	fmt.Fprintln(a.stdout, "dbpilot serve stopped")
	return nil
}

// serveLoggers are serve's log and the TSDB's: the TSDB narrates its
// housekeeping at info level, kept to warnings unless -v.
func (a *app) serveLoggers() (log, tsdb *slog.Logger) {
	log = slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: logLevel(a.verbose)}))
	tsdbLevel := slog.LevelWarn
	if a.verbose {
		tsdbLevel = slog.LevelDebug
	}
	return log, slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: tsdbLevel}))
}

// openServe opens the daemon of cfg (daemon.Open) and, when configured,
// its etcd coordinator, started, with its metrics registered. The caller
// closes both (co is nil without coordination).
func openServe(ctx context.Context, cfg *daemon.Config, log, tsdbLog *slog.Logger) (*daemon.Wired, *coord.Etcd, error) {
	wiring := daemon.Wiring{Metrics: true, Logger: log, TSDBLogger: tsdbLog, Version: version}
	co, err := daemon.NewCoordinator(cfg, log, version)
	if err != nil {
		return nil, nil, err
	}
	if co != nil {
		// Wrong credentials fail here; an unreachable etcd does not
		// (serve monitors meanwhile).
		if err := co.Start(ctx); err != nil {
			return nil, nil, err
		}
		wiring.Coordinator = co
		wiring.Forward = func(api string) dbpilot.ClusterService { return httpapi.NewClient(api, cfg.ForwardToken()) }
	}
	d, err := daemon.Open(cfg, wiring)
	if err != nil {
		if co != nil {
			co.Close()
		}
		return nil, nil, err
	}
	if co != nil {
		for _, c := range co.Collectors() {
			if err := d.RegisterMetrics(c); err != nil {
				d.Close()
				co.Close()
				return nil, nil, fmt.Errorf("serve: coordination metrics: %w", err)
			}
		}
	}
	return d, co, nil
}

// listenServe listens on cfg.Listen and returns the HTTP server of d,
// guarded against DNS rebinding (requests must name serve's own address,
// localhost or an allowed host: others get 421).
func listenServe(cfg *daemon.Config, d *daemon.Wired, log *slog.Logger, cert *httpapi.Certificate) (*http.Server, net.Listener, error) {
	api, apiServer, err := serveHandler(cfg, d, log)
	if err != nil {
		return nil, nil, err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, nil, dbpilot.WrapError(dbpilot.ECONFLICT, err, "serve: listen on %s", cfg.Listen)
	}
	hosts, err := httpapi.NewHostPolicy(boundAddr(cfg.Listen, ln.Addr()), cfg.HTTPAllowedHosts())
	if err != nil {
		ln.Close()
		return nil, nil, err
	}
	srv := &http.Server{Handler: hosts.Guard(api), ReadHeaderTimeout: 5 * time.Second, IdleTimeout: time.Minute,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)} // TLS handshake errors: a client that does not trust the certificate, say
	if cert != nil {
		srv.TLSConfig = cert.TLSConfig()
	}
	// Shutdown waits for handlers: end the console's event streams.
	srv.RegisterOnShutdown(apiServer.StopStreams)
	return srv, ln, nil
}

// serveBanner prints where serve listens, its state and clusters.
func (a *app) serveBanner(cfg *daemon.Config, url, sandboxName string, coordinated bool) {
	tokenHint := "token from the config"
	if sandboxName != "" {
		if sd, err := sandbox.Load(sandboxName); err == nil {
			tokenHint = "token in " + daemon.TokenFile(sd)
		}
	}
	fmt.Fprintf(a.stdout, "dbpilot serve %s: web console and API on %s/ (%s); state %s; watching %d cluster(s); Ctrl-C stops\n",
		version, url, tokenHint, cfg.State, len(cfg.Clusters))
	if coordinated {
		fmt.Fprintf(a.stdout, "coordinated through etcd %v as member %q (lease ttl %s)\n", cfg.Coordination.Etcd.Endpoints, cfg.MemberID(), cfg.Coordination.Etcd.LeaseTTL.D())
	}
}

// serveHandler is everything serve answers on its one address: the JSON API
// under /api/, the PromQL API under /api/metrics/, the Prometheus exposition
// at /metrics, and the web console for every other path.
func serveHandler(cfg *daemon.Config, d *daemon.Wired, log *slog.Logger) (http.Handler, *httpapi.Server, error) {
	ui, err := web.NewHandler()
	if err != nil {
		return nil, nil, err
	}
	var tokens []httpapi.Token
	for _, t := range cfg.Tokens {
		tokens = append(tokens, httpapi.Token{Name: t.Name, Role: dbpilot.Role(t.Role), Secret: t.Token})
	}
	api := httpapi.NewServer(d, httpapi.ServerOptions{Token: cfg.Token, Tokens: tokens, Logger: log, Version: version, ReadRequiresToken: cfg.ReadsNeedToken()})
	// JSON answers are gzipped when the client accepts it (the console's
	// range queries of a 50-instance cluster shrink from 5 MB to a tenth);
	// /metrics and the console's files compress themselves, and event
	// streams are sent as they are written.
	gz, err := gzhttp.NewWrapper(gzhttp.MinSize(1024), gzhttp.CompressionLevel(gzip.BestSpeed),
		gzhttp.ExceptContentTypes([]string{"text/event-stream"}))
	if err != nil {
		return nil, nil, fmt.Errorf("serve: gzip: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/api/", gz(api))
	if d.Exposition != nil {
		mux.Handle("/metrics", api.Protect(d.Exposition))
	}
	if d.QueryAPI != nil {
		q := d.QueryAPI
		if d.Coordinated() && d.TSDB != nil {
			// Several serves share the fleet, each storing what it
			// collects: queries ask every serve and merge the answers.
			// (With metrics.local false, query_url is the shared store,
			// fleet-wide already.)
			q = &httpapi.FleetMetrics{Local: q, Peers: d.PeerAPIs, Token: cfg.ForwardToken(), Logger: log}
		}
		mux.Handle("/api/metrics/", gz(api.Protect(q)))
	}
	mux.Handle("/", ui)
	return mux, api, nil
}

// serveURL is the URL a client on this host reaches the API at: the
// bound address, with loopback for a wildcard host (listen: 0.0.0.0:7070);
// https with http_tls.
func serveURL(listen string, bound net.Addr, https bool) string {
	scheme := "http://"
	if https {
		scheme = "https://"
	}
	host, port, err := net.SplitHostPort(boundAddr(listen, bound))
	if err != nil {
		return scheme + listen
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return scheme + net.JoinHostPort(host, port)
}

// loadServeCert reads http_tls's certificate and key (nil without
// http_tls): a missing file, a key that does not match or an expired
// certificate is an error naming the file (exit 2).
func loadServeCert(cfg *daemon.Config) (*httpapi.Certificate, error) {
	if !cfg.HTTPTLS.Enabled() {
		return nil, nil
	}
	cert, err := httpapi.LoadCertificate(cfg.HTTPTLS.CertFile, cfg.HTTPTLS.KeyFile)
	if err != nil {
		return nil, dbpilot.WrapError(dbpilot.EINVALID, err, "serve: http_tls")
	}
	return cert, nil
}

// reloadOnHUP reads the certificate and key again at each SIGHUP until ctx
// ends or the returned function is called: new connections get the new
// pair, open ones (event streams) stay. A pair that fails to load leaves
// the one in use and logs one line naming the file. Without a certificate
// (cert nil) it only notes the signal, which would otherwise end serve.
func reloadOnHUP(ctx context.Context, cert *httpapi.Certificate, certFile string, log *slog.Logger) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
			}
			if cert == nil {
				log.Info("SIGHUP: nothing to reload (serve has no http_tls; other settings need a restart)")
				continue
			}
			if err := cert.Reload(); err != nil {
				log.Error("https: SIGHUP: the certificate was not reloaded; serving the one loaded before", "err", err)
				continue
			}
			leaf := cert.Leaf()
			log.Info("https: SIGHUP: certificate reloaded", "file", certFile, "serial", leaf.SerialNumber.String(), "subject", leaf.Subject.String(), "not_after", leaf.NotAfter.UTC().Format(time.RFC3339))
		}
	}()
	return func() {
		signal.Stop(hup)
		cancel()
		<-done
	}
}

// boundAddr is the configured listen host with the port actually bound
// (listen: 127.0.0.1:0 picks one).
func boundAddr(listen string, bound net.Addr) string {
	host, _, _ := net.SplitHostPort(listen)
	_, port, err := net.SplitHostPort(bound.String())
	if err != nil {
		return listen
	}
	return net.JoinHostPort(host, port)
}

func logLevel(verbose bool) slog.Level {
	if verbose {
		return slog.LevelDebug
	}
	return slog.LevelInfo
}

// memLimit is serve's soft memory limit for n monitored instances: 170 MB
// for the process and a few instances, and 1.25 MB per instance (its
// time series in the TSDB head: about 760 at 1.1-1.6 KB each).
func memLimit(n int) int64 { return 170<<20 + int64(n)*(5<<20)/4 }

// memLimitLoop follows the number of monitored instances with the soft
// memory limit until ctx ends.
func memLimitLoop(ctx context.Context, monitored func() int) {
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	last := -1
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if n := monitored(); n != last {
			debug.SetMemoryLimit(memLimit(n))
			last = n
		}
	}
}
