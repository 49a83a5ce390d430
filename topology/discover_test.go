package topology

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
)

// fakeInspector answers from recorded instances: a reachable instance is
// returned (a copy), an unreachable one fails with its LastError, an unknown
// key fails with "connection refused". It counts calls and the most calls in
// flight at once.
type fakeInspector struct {
	instances map[dbpilot.InstanceKey]*dbpilot.Instance
	// wait, when set, is called inside Inspect before answering; it may block.
	wait func(ctx context.Context, key dbpilot.InstanceKey) error

	mu          sync.Mutex
	calls       map[dbpilot.InstanceKey]int
	inflight    int
	maxInflight int
}

func newFake(in []*dbpilot.Instance) *fakeInspector {
	f := &fakeInspector{instances: map[dbpilot.InstanceKey]*dbpilot.Instance{}, calls: map[dbpilot.InstanceKey]int{}}
	for _, i := range in {
		f.instances[i.Key.Normalized()] = i
	}
	return f
}

func (f *fakeInspector) Inspect(ctx context.Context, key dbpilot.InstanceKey) (*dbpilot.Instance, error) {
	k := key.Normalized()
	f.mu.Lock()
	f.calls[k]++
	f.inflight++
	f.maxInflight = max(f.maxInflight, f.inflight)
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inflight--
		f.mu.Unlock()
	}()
	if f.wait != nil {
		if err := f.wait(ctx, key); err != nil {
			return nil, dbpilot.WrapError(dbpilot.EUNAVAIL, err, "mysql: connect on %s", key)
		}
	}
	in, ok := f.instances[k]
	switch {
	case !ok:
		return nil, dbpilot.Errorf(dbpilot.EUNAVAIL, "mysql: connect on %s: connection refused", key)
	case !in.Reachable:
		return nil, dbpilot.Errorf(dbpilot.EUNAVAIL, "%s", in.LastError)
	}
	cp := *in
	return &cp, nil
}

func (f *fakeInspector) callCounts() map[dbpilot.InstanceKey]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[dbpilot.InstanceKey]int{}
	for k, v := range f.calls {
		out[k] = v
	}
	return out
}

func k(port int) dbpilot.InstanceKey { return dbpilot.InstanceKey{Host: "127.0.0.1", Port: port} }

func keysOf(in []*dbpilot.Instance) string {
	var s []string
	for _, i := range in {
		s = append(s, i.Key.String())
	}
	return strings.Join(s, " ")
}

// wide returns a primary on 30000 with n replicas on 30001...
func wide(n int) []*dbpilot.Instance {
	p := &dbpilot.Instance{Key: k(30000), Reachable: true, Flavor: dbpilot.FlavorMariaDB}
	out := []*dbpilot.Instance{p}
	for i := 1; i <= n; i++ {
		r := &dbpilot.Instance{Key: k(30000 + i), Reachable: true, Flavor: dbpilot.FlavorMariaDB, ReadOnly: true,
			Channels: []dbpilot.ReplicationChannel{{Source: k(30000), IORunning: dbpilot.IORunning, SQLRunning: true}}}
		p.Replicas = append(p.Replicas, r.Key)
		out = append(out, r)
	}
	return out
}

func TestDiscoverCrawl(t *testing.T) {
	tests := []struct {
		base  string
		seeds []dbpilot.InstanceKey
		want  string
	}{
		{"healthy", []dbpilot.InstanceKey{k(21003)}, "127.0.0.1:21001 127.0.0.1:21002 127.0.0.1:21003"},
		{"chain", []dbpilot.InstanceKey{k(21003)}, "127.0.0.1:21001 127.0.0.1:21002 127.0.0.1:21003"},
		{"chain", []dbpilot.InstanceKey{k(21001)}, "127.0.0.1:21001 127.0.0.1:21002 127.0.0.1:21003"},
		{"ring", []dbpilot.InstanceKey{k(21002)}, "127.0.0.1:21001 127.0.0.1:21002 127.0.0.1:21003"},
		{"multi-source", []dbpilot.InstanceKey{k(21001)}, "127.0.0.1:21001 127.0.0.1:21002 127.0.0.1:21003"},
		{"multi-source", []dbpilot.InstanceKey{k(21003)}, "127.0.0.1:21001 127.0.0.1:21002 127.0.0.1:21003"},
		// The same server under two names, and a duplicate seed.
		{"healthy", []dbpilot.InstanceKey{{Host: "localhost", Port: 21002}, k(21002), {Host: "LOCALHOST.", Port: 21002}}, "127.0.0.1:21001 localhost:21002 127.0.0.1:21003"},
	}
	for _, tt := range tests {
		f := newFake(loadCase(t, tt.base))
		got, err := Discover(context.Background(), f, tt.seeds, Options{})
		if err != nil {
			t.Fatalf("%s from %v: %v", tt.base, tt.seeds, err)
		}
		if s := keysOf(got); s != tt.want {
			t.Errorf("%s from %v: got %s, want %s", tt.base, tt.seeds, s, tt.want)
		}
		for key, n := range f.callCounts() {
			if n != 1 {
				t.Errorf("%s from %v: %s inspected %d times", tt.base, tt.seeds, key, n)
			}
		}
		for _, i := range got {
			if !i.Reachable {
				t.Errorf("%s: %s unreachable: %s", tt.base, i.Key, i.LastError)
			}
		}
		// The crawl feeds analysis and clustering unchanged.
		if cs := Clusters(got); len(cs) != 1 || len(cs[0].Instances) != 3 {
			t.Errorf("%s: clusters %+v", tt.base, cs)
		}
	}
}

func TestDiscoverUnreachable(t *testing.T) {
	f := newFake(loadCase(t, "unreachable-primary"))
	got, err := Discover(context.Background(), f, []dbpilot.InstanceKey{k(21002)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// 21003 is known only from the dead primary's replica list: not found.
	if s := keysOf(got); s != "127.0.0.1:21001 127.0.0.1:21002" {
		t.Fatalf("got %s", s)
	}
	p := got[0]
	if p.Reachable || p.LastError != "mysql: connect on 127.0.0.1:21001: connection refused" || p.ObservedAt.IsZero() {
		t.Errorf("unreachable primary: %+v", p)
	}

	got, err = Discover(context.Background(), f, []dbpilot.InstanceKey{k(21002), k(21003)}, Options{})
	if err != nil || keysOf(got) != "127.0.0.1:21001 127.0.0.1:21002 127.0.0.1:21003" {
		t.Fatalf("two seeds: %s, %v", keysOf(got), err)
	}
	ps := Analyze(got, AnalyzeOptions{})
	if c := codes(ps, false); strings.Join(c, " ") != "21001:DeadPrimary 21001:Unreachable 21002:ReplicationIOStopped 21003:ReplicationIOStopped" {
		t.Errorf("analysis of the crawl: %v", c)
	}

	// An unknown replica listed by a primary: reported, not expanded.
	in := wide(1)
	in[0].Replicas = append(in[0].Replicas, k(30009))
	got, err = Discover(context.Background(), newFake(in), []dbpilot.InstanceKey{k(30000)}, Options{})
	if err != nil || len(got) != 3 || got[2].Reachable || !strings.Contains(got[2].LastError, "connection refused") {
		t.Errorf("unknown replica: %s %v", keysOf(got), err)
	}
}

func TestDiscoverConcurrencyBound(t *testing.T) {
	for _, conc := range []int{1, 4, 0} {
		f := newFake(wide(40))
		f.wait = func(ctx context.Context, _ dbpilot.InstanceKey) error {
			select {
			case <-time.After(2 * time.Millisecond):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		got, err := Discover(context.Background(), f, []dbpilot.InstanceKey{k(30005)}, Options{Concurrency: conc})
		if err != nil || len(got) != 41 {
			t.Fatalf("concurrency %d: %d instances, %v", conc, len(got), err)
		}
		bound := conc
		if conc == 0 {
			bound = DefaultConcurrency
		}
		if f.maxInflight > bound || f.maxInflight < min(bound, 2) {
			t.Errorf("concurrency %d: %d inspections in flight at most, want up to %d", conc, f.maxInflight, bound)
		}
		for key, n := range f.callCounts() {
			if n != 1 {
				t.Errorf("%s inspected %d times", key, n)
			}
		}
	}
}

func TestDiscoverCancel(t *testing.T) {
	started := make(chan struct{}, 100)
	f := newFake(wide(20))
	f.wait = func(ctx context.Context, key dbpilot.InstanceKey) error {
		if key.Port == 30000 {
			return nil
		}
		started <- struct{}{}
		<-ctx.Done() // replicas hang until the crawl is stopped
		return ctx.Err()
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-started
		cancel()
	}()
	start := time.Now()
	got, err := Discover(ctx, f, []dbpilot.InstanceKey{k(30000)}, Options{Concurrency: 3})
	if err == nil || !errors.Is(err, context.Canceled) || dbpilot.ErrorCode(err) != dbpilot.EUNAVAIL {
		t.Fatalf("want a cancellation error, got %v", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("cancellation took %s", time.Since(start))
	}
	// Only the primary was observed; interrupted inspections are not
	// reported as unreachable instances.
	if keysOf(got) != "127.0.0.1:30000" {
		t.Errorf("got %s", keysOf(got))
	}
	if n := len(f.callCounts()); n > 4 {
		t.Errorf("%d inspections started after cancellation with concurrency 3", n)
	}

	// The whole-crawl timeout.
	got, err = Discover(context.Background(), f, []dbpilot.InstanceKey{k(30000)}, Options{Concurrency: 3, Timeout: 20 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "did not finish within 20ms") || len(got) != 1 {
		t.Errorf("timeout: %s, %v", keysOf(got), err)
	}
}

func TestDiscoverInvalid(t *testing.T) {
	f := newFake(nil)
	for name, call := range map[string]func() error{
		"no seeds": func() error { _, err := Discover(context.Background(), f, nil, Options{}); return err },
		"empty seed": func() error {
			_, err := Discover(context.Background(), f, []dbpilot.InstanceKey{{}}, Options{})
			return err
		},
		"no inspector": func() error {
			_, err := Discover(context.Background(), nil, []dbpilot.InstanceKey{k(1)}, Options{})
			return err
		},
		"concurrency": func() error {
			_, err := Discover(context.Background(), f, []dbpilot.InstanceKey{k(1)}, Options{Concurrency: -1})
			return err
		},
		"timeout": func() error {
			_, err := Discover(context.Background(), f, []dbpilot.InstanceKey{k(1)}, Options{Timeout: -time.Second})
			return err
		},
	} {
		if err := call(); dbpilot.ErrorCode(err) != dbpilot.EINVALID {
			t.Errorf("%s: got %v, want an invalid-input error", name, err)
		}
	}
}

// TestDiscoverAliases: one server reached under two addresses (its IP from
// the seed, a hostname in its replica's CHANGE MASTER) is one instance, and
// the replica's channel names it by the address it is known by. Servers
// that only share a server_id (two sandboxes on one host) stay apart.
func TestDiscoverAliases(t *testing.T) {
	alias := dbpilot.InstanceKey{Host: "db1.example", Port: 30000}
	primary := &dbpilot.Instance{Key: k(30000), Reachable: true, Flavor: dbpilot.FlavorMariaDB, ServerID: 1, Hostname: "db1", Port: 30000,
		Replicas: []dbpilot.InstanceKey{k(30001), k(30002)}}
	sameServer := *primary
	sameServer.Key = alias
	r1 := &dbpilot.Instance{Key: k(30001), Reachable: true, Flavor: dbpilot.FlavorMariaDB, ServerID: 2, Hostname: "db1", Port: 30001, ReadOnly: true,
		Channels: []dbpilot.ReplicationChannel{{Source: alias, IORunning: dbpilot.IORunning, SQLRunning: true}}}
	// Same server_id and host as the primary, another port: another server.
	r2 := &dbpilot.Instance{Key: k(30002), Reachable: true, Flavor: dbpilot.FlavorMariaDB, ServerID: 1, Hostname: "db1", Port: 30002, ReadOnly: true,
		Channels: []dbpilot.ReplicationChannel{{Source: k(30000), IORunning: dbpilot.IORunning, SQLRunning: true}}}
	f := newFake([]*dbpilot.Instance{primary, &sameServer, r1, r2})
	got, err := Discover(context.Background(), f, []dbpilot.InstanceKey{k(30000)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if keysOf(got) != "127.0.0.1:30000 127.0.0.1:30001 127.0.0.1:30002" {
		t.Fatalf("instances: %s", keysOf(got))
	}
	for _, i := range got {
		if i.Key == k(30001) && i.Channels[0].Source != k(30000) {
			t.Errorf("the replica's source is %s, want the primary's address %s", i.Channels[0].Source, k(30000))
		}
	}
	if f.instances[alias.Normalized()] == nil || sameServer.Key != alias {
		t.Fatal("fixture changed")
	}
	if r1.Channels[0].Source != alias {
		t.Error("the inspector's instance was changed")
	}
	// The cluster is one primary with two replicas.
	cl := Clusters(got)
	if len(cl) != 1 || len(cl[0].Instances) != 3 || len(cl[0].Primaries) != 1 || cl[0].Primaries[0] != k(30000) {
		t.Errorf("clusters: %+v", cl)
	}
}

// unalias rewrites a channel's source to the address the server is known
// by and keeps the address the replica printed (metrics label it so).
func TestUnaliasKeepsPrintedSource(t *testing.T) {
	printed := dbpilot.InstanceKey{Host: "db1.example", Port: 3306}
	known := dbpilot.InstanceKey{Host: "10.0.0.1", Port: 3306}
	other := dbpilot.InstanceKey{Host: "10.0.0.9", Port: 3306}
	inst := &dbpilot.Instance{Key: dbpilot.InstanceKey{Host: "10.0.0.2", Port: 3306},
		Channels: []dbpilot.ReplicationChannel{{Name: "a", Source: printed}, {Name: "b", Source: other}}}
	shared := inst.Channels
	unalias([]*dbpilot.Instance{inst}, map[dbpilot.InstanceKey]dbpilot.InstanceKey{printed.Normalized(): known})
	if c := inst.Channels[0]; c.Source != known || c.PrintedSource != printed {
		t.Errorf("aliased channel: source %v printed %v; want %v and %v", c.Source, c.PrintedSource, known, printed)
	}
	if c := inst.Channels[1]; c.Source != other || !c.PrintedSource.IsZero() {
		t.Errorf("channel without alias: source %v printed %v; want %v and none", c.Source, c.PrintedSource, other)
	}
	if shared[0].Source != printed {
		t.Error("the inspector's channels were modified in place")
	}
}

// An inspection error the caller says says nothing of the server
// (Options.NotAsked: the crawler was stalled) leaves the instance not
// inspected, with the crawl reported incomplete, instead of unreachable.
func TestDiscoverNotAsked(t *testing.T) {
	f := newFake(loadCase(t, "unreachable-primary"))
	notAsked := func(_ dbpilot.InstanceKey, err error) bool {
		return strings.Contains(err.Error(), "connection refused")
	}
	got, err := Discover(context.Background(), f, []dbpilot.InstanceKey{k(21002)}, Options{NotAsked: notAsked})
	if err == nil || !strings.Contains(err.Error(), "1 instances inspected, 1 not") {
		t.Fatalf("err %v, want the crawl incomplete", err)
	}
	if s := keysOf(got); s != "127.0.0.1:21002" {
		t.Errorf("got %s: the primary not asked must not be listed as unreachable", s)
	}
}
