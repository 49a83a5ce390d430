package httpapi

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/internal/testutil"
)

func TestLoadCertificateErrors(t *testing.T) {
	dir := t.TempDir()
	ca := testutil.NewCA(t)
	good := ca.IssueValid(t, dir, "good", 2)
	other := ca.IssueValid(t, dir, "other", 3)
	expired := ca.Issue(t, dir, "expired", 4, time.Now().Add(-48*time.Hour), time.Now().Add(-time.Hour))
	future := ca.Issue(t, dir, "future", 5, time.Now().Add(time.Hour), time.Now().Add(48*time.Hour))
	notPEM := filepath.Join(dir, "garbage.crt")
	os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600)
	missing := filepath.Join(dir, "missing.crt")

	tests := []struct{ cert, key, want string }{
		{missing, good.KeyFile, "certificate file " + missing + ": no such file or directory"},
		{good.CertFile, missing, "key file " + missing + ": no such file or directory"},
		{good.CertFile, other.KeyFile, "key file " + other.KeyFile + " does not match the certificate in " + good.CertFile},
		{expired.CertFile, expired.KeyFile, "certificate file " + expired.CertFile + ": the certificate expired at "},
		{future.CertFile, future.KeyFile, "certificate file " + future.CertFile + ": the certificate is not valid before "},
		{notPEM, good.KeyFile, "certificate file " + notPEM + ": no PEM CERTIFICATE block in it"},
		{good.CertFile, notPEM, "key file " + notPEM + " (for certificate file " + good.CertFile + ")"},
	}
	for _, tt := range tests {
		_, err := LoadCertificate(tt.cert, tt.key)
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") || dbpilot.ErrorCode(err) != dbpilot.EINVALID {
			t.Errorf("LoadCertificate(%s, %s): %v\nwant one line containing %q", filepath.Base(tt.cert), filepath.Base(tt.key), err, tt.want)
		}
	}
	c, err := LoadCertificate(good.CertFile, good.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	if c.Leaf().SerialNumber.Int64() != 2 {
		t.Errorf("serial %v", c.Leaf().SerialNumber)
	}
}

// TestCertificateReload: a reload takes the files' new pair; one that
// fails keeps the pair in use.
func TestCertificateReload(t *testing.T) {
	dir := t.TempDir()
	ca := testutil.NewCA(t)
	first := ca.IssueValid(t, dir, "serve", 10)
	c, err := LoadCertificate(first.CertFile, first.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	// A new key written before its certificate: the pair does not match.
	next := ca.IssueValid(t, t.TempDir(), "serve", 11)
	testutil.CopyPEM(t, next.KeyFile, first.KeyFile)
	if err := c.Reload(); err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Errorf("reload of a mismatched pair: %v", err)
	}
	if got, _ := c.GetCertificate(nil); got.Leaf.SerialNumber.Int64() != 10 {
		t.Errorf("after a failed reload the serial is %v, want 10 (kept)", got.Leaf.SerialNumber)
	}
	testutil.CopyPEM(t, next.CertFile, first.CertFile)
	if err := c.Reload(); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.GetCertificate(nil); got.Leaf.SerialNumber.Int64() != 11 {
		t.Errorf("after the reload the serial is %v, want 11", got.Leaf.SerialNumber)
	}
}

// TestClientHTTPS: a client that trusts the test CA reads; one that does
// not is refused with an x509 error that says how to give the CA; a CA
// file that cannot be read fails every call naming it.
func TestClientHTTPS(t *testing.T) {
	ctx := context.Background()
	ca := testutil.NewCA(t)
	sc := ca.IssueValid(t, t.TempDir(), "serve", 7)
	cert, err := LoadCertificate(sc.CertFile, sc.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, testToken, "")
	// Not httptest's StartTLS: it adds its own certificate, which
	// GetCertificate would then not be asked for.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: e.srv.Config.Handler, TLSConfig: cert.TLSConfig(), ErrorLog: log.New(io.Discard, "", 0)}
	go hs.ServeTLS(ln, "", "")
	t.Cleanup(func() { hs.Close() })
	srv := struct{ URL string }{"https://" + ln.Addr().String()}

	c := NewClient(srv.URL, testToken)
	if err := c.TrustCAFile(ca.File); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Clusters(ctx); err != nil {
		t.Fatalf("with the CA: %v", err)
	}
	_, err = NewClient(srv.URL, testToken).Clusters(ctx)
	if err == nil || !strings.Contains(err.Error(), "x509: certificate signed by unknown authority") || !strings.Contains(err.Error(), "--server-ca") {
		t.Errorf("without the CA: %v, want an x509 error naming --server-ca", err)
	}
	bad := NewClient(srv.URL, testToken)
	if err := bad.TrustCAFile(sc.KeyFile); err == nil {
		t.Error("a key file taken for a CA file")
	}
	if _, err := bad.Clusters(ctx); err == nil || !strings.Contains(err.Error(), "CA file "+sc.KeyFile+" for dbpilot serve: no PEM certificate in it") {
		t.Errorf("a call with a bad CA file: %v", err)
	}
}
