package recovery

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mock"
)

// callLog is a mock controller that records the statements it is asked
// for, failing the one named in fail.
func callLog(fail string) (*mock.ReplicationController, *[]string) {
	var calls []string
	rec := func(op string, k dbpilot.InstanceKey) error {
		calls = append(calls, fmt.Sprintf("%s %d", op, k.Port))
		if op == fail {
			return errors.New(op + " failed")
		}
		return nil
	}
	return &mock.ReplicationController{
		KillClientConnectionsFn: func(_ context.Context, k dbpilot.InstanceKey) (int, error) {
			return 2, rec("Kill", k)
		},
		SetSemiSyncFn: func(_ context.Context, k dbpilot.InstanceKey, primary, replica bool) error {
			return rec(fmt.Sprintf("SemiSync(%v,%v)", primary, replica), k)
		},
		SetReadOnlyFn: func(_ context.Context, k dbpilot.InstanceKey, ro bool) error {
			return rec(fmt.Sprintf("ReadOnly(%v)", ro), k)
		},
		StopReplicaFn:  func(_ context.Context, k dbpilot.InstanceKey) error { return rec("Stop", k) },
		StartReplicaFn: func(_ context.Context, k dbpilot.InstanceKey) error { return rec("Start", k) },
		ChangeSourceFn: func(_ context.Context, k, src dbpilot.InstanceKey, _ dbpilot.ChangeSourceOptions) error {
			return rec(fmt.Sprintf("ChangeSource(%d)", src.Port), k)
		},
	}, &calls
}

func TestExecutorFence(t *testing.T) {
	old := dbpilot.InstanceKey{Host: "10.0.0.1", Port: 1}
	ctl, calls := callLog("")
	n, err := (&Executor{Ctl: ctl}).Fence(context.Background(), old)
	want := []string{"Kill 1", "SemiSync(false,false) 1", "ReadOnly(true) 1", "Kill 1"}
	if err != nil || n != 4 || !slices.Equal(*calls, want) {
		t.Errorf("Fence: %d sessions, %v; calls %v, want %v", n, err, *calls, want)
	}
	// A failing step ends the fence there.
	ctl, calls = callLog("SemiSync(false,false)")
	if n, err := (&Executor{Ctl: ctl}).Fence(context.Background(), old); err == nil || n != 2 || len(*calls) != 2 {
		t.Errorf("Fence with a failing semi-sync: %d sessions, %v; calls %v", n, err, *calls)
	}
}

func TestExecutorReattachAndGiveWrites(t *testing.T) {
	r, src := dbpilot.InstanceKey{Host: "10.0.0.1", Port: 3}, dbpilot.InstanceKey{Host: "10.0.0.1", Port: 2}
	ctl, calls := callLog("")
	e := &Executor{Ctl: ctl}
	if err := e.Reattach(context.Background(), r, src); err != nil {
		t.Fatal(err)
	}
	if err := e.GiveWrites(context.Background(), src); err != nil {
		t.Fatal(err)
	}
	if want := []string{"Stop 3", "ChangeSource(2) 3", "Start 3", "ReadOnly(false) 2"}; !slices.Equal(*calls, want) {
		t.Errorf("calls %v, want %v", *calls, want)
	}
	ctl, calls = callLog("ChangeSource(2)")
	if err := (&Executor{Ctl: ctl}).Reattach(context.Background(), r, src); err == nil || len(*calls) != 2 {
		t.Errorf("Reattach with a failing CHANGE MASTER: %v; calls %v (replication must not be started)", err, *calls)
	}
}
