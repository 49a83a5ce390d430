package coord

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/internal/etcdhttp"
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

// TestEtcdPaused: etcd stopped with SIGSTOP for longer than the lease TTL
// (its connections open and silent). The leader's session ends within
// the TTL (plus slack for a loaded machine), after which nobody leads and
// Lead and Check fail; once etcd continues, the serves take new sessions,
// one leads with a higher token, and the other learns of it, and of a
// recovery it records, through its watch.
func TestEtcdPaused(t *testing.T) {
	ec := testutil.StartEtcd(t, 1)
	ttl := 2 * time.Second
	opt := Options{Endpoints: ec.Endpoints, LeaseTTL: ttl, Clusters: []string{"c"}}
	opt.Member = "a"
	a, _ := start(t, opt)
	opt.Member = "b"
	b, _ := start(t, opt)
	recs := map[*Etcd]chan *dbpilot.SharedRecovery{}
	for _, e := range []*Etcd{a, b} {
		ch := make(chan *dbpilot.SharedRecovery, 16)
		recs[e] = ch
		e.OnRecovery(func(r *dbpilot.SharedRecovery) {
			select {
			case ch <- r:
			default:
			}
		})
	}
	leaderOf := func() (leader, other *Etcd, f dbpilot.Fence) {
		testutil.WaitFor(t, 15*time.Second, "one leader, known to the other", func() (bool, string) {
			fa, ea := a.Lead("c")
			fb, eb := b.Lead("c")
			switch {
			case ea == nil && eb != nil:
				leader, other, f = a, b, fa
			case eb == nil && ea != nil:
				leader, other, f = b, a, fb
			default:
				return false, fmt.Sprint(ea, eb)
			}
			m, _ := other.LeaderOf("c")
			return m == leader.Member(), "the other sees " + m
		})
		return
	}
	leader, _, f := leaderOf()
	if err := leader.Check(context.Background(), f); err != nil {
		t.Fatalf("check before the pause: %v", err)
	}

	ec.Pause(0)
	paused := time.Now()
	resumed := false
	t.Cleanup(func() {
		if !resumed {
			ec.Resume(0)
		}
	})
	// Within the TTL and 3 s of slack, with etcd still stopped.
	testutil.WaitFor(t, ttl+3*time.Second, "the leader's session ends", func() (bool, string) {
		_, err := leader.Lead("c")
		return dbpilot.ErrorCode(err) == dbpilot.EUNAVAIL, fmt.Sprint(err)
	})
	t.Logf("session lost %s after etcd stopped (ttl %s)", time.Since(paused).Round(time.Millisecond), ttl)
	for _, e := range []*Etcd{a, b} {
		if _, err := e.Lead("c"); err == nil {
			t.Errorf("%s leads while etcd is stopped", e.Member())
		}
		if st := e.Status(context.Background()); st.State != dbpilot.CoordinationUnavailable || st.Reason == "" {
			t.Errorf("%s status while etcd is stopped: %+v", e.Member(), st)
		}
	}
	if err := leader.Check(context.Background(), f); !errors.Is(err, dbpilot.ErrLeadershipLost) {
		t.Errorf("check while etcd is stopped = %v, want ErrLeadershipLost", err)
	}
	ec.Resume(0)
	resumed = true

	leader2, other2, f2 := leaderOf()
	if f2.Token <= f.Token {
		t.Errorf("token after the pause %d, before %d: want higher", f2.Token, f.Token)
	}
	if err := leader2.Check(context.Background(), f2); err != nil {
		t.Fatalf("check after the pause: %v", err)
	}
	// The fence from before the pause stays refused.
	if err := leader2.Check(context.Background(), f); !errors.Is(err, dbpilot.ErrLeadershipLost) {
		t.Errorf("check of the fence from before the pause = %v, want ErrLeadershipLost", err)
	}
	sr := &dbpilot.SharedRecovery{Kind: dbpilot.RecoveryFailoverAuto, OldPrimary: dbpilot.InstanceKey{Host: "h", Port: 1}, Started: time.Now()}
	if err := leader2.BeginRecovery(context.Background(), f2, sr); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(10 * time.Second)
	for {
		select {
		case r := <-recs[other2]:
			if r.ID == sr.ID && r.Member == leader2.Member() {
				st := other2.Status(context.Background())
				if len(st.Recoveries) != 1 || st.Recoveries[0].ID != sr.ID {
					t.Errorf("the other member's status: recoveries %+v", st.Recoveries)
				}
				return
			}
		case <-timeout:
			t.Fatal("the recovery did not reach the other member's watch")
		}
	}
}

// TestElectionLine: candidates wait in create-revision order. The third
// waits for the second; the second withdrawing, the third waits on for
// the first, and leads only once the first's lease is revoked.
func TestElectionLine(t *testing.T) {
	ec := testutil.StartEtcd(t, 1)
	e, err := New(Options{Endpoints: ec.Endpoints, Member: "x", RequestTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	prefix := e.electionPrefix("line")
	type result struct {
		key string
		rev int64
		err error
	}
	var sess [3]*session
	var won [3]chan result
	var stop [3]context.CancelFunc
	for i := range sess {
		id, _, err := e.cli.LeaseGrant(ctx, 30)
		if err != nil {
			t.Fatal(err)
		}
		sess[i] = &session{lease: id, done: make(chan struct{})}
		won[i] = make(chan result, 1)
		cctx, c := context.WithCancel(ctx)
		stop[i] = c
		go func() {
			k, r, err := e.elect(cctx, sess[i], prefix, fmt.Sprint("m", i))
			won[i] <- result{k, r, err}
		}()
		if i == 0 {
			r := <-won[0]
			if r.err != nil || r.key != fmt.Sprintf("%s/%x", prefix, id) {
				t.Fatalf("first candidate: %+v", r)
			}
			won[0] <- r
		}
		time.Sleep(200 * time.Millisecond) // in line in this order
	}
	first := <-won[0]
	pending := func(i int) {
		t.Helper()
		select {
		case r := <-won[i]:
			t.Fatalf("candidate %d leads while the first holds: %+v", i, r)
		case <-time.After(500 * time.Millisecond):
		}
	}
	pending(1)
	pending(2)
	stop[1]() // the second withdraws (its key deleted)
	if r := <-won[1]; r.err == nil {
		t.Fatalf("canceled campaign returned %+v", r)
	}
	if kv, _, err := e.cli.Get(ctx, fmt.Sprintf("%s/%x", prefix, sess[1].lease)); err != nil || kv != nil {
		t.Fatalf("the withdrawn candidate's key: %+v, %v", kv, err)
	}
	pending(2)
	if err := e.cli.LeaseRevoke(ctx, sess[0].lease); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-won[2]:
		if r.err != nil || r.rev <= first.rev {
			t.Fatalf("third candidate: %+v (first's token %d)", r, first.rev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the third candidate did not lead after the first's lease was revoked")
	}
}

// TestRestartedMember: a serve started again under its id while the key
// of its killed predecessor (another process start) still has a live
// lease waits for that lease to expire, keeping its own alive meanwhile,
// and registers.
func TestRestartedMember(t *testing.T) {
	ec := testutil.StartEtcd(t, 1)
	cli := ec.Client()
	ctx := context.Background()
	old, _, err := cli.LeaseGrant(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, etcdhttp.PutRequest{Key: []byte("/dbpilot/members/a"), Value: []byte(`{"id":"a","started":"2026-01-01T00:00:00Z"}`), Lease: old}); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e, done := start(t, Options{Endpoints: ec.Endpoints, LeaseTTL: 2 * time.Second, Member: "a", Clusters: []string{"c"}, Logger: log})
	testutil.WaitFor(t, 10*time.Second, "the restarted member leads", func() (bool, string) {
		select {
		case err := <-done:
			done <- err
			t.Fatalf("Run ended: %v", err)
		default:
		}
		_, err := e.Lead("c")
		return err == nil, fmt.Sprint(err)
	})
	kv, _, err := cli.Get(ctx, "/dbpilot/members/a")
	if err != nil || kv == nil || kv.Lease == old || kv.Lease != e.Status(ctx).LeaseID {
		t.Fatalf("members/a after the restart: %+v, %v", kv, err)
	}
	// Its first session lasted: the wait did not cost it its own lease.
	if out := logs.String(); strings.Count(out, "connected to etcd") != 1 || strings.Contains(out, "unavailable") {
		t.Errorf("sessions:\n%s", out)
	}
}

// syncBuffer is a bytes.Buffer for a logger used by several goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestTLS: etcd on https:// requiring client certificates. With the CA
// and a client certificate the serve elects itself and its watch works;
// without the CA the server's certificate is refused (etcd unavailable,
// one line naming the endpoint); without a client certificate etcd
// refuses the connection.
func TestTLS(t *testing.T) {
	tf := testutil.NewTLSFiles(t)
	ec := testutil.StartEtcdTLS(t, 1, tf)
	if !strings.HasPrefix(ec.Endpoints[0], "https://") {
		t.Fatalf("endpoints %v", ec.Endpoints)
	}
	opt := Options{Endpoints: ec.Endpoints, LeaseTTL: 2 * time.Second, Clusters: []string{"c"},
		CAFile: tf.CA, CertFile: tf.ClientCert, KeyFile: tf.ClientKey}
	opt.Member = "a"
	a, _ := start(t, opt)
	opt.Member = "b"
	b, _ := start(t, opt)
	testutil.WaitFor(t, 10*time.Second, "a leader known to both", func() (bool, string) {
		ma, _ := a.LeaderOf("c")
		mb, _ := b.LeaderOf("c")
		return ma != "" && ma == mb, fmt.Sprintf("a sees %q, b sees %q", ma, mb)
	})
	for _, tc := range []struct {
		name string
		opt  Options
	}{
		{"no CA", Options{CertFile: tf.ClientCert, KeyFile: tf.ClientKey}},
		{"no client certificate", Options{CAFile: tf.CA}},
	} {
		tc.opt.Endpoints, tc.opt.Member, tc.opt.Clusters, tc.opt.DialTimeout = ec.Endpoints, "x", []string{"c"}, time.Second
		e, err := New(tc.opt)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Start(context.Background()); err != nil {
			t.Fatalf("%s: Start: %v", tc.name, err)
		}
		st := e.Status(context.Background())
		if st.State != dbpilot.CoordinationUnavailable || !strings.Contains(st.Reason, ec.Endpoints[0]) || strings.Contains(st.Reason, "\n") {
			t.Errorf("%s: status %s: %q", tc.name, st.State, st.Reason)
		}
		t.Logf("%s: %s", tc.name, st.Reason)
		e.Close()
	}
}
