package coord

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/internal/testutil"
)

// start runs a coordinator for the test.
func start(t *testing.T, opt Options) (*Etcd, chan error) {
	t.Helper()
	e, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := e.Start(ctx); err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		e.Close()
	})
	return e, done
}

// TestElectionAndFencing: two members, one cluster. The leader's fence
// checks out; once its lease is revoked behind its back (what etcd does
// to a paused serve), its check fails with ErrLeadershipLost and the other
// member leads with a higher token.
func TestElectionAndFencing(t *testing.T) {
	ec := testutil.StartEtcd(t, 1)
	opt := Options{Endpoints: ec.Endpoints, LeaseTTL: 2 * time.Second, Clusters: []string{"c"}}
	opt.Member = "a"
	a, _ := start(t, opt)
	opt.Member = "b"
	b, _ := start(t, opt)
	var leader, other *Etcd
	testutil.WaitFor(t, 10*time.Second, "one leader", func() (bool, string) {
		_, ea := a.Lead("c")
		_, eb := b.Lead("c")
		switch {
		case ea == nil && eb != nil:
			leader, other = a, b
		case eb == nil && ea != nil:
			leader, other = b, a
		default:
			return false, fmt.Sprint(ea, eb)
		}
		return true, ""
	})
	f, _ := leader.Lead("c")
	if err := leader.Check(context.Background(), f); err != nil {
		t.Fatalf("check of the leader's own fence: %v", err)
	}
	// The follower learns the leader from a watch: until then its Lead says
	// "election in progress", so both its views are awaited, not read
	// once (on a loaded machine the watch event comes late).
	testutil.WaitFor(t, 10*time.Second, "the follower knows the leader", func() (bool, string) {
		m, api := other.LeaderOf("c")
		// api is empty: Options.API was not set.
		return m == leader.Member() && api == "", fmt.Sprintf("LeaderOf = %q %q", m, api)
	})
	testutil.WaitFor(t, 10*time.Second, "the follower's Lead names the leader", func() (bool, string) {
		_, err := other.Lead("c")
		return dbpilot.ErrorCode(err) == dbpilot.ECONFLICT && strings.Contains(err.Error(), fmt.Sprintf("%q", leader.Member())), fmt.Sprint(err)
	})
	// A recovery begun under the fence is visible to the other member.
	sr := &dbpilot.SharedRecovery{Kind: dbpilot.RecoveryFailoverAuto, OldPrimary: dbpilot.InstanceKey{Host: "h", Port: 1}, Started: time.Now()}
	if err := leader.BeginRecovery(context.Background(), f, sr); err != nil || sr.ID != 1 {
		t.Fatalf("begin recovery: %v, id %d", err, sr.ID)
	}
	got, err := other.Recovery(context.Background(), "c")
	if err != nil || got == nil || got.ID != 1 || got.State != dbpilot.SharedRunning || got.Member != leader.Member() {
		t.Fatalf("shared recovery seen by the other member: %+v, %v", got, err)
	}
	// The lease revoked behind the leader's back.
	cli := ec.Client()
	leader.mu.Lock()
	lease := leader.sess.Lease()
	leader.mu.Unlock()
	if err := cli.LeaseRevoke(context.Background(), lease); err != nil {
		t.Fatal(err)
	}
	err = leader.Check(context.Background(), f)
	if !errors.Is(err, dbpilot.ErrLeadershipLost) {
		t.Fatalf("check after the lease is gone = %v, want ErrLeadershipLost", err)
	}
	if err := leader.UpdateRecovery(context.Background(), f, sr); !errors.Is(err, dbpilot.ErrLeadershipLost) {
		t.Errorf("update by a former leader = %v, want ErrLeadershipLost", err)
	}
	testutil.WaitFor(t, 10*time.Second, "the other member leads", func() (bool, string) {
		g, err := other.Lead("c")
		return err == nil && g.Token > f.Token, fmt.Sprint(err)
	})
}

// TestDuplicateMemberID: a second serve with the same id is refused.
func TestDuplicateMemberID(t *testing.T) {
	ec := testutil.StartEtcd(t, 1)
	opt := Options{Endpoints: ec.Endpoints, LeaseTTL: 2 * time.Second, Member: "same", Clusters: []string{"c"}}
	a, _ := start(t, opt)
	testutil.WaitFor(t, 10*time.Second, "first member registered", func() (bool, string) {
		st := a.Status(context.Background())
		return st.State == dbpilot.CoordinationOK && len(st.Members) == 1, fmt.Sprintf("%+v", st)
	})
	_, done := start(t, opt)
	select {
	case err := <-done:
		if dbpilot.ErrorCode(err) != dbpilot.ECONFLICT || !strings.Contains(err.Error(), `id "same"`) {
			t.Fatalf("second member with the same id: %v", err)
		}
		done <- err // for the cleanup
	case <-time.After(15 * time.Second):
		t.Fatal("a second member with the same id was not refused")
	}
}

// TestUnreachableEtcd: a coordinator whose etcd does not answer starts,
// says it is unavailable and leads nothing.
func TestUnreachableEtcd(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	e, _ := start(t, Options{Endpoints: []string{"http://" + addr}, LeaseTTL: 2 * time.Second, DialTimeout: 300 * time.Millisecond, Member: "a", Clusters: []string{"c"}})
	st := e.Status(context.Background())
	if st.State != dbpilot.CoordinationUnavailable || st.Reason == "" {
		t.Errorf("status = %+v", st)
	}
	if _, err := e.Lead("c"); dbpilot.ErrorCode(err) != dbpilot.EUNAVAIL {
		t.Errorf("Lead = %v, want EUNAVAIL", err)
	}
}

// TestWrongCredentials: etcd with authentication refuses a wrong password
// with one clear line at Start.
func TestWrongCredentials(t *testing.T) {
	ec := testutil.StartEtcd(t, 1)
	cli := ec.Client()
	ctx := context.Background()
	if err := cli.Do(ctx, "/v3/auth/user/add", map[string]string{"name": "root", "password": "rootpw"}, nil, false); err != nil {
		t.Fatal(err)
	}
	if err := cli.Do(ctx, "/v3/auth/user/grant", map[string]string{"user": "root", "role": "root"}, nil, false); err != nil {
		t.Fatal(err)
	}
	if err := cli.Do(ctx, "/v3/auth/enable", struct{}{}, nil, false); err != nil {
		t.Fatal(err)
	}
	e, err := New(Options{Endpoints: ec.Endpoints, Member: "a", Username: "root", Password: "wrong", Clusters: []string{"c"}})
	if err != nil {
		t.Fatal(err)
	}
	err = e.Start(ctx)
	if dbpilot.ErrorCode(err) != dbpilot.EAUTH || !strings.Contains(err.Error(), `refused user "root"`) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("wrong password: %v", err)
	}
	t.Logf("wrong password: %v", err)
	ok, err := New(Options{Endpoints: ec.Endpoints, Member: "a", Username: "root", Password: "rootpw", Clusters: []string{"c"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := ok.Start(ctx); err != nil {
		t.Fatalf("right password: %v", err)
	}
	ok.Close()
}
