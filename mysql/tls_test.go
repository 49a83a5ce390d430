package mysql

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/internal/certs"
)

// tlsFiles writes a CA, a client pair, an expired client pair, a key of
// another pair and a file without certificates into a temporary directory.
type tlsFiles struct {
	dir, ca, cert, key, otherKey, expiredCert, expiredKey, expiredCA, empty string
}

func writeTLSFiles(t *testing.T) tlsFiles {
	t.Helper()
	dir := t.TempDir()
	f := tlsFiles{dir: dir}
	p := func(name string) string { return filepath.Join(dir, name) }
	ca, err := certs.NewCA("test CA", certs.Years(1))
	if err != nil {
		t.Fatal(err)
	}
	caPair, _ := ca.Pair()
	f.ca = p("ca.pem")
	must(t, caPair.Write(f.ca, ""))
	client, err := ca.Issue("dbpilot", nil, false, certs.Years(1))
	if err != nil {
		t.Fatal(err)
	}
	f.cert, f.key = p("client.pem"), p("client-key.pem")
	must(t, client.Write(f.cert, f.key))
	other, _ := ca.Issue("other", nil, false, certs.Years(1))
	f.otherKey = p("other-key.pem")
	must(t, os.WriteFile(f.otherKey, other.KeyPEM, 0o600))
	past := certs.Validity{NotBefore: time.Now().AddDate(-2, 0, 0), NotAfter: time.Now().AddDate(-1, 0, 0)}
	expired, _ := ca.Issue("old", nil, false, past)
	f.expiredCert, f.expiredKey = p("old.pem"), p("old-key.pem")
	must(t, expired.Write(f.expiredCert, f.expiredKey))
	oldCA, _ := certs.NewCA("old CA", past)
	oldPair, _ := oldCA.Pair()
	f.expiredCA = p("old-ca.pem")
	must(t, oldPair.Write(f.expiredCA, ""))
	f.empty = p("empty.pem")
	must(t, os.WriteFile(f.empty, []byte("not a certificate\n"), 0o644))
	return f
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestLoadTLS(t *testing.T) {
	f := writeTLSFiles(t)
	ok := []struct {
		name string
		s    TLSSettings
		mode TLSMode
	}{
		{"nothing", TLSSettings{}, TLSDisabled},
		{"ca gives verify-identity", TLSSettings{CA: f.ca}, TLSVerifyIdentity},
		{"cert alone gives required", TLSSettings{Cert: f.cert, Key: f.key}, TLSRequired},
		{"mode in capitals", TLSSettings{Mode: "VERIFY-CA", CA: f.ca}, TLSVerifyCA},
		{"preferred without files", TLSSettings{Mode: TLSPreferred}, TLSPreferred},
	}
	for _, tt := range ok {
		got, err := LoadTLS(tt.s, "tls")
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if got.Mode() != tt.mode {
			t.Errorf("%s: mode %s, want %s", tt.name, got.Mode(), tt.mode)
		}
		if (got == nil) != (tt.mode == TLSDisabled) {
			t.Errorf("%s: TLS %v for mode %s", tt.name, got, tt.mode)
		}
	}
	c, err := LoadTLS(TLSSettings{CA: f.ca, ServerName: "db.example"}, "tls")
	must(t, err)
	if cfg := c.Config("127.0.0.1"); cfg.ServerName != "db.example" || cfg.InsecureSkipVerify || cfg.RootCAs == nil {
		t.Errorf("verify-identity with server_name: ServerName %q, InsecureSkipVerify %v", cfg.ServerName, cfg.InsecureSkipVerify)
	}
	c, err = LoadTLS(TLSSettings{Mode: TLSVerifyCA, CA: f.ca}, "tls")
	must(t, err)
	if cfg := c.Config("127.0.0.1"); !cfg.InsecureSkipVerify || cfg.VerifyConnection == nil {
		t.Errorf("verify-ca: the chain must be verified by VerifyConnection, not by name")
	}

	bad := []struct {
		name  string
		s     TLSSettings
		where string
		want  string
	}{
		{"bad mode", TLSSettings{Mode: "on"}, "tls", `tls.mode: "on": use disabled, preferred, required, verify-ca or verify-identity`},
		{"missing CA", TLSSettings{CA: filepath.Join(f.dir, "nope.pem")}, "--ssl", "--ssl-ca: " + filepath.Join(f.dir, "nope.pem") + ": no such file"},
		{"CA without certificate", TLSSettings{CA: f.empty}, "clusters[0].tls", "clusters[0].tls.ca: " + f.empty + " holds no PEM certificate"},
		{"expired CA", TLSSettings{CA: f.expiredCA}, "tls", `tls.ca: ` + f.expiredCA + `: certificate "old CA" expired on`},
		{"key mismatch", TLSSettings{CA: f.ca, Cert: f.cert, Key: f.otherKey}, "--ssl", "--ssl-cert " + f.cert + " and --ssl-key " + f.otherKey + ": tls: private key does not match public key"},
		{"cert without key", TLSSettings{Cert: f.cert}, "tls", "tls.cert and tls.key: give both"},
		{"expired client certificate", TLSSettings{Cert: f.expiredCert, Key: f.expiredKey}, "tls", `tls.cert ` + f.expiredCert + ` and tls.key ` + f.expiredKey + `: ` + f.expiredCert + `: certificate "old" expired on`},
	}
	for _, tt := range bad {
		_, err := LoadTLS(tt.s, tt.where)
		if err == nil {
			t.Errorf("%s: no error", tt.name)
			continue
		}
		if !strings.HasPrefix(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s:\n got %v\nwant %s...", tt.name, err, tt.want)
		}
		if dbpilot.ErrorCode(err) != dbpilot.EINVALID {
			t.Errorf("%s: code %s, want invalid", tt.name, dbpilot.ErrorCode(err))
		}
	}
}

func TestChangeSourceSSL(t *testing.T) {
	maria := Dialect{Flavor: dbpilot.FlavorMariaDB, Version: dbpilot.Version{Major: 10, Minor: 11, Patch: 6}}
	my80 := Dialect{Flavor: dbpilot.FlavorMySQL, Version: dbpilot.Version{Major: 8, Minor: 0, Patch: 21}}
	my84 := Dialect{Flavor: dbpilot.FlavorMySQL, Version: dbpilot.Version{Major: 8, Minor: 4, Patch: 0}}
	src := ChangeSource{Source: dbpilot.InstanceKey{Host: "db1", Port: 3306}, User: "repl", Password: "pw",
		TLS: &TLSSettings{CA: "/etc/mysql/ca.pem", Cert: "/etc/mysql/client.pem", Key: "/etc/mysql/client-key.pem"}}
	verifyCA := src
	verifyCA.TLS = &TLSSettings{Mode: TLSVerifyCA, CA: "/etc/mysql/ca.pem"}
	off := src
	off.TLS = &TLSSettings{Mode: TLSDisabled}
	named := src
	named.Channel = "m1"
	tests := []struct{ name, got, want string }{
		{"maria verify-identity", maria.ChangeSourceSQL(src), `CHANGE MASTER TO MASTER_HOST='db1', MASTER_PORT=3306, MASTER_USER='repl', MASTER_PASSWORD='pw', MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1, MASTER_HEARTBEAT_PERIOD=1, MASTER_SSL=1, MASTER_SSL_CA='/etc/mysql/ca.pem', MASTER_SSL_CERT='/etc/mysql/client.pem', MASTER_SSL_KEY='/etc/mysql/client-key.pem', MASTER_SSL_VERIFY_SERVER_CERT=1`},
		{"maria verify-ca", maria.ChangeSourceSQL(verifyCA), `CHANGE MASTER TO MASTER_HOST='db1', MASTER_PORT=3306, MASTER_USER='repl', MASTER_PASSWORD='pw', MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1, MASTER_HEARTBEAT_PERIOD=1, MASTER_SSL=1, MASTER_SSL_CA='/etc/mysql/ca.pem', MASTER_SSL_CERT='', MASTER_SSL_KEY='', MASTER_SSL_VERIFY_SERVER_CERT=0`},
		{"maria disabled", maria.ChangeSourceSQL(off), `CHANGE MASTER TO MASTER_HOST='db1', MASTER_PORT=3306, MASTER_USER='repl', MASTER_PASSWORD='pw', MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1, MASTER_HEARTBEAT_PERIOD=1, MASTER_SSL=0`},
		{"mysql84 channel", my84.ChangeSourceSQL(named), `CHANGE REPLICATION SOURCE TO SOURCE_HOST='db1', SOURCE_PORT=3306, SOURCE_USER='repl', SOURCE_PASSWORD='pw', SOURCE_AUTO_POSITION=1, SOURCE_CONNECT_RETRY=1, SOURCE_HEARTBEAT_PERIOD=1, GET_SOURCE_PUBLIC_KEY=1, SOURCE_SSL=1, SOURCE_SSL_CA='/etc/mysql/ca.pem', SOURCE_SSL_CERT='/etc/mysql/client.pem', SOURCE_SSL_KEY='/etc/mysql/client-key.pem', SOURCE_SSL_VERIFY_SERVER_CERT=1 FOR CHANNEL 'm1'`},
		{"mysql8021", my80.ChangeSourceSQL(verifyCA), `CHANGE MASTER TO MASTER_HOST='db1', MASTER_PORT=3306, MASTER_USER='repl', MASTER_PASSWORD='pw', MASTER_AUTO_POSITION=1, MASTER_CONNECT_RETRY=1, MASTER_HEARTBEAT_PERIOD=1, GET_MASTER_PUBLIC_KEY=1, MASTER_SSL=1, MASTER_SSL_CA='/etc/mysql/ca.pem', MASTER_SSL_CERT='', MASTER_SSL_KEY='', MASTER_SSL_VERIFY_SERVER_CERT=0`},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, tt.got, tt.want)
		}
	}
	// The domain filter follows the SSL options.
	stmt, err := changeSourceSQL(maria, src, []uint32{2})
	must(t, err)
	if !strings.HasSuffix(stmt, "MASTER_SSL_VERIFY_SERVER_CERT=1, DO_DOMAIN_IDS=(), IGNORE_DOMAIN_IDS=(2)") {
		t.Errorf("maria with domains: %s", stmt)
	}
}

func TestValidateReplicationTLS(t *testing.T) {
	for _, tt := range []struct {
		s    TLSSettings
		want string
	}{
		{TLSSettings{Mode: "yes"}, `replication.tls.mode: "yes": use disabled`},
		{TLSSettings{CA: "/ca.pem", ServerName: "db"}, "replication.tls.server_name: replicas cannot take it"},
		{TLSSettings{Key: "/k.pem"}, "replication.tls.cert and replication.tls.key: give both"},
	} {
		err := ValidateReplicationTLS(tt.s, "replication.tls")
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%+v: got %v, want %s...", tt.s, err, tt.want)
		}
	}
	if err := ValidateReplicationTLS(TLSSettings{CA: "/does/not/exist/here.pem"}, "replication.tls"); err != nil {
		t.Errorf("replication files are on the servers, not checked here: %v", err)
	}
}

// TestControllerChangeSourceTLS records what the controller sends to a
// MySQL 8.4 and a MariaDB replica with replication TLS set.
func TestControllerChangeSourceTLS(t *testing.T) {
	replTLS := &TLSSettings{CA: "/etc/mysql/ca.pem"}
	for _, tt := range []struct {
		id    serverIdent
		show  string
		cols  []string
		wantS string
	}{
		{my84ID, "SHOW REPLICA STATUS", []string{"Channel_Name", "Source_Host", "Source_Port", "Replica_IO_Running", "Replica_SQL_Running"},
			`CHANGE REPLICATION SOURCE TO SOURCE_HOST='10.0.0.2', SOURCE_PORT=3306, SOURCE_USER='repl', SOURCE_PASSWORD='pw', SOURCE_AUTO_POSITION=1, SOURCE_CONNECT_RETRY=1, SOURCE_HEARTBEAT_PERIOD=1, GET_SOURCE_PUBLIC_KEY=1, SOURCE_SSL=1, SOURCE_SSL_CA='/etc/mysql/ca.pem', SOURCE_SSL_CERT='', SOURCE_SSL_KEY='', SOURCE_SSL_VERIFY_SERVER_CERT=1`},
		{mariaID, "SHOW ALL SLAVES STATUS", nil,
			`CHANGE MASTER TO MASTER_HOST='10.0.0.2', MASTER_PORT=3306, MASTER_USER='repl', MASTER_PASSWORD='pw', MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1, MASTER_HEARTBEAT_PERIOD=1, MASTER_SSL=1, MASTER_SSL_CA='/etc/mysql/ca.pem', MASTER_SSL_CERT='', MASTER_SSL_KEY='', MASTER_SSL_VERIFY_SERVER_CERT=1, IGNORE_DOMAIN_IDS=()`},
	} {
		status := slaveStatus()
		if tt.cols != nil {
			status = rows(tt.cols)
		}
		r := &recorder{results: map[string]*Rows{tt.show: status}}
		s := newCtl(tt.id, r)
		if err := s.changeSource(context.Background(), dbpilot.InstanceKey{Host: "10.0.0.2", Port: 3306}, Credentials{User: "repl", Password: "pw"}, replTLS, dbpilot.ChangeSourceOptions{}); err != nil {
			t.Fatal(err)
		}
		if len(r.log) != 2 || r.log[1] != tt.wantS {
			t.Errorf("%s %s: statements:\n%s\nwant last\n%s", tt.id.Flavor, tt.id.Version, strings.Join(r.log, "\n"), tt.wantS)
		}
	}
}
