package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/loadgen"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/sandbox"
)

// benchRouter gives the bench's workers connections to the writer (the
// cluster's current primary) and to readers (replicas with --read-from
// replicas). With a fixed HOST:PORT it always answers that server; with a
// sandbox or a serve it finds the primary again after a connection or
// read-only error, at most every benchRefreshEvery.
type benchRouter struct {
	opts     mysql.Options
	poolSize int
	// blockingIO: the workers' connections read their sockets with
	// blocking system calls (--io).
	blockingIO bool

	fixed   dbpilot.InstanceKey    // HOST:PORT
	sandbox *sandbox.Descriptor    // --sandbox without --server: probe its nodes
	api     dbpilot.ClusterService // --server
	cluster string

	mu          sync.Mutex
	primary     dbpilot.InstanceKey
	replicas    []dbpilot.InstanceKey
	next        int // round robin over replicas
	refreshedAt time.Time
	stale       bool
	pools       map[dbpilot.InstanceKey]*mysql.DB
}

// benchRefreshEvery bounds how often the router asks where the primary is.
const benchRefreshEvery = 100 * time.Millisecond

// describe names the target for reports.
func (r *benchRouter) describe() string {
	switch {
	case r.api != nil:
		return "cluster " + r.cluster
	case r.sandbox != nil:
		return "sandbox " + r.sandbox.Name
	}
	return r.fixed.String()
}

// routed reports whether the writer follows a changing primary.
func (r *benchRouter) routed() bool { return r.api != nil || r.sandbox != nil }

// invalidate makes the next connection ask where the primary is.
func (r *benchRouter) invalidate() {
	r.mu.Lock()
	r.stale = true
	r.mu.Unlock()
}

// locate returns the current primary and replicas, asking again when the
// last answer is stale.
func (r *benchRouter) locate(ctx context.Context) (dbpilot.InstanceKey, []dbpilot.InstanceKey, error) {
	r.mu.Lock()
	if !r.routed() {
		r.mu.Unlock()
		return r.fixed, nil, nil
	}
	fresh := !r.primary.IsZero() && (!r.stale || time.Since(r.refreshedAt) < benchRefreshEvery)
	if fresh {
		p, reps := r.primary, r.replicas
		r.mu.Unlock()
		return p, reps, nil
	}
	r.mu.Unlock()

	p, reps, err := r.ask(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refreshedAt = time.Now()
	if err != nil {
		if r.primary.IsZero() {
			return dbpilot.InstanceKey{}, nil, err
		}
		return r.primary, r.replicas, nil // the last answer until a new one comes
	}
	r.primary, r.replicas, r.stale = p, reps, false
	return p, reps, nil
}

// ask finds the primary and the replicas: from serve's view of the
// cluster, or by probing the sandbox's nodes.
func (r *benchRouter) ask(ctx context.Context) (dbpilot.InstanceKey, []dbpilot.InstanceKey, error) {
	actx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if r.api != nil {
		st, err := r.api.ClusterStatus(actx, r.cluster)
		if err != nil {
			return dbpilot.InstanceKey{}, nil, err
		}
		if st.Primary.IsZero() {
			return dbpilot.InstanceKey{}, nil, dbpilot.Errorf(dbpilot.EUNAVAIL, "bench: cluster %s has no primary now (serve: %s)", r.cluster, st.State)
		}
		var reps []dbpilot.InstanceKey
		for _, i := range st.Instances {
			if i.Reachable && i.IsReplica() && !i.Key.Equal(st.Primary) {
				reps = append(reps, i.Key)
			}
		}
		return st.Primary, reps, nil
	}
	var (
		primary dbpilot.InstanceKey
		reps    []dbpilot.InstanceKey
	)
	for _, n := range r.sandbox.Nodes {
		db, err := mysql.Open(actx, n.Key(), r.sandbox.AdminOptions())
		if err != nil {
			continue
		}
		inst, err := db.Inspect(actx)
		db.Close()
		switch {
		case err != nil:
		case inst.IsReplica():
			reps = append(reps, n.Key())
		case !inst.ReadOnly && primary.IsZero():
			primary = n.Key()
		}
	}
	if primary.IsZero() {
		return primary, nil, dbpilot.Errorf(dbpilot.EUNAVAIL, "bench: no writable primary among the nodes of sandbox %s", r.sandbox.Name)
	}
	return primary, reps, nil
}

// pool returns the connection pool of key, opening it.
func (r *benchRouter) pool(ctx context.Context, key dbpilot.InstanceKey) (*mysql.DB, error) {
	r.mu.Lock()
	p := r.pools[key]
	r.mu.Unlock()
	if p != nil {
		return p, nil
	}
	opts := r.opts
	opts.MaxConns = r.poolSize
	p, err := mysql.Open(ctx, key, opts)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if old := r.pools[key]; old != nil {
		p.Close()
		return old, nil
	}
	if r.pools == nil {
		r.pools = map[dbpilot.InstanceKey]*mysql.DB{}
	}
	r.pools[key] = p
	return p, nil
}

// primaryPool returns the current primary and its connection pool.
func (r *benchRouter) primaryPool(ctx context.Context) (dbpilot.InstanceKey, *mysql.DB, error) {
	key, _, err := r.locate(ctx)
	if err != nil {
		return key, nil, err
	}
	p, err := r.pool(ctx, key)
	return key, p, err
}

// writer returns a new connection to the current primary (a WireConn:
// the load runs without database/sql).
func (r *benchRouter) writer(ctx context.Context) (loadgen.Conn, error) {
	key, _, err := r.locate(ctx)
	if err != nil {
		return nil, err
	}
	return r.conn(ctx, key)
}

// reader returns a new connection to a replica (round robin), or to the
// primary when there is none.
func (r *benchRouter) reader(ctx context.Context) (loadgen.Conn, error) {
	key, reps, err := r.locate(ctx)
	if err != nil {
		return nil, err
	}
	if len(reps) > 0 {
		r.mu.Lock()
		key = reps[r.next%len(reps)]
		r.next++
		r.mu.Unlock()
	}
	return r.conn(ctx, key)
}

func (r *benchRouter) conn(ctx context.Context, key dbpilot.InstanceKey) (loadgen.Conn, error) {
	opts := r.opts
	opts.BlockingIO = r.blockingIO
	c, err := mysql.DialWire(ctx, key, opts)
	if err != nil {
		r.invalidate()
		return nil, fmt.Errorf("bench: connect to %s: %w", key, err)
	}
	return c, nil
}

// primaryDB opens a pool to the current primary (asking afresh), for the
// ledger check after an event.
func (r *benchRouter) primaryDB(ctx context.Context) (*mysql.DB, dbpilot.InstanceKey, error) {
	r.invalidate()
	r.mu.Lock()
	r.refreshedAt = time.Time{}
	r.mu.Unlock()
	key, _, err := r.locate(ctx)
	if err != nil {
		return nil, key, err
	}
	db, err := mysql.Open(ctx, key, r.opts)
	return db, key, err
}

// close closes every pool.
func (r *benchRouter) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, p := range r.pools {
		p.Close()
		delete(r.pools, k)
	}
}

// benchDatabase checks a database name for the statements that name it.
func benchDatabase(name string) error {
	if name == "" || len(name) > 64 || strings.ContainsAny(name, "`/\\.\x00 ") {
		return dbpilot.Errorf(dbpilot.EINVALID, "bench: --db %q is not a usable database name", name)
	}
	return nil
}
