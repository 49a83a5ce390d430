package main

import (
	"os"
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
}

func (t *targetFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&t.sandbox, "sandbox", "", "reach the nodes of this sandbox (credentials from its descriptor)")
	f.StringVar(&t.node, "node", "", "with --sandbox: only this node (node2 or 2)")
	f.StringVarP(&t.user, "user", "u", "", "user name (default $DBPILOT_USER, the credentials file, or root)")
	f.StringVarP(&t.password, "password", "p", "", "password (prefer $DBPILOT_PASSWORD or --credentials-file: flags show in ps)")
	f.StringVar(&t.credentials, "credentials-file", "", "my.cnf-style file with user= and password= under [client] or [dbpilot]; must be mode 0600")
	f.Var(durationFlag(&t.connectTimeout, mysql.DefaultConnectTimeout), "connect-timeout", "bound on connecting to each server: TCP connect, greeting and authentication (a bare number is seconds)")
	f.Var(durationFlag(&t.queryTimeout, mysql.DefaultQueryTimeout), "query-timeout", "timeout of each SQL statement (a bare number is seconds)")
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
