package daemon_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/sandbox"
)

// TestSharedStatusOnRealServers: with collection on, discovery takes the
// status global_status read (one SHOW GLOBAL STATUS per server and second)
// and semisync its status from the same read and its flags from the
// observation; on real semi-sync servers both still see what the servers
// say, and a change (the primary's semi-sync turned off) within seconds.
func TestSharedStatusOnRealServers(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 3, SemiSync: true})
	f, ms := startMonitoring(t, d, "")
	primary := f.key("node1")
	ctx := context.Background()
	value := func(expr string) (float64, bool) {
		s, err := ms.QueryInstant(ctx, expr, time.Now())
		if err != nil || len(s) != 1 {
			return 0, false
		}
		return s[0].Points[0].V, true
	}
	testutil.WaitFor(t, 20*time.Second, "discovery and semisync see 2 semi-sync clients", func() (bool, string) {
		var p *dbpilot.Instance
		for _, i := range f.status().Instances {
			if i.Key.Equal(primary) {
				p = i
			}
		}
		clients, ok := value(`dbpilot_semisync_primary_clients{instance="` + primary.String() + `"}`)
		if p == nil || p.SemiSync.PrimaryClients != 2 || !p.SemiSync.PrimaryActive || p.Uptime == 0 || !ok || clients != 2 {
			return false, fmt.Sprintf("observation %+v; metric %v %v", p, clients, ok)
		}
		return true, ""
	})
	f.exec("node1", "SET GLOBAL rpl_semi_sync_master_enabled = OFF")
	testutil.WaitFor(t, 10*time.Second, "semi-sync off on the primary, in discovery and in metrics", func() (bool, string) {
		var p *dbpilot.Instance
		for _, i := range f.status().Instances {
			if i.Key.Equal(primary) {
				p = i
			}
		}
		enabled, ok := value(`dbpilot_semisync_primary_enabled{instance="` + primary.String() + `"}`)
		status, ok2 := value(`dbpilot_semisync_primary_status{instance="` + primary.String() + `"}`)
		fell, ok3 := value(`dbpilot_semisync_fell_back{instance="` + primary.String() + `"}`)
		if p == nil || p.SemiSync.PrimaryEnabled || p.SemiSync.PrimaryActive || !ok || enabled != 0 || !ok2 || status != 0 || !ok3 || fell != 0 {
			return false, fmt.Sprintf("observation %+v; enabled %v %v, status %v %v, fell back %v %v", p, enabled, ok, status, ok2, fell, ok3)
		}
		return true, ""
	})
}
