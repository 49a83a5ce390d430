package daemon

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"
)

// CoordinationConfig lets several serves watch the same clusters with one
// leader per cluster. Without etcd, serve acts alone.
type CoordinationConfig struct {
	// Etcd is the etcd cluster the serves coordinate through (omitted:
	// serve acts alone).
	Etcd *EtcdConfig `yaml:"etcd"`
	// ID is this serve's member id, unique among the serves (serve --id
	// overrides it); default: the host name and the listen port.
	ID string `yaml:"id"`
	// Advertise is the API address other serves forward writes to and
	// ask for the status and metrics of what this serve observes (default
	// http://LISTEN).
	Advertise string `yaml:"advertise"`
}

// EtcdConfig is the etcd cluster the serves coordinate through.
type EtcdConfig struct {
	// Endpoints are etcd's client URLs (http(s)://HOST:PORT or
	// HOST:PORT; at least one).
	Endpoints []string `yaml:"endpoints"`
	// Prefix is where dbpilot's keys live in etcd (default /dbpilot).
	Prefix string `yaml:"prefix"`
	// LeaseTTL is the leadership lease, whole seconds in 2s..1m (default
	// 5s): a leader that stops renewing it is replaced after this long.
	LeaseTTL Duration `yaml:"lease_ttl"`
	// DialTimeout bounds connecting (default 2s).
	DialTimeout Duration `yaml:"dial_timeout"`
	// RequestTimeout bounds each request (default 1s; below lease_ttl).
	RequestTimeout Duration `yaml:"request_timeout"`
	// Username authenticates to etcd.
	Username string `yaml:"username"`
	// Password authenticates to etcd (prefer password_file, or
	// $DBPILOT_ETCD_PASSWORD).
	Password string `yaml:"password"`
	// PasswordFile holds the password instead (mode 0600).
	PasswordFile string `yaml:"password_file"`
	// CAFile verifies etcd's certificate (TLS).
	CAFile string `yaml:"ca_file"`
	// CertFile and KeyFile are a client certificate and its key (TLS;
	// give both).
	CertFile string `yaml:"cert_file"`
	// KeyFile is the client certificate's key (with cert_file).
	KeyFile string `yaml:"key_file"`
	// InsecureSkipVerify accepts any server certificate (tests only).
	InsecureSkipVerify bool `yaml:"insecure_skip_verify"`
}

// Coordinated reports whether serves coordinate through etcd.
func (c *Config) Coordinated() bool { return c.Coordination.Etcd != nil }

func (c *CoordinationConfig) validate() error {
	if c.Etcd == nil {
		if c.ID != "" || c.Advertise != "" {
			return errors.New("coordination: id and advertise need coordination.etcd")
		}
		return nil
	}
	e := c.Etcd
	if len(e.Endpoints) == 0 {
		return errors.New("coordination.etcd.endpoints: at least one endpoint (e.g. http://127.0.0.1:2379)")
	}
	for _, ep := range e.Endpoints {
		u, err := url.Parse(ep)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			if _, _, herr := net.SplitHostPort(ep); herr != nil {
				return fmt.Errorf("coordination.etcd.endpoints: %q is neither http(s)://HOST:PORT nor HOST:PORT", ep)
			}
		}
	}
	if e.Prefix == "" {
		e.Prefix = "/dbpilot"
	}
	if !strings.HasPrefix(e.Prefix, "/") {
		return fmt.Errorf("coordination.etcd.prefix: %q must start with /", e.Prefix)
	}
	if e.LeaseTTL == 0 {
		e.LeaseTTL = Duration(5 * time.Second)
	}
	if e.LeaseTTL.D() < 2*time.Second || e.LeaseTTL.D() > time.Minute {
		return fmt.Errorf("coordination.etcd.lease_ttl: %s is outside 2s..1m", e.LeaseTTL.D())
	}
	if e.LeaseTTL.D()%time.Second != 0 {
		return fmt.Errorf("coordination.etcd.lease_ttl: %s: etcd leases are whole seconds", e.LeaseTTL.D())
	}
	if e.DialTimeout == 0 {
		e.DialTimeout = Duration(2 * time.Second)
	}
	if e.RequestTimeout == 0 {
		e.RequestTimeout = Duration(time.Second)
	}
	if e.RequestTimeout.D() >= e.LeaseTTL.D() {
		return fmt.Errorf("coordination.etcd.request_timeout: %s must be below lease_ttl %s", e.RequestTimeout.D(), e.LeaseTTL.D())
	}
	if e.PasswordFile != "" {
		if e.Password != "" {
			return errors.New("coordination.etcd: password and password_file: give one, not both")
		}
		pw, err := readSecretFile(expandHome(e.PasswordFile))
		if err != nil {
			return fmt.Errorf("coordination.etcd.password_file: %w", err)
		}
		e.Password = pw
	}
	if e.Password == "" {
		e.Password = os.Getenv("DBPILOT_ETCD_PASSWORD")
	}
	if e.Password != "" && e.Username == "" {
		return errors.New("coordination.etcd: a password without a username")
	}
	if (e.CertFile == "") != (e.KeyFile == "") {
		return errors.New("coordination.etcd: cert_file and key_file go together")
	}
	if err := ValidMemberID(c.ID); c.ID != "" && err != nil {
		return fmt.Errorf("coordination.id: %w", err)
	}
	if c.Advertise != "" {
		if u, err := url.Parse(c.Advertise); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("coordination.advertise: %q is not an http(s) URL", c.Advertise)
		}
	}
	return nil
}

// ValidMemberID checks a member id (coordination.id, serve --id).
func ValidMemberID(id string) error {
	if id == "" || strings.ContainsAny(id, "/ \t\n") || len(id) > 128 {
		return fmt.Errorf("%q: 1 to 128 characters, no slash or space", id)
	}
	return nil
}

// MemberID is this serve's member id: coordination.id, or the host name
// and the listen port.
func (c *Config) MemberID() string {
	if c.Coordination.ID != "" {
		return c.Coordination.ID
	}
	host, _ := os.Hostname()
	_, port, _ := net.SplitHostPort(c.Listen)
	return host + ":" + port
}

// AdvertiseURL is the API address other serves forward writes to.
func (c *Config) AdvertiseURL() string {
	if c.Coordination.Advertise != "" {
		return c.Coordination.Advertise
	}
	return "http://" + c.Listen
}
