package httpapi

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/dbpilot/dbpilot"
)

// Certificate is serve's HTTPS certificate and key, read from two PEM
// files and read again by Reload: each TLS handshake gets the pair loaded
// last (TLSConfig's GetCertificate), so a reload changes the certificate of
// new connections and leaves open ones (event streams included) as they are.
type Certificate struct {
	certFile, keyFile string
	now               func() time.Time
	cur               atomic.Pointer[tls.Certificate]
}

// LoadCertificate reads the certificate (with its intermediates) and key
// PEM files. A file that cannot be read, a key that does not match the
// certificate, or a certificate outside its validity is an error of one
// line naming the file.
func LoadCertificate(certFile, keyFile string) (*Certificate, error) {
	c := &Certificate{certFile: certFile, keyFile: keyFile, now: time.Now}
	if err := c.Reload(); err != nil {
		return nil, err
	}
	return c, nil
}

// Reload reads the files again. On failure the pair in use stays, and the
// error names the file.
func (c *Certificate) Reload() error {
	pair, err := loadPair(c.certFile, c.keyFile, c.now())
	if err != nil {
		return err
	}
	c.cur.Store(pair)
	return nil
}

// Leaf is the certificate in use.
func (c *Certificate) Leaf() *x509.Certificate { return c.cur.Load().Leaf }

// GetCertificate answers a handshake with the pair in use.
func (c *Certificate) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return c.cur.Load(), nil
}

// TLSConfig is a server configuration with this certificate: TLS 1.2 or
// newer, HTTP/2 and HTTP/1.1.
func (c *Certificate) TLSConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: c.GetCertificate, NextProtos: []string{"h2", "http/1.1"}}
}

// loadPair reads and checks a certificate and its key at time now.
func loadPair(certFile, keyFile string, now time.Time) (*tls.Certificate, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "certificate file %s: %s", certFile, pathError(err))
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "key file %s: %s", keyFile, pathError(err))
	}
	if b, _ := pem.Decode(certPEM); b == nil || b.Type != "CERTIFICATE" {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "certificate file %s: no PEM CERTIFICATE block in it", certFile)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "tls: ")
		if strings.Contains(msg, "does not match") {
			return nil, dbpilot.Errorf(dbpilot.EINVALID, "key file %s does not match the certificate in %s: give the key the certificate was made for", keyFile, certFile)
		}
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "key file %s (for certificate file %s): %s", keyFile, certFile, msg)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "certificate file %s: %s", certFile, err)
	}
	switch {
	case now.After(leaf.NotAfter):
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "certificate file %s: the certificate expired at %s: renew it", certFile, leaf.NotAfter.UTC().Format(time.RFC3339))
	case now.Before(leaf.NotBefore):
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "certificate file %s: the certificate is not valid before %s (check the clock)", certFile, leaf.NotBefore.UTC().Format(time.RFC3339))
	}
	pair.Leaf = leaf
	return &pair, nil
}

// pathError is a file error without the path the message names already.
func pathError(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// TrustCAFile makes the client trust the CA certificates of a PEM file for
// https:// (instead of the system's roots). An error names the file; the
// client then refuses every call with it.
func (c *Client) TrustCAFile(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		c.baseErr = dbpilot.Errorf(dbpilot.EINVALID, "CA file %s for dbpilot serve: %s", path, pathError(err))
		return c.baseErr
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		c.baseErr = dbpilot.Errorf(dbpilot.EINVALID, "CA file %s for dbpilot serve: no PEM certificate in it", path)
		return c.baseErr
	}
	t, ok := c.HTTP.Transport.(*http.Transport)
	if !ok {
		return fmt.Errorf("httpapi: the client's transport is a %T, not an *http.Transport", c.HTTP.Transport)
	}
	t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}
	return nil
}
