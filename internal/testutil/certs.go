package testutil

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a certificate authority made for a test (crypto/x509, ECDSA P-256),
// to issue server certificates for 127.0.0.1, ::1 and localhost.
type CA struct {
	Cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// File is the CA certificate in PEM, for clients to trust.
	File string
}

// NewCA makes a CA valid from an hour ago for a day, its PEM in a
// temporary directory.
func NewCA(t testing.TB) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "dbpilot test CA " + t.Name()},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	ca := &CA{Cert: cert, key: key, File: filepath.Join(t.TempDir(), "ca.pem")}
	writePEM(t, ca.File, "CERTIFICATE", der)
	return ca
}

// ServerCert is a certificate the CA issued and its key, as PEM files.
type ServerCert struct {
	Leaf              *x509.Certificate
	CertFile, KeyFile string
}

// Issue makes a server certificate for 127.0.0.1, ::1 and localhost with
// serial, valid from notBefore to notAfter, written (certificate, then its
// key, mode 0600) into dir as NAME.crt and NAME.key.
func (ca *CA) Issue(t testing.TB, dir, name string, serial int64, notBefore, notAfter time.Time) *ServerCert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: "dbpilot serve " + name},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	s := &ServerCert{Leaf: leaf, CertFile: filepath.Join(dir, name+".crt"), KeyFile: filepath.Join(dir, name+".key")}
	writePEM(t, s.CertFile, "CERTIFICATE", der)
	writePEM(t, s.KeyFile, "PRIVATE KEY", keyDER)
	return s
}

// IssueValid is Issue valid from an hour ago for a day.
func (ca *CA) IssueValid(t testing.TB, dir, name string, serial int64) *ServerCert {
	t.Helper()
	return ca.Issue(t, dir, name, serial, time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour))
}

// writePEM is in tlsfiles.go.

// CopyPEM copies a PEM file over another (mode 0600): a certificate or key
// renewed in place, as an administrator replaces the files before a reload.
func CopyPEM(t testing.TB, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
