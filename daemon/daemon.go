package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/collector"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/topology"
)

// Daemon watches clusters and recovers them. It implements
// dbpilot.ClusterService; Run starts the watch loops (serve), and without
// Run every service call observes the cluster afresh (the CLI acting
// directly).
type Daemon struct {
	cfg     *Config
	store   dbpilot.StateStore
	probe   *mysql.Inspector // monitoring: short timeouts, one connection per instance
	dial    func(ctx context.Context, network, addr string) (net.Conn, error)
	ctl     dbpilot.ReplicationController
	log     *slog.Logger
	version string
	started time.Time
	running atomic.Bool // the watch loops run (serve); service calls then read their state

	clusters map[string]*clusterState
	order    []string

	// Monitoring (serve only): collectors feed metrics; alerts evaluate them.
	metrics    MetricsBackend
	alertStore dbpilot.AlertStore
	mon        *monitor
}

// clusterState is what the daemon knows of one cluster.
type clusterState struct {
	cfg *ClusterConfig

	// op serializes topology changes (automatic and requested) per cluster.
	op sync.Mutex

	mu           sync.Mutex
	status       dbpilot.ClusterStatus
	primary      dbpilot.InstanceKey   // current primary, as last decided
	known        []dbpilot.InstanceKey // every instance seen, crawled each tick
	lastSeen     map[dbpilot.InstanceKey]time.Time
	instances    []*dbpilot.Instance // the cluster's instances at the last tick
	detached     []*dbpilot.Instance // seen but outside the cluster (a fenced old primary, a lone seed)
	failingSince time.Time           // first failed probe of the primary in this failure
	lastVerdict  string
	fenced       map[dbpilot.InstanceKey]bool // old primaries to fence when they return
	fenceNoted   map[dbpilot.InstanceKey]string
	// wake asks the watch loop for a tick now (a failed liveness ping).
	wake chan struct{}
}

// Options are the daemon's collaborators.
type Options struct {
	Store   dbpilot.StateStore
	Ctl     dbpilot.ReplicationController // nil: a mysql.Controller from the config
	Logger  *slog.Logger
	Version string
	// Dial, when set, opens dbpilot's own connections to servers (tests cut
	// dbpilot's path to a primary with it, leaving replication alone).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Metrics, when set, turns on collection (serve); AlertStore keeps alert
	// states (the sqlite store implements it).
	Metrics    MetricsBackend
	AlertStore dbpilot.AlertStore
}

// New returns a daemon for cfg (already validated).
func New(cfg *Config, opt Options) *Daemon {
	probe := cfg.Admin()
	probe.Dial = opt.Dial
	d := &Daemon{
		cfg:      cfg,
		store:    opt.Store,
		probe:    mysql.NewInspector(probe),
		dial:     opt.Dial,
		ctl:      opt.Ctl,
		log:      opt.Logger,
		version:  opt.Version,
		started:  time.Now(),
		clusters: map[string]*clusterState{},
	}
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	d.alertStore = opt.AlertStore
	if opt.Metrics != nil && !cfg.Metrics.Disabled {
		d.metrics = opt.Metrics
		cc := collector.Config{Interval: map[string]time.Duration{}}
		for name, iv := range cfg.Metrics.Intervals {
			cc.Interval[name] = iv.D()
		}
		d.mon = &monitor{d: d, sink: opt.Metrics, forget: opt.Metrics.Forget, cfg: cc, runners: map[dbpilot.InstanceKey]*runnerEntry{}}
		if len(cfg.Metrics.Collectors) > 0 {
			d.mon.enabled = map[string]bool{}
			for _, n := range cfg.Metrics.Collectors {
				d.mon.enabled[n] = true
			}
		}
	}
	if d.ctl == nil {
		admin := probe
		admin.ConnectTimeout = max(admin.ConnectTimeout, time.Second)
		admin.QueryTimeout = 30 * time.Second
		d.ctl = mysql.NewController(admin, mysql.Credentials{User: cfg.Replication.User, Password: cfg.Replication.Password})
	}
	for i := range cfg.Clusters {
		cl := &cfg.Clusters[i]
		cs := &clusterState{cfg: cl, fenced: map[dbpilot.InstanceKey]bool{}, fenceNoted: map[dbpilot.InstanceKey]string{}, wake: make(chan struct{}, 1), lastSeen: map[dbpilot.InstanceKey]time.Time{}}
		cs.status = dbpilot.ClusterStatus{Name: cl.Name, State: dbpilot.ClusterUnknown, AutoFailover: cl.AutoFailover}
		cs.known = append(cs.known, cl.seeds...)
		d.clusters[cl.Name] = cs
		d.order = append(d.order, cl.Name)
	}
	return d
}

// Close releases connections.
func (d *Daemon) Close() error {
	d.probe.Close()
	if c, ok := d.ctl.(interface{ Close() error }); ok {
		c.Close()
	}
	return nil
}

// Run watches every cluster until ctx ends.
func (d *Daemon) Run(ctx context.Context) error {
	d.running.Store(true)
	d.restoreFences(ctx)
	var wg sync.WaitGroup
	if d.mon != nil {
		defer d.mon.stop()
		rules, err := d.cfg.LoadAlertRules()
		if err != nil {
			return err
		}
		ev := d.newEvaluator(rules)
		wg.Add(1)
		go func() {
			defer wg.Done()
			ev.Run(ctx)
		}()
	}
	for _, name := range d.order {
		cs := d.clusters[name]
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.watch(ctx, cs)
		}()
	}
	wg.Wait()
	return nil
}

// watch ticks one cluster. A tick that overruns the interval delays the
// next one (time.Ticker drops ticks): probes never pile up. A failed
// liveness ping of the primary starts a tick at once.
func (d *Daemon) watch(ctx context.Context, cs *clusterState) {
	t := time.NewTicker(d.cfg.PollInterval.D())
	defer t.Stop()
	if d.cfg.Detection.LivenessInterval.D() > 0 {
		go d.liveness(ctx, cs)
	}
	for {
		d.tick(ctx, cs, true)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-cs.wake:
		}
	}
}

// liveness watches the cluster's primary between polls at almost no cost:
// it keeps one session on the primary blocked in a long SLEEP. When the
// server dies the connection is reset and the query fails at once, which
// wakes the watch loop to confirm the failure holistically right away
// instead of at the next poll. (A silent network partition raises nothing
// here; the regular probes and their timeouts catch it.) After a failure it
// reconnects every LivenessInterval.
func (d *Daemon) liveness(ctx context.Context, cs *clusterState) {
	opts := d.cfg.Admin()
	opts.Dial = d.dial
	const hold = 30 * time.Second
	opts.QueryTimeout = hold + 5*time.Second
	query := fmt.Sprintf("SELECT /* %s */ SLEEP(%d)", collector.LivenessMarker, int(hold/time.Second))
	healthy := false
	wake := func() {
		if healthy {
			healthy = false
			select {
			case cs.wake <- struct{}{}:
			default:
			}
		}
	}
	for ctx.Err() == nil {
		cs.mu.Lock()
		key := cs.primary
		cs.mu.Unlock()
		if key.IsZero() {
			sleepCtx(ctx, d.cfg.Detection.LivenessInterval.D())
			continue
		}
		db, err := mysql.Open(ctx, key, opts)
		if err != nil {
			wake()
			sleepCtx(ctx, d.cfg.Detection.LivenessInterval.D())
			continue
		}
		healthy = true
		// Hold the session; stop holding when the primary changes.
		qctx, cancel := context.WithCancel(ctx)
		go func() {
			t := time.NewTicker(time.Second)
			defer t.Stop()
			for {
				select {
				case <-qctx.Done():
					return
				case <-t.C:
					cs.mu.Lock()
					changed := cs.primary != key
					cs.mu.Unlock()
					if changed {
						cancel()
						return
					}
				}
			}
		}()
		for qctx.Err() == nil {
			var v int
			if err = db.SQL().QueryRowContext(qctx, query).Scan(&v); err != nil {
				break
			}
		}
		cancel()
		db.Close()
		if ctx.Err() != nil {
			return
		}
		cs.mu.Lock()
		changed := cs.primary != key
		cs.mu.Unlock()
		if !changed {
			d.log.Debug("liveness session lost; confirming now", "cluster", cs.cfg.Name, "primary", key.String(), "err", err)
			wake()
			sleepCtx(ctx, d.cfg.Detection.LivenessInterval.D())
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// restoreFences re-arms fencing of old primaries from recent recoveries.
func (d *Daemon) restoreFences(ctx context.Context) {
	if d.store == nil {
		return
	}
	for _, cs := range d.clusters {
		recs, err := d.store.Recoveries(ctx, dbpilot.RecoveryFilter{Cluster: cs.cfg.Name, Limit: 20})
		if err != nil {
			d.log.Warn("read recoveries", "cluster", cs.cfg.Name, "err", err)
			continue
		}
		cs.mu.Lock()
		for i, r := range recs {
			if i == 0 && r.Success && !r.NewPrimary.IsZero() {
				cs.primary = r.NewPrimary
				cs.known = appendKey(cs.known, r.NewPrimary)
			}
			if r.Success && r.Kind != dbpilot.RecoverySwitchover && time.Since(r.Ended) < 24*time.Hour {
				cs.fenced[r.OldPrimary] = true
				cs.known = appendKey(cs.known, r.OldPrimary)
			}
		}
		cs.mu.Unlock()
	}
}

func appendKey(keys []dbpilot.InstanceKey, k dbpilot.InstanceKey) []dbpilot.InstanceKey {
	for _, x := range keys {
		if x.Equal(k) {
			return keys
		}
	}
	return append(keys, k)
}

// observe crawls the cluster once and updates its state; it returns the
// cluster's instances and its primary.
func (d *Daemon) observe(ctx context.Context, cs *clusterState) ([]*dbpilot.Instance, *dbpilot.Instance, error) {
	cs.mu.Lock()
	seeds := append([]dbpilot.InstanceKey(nil), cs.known...)
	if !cs.primary.IsZero() {
		seeds = appendKey(seeds, cs.primary)
	}
	cur := cs.primary
	cs.mu.Unlock()

	bound := d.cfg.PollInterval.D()
	if !d.running.Load() {
		bound = 10 * time.Second
	}
	all, err := topology.Discover(ctx, d.probe, seeds, topology.Options{Concurrency: d.cfg.DiscoveryBound, Timeout: max(bound, 2*d.cfg.Detection.ProbeTimeout.D())})
	if err != nil && len(all) == 0 {
		return nil, nil, err
	}
	comps := topology.Clusters(all)
	comp := pickComponent(comps, cur, cs.cfg.seeds)
	var members []*dbpilot.Instance
	var primary *dbpilot.Instance
	var detached []*dbpilot.Instance
	in := map[dbpilot.InstanceKey]bool{}
	if comp != nil {
		members = comp.Instances
		for _, i := range members {
			in[i.Key.Normalized()] = true
		}
		if len(comp.Primaries) > 0 {
			primary = comp.Instance(comp.Primaries[0])
			if cur != (dbpilot.InstanceKey{}) {
				if p := comp.Instance(cur); p != nil && isPrimaryOf(comp, cur) {
					primary = p
				}
			}
		}
	}
	for _, i := range all {
		if !in[i.Key.Normalized()] {
			detached = append(detached, i)
		}
	}
	problems := topology.Analyze(members, topology.AnalyzeOptions{})

	cs.mu.Lock()
	now := time.Now()
	for _, i := range all {
		if i.Reachable {
			cs.known = appendKey(cs.known, i.Key)
			cs.lastSeen[i.Key.Normalized()] = now
		}
	}
	forgotten := cs.ageOut(now, d.cfg.ForgetAfter.D(), primary)
	cs.instances, cs.detached = members, detached
	if primary != nil {
		cs.primary = primary.Key
		cs.status.Primary = primary.Key
	}
	cs.status.Instances = members
	cs.status.Problems = problems
	if problems == nil {
		cs.status.Problems = []dbpilot.Problem{}
	}
	cs.status.ObservedAt = time.Now()
	if comp != nil && len(comp.Primaries) > 1 {
		cs.status.State = dbpilot.ClusterOK
	}
	cs.mu.Unlock()
	if d.mon != nil && d.running.Load() {
		d.mon.reconcile(ctx, cs.cfg.Name, members, primary)
	}
	for _, k := range forgotten {
		d.probe.Forget(k)
		if d.store != nil {
			if err := d.store.ForgetInstance(ctx, cs.cfg.Name, k); err != nil {
				d.log.Warn("forget instance", "cluster", cs.cfg.Name, "err", err)
			}
		}
		d.audit(ctx, dbpilot.AuditEvent{Cluster: cs.cfg.Name, Instance: k, Event: dbpilot.AuditForget,
			Message: fmt.Sprintf("%s was not seen for %s: no longer part of cluster %s", k, d.cfg.ForgetAfter.D(), cs.cfg.Name)})
	}
	if d.store != nil && len(members) > 0 {
		if err := d.store.SaveInstances(ctx, cs.cfg.Name, members); err != nil {
			d.log.Warn("save instances", "cluster", cs.cfg.Name, "err", err)
		}
	}
	return members, primary, nil
}

// ageOut drops known instances unreachable for longer than after, except
// configured seeds, the primary and fenced old primaries. The caller holds
// cs.mu.
func (cs *clusterState) ageOut(now time.Time, after time.Duration, primary *dbpilot.Instance) []dbpilot.InstanceKey {
	keep := map[dbpilot.InstanceKey]bool{}
	for _, k := range cs.cfg.seeds {
		keep[k.Normalized()] = true
	}
	if primary != nil {
		keep[primary.Key.Normalized()] = true
	}
	for k := range cs.fenced {
		keep[k.Normalized()] = true
	}
	var out []dbpilot.InstanceKey
	kept := cs.known[:0]
	for _, k := range cs.known {
		nk := k.Normalized()
		seen, ok := cs.lastSeen[nk]
		if !ok {
			cs.lastSeen[nk] = now // first crawl: start the clock
			seen = now
		}
		if !keep[nk] && now.Sub(seen) > after {
			out = append(out, k)
			delete(cs.lastSeen, nk)
			continue
		}
		kept = append(kept, k)
	}
	cs.known = kept
	return out
}

// isPrimaryOf reports whether k is one of the component's primaries.
func isPrimaryOf(c *dbpilot.Cluster, k dbpilot.InstanceKey) bool {
	for _, p := range c.Primaries {
		if p.Equal(k) {
			return true
		}
	}
	return false
}

// pickComponent chooses the cluster among the discovered components: the
// one holding the current primary, else the one holding the first seed that
// belongs to a component with a reachable member, else the largest.
func pickComponent(comps []*dbpilot.Cluster, cur dbpilot.InstanceKey, seeds []dbpilot.InstanceKey) *dbpilot.Cluster {
	reachable := func(c *dbpilot.Cluster) int {
		n := 0
		for _, i := range c.Instances {
			if i.Reachable {
				n++
			}
		}
		return n
	}
	if !cur.IsZero() {
		for _, c := range comps {
			if c.Instance(cur) != nil && (len(c.Instances) > 1 || reachable(c) > 0) {
				return c
			}
		}
	}
	sorted := append([]*dbpilot.Cluster(nil), comps...)
	sort.SliceStable(sorted, func(i, j int) bool { return len(sorted[i].Instances) > len(sorted[j].Instances) })
	for _, c := range sorted {
		if reachable(c) == 0 {
			continue
		}
		for _, s := range seeds {
			if c.Instance(s) != nil {
				return c
			}
		}
	}
	if len(sorted) > 0 {
		return sorted[0]
	}
	return nil
}

// tick observes the cluster, assesses its primary and, when auto is set
// and the primary is dead, recovers it.
func (d *Daemon) tick(ctx context.Context, cs *clusterState, auto bool) {
	members, primary, err := d.observe(ctx, cs)
	if err != nil {
		d.log.Warn("discovery failed", "cluster", cs.cfg.Name, "err", err)
		cs.mu.Lock()
		cs.status.State = dbpilot.ClusterUnknown
		cs.mu.Unlock()
		return
	}
	d.fence(ctx, cs)
	if primary == nil {
		return
	}
	v := d.assess(ctx, cs, primary, members)
	if !auto || v.State != dbpilot.ClusterDead || !cs.cfg.AutoFailover {
		return
	}
	if cs.multiPrimary() {
		d.note(cs, "auto-failover-skipped", "the cluster has several writers (ring or multi-source): automatic failover is not supported")
		return
	}
	if until := d.blockedUntil(ctx, cs); !until.IsZero() {
		d.note(cs, "blocked", fmt.Sprintf("automatic recovery blocked until %s by a recent recovery; acknowledge it with 'dbpilot ack %s'", until.Format(time.RFC3339), cs.cfg.Name))
		return
	}
	if !cs.op.TryLock() {
		return
	}
	defer cs.op.Unlock()
	if _, err := d.failover(ctx, cs, dbpilot.RecoveryFailoverAuto, false); err != nil {
		d.log.Error("automatic failover failed", "cluster", cs.cfg.Name, "err", err)
	}
}

func (cs *clusterState) multiPrimary() bool {
	n := 0
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for _, i := range cs.instances {
		if !i.IsReplica() {
			n++
		}
	}
	if n > 1 {
		return true
	}
	// A ring: every member is a replica.
	return n == 0 && len(cs.instances) > 0
}

// note logs a message once per distinct text for the cluster's current failure.
func (d *Daemon) note(cs *clusterState, event, msg string) {
	cs.mu.Lock()
	same := cs.lastVerdict == event+msg
	cs.lastVerdict = event + msg
	cs.mu.Unlock()
	if !same {
		d.log.Warn(msg, "cluster", cs.cfg.Name, "event", event)
	}
}

// assess confirms a failed probe at once: re-probe the primary and ask every
// replica of it in parallel, then decide with Assess.
func (d *Daemon) assess(ctx context.Context, cs *clusterState, primary *dbpilot.Instance, members []*dbpilot.Instance) Verdict {
	if primary.Reachable {
		cs.mu.Lock()
		wasFailing := !cs.failingSince.IsZero()
		cs.failingSince = time.Time{}
		cs.status.State = dbpilot.ClusterOK
		cs.lastVerdict = ""
		cs.mu.Unlock()
		if wasFailing {
			d.log.Info("primary reachable again", "cluster", cs.cfg.Name, "primary", primary.Key.String())
		}
		return Assess(true, primary.Key, nil)
	}
	cs.mu.Lock()
	if cs.failingSince.IsZero() {
		cs.failingSince = primary.ObservedAt
	}
	cs.mu.Unlock()
	cctx, cancel := context.WithTimeout(ctx, d.cfg.Detection.ConfirmTimeout.D())
	defer cancel()
	var keys []dbpilot.InstanceKey
	for _, m := range members {
		if m.Channel(primary.Key) != nil {
			keys = append(keys, m.Key)
		}
	}
	fresh := make([]*dbpilot.Instance, len(keys))
	var wg sync.WaitGroup
	reachable := false
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, err := d.probe.Inspect(cctx, primary.Key)
		reachable = err == nil
	}()
	for i, k := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			inst, err := d.probe.Inspect(cctx, k)
			if err != nil {
				inst = &dbpilot.Instance{Key: k, LastError: err.Error(), ObservedAt: time.Now()}
			}
			fresh[i] = inst
		}()
	}
	wg.Wait()
	v := Assess(reachable, primary.Key, fresh)
	cs.mu.Lock()
	cs.status.State = v.State
	cs.mu.Unlock()
	d.note(cs, v.State, v.Reason)
	return v
}

// blockedUntil returns when automatic recovery of the cluster is allowed
// again, or zero when it is not blocked.
func (d *Daemon) blockedUntil(ctx context.Context, cs *clusterState) time.Time {
	if d.store == nil {
		return time.Time{}
	}
	recs, err := d.store.Recoveries(ctx, dbpilot.RecoveryFilter{Cluster: cs.cfg.Name, Limit: 1})
	if err != nil || len(recs) == 0 {
		return time.Time{}
	}
	r := recs[0]
	if r.Acked || r.Kind == dbpilot.RecoverySwitchover || r.Kind == dbpilot.RecoveryRelocate {
		return time.Time{}
	}
	end := r.Ended
	if end.IsZero() {
		end = r.Started
	}
	until := end.Add(d.cfg.Recovery.BlockPeriod.D())
	if time.Now().Before(until) {
		return until
	}
	return time.Time{}
}

func (d *Daemon) audit(ctx context.Context, e dbpilot.AuditEvent) {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	d.log.Info(e.Message, "cluster", e.Cluster, "event", e.Event, "recovery", e.RecoveryID)
	if d.store != nil {
		if err := d.store.Audit(ctx, e); err != nil {
			d.log.Warn("write audit", "err", err)
		}
	}
}
