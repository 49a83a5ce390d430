// Package daemon is `dbpilot serve`: it keeps discovering each configured
// cluster, detects a dead primary holistically (dbpilot cannot reach it AND
// every replica lost it), recovers automatically with anti-flapping, hooks and
// an audit of every step, fences a returning old primary, and serves the
// ClusterService that the HTTP API and the CLI use.
package daemon

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot"
	"go.yaml.in/yaml/v3"
)

//go:generate go run ../internal/configref/gen -o ../docs/config-reference.md

// Config is serve's configuration (a YAML file; see Example). Every key's
// type, default and doc comment make docs/config-reference.md (go
// generate; TestConfigReference fails when it is stale): document each
// field.
type Config struct {
	// Listen is the HTTP API address.
	Listen string `yaml:"listen"`
	// AllowedHosts are the names, besides the listen address and
	// localhost, 127.0.0.1 and [::1] with its port, that requests may give
	// as their Host ("name", any port, or "name:port"): serve answers 421
	// to others, so that a web page whose name was pointed at serve's
	// address (DNS rebinding) cannot read the API from a browser. Needed
	// to reach serve by a name (a reverse proxy, a DNS name);
	// coordination.advertise's host is allowed without it.
	AllowedHosts []string `yaml:"allowed_hosts"`
	// State is the SQLite state file. A running serve writes the URL of
	// its API beside it (AddrFile).
	State string `yaml:"state"`
	// Token authorizes the API's write operations (and its reads where
	// they need it); TokenFile holds it instead. It is an admin token
	// named "admin" (see tokens for tokens of other roles).
	Token string `yaml:"token"`
	// TokenFile is a file (mode 0600) holding the token; give token or
	// token_file, not both.
	TokenFile string `yaml:"token_file"`
	// Tokens are API tokens with a name and a role (viewer, operator,
	// admin), beside or instead of token: the audit log records the name
	// of the token of each action (docs/security.md has the role table).
	Tokens []TokenConfig `yaml:"tokens"`
	// HTTPTLS makes serve's API and web console answer HTTPS (not TLS to
	// the MySQL servers): the certificate and key are read again on SIGHUP.
	HTTPTLS HTTPTLSConfig `yaml:"http_tls"`
	// Credentials are the admin account dbpilot connects with (the user is
	// required, here or in $DBPILOT_USER).
	Credentials CredentialsConfig `yaml:"credentials"`
	// Replication is the account replicas use (written into CHANGE
	// MASTER); its user is required.
	Replication ReplicationConfig `yaml:"replication"`
	// TLS secures dbpilot's own connections to the servers (probes,
	// collectors, liveness sessions, recoveries, discovery); a cluster's
	// tls replaces it for that cluster.
	TLS TLSConfig `yaml:"tls"`
	// PollInterval is how often every instance is probed and the topology
	// observed (100ms..1m).
	PollInterval Duration `yaml:"poll_interval"`
	// Detection tunes failure detection.
	Detection DetectionConfig `yaml:"detection"`
	// Recovery tunes recoveries.
	Recovery RecoveryConfig `yaml:"recovery"`
	// Switchover bounds planned primary changes.
	Switchover SwitchoverConfig `yaml:"switchover"`
	// Hooks are commands run around failovers, for every cluster without
	// hooks of its own.
	Hooks HooksConfig `yaml:"hooks"`
	// Clusters are the clusters serve watches (at least one).
	Clusters []ClusterConfig `yaml:"clusters"`
	// Metrics tunes collection and the embedded time-series store.
	Metrics MetricsConfig `yaml:"metrics"`
	// Alerts configures alerting.
	Alerts AlertsConfig `yaml:"alerts"`
	// ForgetAfter is how long an unreachable instance stays known (reading
	// mysql_up 0) before it is forgotten.
	ForgetAfter Duration `yaml:"forget_after"`
	// DiscoveryBound bounds the instances probed at once.
	DiscoveryBound int `yaml:"discovery_concurrency"`
	// UI configures the web console and, with it, reading the API.
	UI UIConfig `yaml:"ui"`
	// Retention is how long the state file keeps the audit log, recoveries,
	// resolved alerts and the topology history (default 90 days; pruned
	// every hour). The newest recovery of each cluster is always kept, and
	// so are the history's records that make up each cluster at the
	// cut-off.
	Retention Duration `yaml:"retention"`
	// Coordination, with etcd, makes this serve one of several watching the
	// same clusters; only each cluster's leader changes its topology.
	Coordination CoordinationConfig `yaml:"coordination"`
	// Watchdog runs query watchdog rules on every monitored instance
	// (daemon/watchdog.go); default: none.
	Watchdog WatchdogConfig `yaml:"watchdog"`
	// Queries configures query analytics: the statements collector and its
	// storage (daemon/queries.go); default: on.
	Queries QueriesConfig `yaml:"queries"`
	// Backup configures serve's continuous backups: backup.binlog streams
	// a cluster's binary logs into an archive, following failovers
	// (daemon/binlogbackup.go).
	Backup BackupConfig `yaml:"backup"`

	// path is the file LoadConfig read (errors of inline watchdog rules name it).
	path string
	// tls is TLS loaded by Validate (nil: plain text); tlsRoutes, the
	// clusters' own (nil when none has a tls block).
	tls       *serverTLS
	tlsRoutes *tlsRoutes
}

// DefaultRetention is Config.Retention's default.
const DefaultRetention = 90 * 24 * time.Hour

// UIConfig configures the web console and, with it, reading the API.
type UIConfig struct {
	// ReadRequiresToken makes the API's reads (and /metrics) need the
	// token too. Unset, it is true when listen is not a loopback address.
	ReadRequiresToken *bool `yaml:"read_requires_token"`
}

// HTTPAllowedHosts are the Host names serve answers besides its listen
// address and loopback: allowed_hosts and coordination.advertise's host.
func (c *Config) HTTPAllowedHosts() []string {
	hosts := append([]string(nil), c.AllowedHosts...)
	if u, err := url.Parse(c.Coordination.Advertise); err == nil && u.Host != "" {
		hosts = append(hosts, u.Host)
	}
	return hosts
}

// validHostName checks an allowed_hosts entry: NAME or NAME:PORT.
func validHostName(h string) bool {
	if host, port, err := net.SplitHostPort(h); err == nil {
		n, err := strconv.Atoi(port)
		return host != "" && !strings.ContainsAny(host, "/@ ") && err == nil && n > 0 && n < 65536
	}
	return h != "" && !strings.ContainsAny(h, "/@: \t")
}

// ReadsNeedToken tells whether the API's reads need the token: as
// configured, or when serve listens off-loopback.
func (c *Config) ReadsNeedToken() bool {
	if c.UI.ReadRequiresToken != nil {
		return *c.UI.ReadRequiresToken
	}
	return !loopbackListen(c.Listen)
}

// loopbackListen reports whether addr (HOST:PORT) listens on loopback only.
func loopbackListen(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CredentialsConfig is a user and a password, or a file holding them
// (my.cnf style, mode 0600). For the admin account, $DBPILOT_USER and
// $DBPILOT_PASSWORD fill what the file leaves out.
type CredentialsConfig struct {
	// User is the account's user name.
	User string `yaml:"user"`
	// Password is the account's password (prefer file).
	Password string `yaml:"password"`
	// File is a my.cnf-style file ([client] user=, password=; mode 0600)
	// that fills what user and password leave out.
	File string `yaml:"file"`
}

// ReplicationConfig is the account replicas use to connect to their
// sources, and their TLS, in the CHANGE MASTER statements dbpilot sends.
type ReplicationConfig struct {
	CredentialsConfig `yaml:",inline"`
	// TLS is what CHANGE MASTER tells replicas: MASTER_SSL=1 with
	// MASTER_SSL_CA, MASTER_SSL_CERT, MASTER_SSL_KEY (paths as the
	// replicas' hosts see them, not checked by dbpilot) and
	// MASTER_SSL_VERIFY_SERVER_CERT=1 for verify-identity (MySQL 8:
	// SOURCE_SSL...). Mode disabled sets MASTER_SSL=0; no key at all leaves
	// the replicas' SSL settings as they are. server_name does not apply.
	TLS TLSConfig `yaml:"tls"`
}

// TLSConfig is TLS to MySQL/MariaDB servers.
type TLSConfig struct {
	// Mode is disabled, preferred (TLS when the server offers it),
	// required (TLS, certificate not verified), verify-ca (signed by CA) or
	// verify-identity (signed by CA and naming the host), as the mysql
	// client's --ssl-mode. Default: verify-identity when CA is set,
	// required when only Cert is, else disabled.
	Mode string `yaml:"mode,omitempty"`
	// CA is the file (PEM) of the certificate authority that signed the
	// servers' certificates (without it, the verify modes use the system's
	// roots).
	CA string `yaml:"ca,omitempty"`
	// Cert is a client certificate file (PEM), for accounts that require
	// one (REQUIRE X509); with Key.
	Cert string `yaml:"cert,omitempty"`
	// Key is the key file (PEM) of Cert.
	Key string `yaml:"key,omitempty"`
	// ServerName, with verify-identity, is the name the servers'
	// certificates must hold instead of the host dbpilot connects to.
	ServerName string `yaml:"server_name,omitempty"`
}

// IsZero reports whether no key is set.
func (t TLSConfig) IsZero() bool { return t == TLSConfig{} }

// DetectionConfig tunes failure detection.
type DetectionConfig struct {
	// ProbeTimeout bounds one probe: each new connection (TCP connect,
	// greeting and authentication) and each statement; keep it well under
	// the poll interval.
	ProbeTimeout Duration `yaml:"probe_timeout"`
	// ConfirmTimeout bounds the confirmation round (re-probe the primary and
	// ask every replica) after a failed probe.
	ConfirmTimeout Duration `yaml:"confirm_timeout"`
	// LivenessInterval: between polls, serve holds one session on each
	// primary blocked in a long SLEEP; when the server dies the session is
	// reset and the failure is confirmed at once. After the session is lost
	// it is reopened every LivenessInterval (default 100ms). "off" disables it.
	LivenessInterval Duration `yaml:"liveness_interval"`
}

// RecoveryConfig tunes recoveries.
type RecoveryConfig struct {
	// BlockPeriod: after a recovery, automatic recovery of the cluster is
	// blocked this long unless acknowledged (anti-flapping). Default 10m;
	// it cannot be turned off (negative values are refused).
	BlockPeriod Duration `yaml:"block_period"`
	// ApplyTimeout bounds waiting for a failover's candidate to apply its
	// relay log or catch up (a switchover's drain has
	// switchover.drain_timeout).
	ApplyTimeout Duration `yaml:"apply_timeout"`
	// RepointVerify bounds waiting for each repointed replica to replicate.
	RepointVerify Duration `yaml:"repoint_verify"`
	// KillGrace: switchover waits this long after read_only before ending
	// writer connections.
	KillGrace Duration `yaml:"kill_grace"`
}

// SwitchoverConfig bounds planned primary changes (switchover, and
// relocate for max_lag); the CLI's --max-lag and --drain-timeout override
// them for one operation.
type SwitchoverConfig struct {
	// MaxLag: before anything changes, a switchover's candidate (or a
	// relocation's target, when it replicates) whose replication lag, or
	// the time it takes to apply what it received at the rate it shows,
	// exceeds this is refused; so is one with a backlog whose applier is
	// stopped, waits for a lock or applies nothing in 500ms (default 10s).
	MaxLag Duration `yaml:"max_lag"`
	// DrainTimeout: a switchover refuses writes on the old primary at most
	// this long (kill_grace included) while the candidate applies its last
	// transactions; then the old primary is made writable again and
	// nothing else changes (default 5s; more than recovery.kill_grace).
	DrainTimeout Duration `yaml:"drain_timeout"`
}

// Defaults of SwitchoverConfig.
const (
	DefaultMaxLag       = 10 * time.Second
	DefaultDrainTimeout = 5 * time.Second
)

func (s *SwitchoverConfig) validate(killGrace time.Duration) error {
	for _, f := range []struct {
		name string
		v    *Duration
		def  time.Duration
	}{{"switchover.max_lag", &s.MaxLag, DefaultMaxLag}, {"switchover.drain_timeout", &s.DrainTimeout, DefaultDrainTimeout}} {
		switch {
		case *f.v == 0:
			*f.v = Duration(f.def)
		case *f.v < 0:
			return fmt.Errorf("%s: must be a positive duration like %s", f.name, f.def)
		}
	}
	if s.DrainTimeout.D() <= killGrace {
		return fmt.Errorf("switchover.drain_timeout: %s must be longer than recovery.kill_grace %s (the drain includes it)", s.DrainTimeout.D(), killGrace)
	}
	return nil
}

// HooksConfig are commands run around failovers (via /bin/sh -c), with the
// environment DBPILOT_CLUSTER, DBPILOT_OLD_PRIMARY, DBPILOT_NEW_PRIMARY,
// DBPILOT_LOST_REPLICAS, DBPILOT_RECOVERY_ID, DBPILOT_KIND and (after)
// DBPILOT_ERROR.
type HooksConfig struct {
	// PreFailover commands run before any change; a non-zero exit vetoes.
	PreFailover []string `yaml:"pre_failover"`
	// PostFailover commands run after a successful recovery.
	PostFailover []string `yaml:"post_failover"`
	// PostUnsuccessfulFailover commands run after a failed recovery.
	PostUnsuccessfulFailover []string `yaml:"post_unsuccessful_failover"`
	// Timeout kills a hook that runs longer (default 30s).
	Timeout Duration `yaml:"timeout"`
	// OnTimeout is what a timed-out pre-failover hook means: "abort" (the
	// default: it vetoes) or "continue".
	OnTimeout string `yaml:"on_timeout"`
}

// MetricsConfig tunes collection and the embedded time-series store.
type MetricsConfig struct {
	// Disabled turns collection off (failover keeps working).
	Disabled bool `yaml:"disabled"`
	// Dir is the time-series store's directory (default: "metrics" beside
	// the state file).
	Dir string `yaml:"dir"`
	// Retention is how long samples are kept at full resolution (default 7 days).
	Retention Duration `yaml:"retention"`
	// Intervals override collectors' default intervals, e.g. {innodb: 10s}.
	Intervals map[string]Duration `yaml:"intervals"`
	// Collectors, when set, lists the only collectors to run.
	Collectors []string `yaml:"collectors"`
	// FullStatusInterval is how often global_status writes the status
	// variables outside its every-second set (charts, alerts, top and the
	// usual workload counters); default 10s, "0s" writes every variable at
	// the collector's interval. Nil: the default.
	FullStatusInterval *Duration `yaml:"full_status_interval"`
	// GlobalVariables is "essential" (default: the ~90 variables dashboards,
	// alerts and dbpilot read) or "all" (every numeric variable, as
	// mysqld_exporter writes them: ~480 more series per instance).
	GlobalVariables string `yaml:"global_variables"`
	// IdleCounters is "skip" (default: a status counter that has read 0
	// since collection started is not written until it moves, with a 0
	// before its first value) or "write" (every counter, as
	// mysqld_exporter writes them: ~300 more series per instance).
	IdleCounters string `yaml:"idle_counters"`
	// Local keeps samples in the embedded store (default true). With
	// false, samples only go to RemoteWrite, and the PromQL API, the
	// console's charts and alerts query QueryURL.
	Local *bool `yaml:"local"`
	// RemoteWrite are Prometheus remote-write receivers every sample is
	// sent to, besides the embedded store.
	RemoteWrite []RemoteWriteConfig `yaml:"remote_write"`
	// QueryURL is a Prometheus-compatible HTTP API (the base, under which
	// /api/v1/query lives), queried when Local is false.
	QueryURL string `yaml:"query_url"`
}

// AlertsConfig configures alerting.
type AlertsConfig struct {
	// Rules is a Prometheus-style rule file; empty: the built-in rules.
	Rules string `yaml:"rules"`
	// Interval is how often rules are evaluated (default 1s).
	Interval Duration `yaml:"interval"`
	// Webhook receives a JSON POST for each alert state change.
	Webhook string `yaml:"webhook"`
	// WebhookTimeout bounds one webhook request.
	WebhookTimeout Duration `yaml:"webhook_timeout"`
	// CatchUpHorizon is how soon a lagging replica must be predicted to
	// catch up: serve writes dbpilot_replica_catchup_beyond_horizon 1 for
	// one predicted to take longer, or falling behind (the alert
	// ReplicaWillNotCatchUp reads it). Default 10m.
	CatchUpHorizon Duration `yaml:"catchup_horizon"`
}

// ClusterConfig is one cluster serve watches.
type ClusterConfig struct {
	// Name names the cluster in commands, the API and the console
	// (letters, digits, '.', ':', '_' or '-'; required).
	Name string `yaml:"name"`
	// Seeds are HOST:PORT addresses of the cluster's servers, from which
	// discovery finds the rest (at least one; a server belongs to one
	// cluster).
	Seeds []string `yaml:"seeds"`
	// AutoFailover lets serve recover a dead primary by itself.
	AutoFailover bool `yaml:"auto_failover"`
	// Rejoin lets serve make a returning old primary with no errant
	// transactions a replica of the new primary by itself; off, it stays
	// fenced (read_only, outside the cluster) until 'dbpilot rejoin'.
	Rejoin bool `yaml:"rejoin"`
	// SemiSync enables the semi-sync primary side on a promoted replica and
	// the replica side on the replicas moved under it. A promoted replica
	// that had the primary side on keeps it without it (the servers' own
	// setting, e.g. both sides on every server, is kept through a recovery).
	SemiSync bool `yaml:"semi_sync"`
	// PromotionRules maps HOST:PORT to prefer, neutral, prefer_not or must_not.
	PromotionRules map[string]dbpilot.PromotionRule `yaml:"promotion_rules"`
	// Hooks, when set, replace the global hooks for this cluster.
	Hooks *HooksConfig `yaml:"hooks"`
	// TLS, when set, replaces the top-level tls for this cluster's servers.
	TLS *TLSConfig `yaml:"tls"`

	seeds []dbpilot.InstanceKey
	tls   *serverTLS // loaded: TLS, or the top-level tls
	rules map[dbpilot.InstanceKey]dbpilot.PromotionRule
}

// Duration is a time.Duration written as "1s", "500ms", "10m" in YAML.
type Duration time.Duration

// UnmarshalYAML parses a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return err
	}
	if s == "off" {
		*d = -1
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is not a duration like 500ms, 1s or 10m", s)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration as a string.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// collectorNames are the collectors serve runs (see daemon.Collectors).
var collectorNames = []string{"global_status", "global_variables", "replication", "heartbeat", "innodb", "processlist", "binlog", "galera", "semisync"}

// Defaults.
const (
	DefaultListen       = "127.0.0.1:7070"
	DefaultPollInterval = time.Second
	// DefaultCatchUpHorizon is alerts.catchup_horizon's default.
	DefaultCatchUpHorizon = 10 * time.Minute
	DefaultBlockPeriod    = 10 * time.Minute
)

// Example is a commented configuration, printed by `dbpilot serve --help`.
const Example = `listen: 127.0.0.1:7070          # HTTP API; keep it on loopback or behind TLS
# http_tls: {cert_file: /etc/dbpilot/serve.crt, key_file: /etc/dbpilot/serve.key}   # HTTPS for the API and console; SIGHUP reloads
# allowed_hosts: [dbpilot.example.com]   # Host names answered besides listen and localhost (421 for others: DNS rebinding)
state: ~/.dbpilot/state.db       # SQLite: instances, recoveries, audit log
retention: 2160h                 # audit log, recoveries, resolved alerts, topology history kept 90 days (pruned hourly)
token_file: ~/.dbpilot/token     # bearer token for POST /api/... (mode 0600): an admin token named "admin"
# tokens: [{name: grafana, role: viewer, token_file: /etc/dbpilot/grafana.token}]   # roles viewer|operator|admin (dbpilot token new)
ui: {read_requires_token: false} # reads (API, web console data, /metrics) need the token too; default: true off-loopback
credentials: {user: dbpilot, file: ~/.dbpilot/admin.cnf}   # admin account ([client] user=, password=)
replication: {user: repl, password: "..."}                  # account replicas use
# durations: omitted or 0 takes the default; negative ones are refused
poll_interval: 1s                # sub-second allowed (100ms..1m)
detection: {probe_timeout: 400ms, confirm_timeout: 800ms, liveness_interval: 100ms}
recovery: {block_period: 10m, apply_timeout: 30s, repoint_verify: 10s, kill_grace: 100ms}
switchover: {max_lag: 10s, drain_timeout: 5s}   # refuse a candidate that cannot catch up within max_lag; writes blocked at most drain_timeout
hooks:
  pre_failover: ["/etc/dbpilot/check-maintenance.sh"]     # non-zero exit vetoes
  post_failover: ["/etc/dbpilot/move-vip.sh"]            # env: DBPILOT_NEW_PRIMARY, ...
  timeout: 30s
metrics:
  retention: 168h                # 7 days at full resolution
  intervals: {innodb: 5s, processlist: 5s}
  # idle_counters: write         # default skip: status counters still at 0 are written once they move
  # remote_write:                # also send every sample to Prometheus (--web.enable-remote-write-receiver) or VictoriaMetrics
  #   - url: http://vm:8428/api/v1/write
  #     basic_auth: {username: dbpilot, password_file: /etc/dbpilot/rw.pass}   # or bearer_token_file; headers: {...}
  #     timeout: 10s
  #     queue: {capacity: 500000, max_samples_per_send: 2000, batch_send_deadline: 1s}   # samples; oldest dropped when full
  # local: false                 # no embedded store: samples only go to remote_write ...
  # query_url: http://vm:8428    # ... and the PromQL API, charts and alerts query this API
alerts:
  rules: /etc/dbpilot/alerts.yaml   # default: the built-in rules
  webhook: http://127.0.0.1:9099/dbpilot
coordination:                    # several serves, one recovery leader per cluster (omit: serve acts alone)
  id: dbpilot-a                  # unique per serve (serve --id); default HOSTNAME:PORT
  advertise: http://10.0.0.5:7070   # where the other serves forward write requests
  etcd: {endpoints: [http://10.0.0.1:2379, http://10.0.0.2:2379, http://10.0.0.3:2379], prefix: /dbpilot, lease_ttl: 5s,
         username: dbpilot, password_file: ~/.dbpilot/etcd.pw, ca_file: /etc/dbpilot/etcd-ca.pem}
watchdog:                        # query watchdog on every monitored instance (omit: none); or rules_file: PATH
  rules:
    - {name: runaway-select, command: Query, info: '(?i)^select', busy: 30s, action: kill_query, dry_run: true}
    - {builtin: replica_applier_blocked, wait: 10s}   # built-in, off unless listed: free a replica's applier from MDL blockers
  notify: true                   # also post matches and kills to alerts.webhook (default true when it is set)
queries: {interval: 10s, top: 200, retention: 192h}   # query analytics per digest (default on; disabled: true)
backup:
  binlog: {cluster: main, dir: /var/backups/dbpilot/binlog, retention: 168h, semi_sync: true}   # follows failovers
clusters:
  - name: main
    seeds: [db1:3306, db2:3306]
    auto_failover: true
    rejoin: false                # true: a returning old primary without errant transactions rejoins by itself (else: dbpilot rejoin)
    semi_sync: true              # the new primary gets the semi-sync primary side (kept anyway where the servers had it on)
    promotion_rules: {db3:3306: must_not}
`

// LoadConfig reads a YAML file, applies defaults and validates.
func LoadConfig(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, dbpilot.Errorf(dbpilot.ENOTFOUND, "config %s: no such file: write one (dbpilot serve --print-default-config prints every key at its default) or give --config the right path", path)
	}
	if err != nil {
		return nil, dbpilot.WrapError(dbpilot.ENOTFOUND, err, "config")
	}
	c := Config{path: path}
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "config %s: %s", path, yamlError(err))
	}
	if err := c.Validate(); err != nil {
		return nil, dbpilot.WrapError(dbpilot.EINVALID, err, "config %s", path)
	}
	return &c, nil
}

func yamlError(err error) string {
	s := err.Error()
	s = strings.TrimPrefix(s, "yaml: ")
	s = strings.ReplaceAll(s, "\n", "; ")
	return s
}

func expandHome(p string) string {
	if strings.HasPrefix(p, "~/") {
		if h, err := os.UserHomeDir(); err == nil {
			return filepath.Join(h, p[2:])
		}
	}
	return p
}

var clusterNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$`)

// Validate applies defaults and checks every field; errors name the key.
// Each subsystem has its own validation, in this order.
func (c *Config) Validate() error {
	for _, validate := range []func() error{
		c.validateServe,
		c.validateCredentials,
		c.validateDetection,
		c.validateRecovery,
		c.validateState,
		c.validateMetrics,
		c.validateAlerts,
		func() error { return c.Hooks.validate("hooks") },
		c.validateWatchdog,
		c.validateQueries,
	} {
		if err := validate(); err != nil {
			return err
		}
	}
	names, err := c.validateClusters()
	if err != nil {
		return err
	}
	if err := c.validateTLS(); err != nil {
		return err
	}
	return c.validateBackup(names)
}

// validateServe checks the API (listen, allowed_hosts, token,
// token_file), the state file and coordination.
func (c *Config) validateServe() error {
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		return fmt.Errorf("listen: %q is not HOST:PORT", c.Listen)
	}
	for i, h := range c.AllowedHosts {
		if !validHostName(h) {
			return fmt.Errorf("allowed_hosts[%d]: %q is not a NAME or NAME:PORT (no scheme, no path)", i, h)
		}
	}
	if c.State == "" {
		h, err := dbpilotHome()
		if err != nil {
			return err
		}
		c.State = filepath.Join(h, "state.db")
	}
	c.State = expandHome(c.State)
	if c.TokenFile != "" {
		if c.Token != "" {
			return errors.New("token and token_file: give one, not both")
		}
		tok, err := readSecretFile(expandHome(c.TokenFile))
		if err != nil {
			return fmt.Errorf("token_file: %w", err)
		}
		c.Token = tok
	}
	if err := c.validateTokens(); err != nil {
		return err
	}
	if err := c.HTTPTLS.validate(); err != nil {
		return err
	}
	if err := c.Coordination.validate(); err != nil {
		return err
	}
	if c.ReadsNeedToken() && !c.HasTokens() {
		return fmt.Errorf("token: serve listens on %s (not loopback), where reading the API needs a token: configure token, token_file or tokens, or set ui.read_requires_token: false", c.Listen)
	}
	return nil
}

// validateCredentials resolves credentials and replication.
func (c *Config) validateCredentials() error {
	if err := c.Credentials.resolve("credentials", true); err != nil {
		return err
	}
	if err := c.Replication.resolve("replication", false); err != nil {
		return err
	}
	if c.Replication.User == "" {
		return errors.New("replication.user: required (the account replicas use in CHANGE MASTER)")
	}
	return nil
}

// validateTLS reads and checks the TLS files of tls and of the clusters'
// tls, and the replication.tls settings: a missing or bad file stops serve
// before it connects anywhere.
func (c *Config) validateTLS() error {
	var err error
	if c.tls, err = loadServerTLS(c.TLS, "tls"); err != nil {
		return err
	}
	for i := range c.Clusters {
		cl := &c.Clusters[i]
		cl.tls = c.tls
		if cl.TLS != nil {
			if cl.tls, err = loadServerTLS(*cl.TLS, fmt.Sprintf("clusters[%d].tls", i)); err != nil {
				return err
			}
		}
	}
	c.tlsRoutes = newTLSRoutes(c)
	return checkReplicationTLS(c.Replication.TLS, "replication.tls")
}

// validateDetection checks poll_interval and detection.
func (c *Config) validateDetection() error {
	if err := setDuration(&c.PollInterval, DefaultPollInterval, "poll_interval"); err != nil {
		return err
	}
	if c.PollInterval.D() < 100*time.Millisecond || c.PollInterval.D() > time.Minute {
		return fmt.Errorf("poll_interval: %s is outside 100ms..1m", c.PollInterval.D())
	}
	if err := setDuration(&c.Detection.ProbeTimeout, max(c.PollInterval.D()*2/5, 100*time.Millisecond), "detection.probe_timeout"); err != nil {
		return err
	}
	if err := setDuration(&c.Detection.ConfirmTimeout, 2*c.Detection.ProbeTimeout.D(), "detection.confirm_timeout"); err != nil {
		return err
	}
	switch l := c.Detection.LivenessInterval.D(); {
	case l == 0:
		c.Detection.LivenessInterval = Duration(100 * time.Millisecond)
	case l < 0:
		// disabled
	case l < 20*time.Millisecond || l > c.PollInterval.D():
		return fmt.Errorf("detection.liveness_interval: %s is outside 20ms..poll_interval", l)
	}
	if c.Detection.ProbeTimeout.D() >= c.PollInterval.D() && c.PollInterval.D() > 0 {
		return fmt.Errorf("detection.probe_timeout: %s must be below poll_interval %s", c.Detection.ProbeTimeout.D(), c.PollInterval.D())
	}
	return nil
}

// validateRecovery checks recovery and switchover.
func (c *Config) validateRecovery() error {
	for _, d := range []struct {
		v   *Duration
		def time.Duration
		key string
	}{
		{&c.Recovery.BlockPeriod, DefaultBlockPeriod, "recovery.block_period"},
		{&c.Recovery.ApplyTimeout, 30 * time.Second, "recovery.apply_timeout"},
		{&c.Recovery.RepointVerify, 10 * time.Second, "recovery.repoint_verify"},
		{&c.Recovery.KillGrace, 100 * time.Millisecond, "recovery.kill_grace"},
	} {
		if err := setDuration(d.v, d.def, d.key); err != nil {
			return err
		}
	}
	return c.Switchover.validate(c.Recovery.KillGrace.D())
}

// validateState checks how long serve keeps what it saw: forget_after,
// retention; and discovery_bound.
func (c *Config) validateState() error {
	if err := setDuration(&c.ForgetAfter, time.Hour, "forget_after"); err != nil {
		return err
	}
	if c.Retention == 0 {
		c.Retention = Duration(DefaultRetention)
	}
	if c.Retention.D() < 24*time.Hour {
		return fmt.Errorf("retention: %s is below 24h (the audit log of a recovery must outlive its investigation)", c.Retention.D())
	}
	if c.DiscoveryBound == 0 {
		c.DiscoveryBound = 8
	}
	return nil
}

// validateMetrics checks metrics (collectors, intervals, remote write).
func (c *Config) validateMetrics() error {
	if c.Metrics.Dir == "" {
		c.Metrics.Dir = filepath.Join(filepath.Dir(c.State), "metrics")
	}
	c.Metrics.Dir = expandHome(c.Metrics.Dir)
	if c.Metrics.Retention == 0 {
		c.Metrics.Retention = Duration(7 * 24 * time.Hour)
	}
	if c.Metrics.Retention.D() < time.Hour {
		return fmt.Errorf("metrics.retention: %s is below 1h", c.Metrics.Retention.D())
	}
	known := map[string]bool{}
	for _, n := range collectorNames {
		known[n] = true
	}
	if err := choice(&c.Metrics.GlobalVariables, "metrics.global_variables", "essential", "all"); err != nil {
		return err
	}
	if err := choice(&c.Metrics.IdleCounters, "metrics.idle_counters", "skip", "write"); err != nil {
		return err
	}
	if f := c.Metrics.FullStatusInterval; f != nil && (f.D() < 0 || f.D() > time.Hour) {
		return fmt.Errorf("metrics.full_status_interval: %s is outside 0..1h", f.D())
	}
	for name, iv := range c.Metrics.Intervals {
		if !known[name] {
			return fmt.Errorf("metrics.intervals: unknown collector %q (collectors: %s)", name, strings.Join(collectorNames, ", "))
		}
		if iv.D() < 100*time.Millisecond || iv.D() > time.Hour {
			return fmt.Errorf("metrics.intervals[%s]: %s is outside 100ms..1h", name, iv.D())
		}
	}
	for _, name := range c.Metrics.Collectors {
		if !known[name] {
			return fmt.Errorf("metrics.collectors: unknown collector %q (collectors: %s)", name, strings.Join(collectorNames, ", "))
		}
	}
	if err := c.Metrics.validateRemote(); err != nil {
		return err
	}
	return nil
}

// validateAlerts checks alerts.
func (c *Config) validateAlerts() error {
	if c.Alerts.Interval == 0 {
		c.Alerts.Interval = Duration(time.Second)
	}
	if c.Alerts.Interval.D() < 100*time.Millisecond {
		return fmt.Errorf("alerts.interval: %s is below 100ms", c.Alerts.Interval.D())
	}
	if err := setDuration(&c.Alerts.CatchUpHorizon, DefaultCatchUpHorizon, "alerts.catchup_horizon"); err != nil {
		return err
	}
	if err := setDuration(&c.Alerts.WebhookTimeout, 5*time.Second, "alerts.webhook_timeout"); err != nil {
		return err
	}
	if c.Alerts.Webhook != "" && !strings.HasPrefix(c.Alerts.Webhook, "http://") && !strings.HasPrefix(c.Alerts.Webhook, "https://") {
		return fmt.Errorf("alerts.webhook: %q is not an http(s) URL", c.Alerts.Webhook)
	}
	c.Alerts.Rules = expandHome(c.Alerts.Rules)
	return nil
}

// validateClusters checks clusters and returns their names.
func (c *Config) validateClusters() (map[string]bool, error) {
	if len(c.Clusters) == 0 {
		return nil, errors.New("clusters: at least one cluster is needed")
	}
	names := map[string]bool{}
	seedOf := map[dbpilot.InstanceKey]string{} // a seed's cluster: one server belongs to one cluster
	for i := range c.Clusters {
		cl := &c.Clusters[i]
		where := fmt.Sprintf("clusters[%d]", i)
		if !clusterNameRE.MatchString(cl.Name) {
			return nil, fmt.Errorf("%s.name: %q: use letters, digits, '.', ':', '_' or '-'", where, cl.Name)
		}
		if names[cl.Name] {
			return nil, fmt.Errorf("%s.name: %q is used twice", where, cl.Name)
		}
		names[cl.Name] = true
		if len(cl.Seeds) == 0 {
			return nil, fmt.Errorf("%s.seeds: at least one HOST:PORT is needed", where)
		}
		cl.seeds = nil
		for j, s := range cl.Seeds {
			k, err := dbpilot.ParseInstanceKey(s)
			if err != nil {
				return nil, fmt.Errorf("%s.seeds[%d]: %w", where, j, err)
			}
			if other, ok := seedOf[k.Normalized()]; ok && other != cl.Name {
				return nil, fmt.Errorf("%s.seeds[%d]: %s is also a seed of cluster %q: one server belongs to one cluster (two clusters over one replication tree would both recover it)", where, j, k, other)
			}
			seedOf[k.Normalized()] = cl.Name
			cl.seeds = append(cl.seeds, k)
		}
		cl.rules = map[dbpilot.InstanceKey]dbpilot.PromotionRule{}
		for s, r := range cl.PromotionRules {
			k, err := dbpilot.ParseInstanceKey(s)
			if err != nil {
				return nil, fmt.Errorf("%s.promotion_rules: %w", where, err)
			}
			if !r.Valid() {
				return nil, fmt.Errorf("%s.promotion_rules[%s]: %q: use prefer, neutral, prefer_not or must_not", where, s, r)
			}
			cl.rules[k] = r
		}
		if cl.Hooks != nil {
			if err := cl.Hooks.validate(where + ".hooks"); err != nil {
				return nil, err
			}
		}
	}
	return names, nil
}

func (h *HooksConfig) validate(where string) error {
	if err := setDuration(&h.Timeout, 30*time.Second, where+".timeout"); err != nil {
		return err
	}
	switch h.OnTimeout {
	case "":
		h.OnTimeout = "abort"
	case "abort", "continue":
	default:
		return fmt.Errorf("%s.on_timeout: %q: use abort or continue", where, h.OnTimeout)
	}
	for _, list := range [][]string{h.PreFailover, h.PostFailover, h.PostUnsuccessfulFailover} {
		for _, c := range list {
			if strings.TrimSpace(c) == "" {
				return fmt.Errorf("%s: an empty command", where)
			}
		}
	}
	return nil
}

// resolve reads the credentials file and the environment.
func (c *CredentialsConfig) resolve(where string, admin bool) error {
	if c.File != "" {
		fc, err := readCredentialsFile(expandHome(c.File))
		if err != nil {
			return fmt.Errorf("%s.file: %w", where, err)
		}
		if c.User == "" {
			c.User = fc.User
		}
		if c.Password == "" {
			c.Password = fc.Password
		}
	}
	if admin {
		if v := os.Getenv("DBPILOT_USER"); v != "" && c.User == "" {
			c.User = v
		}
		if v := os.Getenv("DBPILOT_PASSWORD"); v != "" && c.Password == "" {
			c.Password = v
		}
		if c.User == "" {
			return fmt.Errorf("%s.user: required (or DBPILOT_USER)", where)
		}
	}
	return nil
}

// Cluster returns the cluster named name.
func (c *Config) Cluster(name string) (*ClusterConfig, error) {
	for i := range c.Clusters {
		if c.Clusters[i].Name == name {
			return &c.Clusters[i], nil
		}
	}
	var names []string
	for _, cl := range c.Clusters {
		names = append(names, cl.Name)
	}
	return nil, dbpilot.Errorf(dbpilot.ENOTFOUND, "no cluster named %q (clusters: %s)", name, strings.Join(names, ", "))
}

// HooksFor returns the hooks of a cluster.
func (c *Config) HooksFor(cl *ClusterConfig) HooksConfig {
	if cl.Hooks != nil {
		return *cl.Hooks
	}
	return c.Hooks
}

func dbpilotHome() (string, error) {
	if h := os.Getenv("DBPILOT_HOME"); h != "" {
		return filepath.Abs(h)
	}
	u, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find home directory (set DBPILOT_HOME): %w", err)
	}
	return filepath.Join(u, ".dbpilot"), nil
}

func readSecretFile(path string) (string, error) {
	if err := checkPrivateFile(path); err != nil {
		return "", err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return s, nil
}

// setDuration applies def to a duration left unset (or 0) and refuses a
// negative one, and "off", which these settings do not have: a negative
// block period, say, would turn anti-flapping off.
func setDuration(d *Duration, def time.Duration, key string) error {
	switch {
	case *d == 0:
		*d = Duration(def)
	case *d < 0:
		v := d.D().String()
		if *d == -1 {
			v = "off"
		}
		return fmt.Errorf("%s: %s is not allowed: give a positive duration such as %s (0 or unset: the default, %s)", key, v, def, def)
	}
	return nil
}

// choice checks a setting that is def (the default, set when empty) or
// other.
func choice(v *string, key, def, other string) error {
	switch *v {
	case "":
		*v = def
	case def, other:
	default:
		return fmt.Errorf("%s: %q is neither %s nor %s", key, *v, def, other)
	}
	return nil
}

// AddrFile is where a running serve writes the URL its API answers on,
// beside the state file (STATE.addr): a command refused because that serve
// owns the state names it ("act through it with --server URL"), whatever
// --listen serve was given. "" for a state that is not a file.
func (c *Config) AddrFile() string {
	if c.State == "" || strings.HasPrefix(c.State, ":") {
		return ""
	}
	return c.State + ".addr"
}
