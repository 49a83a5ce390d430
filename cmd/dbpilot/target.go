package main

import (
	"os"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/sandbox"
	"github.com/spf13/cobra"
)

// targetFlags are the ways a read command is told which servers to reach and
// with which credentials.
type targetFlags struct {
	sandbox        string
	node           string
	user           string
	password       string
	credentials    string
	connectTimeout time.Duration
	queryTimeout   time.Duration
	ssl            mysql.TLSSettings
}

// tlsHelp explains the TLS flags, in every connecting command's help.
const tlsHelp = `TLS to servers: --ssl-mode disabled|preferred|required|verify-ca|verify-identity
(as the mysql client's; default verify-identity when --ssl-ca is given,
required with only --ssl-cert, else disabled), --ssl-ca CA file, --ssl-cert
and --ssl-key client certificate and key (PEM), --ssl-server-name the name
the servers' certificates hold when it is not the host. With --sandbox, a
sandbox deployed with --tls is reached with its own CA and client
certificate (verify-identity) unless these flags say otherwise.`

func (t *targetFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&t.sandbox, "sandbox", "", "reach the nodes of this sandbox (credentials from its descriptor)")
	f.StringVar(&t.node, "node", "", "with --sandbox: only this node (node2 or 2)")
	f.StringVarP(&t.user, "user", "u", "", "user name (default $DBPILOT_USER, the credentials file, or root)")
	f.StringVarP(&t.password, "password", "p", "", "password (prefer $DBPILOT_PASSWORD or --credentials-file: flags show in ps)")
	f.StringVar(&t.credentials, "credentials-file", "", "my.cnf-style file with user= and password= under [client] or [dbpilot]; must be mode 0600")
	f.Var(durationFlag(&t.connectTimeout, mysql.DefaultConnectTimeout), "connect-timeout", "bound on connecting to each server: TCP connect, greeting and authentication (a bare number is seconds)")
	f.Var(durationFlag(&t.queryTimeout, mysql.DefaultQueryTimeout), "query-timeout", "timeout of each SQL statement (a bare number is seconds)")
	registerTLSFlags(cmd, &t.ssl)
}

// registerTLSFlags adds --ssl-mode, --ssl-ca, --ssl-cert, --ssl-key and
// --ssl-server-name.
func registerTLSFlags(cmd *cobra.Command, s *mysql.TLSSettings) {
	f := cmd.Flags()
	f.StringVar((*string)(&s.Mode), "ssl-mode", "", "TLS to the servers: "+mysql.TLSModes+" (default verify-identity with --ssl-ca, else disabled)")
	f.StringVar(&s.CA, "ssl-ca", "", "CA certificate file (PEM) that signed the servers' certificates")
	f.StringVar(&s.Cert, "ssl-cert", "", "client certificate file (PEM), for servers that require one")
	f.StringVar(&s.Key, "ssl-key", "", "key file (PEM) of --ssl-cert")
	f.StringVar(&s.ServerName, "ssl-server-name", "", "with verify-identity: the name the servers' certificates must hold instead of the host")
	if cmd.Long != "" && !strings.Contains(cmd.Long, "--ssl-mode") {
		cmd.Long = strings.TrimRight(cmd.Long, "\n") + "\n\n" + tlsHelp
	}
}

// tls loads the TLS of the connections: the flags, over the sandbox's
// (d, nil for none) where it has TLS.
func (t *targetFlags) tls(d *sandbox.Descriptor) (*mysql.TLS, error) {
	return loadTLSFlags(t.ssl, d)
}

// loadTLSFlags loads flag TLS settings s, each set field overriding the
// sandbox's (d may be nil).
func loadTLSFlags(s mysql.TLSSettings, d *sandbox.Descriptor) (*mysql.TLS, error) {
	if d != nil && d.TLS != nil {
		if s.IsZero() {
			return d.ClientTLS(), nil
		}
		base := d.TLSSettings()
		for _, f := range []struct{ set, from *string }{{(*string)(&base.Mode), (*string)(&s.Mode)}, {&base.CA, &s.CA}, {&base.Cert, &s.Cert}, {&base.Key, &s.Key}, {&base.ServerName, &s.ServerName}} {
			if *f.from != "" {
				*f.set = *f.from
			}
		}
		s = base
	}
	return mysql.LoadTLS(s, "--ssl")
}

// resolve turns arguments and flags into instance keys and connection options.
func (t *targetFlags) resolve(args []string) ([]dbpilot.InstanceKey, mysql.Options, error) {
	opts := mysql.Options{ConnectTimeout: t.connectTimeout, QueryTimeout: t.queryTimeout}
	var keys []dbpilot.InstanceKey
	switch {
	case t.sandbox != "" && len(args) > 0:
		return nil, opts, dbpilot.Errorf(dbpilot.EINVALID, "give either HOST:PORT or --sandbox, not both")
	case t.sandbox != "":
		d, err := sandbox.Load(t.sandbox)
		if err != nil {
			return nil, opts, err
		}
		opts.Credentials = d.Admin
		if opts.TLS, err = t.tls(d); err != nil {
			return nil, opts, err
		}
		if t.node != "" {
			n, err := d.Node(t.node)
			if err != nil {
				return nil, opts, err
			}
			keys = append(keys, n.Key())
		} else {
			for _, n := range d.Nodes {
				keys = append(keys, n.Key())
			}
		}
	case len(args) == 0:
		return nil, opts, dbpilot.Errorf(dbpilot.EINVALID, "name a server as HOST:PORT or a sandbox with --sandbox NAME")
	default:
		if t.node != "" {
			return nil, opts, dbpilot.Errorf(dbpilot.EINVALID, "--node goes with --sandbox")
		}
		var err error
		if opts.TLS, err = t.tls(nil); err != nil {
			return nil, opts, err
		}
		for _, a := range args {
			k, err := dbpilot.ParseInstanceKey(a)
			if err != nil {
				return nil, opts, err
			}
			keys = append(keys, k)
		}
	}
	// Explicit credentials override the descriptor's.
	creds, err := t.credentialsFromFlags()
	if err != nil {
		return nil, opts, err
	}
	if creds.User != "" {
		opts.User = creds.User
	}
	if creds.Password != "" {
		opts.Password = creds.Password
	}
	if opts.User == "" {
		opts.User = "root"
	}
	return keys, opts, nil
}

// credentialsFromFlags merges, lowest priority first: credentials file,
// environment, flags.
func (t *targetFlags) credentialsFromFlags() (mysql.Credentials, error) {
	var c mysql.Credentials
	if t.credentials != "" {
		fc, err := mysql.ReadCredentialsFile(t.credentials)
		if err != nil {
			return c, err
		}
		c = fc
	}
	if v := os.Getenv("DBPILOT_USER"); v != "" && t.sandbox == "" {
		c.User = v
	}
	if v := os.Getenv("DBPILOT_PASSWORD"); v != "" && t.sandbox == "" {
		c.Password = v
	}
	if t.user != "" {
		c.User = t.user
	}
	if t.password != "" {
		c.Password = t.password
	}
	return c, nil
}
