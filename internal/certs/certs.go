// Package certs issues the X.509 certificates of TLS sandboxes and tests:
// a CA, server certificates for host names and addresses, client
// certificates, written as PEM files (keys mode 0600).
package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"time"
)

// CA is a certificate authority: its certificate and key.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer
}

// Validity is a certificate's validity period.
type Validity struct{ NotBefore, NotAfter time.Time }

// Years is the period from an hour ago to n years from now.
func Years(n int) Validity {
	now := time.Now()
	return Validity{NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(n, 0, 0)}
}

func serial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
}

// NewCA creates a self-signed CA named cn.
func NewCA(cn string, v Validity) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("certs: generate CA key: %w", err)
	}
	sn, err := serial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{CommonName: cn, Organization: []string{"dbpilot"}},
		NotBefore:             v.NotBefore,
		NotAfter:              v.NotAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("certs: create CA certificate: %w", err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: c, Key: key}, nil
}

// Pair is an issued certificate and its key, PEM-encoded.
type Pair struct{ CertPEM, KeyPEM []byte }

// Issue signs a certificate for cn: a server certificate naming hosts
// (DNS names and IP addresses) when server is true, a client certificate
// otherwise.
func (ca *CA) Issue(cn string, hosts []string, server bool, v Validity) (Pair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Pair{}, fmt.Errorf("certs: generate key: %w", err)
	}
	sn, err := serial()
	if err != nil {
		return Pair{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: sn,
		Subject:      pkix.Name{CommonName: cn, Organization: []string{"dbpilot"}},
		NotBefore:    v.NotBefore,
		NotAfter:     v.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return Pair{}, fmt.Errorf("certs: sign certificate %s: %w", cn, err)
	}
	return encode(der, key)
}

// Pair returns the CA's own certificate and key, PEM-encoded.
func (ca *CA) Pair() (Pair, error) { return encode(ca.Cert.Raw, ca.Key) }

func encode(der []byte, key crypto.Signer) (Pair, error) {
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return Pair{}, fmt.Errorf("certs: encode key: %w", err)
	}
	return Pair{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}),
	}, nil
}

// Write writes the certificate to certFile (mode 0644) and the key to
// keyFile (mode 0600); an empty keyFile writes no key.
func (p Pair) Write(certFile, keyFile string) error {
	if err := os.WriteFile(certFile, p.CertPEM, 0o644); err != nil {
		return fmt.Errorf("certs: write %s: %w", certFile, err)
	}
	if keyFile == "" {
		return nil
	}
	if err := os.WriteFile(keyFile, p.KeyPEM, 0o600); err != nil {
		return fmt.Errorf("certs: write %s: %w", keyFile, err)
	}
	// WriteFile keeps the mode of a file that existed.
	if err := os.Chmod(keyFile, 0o600); err != nil {
		return fmt.Errorf("certs: chmod %s: %w", keyFile, err)
	}
	return nil
}

// LoadCA reads a CA's certificate and key (PEM, as Pair.Write wrote them).
func LoadCA(certFile, keyFile string) (*CA, error) {
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("certs: load CA %s: %w", certFile, err)
	}
	key, ok := pair.PrivateKey.(crypto.Signer)
	if !ok || pair.Leaf == nil {
		return nil, fmt.Errorf("certs: load CA %s: unusable key", certFile)
	}
	return &CA{Cert: pair.Leaf, Key: key}, nil
}
