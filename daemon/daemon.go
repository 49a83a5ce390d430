package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/internal/stall"
	"github.com/dbpilot/dbpilot/recovery"
	"github.com/dbpilot/dbpilot/topology"
)

// Daemon watches clusters and recovers them. It implements
// dbpilot.ClusterService; Run starts the watch loops (serve), and without
// Run every service call observes the cluster afresh (the CLI acting
// directly).
type Daemon struct {
	cfg     *Config
	store   dbpilot.StateStore
	probe   Prober                        // monitoring: short timeouts, one connection per instance
	detect  Prober                        // failure confirmation, never queued behind monitoring (probe when nil in Options)
	ctl     dbpilot.ReplicationController // every topology change goes through it
	live    Liveness                      // nil: no liveness sessions
	now     func() time.Time
	sleep   func(ctx context.Context, d time.Duration) error // nil: a timer (recovery.Clock)
	log     *slog.Logger
	version string
	started time.Time
	running atomic.Bool // the watch loops run (serve); service calls then read their state
	closers []io.Closer // what Close releases besides probe and ctl (set by the wiring)
	// fleetFigures is the fleet's group commit and applier figures, read
	// from the metrics every figuresEvery (groupcommit.go).
	fleetFigures figureCache

	// recloner re-provisions a server for 'dbpilot rejoin --reclone' (nil:
	// refused).
	recloner dbpilot.Recloner

	clusters map[string]*clusterState
	order    []string
	owners   owners  // which cluster each observed server belongs to
	silence  silence // what each replica channel received, and since when
	// bg owns goroutines a recovery leaves running (the engine's watch of an
	// old primary, its standby fence: engineEnv.Go),
	// under bgCtx (Run's context); Run waits for them.
	bg    sync.WaitGroup
	bgCtx context.Context
	hooks *hookGroups

	// Monitoring (serve only): collectors feed metrics; alerts evaluate them.
	metrics    MetricsBackend
	alertStore dbpilot.AlertStore
	queryStore QueryStore // nil: no query analytics
	// history keeps the topology history (nil: none); changes gathers what
	// serve records into it (nil without it).
	history dbpilot.TopologyHistory
	changes *batcher[dbpilot.TopologyChange]
	// queries gathers the statements collectors' intervals for the
	// queryStore (nil with it).
	queries *queryBatcher
	// binlogBackup streams backup.binlog's cluster (nil: none).
	binlogBackup *binlogBackup
	mon          *monitor

	// Several serves (nil: this serve acts alone).
	coord   dbpilot.Coordinator
	forward func(api string) dbpilot.ClusterService
}

// clusterState is what the daemon knows of one cluster.
type clusterState struct {
	cfg *ClusterConfig

	// eng is the cluster's failover engine: its detection state, the old
	// primaries to fence, the operation lock (one topology change at a
	// time, automatic or requested) and the recoveries it resumes.
	eng *recovery.Engine

	mu       sync.Mutex
	status   dbpilot.ClusterStatus
	primary  dbpilot.InstanceKey   // current primary, as last decided
	known    []dbpilot.InstanceKey // every instance seen, crawled each tick
	lastSeen map[dbpilot.InstanceKey]time.Time
	// placed is the last observation with replication channels of every
	// member (withLastKnown): one observation that missed a crashed
	// member does not lose its place for good.
	placed    map[dbpilot.InstanceKey]*dbpilot.Instance
	instances []*dbpilot.Instance // the cluster's instances at the last tick
	detached  []*dbpilot.Instance // seen but outside the cluster (a fenced old primary, a lone seed)
	adopted   int64               // the last shared recovery of another serve whose new primary was adopted
	savedSig  string              // the members as last saved (shouldSave)
	savedAt   time.Time
	// overlap are the ClusterOverlap problems of the last observation:
	// while there are any, automatic recovery is suspended.
	overlap []dbpilot.Problem
	// hist is the cluster as the topology history last recorded it (nil
	// until read from the store at the first observation); histMu orders
	// the observations recording into it (recordHistory).
	histMu sync.Mutex
	hist   *topology.Snapshot
	// The alerted problems as last written (noteProblems).
	problemSig     string
	problemAt      dbpilot.InstanceKey
	problemWritten time.Time
	// apply is the last minute of transaction counters, for the
	// replicas' catch-up predictions.
	apply applyState
	// figures are the group commit and applier figures last read from
	// the metrics (readFigures; nil before).
	figures *applyFigures
	// wake asks the watch loop for a tick now (a failed liveness ping).
	wake chan struct{}
	// primaryChanged is closed (and replaced) when primary changes: the
	// liveness session then moves to the new primary.
	primaryChanged chan struct{}
	// changed is closed (and replaced) whenever status changes: watchers
	// (ClusterChanged) are told at once.
	changed chan struct{}
}

// touch tells the status's watchers that it changed. The caller holds cs.mu.
func (cs *clusterState) touch() {
	close(cs.changed)
	cs.changed = make(chan struct{})
}

// notify is touch for a caller that does not hold cs.mu (a change outside
// the status itself: the last recovery, an observation that failed).
func (cs *clusterState) notify() {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.touch()
}

// setPrimary records the cluster's current primary. The caller holds cs.mu.
func (cs *clusterState) setPrimary(k dbpilot.InstanceKey) {
	if cs.primary == k {
		return
	}
	cs.primary = k
	close(cs.primaryChanged)
	cs.primaryChanged = make(chan struct{})
}

// promoted records that k was promoted (replication removed) by a
// recovery, of this serve or another's: until the next observation reaches
// it, the place it had as a replica is not given back to it. Without it, a
// new primary that died before this serve observed it (killed right after
// its promotion, or a serve that does not observe the cluster) was taken
// for a replica of its dead predecessor, and the cluster for one whose
// primary nobody can confirm dead. The caller holds cs.mu.
func (cs *clusterState) promoted(k dbpilot.InstanceKey) {
	cs.setPrimary(k)
	delete(cs.placed, k.Normalized())
	for i, in := range cs.instances {
		if in.Key.Equal(k) && len(in.Channels) > 0 {
			cp := *in
			cp.Channels = nil
			cs.instances = slices.Clone(cs.instances)
			cs.instances[i] = &cp
		}
	}
}

// Options are the daemon's collaborators. Inspector and Controller are
// required; Wire (wire.go) builds every adapter from the configuration,
// and unit tests pass mocks.
type Options struct {
	// Inspector probes servers for monitoring and discovery.
	Inspector Prober
	// Detector reads servers to confirm a primary's failure (the
	// re-probe of the primary and the read of its replicas). It never
	// queues behind a crawl holding an instance's monitoring connection:
	// the wiring's reads through that connection when it is idle and
	// through connections of its own when it is not. Nil: the Inspector.
	Detector Prober
	// Controller makes every topology change (failover, switchover,
	// relocate, fencing, rejoin) and reads servers afresh before one.
	Controller dbpilot.ReplicationController
	// Recloner re-provisions a server from another of its cluster for a
	// rejoin with reclone (nil: such a rejoin is refused).
	Recloner dbpilot.Recloner
	// Liveness, when set and detection.liveness_interval is positive, keeps
	// a session on each primary between polls to notice its death at once.
	Liveness Liveness
	// Collectors, with Metrics, starts metric collection per instance.
	Collectors CollectorStarter

	Store dbpilot.StateStore
	// Metrics, with Collectors, turns on collection and alerts (serve);
	// AlertStore keeps alert states (the sqlite store implements it).
	Metrics    MetricsBackend
	AlertStore dbpilot.AlertStore
	// History keeps the topology history (the sqlite store implements
	// it): serve records every change it observes into it, and answers
	// ClusterAt and TopologyChanges from it. Nil: no history.
	History dbpilot.TopologyHistory
	// QueryStore keeps query statistics (the sqlite store implements it);
	// with Collectors and queries on, each instance gets a statements
	// collector recording into it.
	QueryStore QueryStore

	// Coordinator, when set, makes this serve one of several: it changes a
	// cluster only as its leader, under a fencing check. Forward returns a
	// client of the serve at api, to pass it a request for a cluster it leads.
	Coordinator dbpilot.Coordinator
	Forward     func(api string) dbpilot.ClusterService

	// Now is the clock (nil: time.Now); tests drive time with it.
	Now func() time.Time
	// Sleep waits d or until ctx ends (nil: a timer). With Now, it is
	// the recovery executor's clock: its polls and deadlines (apply,
	// repoint verification, drain) run on it, so a test with a fake Now
	// gives a Sleep that advances it.
	Sleep   func(ctx context.Context, d time.Duration) error
	Logger  *slog.Logger
	Version string
}

// Prober reads servers for monitoring: short timeouts, one connection kept
// per instance. The mysql package's Inspector implements it.
type Prober interface {
	dbpilot.Inspector
	// Forget drops what is kept for an instance that left its cluster.
	Forget(key dbpilot.InstanceKey) error
}

// Liveness keeps a cheap session on a primary between polls, so that its
// death is noticed at once (mysql.Liveness holds a long SLEEP).
type Liveness interface {
	// Hold connects to key, calls connected once the session is up, and
	// blocks until the session is lost (an error) or ctx ends (nil).
	Hold(ctx context.Context, key dbpilot.InstanceKey, connected func()) error
}

// StandbyFencer is implemented by Liveness adapters that keep an idle
// session on each primary they hold (mysql.Liveness); the recovery
// executor sends the standby fence through it (recovery.StandbyFencer).
type StandbyFencer = recovery.StandbyFencer

// CollectorStarter starts metric collection on one instance. The heartbeat
// collector writes on the instance only as gate allows (heartbeat.go).
type CollectorStarter interface {
	Start(ctx context.Context, t dbpilot.MonitorTarget, base dbpilot.Batch, gate *HeartbeatGate) MetricsCollector
}

// CollectionHolder is implemented by a CollectorStarter whose collection
// can be held: no new run starts until release, or for at most max (the
// recovery engine holds it while it confirms a failure).
type CollectionHolder interface {
	Hold(max time.Duration) (release func())
}

// MetricsCollector is the collection running on one instance.
type MetricsCollector interface {
	// SetTarget updates what the collectors know of the instance (its role
	// after a failover, its primary's server_id).
	SetTarget(t dbpilot.MonitorTarget)
	// Stop stops collection and waits for it.
	Stop()
}

// New returns a daemon for cfg (already validated) acting through the
// adapters of opt. It panics without opt.Inspector or opt.Controller.
func New(cfg *Config, opt Options) *Daemon {
	if opt.Inspector == nil || opt.Controller == nil {
		panic("daemon.New: Options.Inspector and Options.Controller are required (see daemon.Wire)")
	}
	d := &Daemon{
		cfg:      cfg,
		store:    opt.Store,
		probe:    opt.Inspector,
		detect:   opt.Detector,
		ctl:      opt.Controller,
		recloner: opt.Recloner,
		live:     opt.Liveness,
		now:      opt.Now,
		sleep:    opt.Sleep,
		log:      opt.Logger,
		version:  opt.Version,
		clusters: map[string]*clusterState{},
		coord:    opt.Coordinator,
		forward:  opt.Forward,
	}
	if d.now == nil {
		d.now = time.Now
	}
	if d.detect == nil {
		d.detect = d.probe
	}
	d.hooks = &hookGroups{}
	if cfg.State != "" && !strings.HasPrefix(cfg.State, ":") {
		d.hooks.path = cfg.State + ".hooks"
	}
	d.started = d.now()
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	d.alertStore = opt.AlertStore
	if opt.History != nil {
		d.history = opt.History
		d.changes = newChangeBatcher(opt.History, d.log)
	}
	if !cfg.Queries.Disabled && opt.Metrics != nil && opt.Collectors != nil && opt.QueryStore != nil {
		d.queryStore = opt.QueryStore
		d.queries = newQueryBatcher(opt.QueryStore, d.log)
	}
	if m, ok := d.coord.(interface {
		OnRecovery(func(*dbpilot.SharedRecovery))
	}); ok {
		// Recoveries other serves record are copied into our state store.
		m.OnRecovery(d.mirror)
	}
	if h, ok := d.coord.(interface {
		OnHandover(func(cluster string, give func()) bool)
	}); ok {
		// A leader hands a cluster over only between topology changes.
		h.OnHandover(d.handover)
	}
	if opt.Metrics != nil && opt.Collectors != nil && !cfg.Metrics.Disabled {
		d.metrics = opt.Metrics
		d.mon = &monitor{d: d, start: opt.Collectors, forget: opt.Metrics.Forget, runners: map[dbpilot.InstanceKey]*runnerEntry{}}
	}
	for i := range cfg.Clusters {
		cl := &cfg.Clusters[i]
		cs := &clusterState{cfg: cl,
			wake: make(chan struct{}, 1), primaryChanged: make(chan struct{}), changed: make(chan struct{}), lastSeen: map[dbpilot.InstanceKey]time.Time{}}
		cs.status = dbpilot.ClusterStatus{Name: cl.Name, State: dbpilot.ClusterUnknown, AutoFailover: cl.AutoFailover}
		cs.known = append(cs.known, cl.seeds...)
		cs.eng = d.newEngine(cs)
		d.clusters[cl.Name] = cs
		d.order = append(d.order, cl.Name)
	}
	if b := cfg.Backup.Binlog; b != nil {
		if cs, ok := d.clusters[b.Cluster]; ok {
			d.binlogBackup = &binlogBackup{d: d, cfg: *b, cs: cs}
		}
	}
	return d
}

// Close releases the connections of the inspector and controller, and
// whatever the wiring gave the daemon to own (state and metrics stores).
func (d *Daemon) Close() error {
	var first error
	closeOne := func(v any) {
		if c, ok := v.(io.Closer); ok {
			if err := c.Close(); err != nil && first == nil {
				first = err
			}
		}
	}
	closeOne(d.probe)
	if d.detect != d.probe {
		closeOne(d.detect)
	}
	closeOne(d.ctl)
	for i := len(d.closers) - 1; i >= 0; i-- {
		closeOne(d.closers[i])
	}
	return first
}

// Run watches every cluster until ctx ends. It returns once every goroutine
// it started (watch loops, liveness sessions, alert evaluation, collectors)
// has stopped.
func (d *Daemon) Run(ctx context.Context) error {
	defer func() {
		// Last, once every loop that observes or collects has stopped:
		// their last changes and intervals too.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if d.changes != nil {
			d.changes.flush(fctx)
		}
		if d.queries != nil {
			d.queries.flush(fctx)
		}
	}()
	d.bgCtx = ctx
	defer d.bg.Wait()
	// The stall meter runs while serve does: a timeout while serve could
	// not run is not held against a server (discoveryInspector, the
	// collectors).
	stall.Acquire()
	defer stall.Release()
	d.running.Store(true)
	d.killLeftoverHooks(ctx)
	d.reloadKnown(ctx)
	d.restoreFences(ctx)
	var wg sync.WaitGroup
	if d.mon != nil {
		defer d.mon.stop()
		rules, err := d.cfg.LoadAlertRules()
		if err != nil {
			return err
		}
		if err := d.unqueryable(); err != nil {
			d.log.Warn("alert evaluation and the PromQL API are off", "reason", err)
		} else {
			ev := d.newEvaluator(rules)
			wg.Add(1)
			go func() {
				defer wg.Done()
				ev.Run(ctx)
			}()
		}
	}
	if q := d.queries; q != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q.run(ctx, queryBatchEvery)
		}()
	}
	if c := d.changes; c != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.run(ctx, changeBatchEvery)
		}()
	}
	if b := d.binlogBackup; b != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.run(ctx)
		}()
	}
	if _, ok := d.store.(dbpilot.Pruner); ok || d.queryStore != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.pruneLoop(ctx)
		}()
	}
	if d.coord != nil && d.forward != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.shadowLoop(ctx)
		}()
	}
	for _, name := range d.order {
		cs := d.clusters[name]
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.watch(ctx, cs)
		}()
		if d.live != nil && d.cfg.Detection.LivenessInterval.D() > 0 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				d.liveness(ctx, cs)
			}()
		}
	}
	wg.Wait()
	return nil
}

// pruneEvery is how often the state is pruned by age.
const pruneEvery = time.Hour

// pruneLoop deletes, at start and every pruneEvery, the history older than
// the configured retention.
func (d *Daemon) pruneLoop(ctx context.Context) {
	t := time.NewTicker(pruneEvery)
	defer t.Stop()
	for {
		d.prune(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// prune deletes the history older than the retention once.
func (d *Daemon) prune(ctx context.Context) {
	d.pruneQueries(ctx)
	p, ok := d.store.(dbpilot.Pruner)
	if !ok {
		return
	}
	before := d.now().Add(-d.cfg.Retention.D())
	n, err := p.Prune(ctx, before)
	switch {
	case err != nil:
		if ctx.Err() == nil {
			d.log.Warn("prune state", "err", err)
		}
	case n != (dbpilot.Pruned{}):
		d.log.Info("state pruned", "before", before.Format(time.RFC3339), "audit", n.Audit, "recoveries", n.Recoveries, "alerts", n.Alerts, "changes", n.Changes)
	}
}

// watch ticks one cluster. With coordination it observes the cluster only
// while this serve owns it (observes); otherwise it queries none of its
// servers. A tick that overruns the interval delays the
// next one (time.Ticker drops ticks): probes never pile up. A failed
// liveness ping of the primary starts a tick at once.
func (d *Daemon) watch(ctx context.Context, cs *clusterState) {
	t := time.NewTicker(d.cfg.PollInterval.D())
	defer t.Stop()
	confirm := false
	observing := true
	for {
		owned := d.observes(cs.cfg.Name)
		switch {
		case !owned:
			if observing {
				d.release(ctx, cs)
			}
		case confirm:
			d.confirmTick(ctx, cs)
		default:
			if !observing {
				d.log.Info("coordination: observing the cluster and collecting its metrics", "cluster", cs.cfg.Name, "member", d.coord.Member())
			}
			d.tick(ctx, cs, true)
		}
		observing = owned
		confirm = false
		// While the primary fails to answer and is not yet confirmed dead
		// (a hung primary: its replicas have not all lost it yet), confirm
		// again every recovery.ConfirmEvery rather than at the next poll.
		var soon <-chan time.Time
		var tm *time.Timer
		if cs.eng.Confirming() && d.cfg.PollInterval.D() > recovery.ConfirmEvery {
			tm = time.NewTimer(recovery.ConfirmEvery)
			soon = tm.C
		}
		select {
		case <-ctx.Done():
		case <-t.C:
		case <-soon:
			confirm = true
		case <-cs.wake:
		}
		if tm != nil {
			tm.Stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// liveness watches the cluster's primary between polls at almost no cost
// through d.live (a session blocked in a long SLEEP). When the session is
// lost it wakes the watch loop to confirm the failure holistically right
// away instead of at the next poll. After a failure it reconnects every
// LivenessInterval; when the primary changes it moves to the new one.
func (d *Daemon) liveness(ctx context.Context, cs *clusterState) {
	interval := d.cfg.Detection.LivenessInterval.D()
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
		if !d.observes(cs.cfg.Name) {
			// Another serve owns the cluster: its liveness is the owner's.
			sleepCtx(ctx, d.cfg.PollInterval.D())
			continue
		}
		cs.mu.Lock()
		key, changed := cs.primary, cs.primaryChanged
		cs.mu.Unlock()
		if key.IsZero() {
			select {
			case <-ctx.Done():
			case <-changed:
			case <-time.After(d.cfg.PollInterval.D()):
			}
			continue
		}
		hctx, cancel := context.WithCancel(ctx)
		moved := make(chan bool, 1)
		go func() {
			var owner <-chan time.Time
			if d.coord != nil {
				tk := time.NewTicker(d.cfg.PollInterval.D())
				defer tk.Stop()
				owner = tk.C
			}
			for {
				select {
				case <-changed:
					cancel()
					moved <- true
					return
				case <-owner:
					if !d.observes(cs.cfg.Name) {
						cancel()
						moved <- true
						return
					}
				case <-hctx.Done():
					moved <- false
					return
				}
			}
		}()
		err := d.live.Hold(hctx, key, func() { healthy = true })
		cancel()
		if <-moved || ctx.Err() != nil {
			continue
		}
		d.log.Debug("liveness session lost; confirming now", "cluster", cs.cfg.Name, "primary", key.String(), "err", err)
		if healthy {
			// Confirmed here, from the last observation, not behind the
			// next crawl (Engine.SessionLost); the watch loop then observes
			// the outcome (a new primary, or a primary not yet confirmed
			// dead, confirmed again every recovery.ConfirmEvery).
			cs.eng.SessionLost(ctx, key, err)
		}
		wake()
		sleepCtx(ctx, interval)
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

// restoreFences re-arms fencing of old primaries from recent recoveries
// (recovery.Engine.RestoreFences, for every cluster).
func (d *Daemon) restoreFences(ctx context.Context) {
	for _, name := range d.order {
		d.clusters[name].eng.RestoreFences(ctx)
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

// withUninspected adds to a partial crawl (all) the last observation of
// each previous member it did not return; stale reports which those are.
func withUninspected(all, prev []*dbpilot.Instance) (merged []*dbpilot.Instance, stale map[dbpilot.InstanceKey]bool) {
	seen := make(map[dbpilot.InstanceKey]bool, len(all))
	for _, i := range all {
		seen[i.Key.Normalized()] = true
	}
	merged = all
	for _, p := range prev {
		if k := p.Key.Normalized(); !seen[k] {
			if stale == nil {
				merged, stale = slices.Clone(all), map[dbpilot.InstanceKey]bool{}
			}
			merged = append(merged, p)
			stale[k], seen[k] = true, true
		}
	}
	return merged, stale
}

// withLastKnown gives each instance of the crawl that did not answer, and
// was a member at the previous observation, the place it had in the tree
// then (its channels, identity and version), still unreachable with the
// new error. Without it a crashed replica had no channels, fell out of
// the cluster as a lone component, and its monitoring stopped: mysql_up
// vanished and MySQLDown resolved as "left the topology" instead of
// firing. It stays a member, unreachable, until forget_after.
func withLastKnown(all, prev []*dbpilot.Instance) []*dbpilot.Instance {
	if len(prev) == 0 {
		return all
	}
	last := make(map[dbpilot.InstanceKey]*dbpilot.Instance, len(prev))
	for _, p := range prev {
		last[p.Key.Normalized()] = p
	}
	var out []*dbpilot.Instance
	for i, in := range all {
		p := last[in.Key.Normalized()]
		if in.Reachable || p == nil || len(p.Channels) == 0 || len(in.Channels) > 0 {
			continue
		}
		if out == nil {
			out = slices.Clone(all)
		}
		cp := *in
		cp.Channels = p.Channels
		cp.Flavor, cp.Version, cp.ServerID, cp.ServerUUID = p.Flavor, p.Version, p.ServerID, p.ServerUUID
		out[i] = &cp
	}
	if out == nil {
		return all
	}
	return out
}

// observe crawls the cluster once and updates its state; it returns the
// cluster's instances and its primary.
func (d *Daemon) observe(ctx context.Context, cs *clusterState) ([]*dbpilot.Instance, *dbpilot.Instance, error) {
	defer d.noteDiscovery(cs, time.Now())
	c, err := d.crawl(ctx, cs)
	if err != nil {
		return nil, nil, err
	}
	comp, members, primary, detached := placeMembers(c.all, c.cur, cs.cfg.seeds)
	var pk dbpilot.InstanceKey
	if primary != nil {
		pk = primary.Key
	}
	problems, fenced, overlap := d.problemsOf(cs, members, primary, detached, c.toFence)
	forgotten := d.record(cs, c, comp, members, primary, detached, problems, fenced, overlap)
	d.recordHistory(ctx, cs, c, members)
	if d.mon != nil && d.running.Load() {
		d.mon.reconcile(ctx, cs.cfg.Name, members, primary)
	}
	d.noteProblems(cs, pk, problems)
	cs.mu.Lock()
	apply := cs.status.ReplicaApply
	cs.mu.Unlock()
	d.noteApply(cs, apply)
	d.forget(ctx, cs, forgotten)
	if d.store != nil && len(members) > 0 && cs.shouldSave(d.now(), members) {
		if err := d.store.SaveInstances(ctx, cs.cfg.Name, members); err != nil && ctx.Err() == nil {
			d.log.Warn("save instances", "cluster", cs.cfg.Name, "err", err)
		}
	}
	return members, primary, nil
}

// errNotAsked marks an inspection that timed out while serve itself could
// not run (discoveryInspector): not a sign of the server.
var errNotAsked = errors.New("serve was stalled")

// crawled is one crawl of a cluster: every instance reached (with the
// members it did not reach at their last observation), from the primary
// cur it started at.
type crawled struct {
	all     []*dbpilot.Instance
	stale   map[dbpilot.InstanceKey]bool // members kept from the last observation (normalized keys)
	cur     dbpilot.InstanceKey
	toFence map[dbpilot.InstanceKey]bool // old primaries to fence (normalized keys)
}

// crawl discovers cs from its known instances and primary, within the
// poll interval (10 s acting directly).
func (d *Daemon) crawl(ctx context.Context, cs *clusterState) (crawled, error) {
	cs.mu.Lock()
	seeds := append([]dbpilot.InstanceKey(nil), cs.known...)
	if !cs.primary.IsZero() {
		seeds = appendKey(seeds, cs.primary)
	}
	c := crawled{cur: cs.primary}
	prev := cs.instances
	cs.mu.Unlock()
	fenced := cs.eng.Fenced()
	c.toFence = make(map[dbpilot.InstanceKey]bool, len(fenced))
	for _, k := range fenced {
		c.toFence[k.Normalized()] = true
	}

	bound := d.cfg.PollInterval.D()
	if !d.running.Load() || c.cur.IsZero() {
		// At start, and until a cluster's primary is known, nothing waits
		// on the crawl: it may take the time a serve starting on a large
		// fleet needs for its first connections (cut at the poll interval,
		// every crawl of 1000 instances on 2 cores started over and none
		// finished).
		bound = 10 * time.Second
	}
	all, err := topology.Discover(ctx, d.cfg.discoveryInspector(d.probe, cs.cfg), seeds, topology.Options{Concurrency: d.cfg.DiscoveryBound, Timeout: max(bound, 2*d.cfg.Detection.ProbeTimeout.D()), Now: d.now,
		// The current primary's timeout always counts: a hung primary
		// (SIGSTOP, a frozen host) is found by it, and a loaded serve
		// must not put that off.
		NotAsked: func(k dbpilot.InstanceKey, err error) bool { return errors.Is(err, errNotAsked) && !k.Equal(c.cur) }})
	if err != nil && len(all) == 0 {
		return c, err
	}
	if err != nil {
		// A partial crawl (the bound passed before every instance was
		// inspected): the members it did not reach keep their last
		// observation (its ObservedAt says how old). Without them a
		// replica inspected alone looked like a primary of its own: the
		// cluster's primary moved to it, and the members it left out had
		// their monitoring stopped and their series ended, only for the
		// next crawl to start them again (at 1000 instances under load,
		// every cluster flapped).
		all, c.stale = withUninspected(all, prev)
	}
	cs.mu.Lock()
	if cs.placed == nil {
		cs.placed = map[dbpilot.InstanceKey]*dbpilot.Instance{}
	}
	for _, obs := range [][]*dbpilot.Instance{prev, all} {
		for _, p := range obs {
			switch {
			case !p.Reachable || c.stale[p.Key.Normalized()]:
			case len(p.Channels) > 0:
				cs.placed[p.Key.Normalized()] = p
			default:
				delete(cs.placed, p.Key.Normalized()) // a primary now
			}
		}
	}
	placed := make([]*dbpilot.Instance, 0, len(cs.placed))
	for _, p := range cs.placed {
		placed = append(placed, p)
	}
	cs.mu.Unlock()
	c.all = withLastKnown(all, append(slices.Clone(prev), placed...))
	d.silence.note(c.all, d.now())
	return c, nil
}

// placeMembers splits a crawl into the cluster's component (comp, nil when
// none), its members and primary, and the instances outside it (detached).
func placeMembers(all []*dbpilot.Instance, cur dbpilot.InstanceKey, seeds []dbpilot.InstanceKey) (comp *dbpilot.Cluster, members []*dbpilot.Instance, primary *dbpilot.Instance, detached []*dbpilot.Instance) {
	comp = pickComponent(topology.Clusters(all), cur, seeds)
	in := map[dbpilot.InstanceKey]bool{}
	if comp != nil {
		members = comp.Instances
		for _, i := range members {
			in[i.Key.Normalized()] = true
		}
		if len(comp.Primaries) > 0 {
			primary = comp.Instance(comp.Primaries[0])
			if cur != (dbpilot.InstanceKey{}) {
				// A Galera cluster has no primary to fail over: its
				// "primary" is the node serve watches and writes heartbeats
				// through, and it moves to a live member of the Primary
				// component (listed first) when the current one is lost.
				if p := comp.Instance(cur); p != nil && isPrimaryOf(comp, cur) && (comp.Galera == nil || p.Reachable) {
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
	return comp, members, primary, detached
}

// problemsOf analyzes an observation of cs: the members' problems, the old
// primaries to fence among the detached (fenced, read_only, when they
// answer, with the GTIDs they have that the primary lacks), writable
// detached servers, and servers another cluster claims too (overlap).
func (d *Daemon) problemsOf(cs *clusterState, members []*dbpilot.Instance, primary *dbpilot.Instance, detached []*dbpilot.Instance, toFence map[dbpilot.InstanceKey]bool) (problems []dbpilot.Problem, fenced []dbpilot.FencedInstance, overlap []dbpilot.Problem) {
	problems = topology.Analyze(members, topology.AnalyzeOptions{})
	var pk dbpilot.InstanceKey
	if primary != nil {
		pk = primary.Key
	}
	for _, i := range detached {
		if toFence[i.Key.Normalized()] {
			fenced = append(fenced, topology.FencedOf(i, primary))
		}
	}
	if len(members) > 0 {
		problems = append(problems, topology.DetachedWritable(pk, members, detached)...)
		problems = append(problems, topology.FencedProblems(fenced)...)
	}
	overlap = overlapProblems(cs.cfg.Name, d.owners.claim(cs.cfg.Name, members))
	problems = append(problems, overlap...)
	return problems, fenced, overlap
}

// record makes an observation cs's state and status, and returns the
// instances not seen for forget_after.
func (d *Daemon) record(cs *clusterState, c crawled, comp *dbpilot.Cluster, members []*dbpilot.Instance, primary *dbpilot.Instance, detached []*dbpilot.Instance,
	problems []dbpilot.Problem, fenced []dbpilot.FencedInstance, overlap []dbpilot.Problem) []dbpilot.InstanceKey {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	now := d.now()
	for _, i := range c.all {
		if i.Reachable && !c.stale[i.Key.Normalized()] {
			cs.known = appendKey(cs.known, i.Key)
			cs.lastSeen[i.Key.Normalized()] = now
		}
	}
	forgotten := cs.ageOut(now, d.cfg.ForgetAfter.D(), primary)
	cs.instances, cs.detached = members, detached
	// A primary decided while the crawl ran (a recovery, another serve's
	// recovery adopted) is newer than what the crawl started from: it is
	// kept, and the next tick observes from it.
	if primary != nil && cs.primary == c.cur {
		cs.setPrimary(primary.Key)
		cs.status.Primary = primary.Key
	}
	cs.overlap = overlap
	cs.status.Instances = members
	cs.status.Detached = detached
	cs.status.Fenced = fenced
	cs.status.Problems = problems
	if problems == nil {
		cs.status.Problems = []dbpilot.Problem{}
	}
	cs.status.ObservedAt = now
	cs.status.ReplicaApply = cs.apply.observe(primary, members)
	cs.setFigures()
	if comp != nil && len(comp.Primaries) > 1 {
		cs.status.State = dbpilot.ClusterOK
	}
	cs.touch()
	return forgotten
}

// forget drops instances not seen for forget_after: their probes, their
// saved state, audited.
func (d *Daemon) forget(ctx context.Context, cs *clusterState, forgotten []dbpilot.InstanceKey) {
	for _, k := range forgotten {
		d.probe.Forget(k)
		if d.detect != d.probe {
			d.detect.Forget(k)
		}
		if d.store != nil {
			if err := d.store.ForgetInstance(ctx, cs.cfg.Name, k); err != nil {
				d.log.Warn("forget instance", "cluster", cs.cfg.Name, "err", err)
			}
		}
		d.audit(ctx, dbpilot.AuditEvent{Cluster: cs.cfg.Name, Instance: k, Event: dbpilot.AuditForget,
			Message: fmt.Sprintf("%s was not seen for %s: no longer part of cluster %s", k, d.cfg.ForgetAfter.D(), cs.cfg.Name)})
	}
}

// saveEvery is how often an unchanged cluster's instances are saved (their
// last_seen); a change of members, reachability, read_only or sources is
// saved at once. Every observation of every cluster went through SQLite's
// one writer before: at 200 clusters a detection could wait behind it.
const saveEvery = 10 * time.Second

// shouldSave reports whether members must be saved now, and notes it.
func (cs *clusterState) shouldSave(now time.Time, members []*dbpilot.Instance) bool {
	var b strings.Builder
	for _, m := range members {
		fmt.Fprintf(&b, "%s %t %t", m.Key, m.Reachable, m.ReadOnly)
		for _, ch := range m.Channels {
			b.WriteString(" " + ch.Source.String())
		}
		b.WriteByte(';')
	}
	sig := b.String()
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if sig == cs.savedSig && now.Sub(cs.savedAt) < saveEvery {
		return false
	}
	cs.savedSig, cs.savedAt = sig, now
	return true
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
	for _, k := range cs.eng.Fenced() {
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

// tick observes the cluster and feeds the observation to its engine: with
// auto (the watch loop), a recovery left running is resumed, returning old
// primaries are fenced (and rejoined by the leader), and a dead primary is
// recovered when the engine decides so; a service call only has the
// primary assessed.
func (d *Daemon) tick(ctx context.Context, cs *clusterState, auto bool) {
	members, primary, err := d.observe(ctx, cs)
	if err == nil {
		// The group commit and applier figures, from the metrics, after
		// the tick's decisions.
		defer d.refreshFigures(ctx, cs, primary)
	}
	if err != nil {
		d.log.Warn("discovery failed", "cluster", cs.cfg.Name, "err", err)
		cs.mu.Lock()
		cs.status.State = dbpilot.ClusterUnknown
		cs.touch()
		cs.mu.Unlock()
		return
	}
	eng := cs.eng
	// With coordination only the cluster's leader fences, rejoins and
	// recovers; it first takes over a recovery its predecessor left running.
	fence, leader := eng.Lead()
	if auto && eng.Resume(ctx, fence, leader) {
		return
	}
	eng.FenceReturning(ctx)
	if leader {
		eng.Returned(ctx, fence)
	}
	if primary == nil {
		return
	}
	cs.mu.Lock()
	moved := !cs.primary.Equal(primary.Key)
	cs.mu.Unlock()
	if moved {
		return // a primary decided while the crawl ran: the next tick observes from it
	}
	if primary.Reachable && d.coord != nil && d.replacedShared(ctx, cs, primary.Key) {
		return // the woken tick observes the new primary
	}
	if eng.Deciding() {
		return // a lost liveness session is being confirmed (Engine.SessionLost)
	}
	v := eng.Assess(ctx, primary, members)
	if auto {
		eng.RecoverDead(ctx, primary, v, fence, leader)
	}
}

// confirmTick is the round between polls while the primary fails to answer
// and is not confirmed dead (recovery.Engine.ConfirmRound).
func (d *Daemon) confirmTick(ctx context.Context, cs *clusterState) {
	cs.eng.ConfirmRound(ctx)
}

func (cs *clusterState) multiPrimary() bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return recovery.MultiPrimary(cs.instances)
}

// withDetail returns detail with key set to v, copied (the caller's map is
// left alone); unchanged when v is empty or key is set already.
func withDetail(detail map[string]string, key, v string) map[string]string {
	if v == "" || detail[key] != "" {
		return detail
	}
	c := make(map[string]string, len(detail)+1)
	for k, x := range detail {
		c[k] = x
	}
	c[key] = v
	return c
}

func (d *Daemon) audit(ctx context.Context, e dbpilot.AuditEvent) {
	if e.Time.IsZero() {
		e.Time = d.now()
	}
	// Who asked (web, cli, api) and with which API token ("token:NAME")
	// go with every event of the request.
	e.Detail = withDetail(e.Detail, "source", dbpilot.SourceOf(ctx))
	e.Detail = withDetail(e.Detail, "by", dbpilot.ActorOf(ctx))
	d.log.Info(e.Message, "cluster", e.Cluster, "event", e.Event, "recovery", e.RecoveryID, "source", e.Detail["source"], "by", e.Detail["by"])
	if d.store != nil {
		if err := d.store.Audit(ctx, e); err != nil {
			d.log.Warn("write audit", "err", err)
		}
	}
}
