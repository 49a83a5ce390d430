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
)

// serviceFlags choose how an operation reaches dbpilot: directly (with
// --config or --sandbox) or through a running serve (--server).
type serviceFlags struct {
	config  string
	sandbox string
	server  string
	token   string
}

func (s *serviceFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&s.config, "config", "", "serve's YAML configuration (act directly)")
	f.StringVar(&s.sandbox, "sandbox", "", "act on a sandbox's cluster (directly, or with --server through serve using the sandbox's token)")
	f.StringVar(&s.server, "server", "", "act through a running 'dbpilot serve' at this URL, e.g. http://127.0.0.1:7070")
	f.StringVar(&s.token, "token", "", "API token for --server (default $DBPILOT_TOKEN, or the sandbox's token)")
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

// open returns the service and a function releasing it. readOnly opens the
// state file without taking serve's lock (for listings while serve runs).
func (s *serviceFlags) open(ctx context.Context, a *app, readOnly bool) (dbpilot.ClusterService, func(), error) {
	if s.server != "" {
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
		return httpapi.NewClient(strings.TrimRight(s.server, "/"), tok), func() {}, nil
	}
	cfg, err := s.loadConfig()
	if err != nil {
		return nil, nil, err
	}
	d, err := daemon.Open(cfg, daemon.Wiring{ReadOnly: readOnly, Logger: a.log, Version: version})
	if err != nil {
		if dbpilot.ErrorCode(err) == dbpilot.ECONFLICT {
			return nil, nil, dbpilot.WrapError(dbpilot.ECONFLICT, err, "a dbpilot serve owns this cluster's state: act through it with --server http://%s", cfg.Listen)
		}
		return nil, nil, err
	}
	return d, func() { d.Close() }, nil
}
