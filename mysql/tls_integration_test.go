package mysql_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/internal/certs"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/sandbox"
)

// sslCipher returns the session's TLS cipher ("" in plain text).
func sslCipher(t *testing.T, db *mysql.DB) string {
	t.Helper()
	r, err := db.Query(context.Background(), "SHOW SESSION STATUS LIKE 'Ssl_cipher'")
	if err != nil {
		t.Fatal(err)
	}
	return r.NameValues()["ssl_cipher"]
}

// oneLineErr checks that err is a single line holding every part.
func oneLineErr(t *testing.T, what string, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error", what)
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") {
		t.Errorf("%s: error of several lines: %q", what, msg)
	}
	for _, p := range parts {
		if !strings.Contains(msg, p) {
			t.Errorf("%s: error %q lacks %q", what, msg, p)
		}
	}
}

// TestTLSServer connects to a sandbox with TLS certificates and
// require_secure_transport=ON: TLS works (driver and go-mysql), plain text
// is refused by the server, and a wrong CA, a certificate without the host,
// an expired server certificate and a mismatched client key each give a
// one-line error naming the server and the setting.
func TestTLSServer(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologySingle, TLS: true, RequireSecureTransport: true})
	ctx := context.Background()
	n := d.Nodes[0]
	key := n.Key()

	db, err := mysql.Open(ctx, key, d.AdminOptions())
	if err != nil {
		t.Fatalf("TLS connection: %v", err)
	}
	if c := sslCipher(t, db); c == "" {
		t.Errorf("the sandbox's connection is not TLS (Ssl_cipher empty)")
	}
	db.Close()

	w, err := mysql.DialWire(ctx, key, d.AdminOptions())
	if err != nil {
		t.Fatalf("go-mysql TLS connection: %v", err)
	}
	var cipher string
	if err := w.Query(ctx, "SHOW SESSION STATUS LIKE 'Ssl_cipher'", func(v []any) error {
		cipher = string(v[1].([]byte))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if cipher == "" {
		t.Errorf("the go-mysql connection is not TLS")
	}

	// Plain text: the server refuses (MariaDB answers access denied).
	plain := d.AdminOptions()
	plain.TLS = nil
	_, err = mysql.Open(ctx, key, plain)
	oneLineErr(t, "plain text", err, key.String(), "requires TLS")
	if dbpilot.ErrorCode(err) != dbpilot.EAUTH {
		t.Errorf("plain text: code %s, want auth (the server answered)", dbpilot.ErrorCode(err))
	}

	dir := t.TempDir()
	other, err := certs.NewCA("another CA", certs.Years(1))
	if err != nil {
		t.Fatal(err)
	}
	op, _ := other.Pair()
	otherCA := filepath.Join(dir, "other-ca.pem")
	if err := op.Write(otherCA, ""); err != nil {
		t.Fatal(err)
	}
	connect := func(s mysql.TLSSettings) error {
		tl, err := mysql.LoadTLS(s, "--ssl")
		if err != nil {
			return err
		}
		o := d.AdminOptions()
		o.TLS = tl
		db, err := mysql.Open(ctx, key, o)
		if err == nil {
			db.Close()
		}
		return err
	}
	err = connect(mysql.TLSSettings{CA: otherCA})
	oneLineErr(t, "wrong CA", err, "mysql: connect on "+key.String(), "x509: certificate signed by unknown authority", "--ssl-ca")
	// The server answered: alive (no failover over a certificate).
	if n := dbpilot.ServerErrno(err); n != mysql.ErSSLConnection {
		t.Errorf("wrong CA: errno %d, want %d (the server answered)", n, mysql.ErSSLConnection)
	}
	err = connect(mysql.TLSSettings{Mode: mysql.TLSVerifyIdentity, CA: d.TLS.CA, ServerName: "db.example.com"})
	oneLineErr(t, "name not in the certificate", err, key.String(), "db.example.com", "--ssl-server-name")
	// verify-ca does not check the name.
	if err := connect(mysql.TLSSettings{Mode: mysql.TLSVerifyCA, CA: d.TLS.CA, ServerName: "db.example.com"}); err != nil {
		t.Errorf("verify-ca with a name not in the certificate: %v", err)
	}
	err = connect(mysql.TLSSettings{CA: d.TLS.CA, Cert: d.TLS.ClientCert, Key: otherKey(t, other, dir)})
	oneLineErr(t, "mismatched key", err, "--ssl-cert "+d.TLS.ClientCert, "--ssl-key", "private key does not match public key")

	// An expired server certificate, loaded by the running server.
	ca, err := certs.LoadCA(d.TLS.CA, d.TLS.CAKey)
	if err != nil {
		t.Fatal(err)
	}
	expired, err := ca.Issue("expired", []string{"127.0.0.1", "localhost"}, true,
		certs.Validity{NotBefore: time.Now().AddDate(0, -2, 0), NotAfter: time.Now().AddDate(0, -1, 0)})
	if err != nil {
		t.Fatal(err)
	}
	cert, keyFile := d.TLS.ServerCert(n)
	if err := expired.Write(cert, keyFile); err != nil {
		t.Fatal(err)
	}
	root, err := mysql.Open(ctx, key, mysql.Options{Credentials: d.Admin, Socket: n.Socket})
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if err := root.Exec(ctx, "FLUSH SSL"); err != nil {
		t.Fatal(err)
	}
	_, err = mysql.Open(ctx, key, d.AdminOptions())
	oneLineErr(t, "expired server certificate", err, key.String(), "x509: certificate has expired", "renew the server's certificate")
}

// otherKey writes the key of a certificate the sandbox's client
// certificate does not match.
func otherKey(t *testing.T, ca *certs.CA, dir string) string {
	t.Helper()
	p, err := ca.Issue("other", nil, false, certs.Years(1))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "other-key.pem")
	if err := p.Write(filepath.Join(dir, "other.pem"), path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestTLSRequiredPlainServer: mode required against a server without TLS
// fails with a one-line error; preferred falls back to plain text.
func TestTLSRequiredPlainServer(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologySingle, Options: []string{"ssl=OFF"}})
	ctx := context.Background()
	key := d.Nodes[0].Key()
	for _, mode := range []mysql.TLSMode{mysql.TLSRequired, mysql.TLSPreferred} {
		tl, err := mysql.LoadTLS(mysql.TLSSettings{Mode: mode}, "tls")
		if err != nil {
			t.Fatal(err)
		}
		o := d.AdminOptions()
		o.TLS = tl
		db, err := mysql.Open(ctx, key, o)
		w, werr := mysql.DialWire(ctx, key, o)
		if mode == mysql.TLSRequired {
			oneLineErr(t, "required", err, key.String(), "the server does not support TLS", "tls.mode")
			oneLineErr(t, "required (go-mysql)", werr, key.String(), "the server does not support TLS", "tls.mode")
			continue
		}
		if err != nil || werr != nil {
			t.Fatalf("preferred against a plain server: %v, %v", err, werr)
		}
		if c := sslCipher(t, db); c != "" {
			t.Errorf("preferred: TLS %q on a server without it?", c)
		}
		db.Close()
		w.Close()
	}
}
