package daemon

import (
	"errors"
	"fmt"
	"net/url"
	"time"
)

// remoteChecks are the remote-write adapter's URL and header checks and
// its defaults, which metrics.remote_write and metrics.query_url are
// validated against. wire.go gives them (remoteWriteChecks), so that only
// it imports the adapter.
type remoteChecks struct {
	parseURL    func(string) (*url.URL, error)
	redacted    func(*url.URL) string
	checkHeader func(name string) error

	timeout           time.Duration
	capacity          int
	maxSamplesPerSend int
	batchSendDeadline time.Duration
	minBackoff        time.Duration
	maxBackoff        time.Duration
}

// RemoteWriteConfig is one Prometheus remote-write receiver every sample
// is sent to (metrics.remote_write).
type RemoteWriteConfig struct {
	// URL is the receiver's endpoint: Prometheus'
	// http://HOST:9090/api/v1/write (run with
	// --web.enable-remote-write-receiver), VictoriaMetrics'
	// http://HOST:8428/api/v1/write.
	URL string `yaml:"url"`
	// Headers are sent with every request (e.g. X-Scope-OrgID); their
	// values are never logged.
	Headers map[string]string `yaml:"headers"`
	// BasicAuth, or BearerToken (or BearerTokenFile, mode 0600),
	// authenticates the requests.
	BasicAuth *BasicAuthConfig `yaml:"basic_auth"`
	// BearerToken is sent as "Authorization: Bearer" (instead of
	// basic_auth).
	BearerToken string `yaml:"bearer_token"`
	// BearerTokenFile holds the bearer token instead (mode 0600).
	BearerTokenFile string `yaml:"bearer_token_file"`
	// Timeout bounds one request (default 10s).
	Timeout Duration `yaml:"timeout"`
	// Queue is the receiver's in-memory queue and batching.
	Queue QueueConfig `yaml:"queue"`
}

// BasicAuthConfig is a user and a password, or a file holding the password
// (mode 0600).
type BasicAuthConfig struct {
	// Username is the basic-auth user.
	Username string `yaml:"username"`
	// Password is the basic-auth password (prefer password_file).
	Password string `yaml:"password"`
	// PasswordFile holds the password instead (mode 0600).
	PasswordFile string `yaml:"password_file"`
}

// QueueConfig is a remote-write target's in-memory queue and batching.
type QueueConfig struct {
	// Capacity is the queue's size in samples (default 500000, about 12 MB);
	// when the receiver is down longer than the queue lasts, the oldest
	// samples are dropped and counted.
	Capacity *int `yaml:"capacity"`
	// MaxSamplesPerSend caps a request (default 2000).
	MaxSamplesPerSend *int `yaml:"max_samples_per_send"`
	// BatchSendDeadline is how long a partial batch waits (default 1s).
	BatchSendDeadline Duration `yaml:"batch_send_deadline"`
	// MinBackoff is the first wait before a failed request is retried
	// (default 30ms, doubled after each failure up to max_backoff).
	MinBackoff Duration `yaml:"min_backoff"`
	// MaxBackoff is the longest wait between retries (default 5s).
	MaxBackoff Duration `yaml:"max_backoff"`
}

// LocalStore tells whether samples are kept in the embedded time-series
// store (metrics.local, default true).
func (m *MetricsConfig) LocalStore() bool { return m.Local == nil || *m.Local }

// errNoQuerier is why a serve without a local store cannot answer queries.
var errNoQuerier = errors.New("metrics.local is false and metrics.query_url is not set")

// validateRemote checks local, remote_write and query_url, applies their
// defaults and reads their secret files.
func (m *MetricsConfig) validateRemote() error {
	if !m.LocalStore() && len(m.RemoteWrite) == 0 {
		return errors.New("metrics.local: false keeps no samples in serve: configure at least one metrics.remote_write target, or remove local: false")
	}
	if m.QueryURL != "" {
		if m.LocalStore() {
			return errors.New("metrics.query_url: used only with metrics.local: false (serve answers queries from its own store otherwise)")
		}
		if _, err := remoteWriteChecks.parseURL(m.QueryURL); err != nil {
			return fmt.Errorf("metrics.query_url: %v", err)
		}
	}
	seen := map[string]int{}
	for i := range m.RemoteWrite {
		where := fmt.Sprintf("metrics.remote_write[%d]", i)
		if err := m.RemoteWrite[i].validate(where); err != nil {
			return err
		}
		u, _ := remoteWriteChecks.parseURL(m.RemoteWrite[i].URL)
		if j, dup := seen[remoteWriteChecks.redacted(u)]; dup {
			return fmt.Errorf("%s.url: %s is also metrics.remote_write[%d]", where, remoteWriteChecks.redacted(u), j)
		}
		seen[remoteWriteChecks.redacted(u)] = i
	}
	return nil
}

func (r *RemoteWriteConfig) validate(where string) error {
	if r.URL == "" {
		return fmt.Errorf("%s.url: required (e.g. http://127.0.0.1:8428/api/v1/write)", where)
	}
	u, err := remoteWriteChecks.parseURL(r.URL)
	if err != nil {
		return fmt.Errorf("%s.url: %v", where, err)
	}
	for name := range r.Headers {
		if err := remoteWriteChecks.checkHeader(name); err != nil {
			return fmt.Errorf("%s.headers: %v", where, err)
		}
	}
	if r.BearerTokenFile != "" {
		if r.BearerToken != "" {
			return fmt.Errorf("%s: bearer_token and bearer_token_file: give one, not both", where)
		}
		tok, err := readSecretFile(expandHome(r.BearerTokenFile))
		if err != nil {
			return fmt.Errorf("%s.bearer_token_file: %w", where, err)
		}
		r.BearerToken = tok
	}
	if a := r.BasicAuth; a != nil {
		if r.BearerToken != "" {
			return fmt.Errorf("%s: basic_auth and bearer_token: give one, not both", where)
		}
		if u.User != nil {
			return fmt.Errorf("%s: basic_auth and a user in the url: give one, not both", where)
		}
		if a.Username == "" {
			return fmt.Errorf("%s.basic_auth.username: required", where)
		}
		if a.PasswordFile != "" {
			if a.Password != "" {
				return fmt.Errorf("%s.basic_auth: password and password_file: give one, not both", where)
			}
			pw, err := readSecretFile(expandHome(a.PasswordFile))
			if err != nil {
				return fmt.Errorf("%s.basic_auth.password_file: %w", where, err)
			}
			a.Password = pw
		}
	}
	if u.User != nil && r.BearerToken != "" {
		return fmt.Errorf("%s: bearer_token and a user in the url: give one, not both", where)
	}
	if err := positive(&r.Timeout, remoteWriteChecks.timeout, where+".timeout"); err != nil {
		return err
	}
	q := &r.Queue
	for _, f := range []struct {
		v    **int
		def  int
		name string
	}{
		{&q.Capacity, remoteWriteChecks.capacity, "capacity"},
		{&q.MaxSamplesPerSend, remoteWriteChecks.maxSamplesPerSend, "max_samples_per_send"},
	} {
		if *f.v == nil {
			*f.v = &f.def
			continue
		}
		if **f.v <= 0 {
			return fmt.Errorf("%s.queue.%s: %d is not a positive number of samples (default %d)", where, f.name, **f.v, f.def)
		}
	}
	if err := positive(&q.BatchSendDeadline, remoteWriteChecks.batchSendDeadline, where+".queue.batch_send_deadline"); err != nil {
		return err
	}
	if err := positive(&q.MinBackoff, remoteWriteChecks.minBackoff, where+".queue.min_backoff"); err != nil {
		return err
	}
	if err := positive(&q.MaxBackoff, remoteWriteChecks.maxBackoff, where+".queue.max_backoff"); err != nil {
		return err
	}
	if q.MaxBackoff < q.MinBackoff {
		return fmt.Errorf("%s.queue.max_backoff: %s is below min_backoff %s", where, q.MaxBackoff.D(), q.MinBackoff.D())
	}
	return nil
}

// positive applies a default to an unset duration and refuses "off" and
// negative ones.
func positive(d *Duration, def time.Duration, where string) error {
	if *d == 0 {
		*d = Duration(def)
	}
	if *d < 0 {
		return fmt.Errorf("%s: must be a positive duration like 500ms or 10s", where)
	}
	return nil
}
