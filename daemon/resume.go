package daemon

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/dbpilot/dbpilot"
)

// reloadKnown gives every cluster, before its first crawl, the instances
// the state store knew of it within forget_after — not only the seeds — with
// their last observation. A serve restarted while a cluster's primary is
// dead then still finds the replicas it cannot reach from the seeds (before,
// a cluster seeded from its dead primary showed "none of its 0 replicas can
// be read", and nothing could recover it).
func (d *Daemon) reloadKnown(ctx context.Context) {
	if d.store == nil {
		return
	}
	since := d.now().Add(-d.cfg.ForgetAfter.D())
	for _, name := range d.order {
		cs := d.clusters[name]
		insts, err := d.store.KnownInstances(ctx, name, since)
		if err != nil {
			d.log.Warn("reload known instances", "cluster", name, "err", err)
			continue
		}
		cs.mu.Lock()
		for _, i := range insts {
			cs.known = appendKey(cs.known, i.Key)
		}
		if len(cs.instances) == 0 {
			// The last observation of each, as the previous one: an
			// instance that does not answer keeps its place (withLastKnown).
			cs.instances = insts
		}
		cs.mu.Unlock()
	}
}

// FaultEnv names the environment variable of the fault-injection switch:
// a serve started with DBPILOT_FAULT_EXIT_AT=STEP kills itself with
// SIGKILL when a recovery reaches STEP, as a crash would. Steps:
// before-hooks, in-pre-failover-hook, after-promotion, before-post-hooks.
// For tests and bench/faults.sh only.
const FaultEnv = "DBPILOT_FAULT_EXIT_AT"

// faultPoint kills this process when the fault-injection switch names step.
func faultPoint(step string) {
	if os.Getenv(FaultEnv) != step {
		return
	}
	fmt.Fprintf(os.Stderr, "dbpilot: %s=%s: killing this serve (fault injection)\n", FaultEnv, step)
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	time.Sleep(time.Hour) // the signal is on its way
}

// hookGroups records the process groups of the hooks running now in a file
// beside the state (STATE.hooks), one per line.
type hookGroups struct {
	path string
	mu   sync.Mutex
	live map[int]bool
}

func (h *hookGroups) track(pgid int, started bool) {
	if h == nil || h.path == "" {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.live == nil {
		h.live = map[int]bool{}
	}
	if started {
		h.live[pgid] = true
	} else {
		delete(h.live, pgid)
	}
	var b strings.Builder
	for p := range h.live {
		fmt.Fprintln(&b, p)
	}
	_ = os.WriteFile(h.path, []byte(b.String()), 0o600)
}

// killLeftoverHooks kills the process groups of hooks a previous serve
// started and did not see end (it was killed): a hook never outlives the
// recovery it belongs to. A group is killed only while its leader still
// carries dbpilot's hook environment (the pid was not reused).
func (d *Daemon) killLeftoverHooks(ctx context.Context) {
	if d.hooks == nil || d.hooks.path == "" {
		return
	}
	b, err := os.ReadFile(d.hooks.path)
	if err != nil {
		return
	}
	for _, f := range strings.Fields(string(b)) {
		pgid, err := strconv.Atoi(f)
		if err != nil || pgid <= 1 {
			continue
		}
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pgid))
		if err != nil {
			// The shell is gone (killed with serve): its group may live on.
			env = nil
		}
		if env != nil && !strings.Contains(string(env), "DBPILOT_RECOVERY_ID=") {
			continue // the pid was reused by another program
		}
		if err := syscall.Kill(-pgid, syscall.SIGKILL); err == nil {
			d.audit(ctx, dbpilot.AuditEvent{Event: dbpilot.AuditHook,
				Message: fmt.Sprintf("hook process group %d, left running by a serve that stopped, was killed", pgid)})
		}
	}
	_ = os.Remove(d.hooks.path)
}

// hooksStarted reports whether the hooks of phase were started for the
// recovery (runHooks audits it before the first one).
func (d *Daemon) hooksStarted(ctx context.Context, cluster string, id int64, phase string) bool {
	if d.store == nil || id == 0 {
		return false
	}
	evs, err := d.store.AuditEvents(ctx, dbpilot.AuditFilter{Cluster: cluster, RecoveryID: id})
	if err != nil {
		return true // unknown: never run twice
	}
	for _, e := range evs {
		if e.Event == dbpilot.AuditHook && e.Detail["phase"] == phase && e.Detail["state"] == "starting" {
			return true
		}
	}
	return false
}
