package sandbox

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/dbpilot/dbpilot/internal/certs"
	"github.com/dbpilot/dbpilot/mysql"
)

// TLS is a sandbox deployed with --tls: a CA, a server certificate per
// node (names 127.0.0.1 and localhost) and a client certificate, in Dir
// (keys mode 0600). Every TCP connection to the nodes (commands with
// --sandbox, serve --sandbox, replication between the nodes) uses TLS with
// verify-identity; connections through a node's Unix socket do not need
// it.
type TLS struct {
	Dir        string `json:"dir"`
	CA         string `json:"ca"`
	CAKey      string `json:"ca_key"`
	ClientCert string `json:"client_cert"`
	ClientKey  string `json:"client_key"`
	// RequireSecureTransport: the nodes run with
	// require_secure_transport=ON (plain-text TCP connections refused).
	RequireSecureTransport bool `json:"require_secure_transport,omitempty"`
}

// ServerCert returns the paths of a node's certificate and key.
func (t *TLS) ServerCert(n *Node) (cert, key string) {
	return filepath.Join(t.Dir, n.Name+"-cert.pem"), filepath.Join(t.Dir, n.Name+"-key.pem")
}

// generateTLS writes the sandbox's CA, one server certificate per node and
// the client certificate into <dir>/tls.
func generateTLS(d *Descriptor, requireSecure bool) (*TLS, error) {
	dir := filepath.Join(d.Dir, "tls")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("sandbox: create %s: %w", dir, err)
	}
	t := &TLS{
		Dir: dir, CA: filepath.Join(dir, "ca.pem"), CAKey: filepath.Join(dir, "ca-key.pem"),
		ClientCert: filepath.Join(dir, "client-cert.pem"), ClientKey: filepath.Join(dir, "client-key.pem"),
		RequireSecureTransport: requireSecure,
	}
	ca, err := certs.NewCA("dbpilot sandbox "+d.Name+" CA", certs.Years(10))
	if err != nil {
		return nil, err
	}
	caPair, err := ca.Pair()
	if err != nil {
		return nil, err
	}
	if err := caPair.Write(t.CA, t.CAKey); err != nil {
		return nil, err
	}
	for _, n := range d.Nodes {
		p, err := ca.Issue("dbpilot sandbox "+d.Name+" "+n.Name, []string{"127.0.0.1", "localhost"}, true, certs.Years(10))
		if err != nil {
			return nil, err
		}
		cert, key := t.ServerCert(n)
		if err := p.Write(cert, key); err != nil {
			return nil, err
		}
	}
	client, err := ca.Issue(AdminUser, nil, false, certs.Years(10))
	if err != nil {
		return nil, err
	}
	if err := client.Write(t.ClientCert, t.ClientKey); err != nil {
		return nil, err
	}
	return t, nil
}

// tlsOptions are a node's server options for TLS.
func tlsOptions(d *Descriptor, n *Node) [][2]string {
	if d.TLS == nil {
		return nil
	}
	cert, key := d.TLS.ServerCert(n)
	kv := [][2]string{{"ssl_ca", d.TLS.CA}, {"ssl_cert", cert}, {"ssl_key", key}}
	if d.TLS.RequireSecureTransport {
		kv = append(kv, [2]string{"require_secure_transport", "ON"})
	}
	return kv
}

// TLSSettings returns how dbpilot connects to the nodes: verify-identity
// with the sandbox's CA and client certificate; zero without --tls.
func (d *Descriptor) TLSSettings() mysql.TLSSettings {
	if d.TLS == nil {
		return mysql.TLSSettings{}
	}
	return mysql.TLSSettings{Mode: mysql.TLSVerifyIdentity, CA: d.TLS.CA, Cert: d.TLS.ClientCert, Key: d.TLS.ClientKey}
}

// ReplicationTLS returns the nodes' TLS to their sources (the files are on
// this host, as the nodes are); nil without --tls.
func (d *Descriptor) ReplicationTLS() *mysql.TLSSettings {
	if d.TLS == nil {
		return nil
	}
	s := d.TLSSettings()
	return &s
}

// ClientTLS returns the loaded TLS of connections to the nodes (nil: plain
// text).
func (d *Descriptor) ClientTLS() *mysql.TLS { return d.tls }

// loadTLS loads the descriptor's TLS files.
func (d *Descriptor) loadTLS() error {
	if d.TLS == nil {
		d.tls = nil
		return nil
	}
	t, err := mysql.LoadTLS(d.TLSSettings(), "sandbox "+d.Name+" tls")
	if err != nil {
		return err
	}
	d.tls = t
	return nil
}
