package daemon_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dbpilot/dbpilot/daemon"
	"github.com/dbpilot/dbpilot/internal/certs"
)

// TestTLSConfigErrors: bad TLS files and settings stop serve at config
// load with one line naming the key and the file.
func TestTLSConfigErrors(t *testing.T) {
	dir := t.TempDir()
	ca, err := certs.NewCA("ca", certs.Years(1))
	if err != nil {
		t.Fatal(err)
	}
	caPair, _ := ca.Pair()
	caFile := filepath.Join(dir, "ca.pem")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(caPair.Write(caFile, ""))
	client, _ := ca.Issue("c", nil, false, certs.Years(1))
	certFile, keyFile := filepath.Join(dir, "c.pem"), filepath.Join(dir, "c-key.pem")
	must(client.Write(certFile, keyFile))
	wrong, _ := ca.Issue("w", nil, false, certs.Years(1))
	wrongKey := filepath.Join(dir, "w-key.pem")
	must(wrong.Write(filepath.Join(dir, "w.pem"), wrongKey))
	base := "credentials: {user: dbpilot}\nreplication: {user: repl}\nclusters: [{name: main, seeds: [\"127.0.0.1:3306\"]}]\n"
	for _, tt := range []struct{ yaml, want string }{
		{"tls: {ca: " + filepath.Join(dir, "nope.pem") + "}\n", "tls.ca: " + filepath.Join(dir, "nope.pem") + ": no such file"},
		{"tls: {mode: on}\n", `tls.mode: "on": use disabled, preferred, required, verify-ca or verify-identity`},
		{"tls: {ca: " + caFile + ", cert: " + certFile + ", key: " + wrongKey + "}\n", "tls.cert " + certFile + " and tls.key " + wrongKey + ": tls: private key does not match public key"},
		{"replication: {user: repl, tls: {ca: /etc/mysql/ca.pem, server_name: db}}\n", "replication.tls.server_name: replicas cannot take it"},
	} {
		path := filepath.Join(dir, "serve.yaml")
		y := tt.yaml + base
		if strings.HasPrefix(tt.yaml, "replication:") {
			y = strings.Replace(base, "replication: {user: repl}\n", tt.yaml, 1)
		}
		must(os.WriteFile(path, []byte(y), 0o644))
		_, err := daemon.LoadConfig(path)
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: got %v, want one line with %q", tt.yaml, err, tt.want)
		}
	}
	// A cluster's own tls is checked too.
	y := strings.Replace(base, `seeds: ["127.0.0.1:3306"]}`, `seeds: ["127.0.0.1:3306"], tls: {ca: `+filepath.Join(dir, "gone.pem")+`}}`, 1)
	must(os.WriteFile(filepath.Join(dir, "serve.yaml"), []byte(y), 0o644))
	if _, err := daemon.LoadConfig(filepath.Join(dir, "serve.yaml")); err == nil || !strings.Contains(err.Error(), "clusters[0].tls.ca: "+filepath.Join(dir, "gone.pem")+": no such file") {
		t.Errorf("cluster tls: %v", err)
	}
	// Good files load.
	must(os.WriteFile(filepath.Join(dir, "serve.yaml"), []byte("tls: {ca: "+caFile+", cert: "+certFile+", key: "+keyFile+"}\n"+base), 0o644))
	if _, err := daemon.LoadConfig(filepath.Join(dir, "serve.yaml")); err != nil {
		t.Errorf("good TLS files: %v", err)
	}
}
