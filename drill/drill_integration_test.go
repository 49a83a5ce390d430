package drill_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot/drill"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/sandbox"
)

// TestFailoverDrills kills the primary of real sandboxes with 2 and 3
// replicas, async and semi-sync, and checks the outcome the drill measures:
// a new primary takes writes, every surviving replica follows it, and with
// semi-sync no acknowledged write is lost.
func TestFailoverDrills(t *testing.T) {
	for _, tt := range []struct {
		name     string
		nodes    int
		semiSync bool
	}{
		{"2 replicas semi-sync", 3, true},
		{"2 replicas async", 3, false},
		{"3 replicas semi-sync", 4, true},
		{"3 replicas async", 4, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: tt.nodes, SemiSync: tt.semiSync})
			var log bytes.Buffer
			res, err := drill.Run(context.Background(), drill.Options{Mode: drill.ModeFailover, Sandbox: d.Name, Rounds: 1, Rate: 100,
				Before: time.Second, Log: &log})
			t.Logf("drill output:\n%s", log.String())
			if err != nil {
				t.Fatal(err)
			}
			r := res.Rounds[0]
			if r.Error != "" || r.NewPrimary == "" || r.NewPrimary == r.OldPrimary {
				t.Fatalf("round: %+v", r)
			}
			if r.Acked < 50 {
				t.Errorf("only %d writes acknowledged", r.Acked)
			}
			if tt.semiSync && r.LostAcked != 0 {
				t.Errorf("%d acknowledged writes lost with semi-sync", r.LostAcked)
			}
			if r.ReplicasFollowing != tt.nodes-2 || r.ReplicasExpected != tt.nodes-2 {
				t.Errorf("%d of %d surviving replicas follow the new primary, want %d", r.ReplicasFollowing, r.ReplicasExpected, tt.nodes-2)
			}
			if r.WriteUnavailableS <= 0 || r.DetectionS <= 0 || r.DetectionS > r.WriteUnavailableS+1 {
				t.Errorf("implausible timings: %+v", r)
			}
			if res.Summary.Rounds != 1 || res.Summary.Failed != 0 || res.Summary.LostAcked != r.LostAcked {
				t.Errorf("summary: %+v", res.Summary)
			}
		})
	}
}

func TestSwitchoverDrill(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 3, SemiSync: true})
	var log bytes.Buffer
	res, err := drill.Run(context.Background(), drill.Options{Mode: drill.ModeSwitchover, Sandbox: d.Name, Rounds: 2, Rate: 100, Before: time.Second, Log: &log})
	t.Logf("drill output:\n%s", log.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Rounds {
		if r.Error != "" || r.LostAcked != 0 || r.ReplicasFollowing != 2 || r.NewPrimary == r.OldPrimary {
			t.Errorf("round %d: %+v", r.N, r)
		}
	}
	// Two switchovers bring the primary back... to some node; each round moved it.
	if res.Rounds[0].NewPrimary != res.Rounds[1].OldPrimary {
		t.Errorf("round 2 did not start from round 1's new primary: %+v", res.Rounds)
	}
}

func TestDrillRefusals(t *testing.T) {
	testutil.RequireServer(t)
	testutil.Home(t)
	if _, err := drill.Run(context.Background(), drill.Options{Mode: "chaos", Sandbox: "x"}); err == nil {
		t.Error("unknown mode accepted")
	}
	if _, err := drill.Run(context.Background(), drill.Options{Mode: drill.ModeFailover, Sandbox: "nosuch"}); err == nil {
		t.Error("unknown sandbox accepted")
	}
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyRing})
	if _, err := drill.Run(context.Background(), drill.Options{Mode: drill.ModeFailover, Sandbox: d.Name}); err == nil {
		t.Error("drill on a ring accepted")
	}
}
