package mysql

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot"
	driver "github.com/go-sql-driver/mysql"
)

// TLSMode is how a connection uses TLS, with the mysql client's --ssl-mode
// values.
type TLSMode string

// TLS modes.
const (
	// TLSDisabled connects in plain text.
	TLSDisabled TLSMode = "disabled"
	// TLSPreferred uses TLS when the server offers it, plain text when it
	// does not; the server's certificate is not verified.
	TLSPreferred TLSMode = "preferred"
	// TLSRequired uses TLS or fails; the certificate is not verified.
	TLSRequired TLSMode = "required"
	// TLSVerifyCA uses TLS and verifies that the server's certificate is
	// signed by the CA (not its name).
	TLSVerifyCA TLSMode = "verify-ca"
	// TLSVerifyIdentity verifies the CA and that the certificate names the
	// host dbpilot connects to (or ServerName).
	TLSVerifyIdentity TLSMode = "verify-identity"
)

// TLSModes lists the modes, for messages and help texts.
const TLSModes = "disabled, preferred, required, verify-ca or verify-identity"

// TLSSettings are TLS settings as given (config file, flags, a sandbox's
// descriptor): a mode and the paths of PEM files on dbpilot's host.
type TLSSettings struct {
	// Mode: disabled, preferred, required, verify-ca or verify-identity.
	// Default: verify-identity when a CA is given, required when only a
	// client certificate is, else disabled.
	Mode TLSMode `json:"mode,omitempty" yaml:"mode"`
	// CA is the CA certificate file (PEM) that signed the servers'
	// certificates; without it the verify modes use the system's roots.
	CA string `json:"ca,omitempty" yaml:"ca"`
	// Cert and Key are a client certificate and its key (PEM), for servers
	// that require one (REQUIRE X509).
	Cert string `json:"cert,omitempty" yaml:"cert"`
	Key  string `json:"key,omitempty" yaml:"key"`
	// ServerName, for verify-identity, is the name the servers'
	// certificates must hold instead of the host dbpilot connects to.
	ServerName string `json:"server_name,omitempty" yaml:"server_name"`
}

// IsZero reports whether nothing is set.
func (s TLSSettings) IsZero() bool { return s == TLSSettings{} }

// EffectiveMode is Mode, or its default: verify-identity with a CA,
// required with a client certificate only, disabled otherwise.
func (s TLSSettings) EffectiveMode() TLSMode {
	switch {
	case s.Mode != "":
		return TLSMode(strings.ToLower(string(s.Mode)))
	case s.CA != "":
		return TLSVerifyIdentity
	case s.Cert != "":
		return TLSRequired
	}
	return TLSDisabled
}

// TLS is loaded, checked TLS settings: what a connection needs for its
// handshake. A nil *TLS is plain text.
type TLS struct {
	mode  TLSMode
	s     TLSSettings
	where string
	base  *tls.Config
}

// LoadTLS checks s and reads its files. where names the settings in
// messages: "--ssl" (flags: --ssl-ca, --ssl-mode), "tls" (config keys:
// tls.ca, tls.mode), "clusters[0].tls". It returns nil (plain text) for
// mode disabled. Errors are one line naming the setting and the file.
func LoadTLS(s TLSSettings, where string) (*TLS, error) {
	t := &TLS{mode: s.EffectiveMode(), s: s, where: where}
	switch t.mode {
	case TLSDisabled:
		return nil, nil
	case TLSPreferred, TLSRequired, TLSVerifyCA, TLSVerifyIdentity:
	default:
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "%s: %q: use %s", t.setting("mode"), s.Mode, TLSModes)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if s.CA != "" {
		pool, err := loadCA(s.CA)
		if err != nil {
			return nil, dbpilot.WrapError(dbpilot.EINVALID, err, "%s", t.setting("ca"))
		}
		cfg.RootCAs = pool
	}
	if (s.Cert == "") != (s.Key == "") {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "%s and %s: give both the client certificate and its key, or neither", t.setting("cert"), t.setting("key"))
	}
	if s.Cert != "" {
		pair, err := loadKeyPair(s.Cert, s.Key)
		if err != nil {
			return nil, dbpilot.WrapError(dbpilot.EINVALID, err, "%s %s and %s %s", t.setting("cert"), s.Cert, t.setting("key"), s.Key)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	switch t.mode {
	case TLSPreferred, TLSRequired:
		cfg.InsecureSkipVerify = true
	case TLSVerifyCA:
		// The chain, not the name: Go verifies both or neither, so the
		// chain is verified here.
		cfg.InsecureSkipVerify = true
		roots := cfg.RootCAs
		cfg.VerifyConnection = func(cs tls.ConnectionState) error { return verifyChain(cs, roots) }
	}
	t.base = cfg
	return t, nil
}

// loadCA reads a PEM file of CA certificates; it must hold at least one
// valid now (a bundle may hold expired ones beside).
func loadCA(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fileError(path, err)
	}
	pool := x509.NewCertPool()
	n := 0
	var invalid error
	for rest := b; ; {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			break
		}
		if blk.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: a certificate does not parse: %w", path, err)
		}
		if err := checkValidity(c, time.Now()); err != nil {
			invalid = err
			continue
		}
		pool.AddCert(c)
		n++
	}
	switch {
	case n == 0 && invalid != nil:
		return nil, fmt.Errorf("%s: %w", path, invalid)
	case n == 0:
		return nil, fmt.Errorf("%s holds no PEM certificate (give the CA certificate, -----BEGIN CERTIFICATE-----)", path)
	}
	return pool, nil
}

// loadKeyPair reads a client certificate and its key; they must match and
// the certificate must be valid now.
func loadKeyPair(certFile, keyFile string) (tls.Certificate, error) {
	for _, p := range []string{certFile, keyFile} {
		if _, err := os.Stat(p); err != nil {
			return tls.Certificate{}, fileError(p, err)
		}
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return pair, err
	}
	if err := checkValidity(pair.Leaf, time.Now()); err != nil {
		return pair, fmt.Errorf("%s: %w", certFile, err)
	}
	return pair, nil
}

func fileError(path string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: no such file", path)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%s: permission denied", path)
	}
	return err
}

// checkValidity reports a certificate outside its validity period.
func checkValidity(c *x509.Certificate, now time.Time) error {
	if c == nil {
		return nil
	}
	switch {
	case now.After(c.NotAfter):
		return fmt.Errorf("certificate %q expired on %s", c.Subject.CommonName, c.NotAfter.UTC().Format(time.RFC3339))
	case now.Before(c.NotBefore):
		return fmt.Errorf("certificate %q is not valid before %s", c.Subject.CommonName, c.NotBefore.UTC().Format(time.RFC3339))
	}
	return nil
}

// verifyChain verifies the server's chain against roots (nil: the
// system's), without its name (verify-ca).
func verifyChain(cs tls.ConnectionState, roots *x509.CertPool) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("tls: the server sent no certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
	if err != nil {
		return &tls.CertificateVerificationError{UnverifiedCertificates: cs.PeerCertificates, Err: err}
	}
	return nil
}

// Mode returns the mode; a nil *TLS is disabled.
func (t *TLS) Mode() TLSMode {
	if t == nil {
		return TLSDisabled
	}
	return t.mode
}

// Settings returns the settings t was loaded from.
func (t *TLS) Settings() TLSSettings {
	if t == nil {
		return TLSSettings{Mode: TLSDisabled}
	}
	return t.s
}

// Config returns the crypto/tls configuration of a connection to host
// (nil for a nil t): a copy, with the name verify-identity checks.
func (t *TLS) Config(host string) *tls.Config {
	if t == nil {
		return nil
	}
	c := t.base.Clone()
	c.ServerName = host
	if t.s.ServerName != "" {
		c.ServerName = t.s.ServerName
	}
	return c
}

// setting names one of the settings: --ssl-ca, tls.ca.
func (t *TLS) setting(field string) string {
	if t == nil || t.where == "" {
		return "tls " + field
	}
	if strings.HasPrefix(t.where, "--") {
		return t.where + "-" + strings.ReplaceAll(field, "_", "-")
	}
	return t.where + "." + field
}

// Describe names the settings for messages: "TLS verify-identity, --ssl-ca
// /etc/ca.pem".
func (t *TLS) Describe() string {
	if t == nil {
		return "TLS disabled"
	}
	out := fmt.Sprintf("%s %s", t.setting("mode"), t.mode)
	if t.s.CA != "" {
		out += fmt.Sprintf(", %s %s", t.setting("ca"), t.s.CA)
	}
	return out
}

// secureTransportErrors are the server errors of a plain-text connection
// to a server with require_secure_transport=ON.
const (
	erSecureTransportMariaDB = 4036
	erSecureTransportMySQL   = 3159
)

// classifyTLS returns err as a one-line dbpilot error when it is a TLS
// failure (nil otherwise): the server, the reason and the setting to
// check. t is the connection's TLS (nil: plain text or unknown).
func classifyTLS(err error, key dbpilot.InstanceKey, t *TLS, op string) error {
	var (
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		verify   *tls.CertificateVerificationError
		alert    tls.AlertError
		record   tls.RecordHeaderError
		me       *driver.MySQLError
	)
	var (
		cause  error = err
		detail string
		code   = dbpilot.EUNAVAIL
	)
	switch {
	case errors.As(err, &unknown):
		hint := fmt.Sprintf("no %s given and the system's roots do not know the server's CA: give %s", t.setting("ca"), t.setting("ca"))
		if ca := t.Settings().CA; ca != "" {
			hint = fmt.Sprintf("is %s %s the CA that signed the server's certificate?", t.setting("ca"), ca)
		}
		cause, detail = unknown, fmt.Sprintf("TLS: %v (%s)", unknown, hint)
	case errors.As(err, &hostname):
		cause, detail = hostname, fmt.Sprintf("TLS: %v (%s verify-identity: use a server certificate that names the host, or set %s)", hostname, t.setting("mode"), t.setting("server_name"))
	case errors.As(err, &invalid):
		cause, detail = invalid, fmt.Sprintf("TLS: %v (renew the server's certificate; %s)", invalid, t.Describe())
	case errors.As(err, &verify):
		cause, detail = verify.Err, fmt.Sprintf("TLS: %v (%s)", verify.Err, t.Describe())
	case errors.Is(err, driver.ErrNoTLS) || strings.Contains(err.Error(), "does not support TLS"):
		cause, detail = driver.ErrNoTLS, fmt.Sprintf("the server does not support TLS and %s %s requires it (configure ssl_cert and ssl_key on the server, or set %s preferred)", t.setting("mode"), t.Mode(), t.setting("mode"))
	case errors.As(err, &alert) || errors.As(err, &record):
		detail = fmt.Sprintf("TLS handshake: %s (%s)", lastError(err), t.Describe())
	case errors.As(err, &me) && (me.Number == erSecureTransportMariaDB || me.Number == erSecureTransportMySQL):
		e := dbpilot.WrapError(dbpilot.EAUTH, &detailError{msg: "the server requires TLS (require_secure_transport=ON): connect with TLS (--ssl-mode and --ssl-ca; serve: tls.mode and tls.ca)", err: err}, "mysql: %s on %s", op, key)
		e.Errno = me.Number
		return e
	default:
		return nil
	}
	e := dbpilot.WrapError(code, &detailError{msg: detail, err: cause}, "mysql: %s on %s", op, key)
	// The server greeted dbpilot and spoke TLS (or said it has none): it
	// is alive, whatever its certificate. An answer is proof of life, so
	// that an expired certificate on a primary is no reason to fail over.
	e.Errno = ErSSLConnection
	return e
}

// ErSSLConnection is the client's CR_SSL_CONNECTION_ERROR, the Errno of a
// TLS failure with a server that answered (see dbpilot.Error).
const ErSSLConnection = 2026

// detailError is an error told in dbpilot's words, keeping its cause for
// errors.Is and errors.As.
type detailError struct {
	msg string
	err error
}

func (e *detailError) Error() string { return e.msg }
func (e *detailError) Unwrap() error { return e.err }

// lastError is the innermost message of err ("remote error: tls: ...").
func lastError(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, "tls: "); i >= 0 {
		if j := strings.LastIndex(msg[:i], "remote error: "); j >= 0 {
			return msg[j:]
		}
		return msg[i:]
	}
	return msg
}
