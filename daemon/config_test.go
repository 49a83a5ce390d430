package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "dbpilot.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const minimal = `
credentials: {user: dbpilot, password: pw}
replication: {user: repl, password: rpw}
clusters:
  - name: main
    seeds: [127.0.0.1:3306]
`

func TestLoadConfigDefaults(t *testing.T) {
	t.Setenv("DBPILOT_HOME", "/tmp/dbp-home")
	c, err := LoadConfig(writeConfig(t, minimal))
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:7070" || c.State != "/tmp/dbp-home/state.db" || c.PollInterval.D() != time.Second ||
		c.Detection.ProbeTimeout.D() != 400*time.Millisecond || c.Recovery.BlockPeriod.D() != 10*time.Minute || c.Hooks.Timeout.D() != 30*time.Second {
		t.Errorf("defaults: %+v", c)
	}
	if sw := c.Switchover; sw.MaxLag.D() != 10*time.Second || sw.DrainTimeout.D() != 5*time.Second {
		t.Errorf("switchover defaults: %+v", sw)
	}
	if q := c.Queries; q.Disabled || q.Interval.D() != 10*time.Second || q.Top != 200 || q.Retention.D() != 8*24*time.Hour || q.Examples {
		t.Errorf("queries defaults: %+v", q)
	}
	if len(c.Clusters[0].seeds) != 1 || c.Clusters[0].seeds[0].Port != 3306 {
		t.Errorf("seeds: %+v", c.Clusters[0].seeds)
	}
}

func TestLoadConfigErrors(t *testing.T) {
	tests := []struct {
		body, want string
	}{
		{minimal + "bogus: 1\n", "field bogus not found"},
		{strings.Replace(minimal, "seeds: [127.0.0.1:3306]", "seeds: [127.0.0.1:x]", 1), "clusters[0].seeds[0]: invalid instance address"},
		{strings.Replace(minimal, "seeds: [127.0.0.1:3306]", "seeds: []", 1), "clusters[0].seeds: at least one"},
		{minimal + "poll_interval: 10ms\n", "poll_interval: 10ms is outside"},
		{minimal + "poll_interval: fast\n", `"fast" is not a duration`},
		{minimal + "retention: 1h\n", "retention: 1h0m0s is below 24h"},
		{minimal + "detection: {probe_timeout: 2s}\n", "detection.probe_timeout: 2s must be below poll_interval"},
		{strings.Replace(minimal, "replication: {user: repl, password: rpw}", "", 1), "replication.user: required"},
		{minimal + "listen: nowhere\n", `listen: "nowhere" is not HOST:PORT`},
		{minimal + "allowed_hosts: [\"http://db.example\"]\n", `allowed_hosts[0]: "http://db.example" is not a NAME or NAME:PORT`},
		{minimal + "allowed_hosts: [ok.example, \"db.example:x\"]\n", `allowed_hosts[1]: "db.example:x"`},
		{minimal + "hooks: {on_timeout: maybe}\n", "hooks.on_timeout"},
		{minimal + "metrics: {global_variables: some}\n", "metrics.global_variables"},
		{minimal + "metrics: {idle_counters: zero}\n", "metrics.idle_counters: \"zero\" is neither skip nor write"},
		{minimal + "metrics: {full_status_interval: -1s}\n", "metrics.full_status_interval"},
		{minimal + "coordination: {etcd: {endpoints: []}}\n", "coordination.etcd.endpoints"},
		{minimal + "coordination: {etcd: {endpoints: [\"http://127.0.0.1:2379\"], lease_ttl: 1s}}\n", "coordination.etcd.lease_ttl"},
		{minimal + "coordination: {etcd: {endpoints: [\"http://127.0.0.1:2379\"], lease_ttl: 2500ms}}\n", "whole seconds"},
		{minimal + "coordination: {id: a}\n", "need coordination.etcd"},
		{minimal + "coordination: {id: \"a/b\", etcd: {endpoints: [\"127.0.0.1:2379\"]}}\n", "coordination.id"},
		{strings.Replace(minimal, "seeds: [127.0.0.1:3306]", "seeds: [127.0.0.1:3306]\n    promotion_rules: {127.0.0.1:3307: never}", 1), `promotion_rules[127.0.0.1:3307]: "never"`},
		{minimal + "  - name: main\n    seeds: [h:1]\n", `"main" is used twice`},
		// Markup never becomes a cluster name (the web console escapes
		// names anyway).
		{minimal + "  - name: \"<script>alert(1)</script>\"\n    seeds: [h:1]\n", "use letters, digits"},
		{"credentials: {user: x}\nreplication: {user: r}\n", "clusters: at least one"},
		{minimal + "switchover: {max_lag: -1s}\n", "switchover.max_lag: must be a positive duration like 10s"},
		{minimal + "switchover: {max_lag: off}\n", "switchover.max_lag: must be a positive duration"},
		{minimal + "switchover: {drain_timeout: -5s}\n", "switchover.drain_timeout: must be a positive duration like 5s"},
		{minimal + "switchover: {drain_timeout: 100ms}\n", "switchover.drain_timeout: 100ms must be longer than recovery.kill_grace 100ms"},
		{minimal + "switchover: {drain_timeout: 1s}\nrecovery: {kill_grace: 2s}\n", "switchover.drain_timeout: 1s must be longer than recovery.kill_grace 2s"},
		{minimal + "switchover: {max_lag: 3s, grace: 1s}\n", "field grace not found"},
		{minimal + "queries: {interval: 100ms}\n", "queries.interval: 100ms is outside 1s..1h"},
		{minimal + "queries: {top: -1}\n", "queries.top: -1 is outside"},
		{minimal + "queries: {retention: 10m}\n", "queries.retention: 10m0s is below 1h"},
		{minimal + "queries: {sample: yes}\n", "field sample not found"},
		{minimal + "backup: {binlog: {dir: /tmp/x}}\n", "backup.binlog.cluster: required"},
		{minimal + "backup: {binlog: {cluster: other, dir: /tmp/x}}\n", `backup.binlog.cluster: "other" is not a configured cluster`},
		{minimal + "backup: {binlog: {cluster: main}}\n", "backup.binlog.dir: required"},
		{minimal + "backup: {binlog: {cluster: main, dir: /tmp/x, retention: 5m}}\n", "backup.binlog.retention: 5m0s is below 1h"},
	}
	for _, tt := range tests {
		_, err := LoadConfig(writeConfig(t, tt.body))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("config:\n%s\nerror %v, want %q", tt.body, err, tt.want)
		}
	}
	if _, err := LoadConfig("/nonexistent/dbpilot.yaml"); err == nil {
		t.Error("missing file accepted")
	}
}

func TestConfigSecretFiles(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	os.WriteFile(tok, []byte("s3cret\n"), 0o644)
	body := minimal + "token_file: " + tok + "\n"
	if _, err := LoadConfig(writeConfig(t, body)); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("world-readable token file: %v", err)
	}
	os.Chmod(tok, 0o600)
	c, err := LoadConfig(writeConfig(t, body))
	if err != nil || c.Token != "s3cret" {
		t.Fatalf("token file: %v %q", err, c.Token)
	}
	creds := filepath.Join(dir, "admin.cnf")
	os.WriteFile(creds, []byte("[client]\nuser=admin\npassword=apw\n"), 0o600)
	c, err = LoadConfig(writeConfig(t, strings.Replace(minimal, "credentials: {user: dbpilot, password: pw}", "credentials: {file: "+creds+"}", 1)))
	if err != nil || c.Credentials.User != "admin" || c.Credentials.Password != "apw" {
		t.Fatalf("credentials file: %v %+v", err, c.Credentials)
	}
}

// Reads need the token off-loopback unless the config says otherwise, and
// such a config without a token is refused.
func TestConfigReadsNeedToken(t *testing.T) {
	t.Setenv("DBPILOT_HOME", t.TempDir())
	for _, c := range []struct {
		extra   string
		want    bool
		errPart string
	}{
		{"", false, ""},
		{"listen: '[::1]:7070'\n", false, ""},
		{"listen: localhost:7070\n", false, ""},
		{"listen: 0.0.0.0:7070\n", false, "reading the API needs a token"},
		{"listen: 0.0.0.0:7070\ntoken: t\n", true, ""},
		{"listen: 10.1.2.3:7070\nui: {read_requires_token: false}\n", false, ""},
		{"ui: {read_requires_token: true}\ntoken: t\n", true, ""},
	} {
		cfg, err := LoadConfig(writeConfig(t, minimal+c.extra))
		if c.errPart != "" {
			if err == nil || !strings.Contains(err.Error(), c.errPart) {
				t.Errorf("%q: error %v, want %q", c.extra, err, c.errPart)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.extra, err)
			continue
		}
		if got := cfg.ReadsNeedToken(); got != c.want {
			t.Errorf("%q: reads need the token = %v, want %v", c.extra, got, c.want)
		}
	}
}

func TestLoadConfigWatchdog(t *testing.T) {
	c, err := LoadConfig(writeConfig(t, minimal+`watchdog:
  rules:
    - {name: runaway, info: '(?i)^select', busy: 2s, action: kill_query, dry_run: false}
`))
	if err != nil {
		t.Fatal(err)
	}
	if r := c.WatchdogRules(); len(r) != 1 || r[0].Name != "runaway" || r[0].DryRun || c.Watchdog.Interval.D() != time.Second {
		t.Errorf("watchdog: %+v %v", r, c.Watchdog.Interval)
	}
	if c, err := LoadConfig(writeConfig(t, minimal)); err != nil || c.WatchdogRules() != nil {
		t.Errorf("default: rules %v, err %v", c.WatchdogRules(), err)
	}
	c, err = LoadConfig(writeConfig(t, minimal+"watchdog:\n  notify: false\n  rules:\n    - {builtin: replica_applier_blocked, wait: 5s}\n"))
	if err != nil || c.Watchdog.Notify == nil || *c.Watchdog.Notify || c.WatchdogRules()[0].Builtin != "replica_applier_blocked" || c.WatchdogRules()[0].Wait != 5*time.Second {
		t.Errorf("built-in rule, notify false: %+v, %v", c.Watchdog, err)
	}
	// A bad rule names the file, the line and the field.
	p := writeConfig(t, minimal+`watchdog:
  rules:
    - name: bad
      info: '(unclosed'
`)
	_, err = LoadConfig(p)
	if err == nil || !strings.Contains(err.Error(), p+":10") || !strings.Contains(err.Error(), `field "info"`) {
		t.Errorf("bad regex: %v", err)
	}
	_, err = LoadConfig(writeConfig(t, minimal+"watchdog:\n  rules:\n    - {name: x, busy: 1s, colour: red}\n"))
	if err == nil || !strings.Contains(err.Error(), `field "colour": unknown field`) || !strings.Contains(err.Error(), ":9:") {
		t.Errorf("unknown field: %v", err)
	}
	_, err = LoadConfig(writeConfig(t, minimal+"watchdog: {rulez: []}\n"))
	if err == nil || !strings.Contains(err.Error(), `unknown field "rulez"`) {
		t.Errorf("unknown watchdog field: %v", err)
	}
	rf := filepath.Join(t.TempDir(), "wd.yaml")
	os.WriteFile(rf, []byte("rules:\n  - name: y\n    busy: soon\n"), 0o600)
	_, err = LoadConfig(writeConfig(t, minimal+"watchdog: {rules_file: "+rf+"}\n"))
	if err == nil || !strings.Contains(err.Error(), rf+":3") || !strings.Contains(err.Error(), `field "busy"`) {
		t.Errorf("rules file: %v", err)
	}
	_, err = LoadConfig(writeConfig(t, minimal+"metrics: {disabled: true}\nwatchdog: {rules_file: "+rf+"}\n"))
	if err == nil {
		t.Errorf("rules file with bad rule accepted")
	}
}

func TestConfigSeedInTwoClusters(t *testing.T) {
	_, err := LoadConfig(writeConfig(t, `
credentials: {user: dbpilot, password: pw}
replication: {user: repl, password: rpw}
clusters:
  - name: a
    seeds: [127.0.0.1:3306]
  - name: b
    seeds: [127.0.0.2:3306, 127.0.0.1:3306]
`))
	if err == nil || !strings.Contains(err.Error(), `clusters[1].seeds[1]: 127.0.0.1:3306 is also a seed of cluster "a"`) {
		t.Fatalf("LoadConfig: %v", err)
	}
}

// TestConfigDurations: each timeout and period takes its default when
// omitted or 0 and refuses a negative value (and "off"), naming the setting.
func TestConfigDurations(t *testing.T) {
	tests := []struct {
		key  string // YAML path
		yaml string // the setting, as a YAML line with %s for the value
		get  func(c *Config) time.Duration
		def  time.Duration
	}{
		{"poll_interval", "poll_interval: %s", func(c *Config) time.Duration { return c.PollInterval.D() }, time.Second},
		{"detection.probe_timeout", "detection: {probe_timeout: %s}", func(c *Config) time.Duration { return c.Detection.ProbeTimeout.D() }, 400 * time.Millisecond},
		{"detection.confirm_timeout", "detection: {confirm_timeout: %s}", func(c *Config) time.Duration { return c.Detection.ConfirmTimeout.D() }, 800 * time.Millisecond},
		{"recovery.block_period", "recovery: {block_period: %s}", func(c *Config) time.Duration { return c.Recovery.BlockPeriod.D() }, 10 * time.Minute},
		{"recovery.apply_timeout", "recovery: {apply_timeout: %s}", func(c *Config) time.Duration { return c.Recovery.ApplyTimeout.D() }, 30 * time.Second},
		{"recovery.repoint_verify", "recovery: {repoint_verify: %s}", func(c *Config) time.Duration { return c.Recovery.RepointVerify.D() }, 10 * time.Second},
		{"recovery.kill_grace", "recovery: {kill_grace: %s}", func(c *Config) time.Duration { return c.Recovery.KillGrace.D() }, 100 * time.Millisecond},
		{"hooks.timeout", "hooks: {timeout: %s}", func(c *Config) time.Duration { return c.Hooks.Timeout.D() }, 30 * time.Second},
		{"forget_after", "forget_after: %s", func(c *Config) time.Duration { return c.ForgetAfter.D() }, time.Hour},
		{"alerts.webhook_timeout", "alerts: {webhook_timeout: %s}", func(c *Config) time.Duration { return c.Alerts.WebhookTimeout.D() }, 5 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			for _, v := range []string{"-10m", "-1ms", "off"} {
				_, err := LoadConfig(writeConfig(t, minimal+fmt.Sprintf(tt.yaml, v)+"\n"))
				if err == nil {
					t.Errorf("%s: %s accepted", tt.key, v)
					continue
				}
				if msg := err.Error(); !strings.Contains(msg, tt.key+": ") || strings.Contains(msg, "\n") {
					t.Errorf("%s: %s: error %q does not name the setting on one line", tt.key, v, msg)
				}
			}
			for _, v := range []string{"0s", "0"} {
				c, err := LoadConfig(writeConfig(t, minimal+fmt.Sprintf(tt.yaml, v)+"\n"))
				if err != nil {
					t.Errorf("%s: %s: %v", tt.key, v, err)
					continue
				}
				if got := tt.get(c); got != tt.def {
					t.Errorf("%s: %s gives %s, want the default %s", tt.key, v, got, tt.def)
				}
			}
		})
	}
	// A cluster's own hooks too.
	body := strings.Replace(minimal, "seeds: [127.0.0.1:3306]", "seeds: [127.0.0.1:3306]\n    hooks: {timeout: -5s}", 1)
	if _, err := LoadConfig(writeConfig(t, body)); err == nil || !strings.Contains(err.Error(), "clusters[0].hooks.timeout: -5s is not allowed") {
		t.Errorf("clusters[0].hooks.timeout -5s: %v", err)
	}
	// The reported case: block_period -10m would have turned anti-flapping off.
	_, err := LoadConfig(writeConfig(t, minimal+"recovery: {block_period: -10m}\n"))
	if err == nil || !strings.Contains(err.Error(), "recovery.block_period: -10m0s is not allowed: give a positive duration such as 10m0s") {
		t.Errorf("block_period -10m: %v", err)
	}
}

func TestConfigHTTPAllowedHosts(t *testing.T) {
	c, err := LoadConfig(writeConfig(t, minimal+"allowed_hosts: [dbpilot.example.com, \"proxy.example:8443\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	c.Coordination.Advertise = "http://serve-a.example:7070"
	if got := strings.Join(c.HTTPAllowedHosts(), " "); got != "dbpilot.example.com proxy.example:8443 serve-a.example:7070" {
		t.Errorf("HTTPAllowedHosts = %s", got)
	}
}
