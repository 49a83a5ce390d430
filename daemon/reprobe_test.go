package daemon

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/mock"
)

// TestReprobeHungPrimary: the re-probe of a failing primary whose probes
// never answer (a hung server: each lasts the whole timeout). The first
// round waits for its attempt; once one attempt got no answer, a round
// returns "no answer" after failingEvery while the attempt in flight goes
// on, and no second attempt is started beside it. An answer, an error
// packet included, is proof of life and resets that.
func TestReprobeHungPrimary(t *testing.T) {
	var hung atomic.Bool
	hung.Store(true)
	var attempts, inflight, most atomic.Int32
	probe := &mock.Inspector{InspectFn: func(ctx context.Context, k dbpilot.InstanceKey) (*dbpilot.Instance, error) {
		attempts.Add(1)
		n := inflight.Add(1)
		defer inflight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		if hung.Load() {
			<-ctx.Done()
			return nil, dbpilot.WrapError(dbpilot.EUNAVAIL, ctx.Err(), "mysql: connect on %s: timed out", k)
		}
		return nil, &dbpilot.Error{Code: dbpilot.EAUTH, Errno: 4151, Message: "Access denied, this account is locked"}
	}}
	cfg := &Config{Credentials: CredentialsConfig{User: "admin"}, Replication: CredentialsConfig{User: "repl"},
		Clusters: []ClusterConfig{{Name: "c", Seeds: []string{"127.0.0.1:3306"}}}}
	// An attempt lasts attempt; a round that does not wait for it returns
	// after failingEvery (250 ms). The bounds between keep room for a
	// loaded machine on both sides.
	const attempt = 1500 * time.Millisecond
	cfg.Detection.ConfirmTimeout = Duration(attempt)
	d := &Daemon{cfg: cfg, probe: probe}
	cs := &clusterState{}
	key := dbpilot.InstanceKey{Host: "127.0.0.1", Port: 3306}
	ctx := context.Background()

	start := time.Now()
	r := d.reprobe(ctx, cs, key)
	if r.Answers() || time.Since(start) < attempt-100*time.Millisecond {
		t.Fatalf("first round: %+v after %s; want no answer after the whole attempt", r, time.Since(start))
	}
	for i := 0; i < 3; i++ {
		start = time.Now()
		r = d.reprobe(ctx, cs, key)
		if took := time.Since(start); r.Answers() || took > time.Second {
			t.Fatalf("round %d: %+v after %s; want no answer after failingEvery", i+2, r, took)
		}
	}
	if m := most.Load(); m != 1 {
		t.Errorf("%d attempts in flight at once, want 1", m)
	}
	// The server answers with an error packet: alive.
	hung.Store(false)
	testutil.WaitFor(t, 2*attempt, "the attempt in flight ends", func() (bool, string) {
		return inflight.Load() == 0, fmt.Sprint(inflight.Load(), " in flight")
	})
	r = d.reprobe(ctx, cs, key)
	if !r.Answers() || r.RefusedErrno != 4151 {
		t.Fatalf("after the server answered: %+v, want an answer (4151)", r)
	}
	// After an answer the next failure gets a whole attempt again.
	hung.Store(true)
	start = time.Now()
	if r = d.reprobe(ctx, cs, key); r.Answers() || time.Since(start) < attempt-100*time.Millisecond {
		t.Fatalf("after an answer: %+v after %s; want a whole attempt", r, time.Since(start))
	}
	t.Logf("%d attempts", attempts.Load())
}
