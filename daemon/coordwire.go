package daemon

import (
	"log/slog"

	"github.com/dbpilot/dbpilot/coord"
)

// NewCoordinator returns the etcd coordinator of cfg (nil without
// coordination.etcd); the caller starts it (Start, then Run) and closes it.
func NewCoordinator(cfg *Config, log *slog.Logger, version string) (*coord.Etcd, error) {
	if !cfg.Coordinated() {
		return nil, nil
	}
	e := cfg.Coordination.Etcd
	names := make([]string, len(cfg.Clusters))
	for i, c := range cfg.Clusters {
		names[i] = c.Name
	}
	return coord.New(coord.Options{
		Endpoints: e.Endpoints, Prefix: e.Prefix, LeaseTTL: e.LeaseTTL.D(), DialTimeout: e.DialTimeout.D(), RequestTimeout: e.RequestTimeout.D(),
		Username: e.Username, Password: e.Password, CAFile: expandHome(e.CAFile), CertFile: expandHome(e.CertFile), KeyFile: expandHome(e.KeyFile),
		InsecureSkipVerify: e.InsecureSkipVerify,
		Member:             cfg.MemberID(), API: cfg.AdvertiseURL(), Version: version, Clusters: names, Logger: log,
	})
}
