package daemon

import (
	"context"

	"github.com/dbpilot/dbpilot"
)

// reprobe returns what the primary key of cs answered: the cluster's
// recovery.PrimaryProbe, one attempt in flight shared by the confirmation
// rounds, bounded by detection.confirm_timeout, and no answer after
// failingEvery when the previous attempt got none.
func (d *Daemon) reprobe(ctx context.Context, cs *clusterState, key dbpilot.InstanceKey) *dbpilot.Instance {
	inspect := func(ctx context.Context, k dbpilot.InstanceKey) error {
		_, err := d.probe.Inspect(ctx, k)
		return err
	}
	return cs.reprobe.Probe(ctx, key, inspect, d.cfg.Detection.ConfirmTimeout.D(), failingEvery)
}
