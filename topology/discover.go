package topology

import (
	"context"
	"slices"
	"time"

	"github.com/dbpilot/dbpilot"
)

// DefaultConcurrency is how many instances Discover inspects at once unless
// told otherwise.
const DefaultConcurrency = 8

// Options tune Discover.
type Options struct {
	// Concurrency bounds the inspections in flight; 0 means DefaultConcurrency.
	Concurrency int
	// Timeout bounds the whole crawl; 0 means no bound but the context's.
	Timeout time.Duration
	// Now stamps instances that could not be inspected (nil: time.Now).
	Now func() time.Time
	// NotAsked, when set, tells an inspection error of key that says
	// nothing of the server (the crawling process was stalled while it
	// timed out): such an instance counts as not inspected, like one the
	// crawl's bound cut short, not as unreachable.
	NotAsked func(key dbpilot.InstanceKey, err error) bool
}

// Validate reports options that cannot be used.
func (o Options) Validate() error {
	if o.Concurrency < 0 {
		return dbpilot.Errorf(dbpilot.EINVALID, "invalid discovery concurrency %d: want 1 or more (0 for the default %d)", o.Concurrency, DefaultConcurrency)
	}
	if o.Timeout < 0 {
		return dbpilot.Errorf(dbpilot.EINVALID, "invalid discovery timeout %s: want a positive duration (0 for none)", o.Timeout)
	}
	return nil
}

func (o Options) withDefaults() Options {
	if o.Concurrency == 0 {
		o.Concurrency = DefaultConcurrency
	}
	return o
}

// Discover crawls the replication topology from the seeds: up through each
// instance's channels' sources, down through its reported replicas and
// across a Galera node's cluster members (wsrep_incoming_addresses, and the
// former members its inspector remembers), with
// at most opt.Concurrency inspections in flight. Each instance (by normalized
// key) is inspected once, so rings and co-primaries terminate.
//
// An instance that fails to inspect is returned with Reachable=false and
// LastError set to the inspector's error message (the inspector must keep
// passwords out of its errors; the mysql package does), and is not expanded. The
// returned instances carry the key they were reached at and are sorted by key.
//
// If the crawl is cut short (the context is done or opt.Timeout passes) before
// every known instance was inspected, Discover returns what it observed so far
// and an error with code EUNAVAIL. Instances whose inspection was interrupted
// are left out rather than reported unreachable.
func Discover(ctx context.Context, in dbpilot.Inspector, seeds []dbpilot.InstanceKey, opt Options) ([]*dbpilot.Instance, error) {
	if in == nil {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "discovery needs an inspector")
	}
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	opt = opt.withDefaults()

	crawlCtx, cancel := context.WithCancel(ctx)
	if opt.Timeout > 0 {
		crawlCtx, cancel = context.WithTimeout(ctx, opt.Timeout)
	}
	defer cancel()

	seen := map[dbpilot.InstanceKey]bool{}
	var queue []dbpilot.InstanceKey
	enqueue := func(k dbpilot.InstanceKey) {
		if k.Host == "" || k.Port <= 0 {
			return // e.g. a replica registered without report_host
		}
		n := k.Normalized()
		if seen[n] {
			return
		}
		seen[n] = true
		queue = append(queue, k)
	}
	for _, k := range seeds {
		enqueue(k)
	}
	if len(queue) == 0 {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "discovery needs at least one seed instance (HOST:PORT)")
	}

	type result struct {
		key  dbpilot.InstanceKey
		inst *dbpilot.Instance
		err  error
	}
	// Buffered so that an inspection never blocks on reporting.
	results := make(chan result, opt.Concurrency)
	var out []*dbpilot.Instance
	inflight, interrupted := 0, 0
	// One server reached under two addresses (a hostname and its IP, a
	// report_host) is one instance: the first address it was reached by
	// (the seeds come first), the others its aliases.
	byIdentity := map[string]dbpilot.InstanceKey{}
	alias := map[dbpilot.InstanceKey]dbpilot.InstanceKey{}
	for {
		for len(queue) > 0 && inflight < opt.Concurrency && crawlCtx.Err() == nil {
			k := queue[0]
			queue = queue[1:]
			inflight++
			go func() {
				inst, err := in.Inspect(crawlCtx, k)
				results <- result{k, inst, err}
			}()
		}
		if inflight == 0 {
			break
		}
		r := <-results // every started inspection is waited for
		inflight--

		if r.err != nil && (crawlCtx.Err() != nil || opt.NotAsked != nil && opt.NotAsked(r.key, r.err)) {
			interrupted++ // not observed: the crawl was cut short, or could not run
			continue
		}
		inst := observed(r.key, r.inst, r.err, opt.Now)
		if id := inst.Identity(); id != "" {
			if first, ok := byIdentity[id]; ok {
				alias[inst.Key.Normalized()] = first
				continue
			}
			byIdentity[id] = inst.Key
		}
		out = append(out, inst)
		if !inst.Reachable {
			continue
		}
		for _, c := range inst.Channels {
			enqueue(c.Source)
		}
		for _, k := range inst.Replicas {
			enqueue(k)
		}
		if g := inst.Galera; g != nil {
			// The other members of a Galera cluster, and those that left.
			for _, k := range g.IncomingAddresses {
				enqueue(k)
			}
			for _, k := range g.FormerMembers {
				enqueue(k)
			}
		}
	}
	if len(alias) > 0 {
		unalias(out, alias)
	}
	sortInstances(out)

	if missed := len(queue) + interrupted; missed > 0 {
		if err := ctx.Err(); err != nil {
			return out, dbpilot.WrapError(dbpilot.EUNAVAIL, err, "discovery stopped: %d instances inspected, %d not", len(out), missed)
		}
		return out, dbpilot.Errorf(dbpilot.EUNAVAIL, "discovery did not finish within %s: %d instances inspected, %d not (raise the timeout)", opt.Timeout, len(out), missed)
	}
	return out, nil
}

// unalias rewrites the channels' sources and the replica lists that name a
// server by an alias to the address it is known by, so that the topology
// sees one server.
func unalias(out []*dbpilot.Instance, alias map[dbpilot.InstanceKey]dbpilot.InstanceKey) {
	canon := func(k dbpilot.InstanceKey) dbpilot.InstanceKey {
		if c, ok := alias[k.Normalized()]; ok {
			return c
		}
		return k
	}
	for _, inst := range out {
		inst.Channels = slices.Clone(inst.Channels) // the inspector's may be shared
		for i := range inst.Channels {
			c := &inst.Channels[i]
			if k := canon(c.Source); k != c.Source {
				if c.PrintedSource.IsZero() {
					c.PrintedSource = c.Source
				}
				c.Source = k
			}
		}
		inst.Replicas = canonKeys(inst.Replicas, canon)
		if g := inst.Galera; g != nil {
			cp := *g // the inspector's may be shared
			cp.IncomingAddresses = canonKeys(g.IncomingAddresses, canon)
			cp.FormerMembers = canonKeys(g.FormerMembers, canon)
			inst.Galera = &cp
		}
	}
}

// canonKeys returns keys rewritten by canon, without duplicates (nil for
// none).
func canonKeys(keys []dbpilot.InstanceKey, canon func(dbpilot.InstanceKey) dbpilot.InstanceKey) []dbpilot.InstanceKey {
	if len(keys) == 0 {
		return keys
	}
	seen := map[dbpilot.InstanceKey]bool{}
	out := keys[:0:0]
	for _, k := range keys {
		k = canon(k)
		if !seen[k.Normalized()] {
			seen[k.Normalized()] = true
			out = append(out, k)
		}
	}
	return out
}

// observed turns one inspection's outcome into the instance Discover reports.
func observed(key dbpilot.InstanceKey, inst *dbpilot.Instance, err error, now func() time.Time) *dbpilot.Instance {
	if err == nil && inst == nil {
		err = dbpilot.Errorf(dbpilot.EINTERNAL, "inspect %s: the inspector returned no instance", key)
	}
	if err != nil {
		if now == nil {
			now = time.Now
		}
		return &dbpilot.Instance{Key: key, Reachable: false, LastError: err.Error(), RefusedErrno: dbpilot.ServerErrno(err), ObservedAt: now()}
	}
	cp := *inst // the inspector's value may be shared; adjust a copy
	cp.Key = key
	if !cp.Reachable && cp.LastError == "" {
		cp.LastError = "unreachable"
	}
	return &cp
}
