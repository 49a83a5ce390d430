package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/sandbox"
)

// TestTLSCommands runs commands against a replication sandbox deployed
// with --tls --require-secure-transport: topology and inspect reach it over
// TLS with --sandbox and with --ssl-* flags, plain text is refused by the
// servers, replication runs with MASTER_SSL, binlog stream reads over TLS,
// and bad TLS files are one-line errors (exit 2) before any connection.
func TestTLSCommands(t *testing.T) {
	testutil.RequireServer(t)
	home := testutil.Home(t)
	t.Cleanup(func() { sandbox.Destroy("tls1") })
	code, out, errOut := runCLI(t, "sandbox", "deploy", "tls1", "--nodes", "2", "--tls", "--require-secure-transport")
	if code != 0 {
		t.Fatalf("deploy: exit %d\n%s\n%s", code, out, errOut)
	}
	d, err := sandbox.Load("tls1")
	if err != nil {
		t.Fatal(err)
	}
	if d.TLS == nil || !d.TLS.RequireSecureTransport {
		t.Fatalf("descriptor without TLS: %+v", d.TLS)
	}
	for _, f := range []string{d.TLS.CAKey, d.TLS.ClientKey} {
		if st, err := os.Stat(f); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("key %s: %v, mode %v (want 0600)", f, err, st.Mode().Perm())
		}
	}
	code, out, errOut = runCLI(t, "topology", "--sandbox", "tls1")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 2 || !strings.Contains(lines[1], "ok") {
		t.Fatalf("topology over TLS: exit %d\n%s\n%s", code, out, errOut)
	}
	n1, n2 := d.Nodes[0].Key().String(), d.Nodes[1].Key().String()
	creds := []string{"-u", d.Admin.User, "-p", d.Admin.Password}
	flags := append([]string{"inspect", n1, "--ssl-ca", d.TLS.CA, "--ssl-cert", d.TLS.ClientCert, "--ssl-key", d.TLS.ClientKey}, creds...)
	if code, out, errOut = runCLI(t, flags...); code != 0 || !strings.Contains(out, "replicas:          "+n2) {
		t.Fatalf("inspect with --ssl-ca: exit %d\n%s\n%s", code, out, errOut)
	}
	// Plain text: the server refuses it.
	code, _, errOut = runCLI(t, append([]string{"inspect", n1}, creds...)...)
	if code != exitError || !strings.Contains(errOut, "access denied") || !strings.Contains(errOut, "requires TLS") {
		t.Errorf("plain text to require_secure_transport: exit %d, %s", code, errOut)
	}
	code, _, errOut = runCLI(t, "inspect", "--sandbox", "tls1", "--ssl-mode", "disabled")
	if code != exitError || !strings.Contains(errOut, "access denied") {
		t.Errorf("--sandbox --ssl-mode disabled: exit %d, %s", code, errOut)
	}

	// Replication between the nodes uses TLS.
	db, err := mysql.Open(context.Background(), d.Nodes[1].Key(), d.AdminOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r, err := db.Query(context.Background(), "SHOW SLAVE STATUS")
	if err != nil || len(r.Values) != 1 {
		t.Fatalf("SHOW SLAVE STATUS: %v", err)
	}
	st := r.Maps()[0]
	if st["Master_SSL_Allowed"] != "Yes" || st["Master_SSL_Verify_Server_Cert"] != "Yes" || st["Master_SSL_CA_File"] != d.TLS.CA || st["Slave_IO_Running"] != "Yes" {
		t.Errorf("replication without TLS: SSL %s, verify %s, CA %q, IO %s", st["Master_SSL_Allowed"], st["Master_SSL_Verify_Server_Cert"], st["Master_SSL_CA_File"], st["Slave_IO_Running"])
	}

	// binlog stream (go-mysql's client) over TLS.
	src, err := mysql.Open(context.Background(), d.Nodes[0].Key(), d.AdminOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if err := src.Exec(context.Background(), "CREATE DATABASE tl", "CREATE TABLE tl.t (id INT PRIMARY KEY)", "INSERT INTO tl.t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	arch := filepath.Join(t.TempDir(), "arch")
	code, out, errOut = runBinlogCLI(t, "binlog", "stream", "--sandbox", "tls1", "--node", "1", "--out", arch, "--stop-at-end", "-q")
	if code != exitOK || !strings.Contains(out, "archived") {
		t.Fatalf("binlog stream over TLS: exit %d\n%s%s", code, out, errOut)
	}

	// Bad files: one line, exit 2, naming the flag and the file.
	empty := filepath.Join(home, "empty.pem")
	os.WriteFile(empty, []byte("nothing\n"), 0o644)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--ssl-ca", filepath.Join(home, "missing.pem")}, "--ssl-ca: " + filepath.Join(home, "missing.pem") + ": no such file"},
		{[]string{"--ssl-ca", empty}, "--ssl-ca: " + empty + " holds no PEM certificate"},
		{[]string{"--ssl-cert", d.TLS.ClientCert, "--ssl-key", d.TLS.CAKey}, "private key does not match public key"},
		{[]string{"--ssl-mode", "always"}, `--ssl-mode: "always": use disabled`},
	} {
		code, out, errOut := runCLI(t, append([]string{"inspect", "--sandbox", "tls1"}, tt.args...)...)
		if code != exitError || !strings.Contains(errOut, tt.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want one line with %q", tt.args, code, out, errOut, tt.want)
		}
	}
}
