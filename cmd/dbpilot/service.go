package main

import (
	"context"
	"os"
	"strings"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/daemon"
	"github.com/dbpilot/dbpilot/httpapi"
	"github.com/dbpilot/dbpilot/sandbox"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// serviceFlags choose how an operation reaches dbpilot: directly (with
// --config or --sandbox) or through a running serve (--server).
type serviceFlags struct {
	config  string
	sandbox string
	server  string
	token   string
	ca      string // --server-ca
}

func (s *serviceFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&s.config, "config", "", "serve's YAML configuration (act directly)")
	f.StringVar(&s.sandbox, "sandbox", "", "act on a sandbox's cluster (directly, or with --server through serve using the sandbox's token)")
	f.StringVar(&s.server, "server", "", "act through a running 'dbpilot serve' at this URL, e.g. http://127.0.0.1:7070 (or https://)")
	f.StringVar(&s.token, "token", "", "API token for --server (default $DBPILOT_TOKEN, or the sandbox's token)")
	serverCAFlag(f, &s.ca)
}

// serverCAFlag registers --server-ca: the CA of an https:// --server.
func serverCAFlag(f *pflag.FlagSet, ca *string) {
	f.StringVar(ca, "server-ca", "", "PEM file of the CA that signed an https:// --server's certificate (default $DBPILOT_SERVER_CA, else the system's roots)")
}

// serveClient is the client of the serve at url with token: for https,
// trusting the CA of ca (--server-ca), else of $DBPILOT_SERVER_CA, else the
// system's roots. A CA file that cannot be read fails every call, naming it.
func serveClient(url, token, ca string) *httpapi.Client {
	c := httpapi.NewClient(strings.TrimRight(strings.TrimSpace(url), "/"), token)
	if ca == "" {
		ca = os.Getenv("DBPILOT_SERVER_CA")
	}
	if ca != "" {
		_ = c.TrustCAFile(ca) // kept by the client: its calls fail with it
	}
	return c
}

func (s *serviceFlags) registerConfigOnly(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&s.config, "config", "", "YAML configuration file")
	f.StringVar(&s.sandbox, "sandbox", "", "watch a sandbox (configuration built from its descriptor)")
}

// loadConfig builds serve's configuration from --config or --sandbox.
func (s *serviceFlags) loadConfig() (*daemon.Config, error) {
	switch {
	case s.config != "" && s.sandbox != "":
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "give either --config or --sandbox, not both")
	case s.config != "":
		return daemon.LoadConfig(s.config)
	case s.sandbox != "":
		d, err := sandbox.Load(s.sandbox)
		if err != nil {
			return nil, err
		}
		c, err := daemon.ConfigFromSandbox(d)
		if err != nil {
			return nil, err
		}
		if err := c.Validate(); err != nil {
			return nil, dbpilot.WrapError(dbpilot.EINVALID, err, "sandbox %s", s.sandbox)
		}
		return c, nil
	}
	return nil, dbpilot.Errorf(dbpilot.EINVALID, "give --config FILE, --sandbox NAME or --server URL")
}

// client returns the client of the serve at --server, with the token of
// --token, $DBPILOT_TOKEN or the sandbox's.
func (s *serviceFlags) client() *httpapi.Client {
	tok := s.token
	if tok == "" {
		tok = os.Getenv("DBPILOT_TOKEN")
	}
	if tok == "" && s.sandbox != "" {
		if d, err := sandbox.Load(s.sandbox); err == nil {
			if b, err := os.ReadFile(daemon.TokenFile(d)); err == nil {
				tok = strings.TrimSpace(string(b))
			}
		}
	}
	return serveClient(s.server, tok, s.ca)
}

// runningServe names the API of the serve that owns cfg's state: the URL
// it wrote beside the state (daemon.Config.AddrFile), else the listen of
// the --config file it was likely started with; for a sandbox without
// that file no address is known, and none is guessed.
func (s *serviceFlags) runningServe(cfg *daemon.Config) string {
	if u := servedURL(cfg); u != "" {
		return u
	}
	if s.config != "" && cfg.Listen != "" {
		scheme := "http://"
		if cfg.HTTPTLS.Enabled() {
			scheme = "https://"
		}
		return scheme + cfg.Listen + " (the config's listen; the URL of your serve if it was started with --listen)"
	}
	return "URL (the address your serve listens on: it prints it at start)"
}

// servedURL is the URL the serve that owns cfg's state wrote beside it
// (daemon.Config.AddrFile), or "".
func servedURL(cfg *daemon.Config) string {
	f := cfg.AddrFile()
	if f == "" {
		return ""
	}
	b, err := os.ReadFile(f)
	if err != nil {
		return ""
	}
	if u := strings.TrimSpace(string(b)); strings.HasPrefix(u, "http") && !strings.ContainsAny(u, " \n") {
		return u
	}
	return ""
}

// open returns the service and a function releasing it. readOnly opens the
// state file without taking serve's lock (for listings while serve runs).
func (s *serviceFlags) open(ctx context.Context, a *app, readOnly bool) (dbpilot.ClusterService, func(), error) {
	if s.server != "" {
		return s.client(), func() {}, nil
	}
	cfg, err := s.loadConfig()
	if err != nil {
		return nil, nil, err
	}
	d, err := daemon.Open(cfg, daemon.Wiring{ReadOnly: readOnly, Logger: a.log, Version: version})
	if err != nil {
		if dbpilot.ErrorCode(err) == dbpilot.ECONFLICT {
			return nil, nil, dbpilot.WrapError(dbpilot.ECONFLICT, err, "a dbpilot serve owns this cluster's state: act through it with --server %s", s.runningServe(cfg))
		}
		return nil, nil, err
	}
	return d, func() { d.Close() }, nil
}
