package galera

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot"
)

// Node is one Galera node as the executor drives it. Sandboxes implement it
// (sandbox.Descriptor.GaleraNodes).
type Node interface {
	// Name names the node in plans and messages (node2).
	Name() string
	// Running reports whether the node's server process is alive.
	Running() (pid int, ok bool)
	// Grastate is the path of the node's grastate.dat.
	Grastate() string
	// Recover runs mariadbd --wsrep-recover with the node's configuration
	// and returns what it logged.
	Recover(ctx context.Context) (string, error)
	// Start starts the server as o says and returns once it accepts
	// connections; a failed join is an error that quotes the error-log
	// lines explaining it.
	Start(ctx context.Context, o StartOptions) error
	// Stop shuts the server down cleanly.
	Stop(ctx context.Context) error
	// Status reads the node's wsrep status.
	Status(ctx context.Context) (Status, error)
}

// StartOptions say how a node starts.
type StartOptions struct {
	// Bootstrap starts a new Primary component (--wsrep-new-cluster).
	Bootstrap bool
	// Position, UUID:SEQNO, is the node's last committed write set as
	// --wsrep-recover found it after a crash (--wsrep-start-position), so
	// that it can ask for an incremental state transfer (IST) instead of a
	// full one.
	Position string
}

// Options tune the executor.
type Options struct {
	// SyncTimeout bounds the wait for a started node to be Synced
	// (default 3 minutes: a joiner may need a full state transfer).
	SyncTimeout time.Duration
	// Log receives progress lines; nil discards them.
	Log func(format string, args ...any)
}

func (o Options) syncTimeout() time.Duration {
	if o.SyncTimeout <= 0 {
		return 3 * time.Minute
	}
	return o.SyncTimeout
}

func (o Options) logf(format string, args ...any) {
	if o.Log != nil {
		o.Log(format, args...)
	}
}

// Gather collects the evidence about every node: whether it runs, its
// grastate.dat, and, where grastate.dat says seqno -1 (a crash, or a node
// killed while running), the position mariadbd --wsrep-recover finds.
// Nodes named in exclude are marked excluded and not examined further.
// Recovery runs mariadbd briefly on a stopped node's datadir (InnoDB crash
// recovery included); it never starts a node in the cluster.
func Gather(ctx context.Context, nodes []Node, exclude []string, opts Options) []NodeState {
	out := make([]NodeState, len(nodes))
	for i, n := range nodes {
		s := NodeState{Name: n.Name(), Seqno: -1, GrastateSeqno: -1, Source: SourceUnknown}
		if pid, ok := n.Running(); ok {
			s.Running, s.Pid, s.Source = true, pid, SourceRunning
			if g, err := ReadGrastate(n.Grastate()); err == nil {
				s.UUID, s.GrastateSeqno, s.SafeToBootstrap = g.UUID, g.Seqno, g.SafeToBootstrap
			}
			out[i] = s
			continue
		}
		for _, x := range exclude {
			if x == s.Name {
				s.Excluded = true
			}
		}
		g, err := ReadGrastate(n.Grastate())
		if err != nil {
			s.Problem = err.Error()
			if dbpilot.ErrorCode(err) == dbpilot.ENOTFOUND {
				s.Problem = "no grastate.dat"
			}
			out[i] = s
			continue
		}
		s.UUID, s.Seqno, s.GrastateSeqno, s.SafeToBootstrap, s.Source = g.UUID, g.Seqno, g.Seqno, g.SafeToBootstrap, SourceGrastate
		if g.Seqno < 0 && !s.Excluded && g.UUID != ZeroUUID {
			opts.logf("%s: grastate.dat has seqno -1 (not stopped cleanly); recovering its position with mariadbd --wsrep-recover", s.Name)
			s.Source = SourceRecover
			output, err := n.Recover(ctx)
			if err == nil {
				var r Recovered
				r, err = ParseRecovered(output)
				if err == nil {
					s.Seqno, s.GTID = r.Seqno, r.GTID
					if r.UUID != ZeroUUID {
						s.UUID = r.UUID
					} else if r.Seqno < 0 {
						// InnoDB holds no wsrep position: a joiner whose state
						// transfer never finished. It has nothing to lose.
						s.UUID = ZeroUUID
						s.Problem = "no committed position (an unfinished joiner); it joins by SST"
						out[i] = s
						continue
					}
				}
			}
			if err != nil {
				s.Problem = "wsrep-recover failed: " + err.Error()
				if lines := ExplainLog(output, 3); len(lines) > 0 {
					s.Problem += ": " + strings.Join(lines, " | ")
				}
			} else if s.Seqno < 0 {
				s.Problem = "wsrep-recover found no committed position"
			}
		}
		out[i] = s
	}
	return out
}

// Bootstrap executes a plan: it checks again that no node runs, marks the
// chosen node safe_to_bootstrap when needed, starts it with
// --wsrep-new-cluster and waits for it to be Primary and Synced, then starts
// the other nodes one at a time, each waited for until Synced. It stops at
// the first failure and reports it with the node's state; it never
// bootstraps a second node.
func Bootstrap(ctx context.Context, nodes []Node, plan *Plan, opts Options) error {
	if plan == nil || plan.Bootstrap == "" {
		return dbpilot.Errorf(dbpilot.EINVALID, "galera: no bootstrap plan to execute")
	}
	byName := map[string]Node{}
	for _, n := range nodes {
		byName[n.Name()] = n
		if pid, ok := n.Running(); ok {
			return dbpilot.Errorf(dbpilot.ECONFLICT, "galera: refusing to bootstrap: %s is running (pid %d) since the plan was made", n.Name(), pid)
		}
	}
	first, ok := byName[plan.Bootstrap]
	if !ok {
		return dbpilot.Errorf(dbpilot.EINVALID, "galera: plan names unknown node %s", plan.Bootstrap)
	}
	if plan.SetSafe {
		opts.logf("%s: setting safe_to_bootstrap: 1 in %s", first.Name(), first.Grastate())
		if err := SetSafeToBootstrap(first.Grastate()); err != nil {
			return err
		}
	}
	opts.logf("%s: starting with --wsrep-new-cluster (bootstrap)", first.Name())
	if err := first.Start(ctx, StartOptions{Bootstrap: true}); err != nil {
		return fmt.Errorf("galera: bootstrap %s: %w", first.Name(), err)
	}
	if _, err := WaitSynced(ctx, first, opts.syncTimeout()); err != nil {
		return fmt.Errorf("galera: bootstrap %s: %w", first.Name(), err)
	}
	opts.logf("%s: Primary and Synced", first.Name())
	for _, name := range plan.Join {
		n, ok := byName[name]
		if !ok {
			return dbpilot.Errorf(dbpilot.EINVALID, "galera: plan names unknown node %s", name)
		}
		if err := Join(ctx, n, opts); err != nil {
			return err
		}
	}
	return nil
}

// Join starts a stopped node so that it joins the running cluster (by IST
// when the donor's gcache still holds what it lacks, else by SST) and waits
// until it is Synced.
func Join(ctx context.Context, n Node, opts Options) error {
	so := StartOptions{Position: crashPosition(ctx, n, opts)}
	opts.logf("%s: starting; it joins the cluster", n.Name())
	if err := n.Start(ctx, so); err != nil {
		return fmt.Errorf("galera: join %s: %w", n.Name(), err)
	}
	if _, err := WaitSynced(ctx, n, opts.syncTimeout()); err != nil {
		return fmt.Errorf("galera: join %s: %w", n.Name(), err)
	}
	opts.logf("%s: Synced", n.Name())
	return nil
}

// crashPosition returns the position to start a node at after a crash:
// its grastate.dat then has seqno -1, and without a position the node
// would ask for a full state transfer although the donor's gcache may
// hold all it lacks. mariadbd --wsrep-recover finds the position in
// InnoDB, as mysqld_safe and galera_recovery do before a start. It
// returns "" when the node stopped cleanly or nothing can be recovered
// (the node then joins as it would have: by SST).
func crashPosition(ctx context.Context, n Node, opts Options) string {
	b, err := os.ReadFile(n.Grastate())
	if err != nil {
		return ""
	}
	g, err := ParseGrastate(string(b))
	if err != nil || g.Seqno >= 0 {
		return ""
	}
	out, err := n.Recover(ctx)
	if err != nil {
		opts.logf("%s: --wsrep-recover failed (%v); it joins by full state transfer", n.Name(), err)
		return ""
	}
	r, err := ParseRecovered(out)
	if err != nil || r.Seqno < 0 {
		return ""
	}
	pos := fmt.Sprintf("%s:%d", r.UUID, r.Seqno)
	opts.logf("%s: stopped without saving its position; --wsrep-recover found %s", n.Name(), pos)
	return pos
}

// WaitSynced polls the node's status until it is a Synced member of a
// Primary component, its process dies, or timeout passes.
func WaitSynced(ctx context.Context, n Node, timeout time.Duration) (Status, error) {
	return waitStatus(ctx, n, timeout, "Synced in a Primary component", Status.Synced)
}

// WaitDrained waits until the node is Synced and its receive queue
// (wsrep_local_recv_queue) is empty: it has applied what it received.
func WaitDrained(ctx context.Context, n Node, timeout time.Duration) (Status, error) {
	return waitStatus(ctx, n, timeout, "Synced with an empty receive queue", func(s Status) bool { return s.Synced() && s.RecvQueue == 0 })
}

func waitStatus(ctx context.Context, n Node, timeout time.Duration, what string, ok func(Status) bool) (Status, error) {
	deadline := time.Now().Add(timeout)
	var last Status
	var lastErr error
	wait := 20 * time.Millisecond
	for {
		st, err := n.Status(ctx)
		if err == nil && ok(st) {
			return st, nil
		}
		if err != nil && dbpilot.ErrorCode(err) == dbpilot.EUNSUPPORTED {
			return st, err
		}
		last, lastErr = st, err
		if _, running := n.Running(); !running {
			return last, dbpilot.Errorf(dbpilot.EUNAVAIL, "%s stopped while waiting for it to be %s", n.Name(), what)
		}
		if time.Now().After(deadline) {
			detail := "last status: " + last.String()
			if lastErr != nil {
				detail = "last error: " + lastErr.Error()
			}
			return last, dbpilot.Errorf(dbpilot.EUNAVAIL, "%s was not %s within %s (%s)", n.Name(), what, timeout, detail)
		}
		select {
		case <-ctx.Done():
			return last, fmt.Errorf("galera: wait for %s: %w", n.Name(), ctx.Err())
		case <-time.After(wait):
		}
		wait = min(wait*2, 250*time.Millisecond)
	}
}

// RollingRestart restarts the nodes one at a time: each is stopped cleanly,
// started again (it rejoins by IST), and waited for until it is Synced and
// its receive queue has drained, before the next one. It refuses to begin
// unless every node runs and is Synced in one Primary component of the
// expected size, so that a restart never takes the last healthy node.
func RollingRestart(ctx context.Context, nodes []Node, opts Options) error {
	if len(nodes) == 0 {
		return dbpilot.Errorf(dbpilot.EINVALID, "galera: no nodes to restart")
	}
	var bad []string
	for _, n := range nodes {
		if _, ok := n.Running(); !ok {
			bad = append(bad, notRunning(n))
			continue
		}
		st, err := n.Status(ctx)
		switch {
		case err != nil && dbpilot.ErrorCode(err) == dbpilot.EUNSUPPORTED:
			return err
		case err != nil:
			bad = append(bad, fmt.Sprintf("%s: %v", n.Name(), err))
		case !st.Synced():
			bad = append(bad, fmt.Sprintf("%s is %s", n.Name(), st))
		case st.ClusterSize < len(nodes):
			bad = append(bad, fmt.Sprintf("%s sees a cluster of %d nodes, not %d", n.Name(), st.ClusterSize, len(nodes)))
		}
	}
	if len(bad) > 0 {
		return dbpilot.Errorf(dbpilot.ECONFLICT, "galera: refusing to start a rolling restart: the cluster is not healthy (%s); fix it first, e.g. with 'dbpilot sandbox start'", strings.Join(bad, "; "))
	}
	for i, n := range nodes {
		opts.logf("%s: restarting (%d of %d)", n.Name(), i+1, len(nodes))
		if err := n.Stop(ctx); err != nil {
			return fmt.Errorf("galera: rolling restart: stop %s: %w", n.Name(), err)
		}
		if err := n.Start(ctx, StartOptions{}); err != nil {
			return fmt.Errorf("galera: rolling restart: start %s (the restart stopped here; the other nodes were not touched): %w", n.Name(), err)
		}
		st, err := WaitDrained(ctx, n, opts.syncTimeout())
		if err != nil {
			return fmt.Errorf("galera: rolling restart stopped at %s: %w", n.Name(), err)
		}
		opts.logf("%s: back, %s", n.Name(), st)
	}
	return nil
}

// IsNotGalera reports whether err says a server is not a Galera node.
func IsNotGalera(err error) bool {
	var e *dbpilot.Error
	return errors.As(err, &e) && e.Code == dbpilot.EUNSUPPORTED && strings.Contains(err.Error(), ErrNotGalera)
}

// notRunning says that n is not running, with the reason when n tells it
// (a node known by its address: nothing answers there, or the connect
// timed out).
func notRunning(n Node) string {
	if w, ok := n.(interface{ WhyNotRunning() string }); ok {
		if why := w.WhyNotRunning(); why != "" {
			return n.Name() + " is not running (" + why + ")"
		}
	}
	return n.Name() + " is not running"
}
