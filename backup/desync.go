package backup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
)

// This file is dump --desync on a Galera node: wsrep_desync=ON while the
// snapshots are taken (a consistency lock held on a node that cannot apply
// writesets would otherwise make it send flow control and stall the whole
// cluster's writes), OFF as soon as they are open, and a report of what the
// node's catch-up cost: its receive queue, the flow control it sent and the
// time the cluster was paused, and the time the queue took to drain.

// Defaults of the desync options.
const (
	defaultDesyncWait     = time.Minute
	defaultDesyncInterval = 100 * time.Millisecond
	// desyncOffTimeout bounds the cleanup that turns wsrep_desync off, which
	// runs with its own context so that a failed or interrupted dump does
	// not leave the node desynced.
	desyncOffTimeout = 30 * time.Second
)

// DesyncReport is what a dump --desync did to the Galera node.
type DesyncReport struct {
	Node string    `json:"node"`
	On   time.Time `json:"on"`            // wsrep_desync set ON
	Off  time.Time `json:"off,omitempty"` // set OFF again; zero if it was not
	// Desynced is the time wsrep_desync was ON (Off - On).
	Desynced time.Duration `json:"desynced_ns"`
	// RecvQueueBefore, RecvQueueAtOff and MaxRecvQueue are
	// wsrep_local_recv_queue before the desync, at the last sample before it
	// was turned off, and the highest sampled from the desync until the
	// queue drained.
	RecvQueueBefore int64 `json:"recv_queue_before"`
	RecvQueueAtOff  int64 `json:"recv_queue_at_off"`
	MaxRecvQueue    int64 `json:"max_recv_queue"`
	// FlowControlSent is how many flow control messages the node sent
	// (wsrep_flow_control_sent) from before the desync to the last sample.
	FlowControlSent int64 `json:"flow_control_sent"`
	// FlowControlPaused is the time replication was paused by flow control
	// (wsrep_flow_control_paused_ns) over the same span: the writes of the
	// whole cluster waited that long.
	FlowControlPaused time.Duration `json:"flow_control_paused_ns"`
	// Drained is whether the node caught up after wsrep_desync was turned
	// off: its receive queue back down to its level before the desync (or
	// 0), or its state Synced again; DrainTime is how long after Off.
	Drained   bool          `json:"drained"`
	DrainTime time.Duration `json:"drain_ns"`
	// Samples is the number of status samples the report is built from.
	Samples int `json:"samples"`
}

// String is the report on one line.
func (r DesyncReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "wsrep_desync ON for %s on %s; receive queue max %d (%d when turned off), ",
		r.Desynced.Round(time.Millisecond), r.Node, r.MaxRecvQueue, r.RecvQueueAtOff)
	switch {
	case r.Off.IsZero():
		b.WriteString("not turned off, ")
	case r.Drained:
		fmt.Fprintf(&b, "drained %s after, ", r.DrainTime.Round(time.Millisecond))
	default:
		b.WriteString("not drained when sampling stopped, ")
	}
	fmt.Fprintf(&b, "flow control sent %d, cluster paused %s", r.FlowControlSent, r.FlowControlPaused.Round(time.Millisecond))
	return b.String()
}

// desyncSample is one reading of the node's wsrep status.
type desyncSample struct {
	At        time.Time
	RecvQueue int64 // wsrep_local_recv_queue
	FCSent    int64 // wsrep_flow_control_sent, cumulative
	FCPaused  int64 // wsrep_flow_control_paused_ns, cumulative
	State     string
}

// desyncStatusSQL reads what a sample holds.
const desyncStatusSQL = "SHOW GLOBAL STATUS WHERE Variable_name IN " +
	"('wsrep_local_recv_queue', 'wsrep_flow_control_sent', 'wsrep_flow_control_paused_ns', 'wsrep_local_state_comment')"

// parseDesyncSample reads a sample from SHOW GLOBAL STATUS name/values
// (lower-case names).
func parseDesyncSample(at time.Time, status map[string]string) (desyncSample, error) {
	s := desyncSample{At: at, State: status["wsrep_local_state_comment"]}
	for _, f := range []struct {
		name string
		dst  *int64
	}{
		{"wsrep_local_recv_queue", &s.RecvQueue},
		{"wsrep_flow_control_sent", &s.FCSent},
		{"wsrep_flow_control_paused_ns", &s.FCPaused},
	} {
		v, ok := status[f.name]
		if !ok {
			return s, fmt.Errorf("backup: status %s missing", f.name)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return s, fmt.Errorf("backup: status %s=%q: not a number", f.name, v)
		}
		*f.dst = n
	}
	return s, nil
}

// galeraRefusal says why a server whose global variables (lower-case
// names) are vars cannot be desynced, or returns nil.
func galeraRefusal(key dbpilot.InstanceKey, vars map[string]string) error {
	on, ok := vars["wsrep_on"]
	if !ok {
		return dbpilot.Errorf(dbpilot.EUNSUPPORTED, "backup: --desync: %s is not a Galera node (the server has no wsrep_on); dump it without --desync", key)
	}
	if !isOn(on) {
		return dbpilot.Errorf(dbpilot.EUNSUPPORTED, "backup: --desync: %s is not a Galera node (wsrep_on is OFF); dump it without --desync", key)
	}
	if p := strings.TrimSpace(vars["wsrep_provider"]); p == "" || strings.EqualFold(p, "none") {
		return dbpilot.Errorf(dbpilot.EUNSUPPORTED, "backup: --desync: %s is not a Galera node (no wsrep provider loaded); dump it without --desync", key)
	}
	if isOn(vars["wsrep_desync"]) {
		return dbpilot.Errorf(dbpilot.ECONFLICT, "backup: --desync: wsrep_desync is already ON on %s (another backup or an operator set it, and dbpilot would turn it off under them); wait for it to be OFF, or dump without --desync", key)
	}
	return nil
}

func isOn(v string) bool {
	v = strings.TrimSpace(v)
	return strings.EqualFold(v, "ON") || v == "1"
}

// buildDesyncReport computes the report from the sample taken before the
// desync, the samples taken since (in time order), and the times the
// desync was turned on and off (off zero: it was not). The queue counts as
// drained at the first sample after off that shows the node caught up
// (caughtUp).
func buildDesyncReport(node string, before desyncSample, samples []desyncSample, on, off time.Time) DesyncReport {
	r := DesyncReport{Node: node, On: on, Off: off, RecvQueueBefore: before.RecvQueue, MaxRecvQueue: before.RecvQueue, Samples: len(samples) + 1}
	if !off.IsZero() {
		r.Desynced = off.Sub(on)
	}
	last := before
	for _, s := range samples {
		if r.Drained {
			break // the catch-up is over; later samples are the cluster's ordinary life
		}
		r.MaxRecvQueue = max(r.MaxRecvQueue, s.RecvQueue)
		if off.IsZero() || !s.At.After(off) {
			r.RecvQueueAtOff = s.RecvQueue
		} else if caughtUp(before, s) {
			r.Drained, r.DrainTime = true, s.At.Sub(off)
		}
		last = s
	}
	r.FlowControlSent = counterDelta(before.FCSent, last.FCSent)
	r.FlowControlPaused = time.Duration(counterDelta(before.FCPaused, last.FCPaused))
	return r
}

// caughtUp reports whether a sample taken after the desync was turned off
// shows the node caught up: its receive queue back to its level before the
// desync (or 0), or Galera's own word for it, the Synced state (on a busy
// cluster the queue seldom stays at 0).
func caughtUp(before, s desyncSample) bool {
	return s.RecvQueue <= max(before.RecvQueue, 0) || strings.EqualFold(s.State, "Synced")
}

// counterDelta is the growth of a cumulative status counter; a counter
// that went down was reset (FLUSH STATUS) and counts from 0.
func counterDelta(before, after int64) int64 {
	if after < before {
		return after
	}
	return after - before
}

// desync drives wsrep_desync on one node for a dump: check (openDesync),
// on, off, finish. Its sampler goroutine runs from on until the queue has
// drained after off, or finish stops it.
type desync struct {
	key      dbpilot.InstanceKey
	db       *mysql.DB
	interval time.Duration
	wait     time.Duration
	progress io.Writer
	report   func(DesyncReport)
	now      func() time.Time

	mu        sync.Mutex
	attempted bool // SET GLOBAL wsrep_desync=ON was sent (it may have run even if it failed)
	before    desyncSample
	samples   []desyncSample
	on, off   time.Time
	offErr    error // the last failure to turn the desync off
	sampleErr error

	stopSampler context.CancelFunc
	samplerDone chan struct{}
	drained     chan struct{} // closed by the sampler when the queue drained after off
}

// openDesync connects to the node and checks that it can be desynced:
// a Galera node (wsrep_on, a provider) not desynced already. It changes
// nothing on the server.
func openDesync(ctx context.Context, key dbpilot.InstanceKey, conn mysql.Options, opt DumpOptions) (*desync, error) {
	conn.MaxConns = 2 // the sampler and the switch
	db, err := mysql.Open(ctx, key, conn)
	if err != nil {
		return nil, err
	}
	rows, err := db.Query(ctx, "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('wsrep_on', 'wsrep_provider', 'wsrep_desync')")
	if err == nil {
		err = galeraRefusal(key, rows.NameValues())
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	return &desync{key: key, db: db, interval: opt.DesyncInterval, wait: opt.DesyncWait, progress: opt.Progress,
		report: opt.OnDesync, now: time.Now, drained: make(chan struct{})}, nil
}

func (d *desync) sample(ctx context.Context) (desyncSample, error) {
	rows, err := d.db.Query(ctx, desyncStatusSQL)
	if err != nil {
		return desyncSample{}, err
	}
	return parseDesyncSample(d.now(), rows.NameValues())
}

func (d *desync) logf(format string, args ...any) {
	if d.progress != nil {
		fmt.Fprintf(d.progress, "dump: "+format+"\n", args...)
	}
}

// turnOn samples the node, sets wsrep_desync=ON and starts the sampler.
func (d *desync) turnOn(ctx context.Context) error {
	before, err := d.sample(ctx)
	if err != nil {
		return fmt.Errorf("backup: --desync: read the wsrep status of %s: %w", d.key, err)
	}
	d.mu.Lock()
	d.before, d.attempted = before, true
	d.mu.Unlock()
	if err := d.db.Exec(ctx, "SET GLOBAL wsrep_desync = ON"); err != nil {
		if mysql.ServerErrorNumber(err) != 0 {
			// The server refused it (a privilege, a node not ready): nothing to undo.
			d.mu.Lock()
			d.attempted = false
			d.mu.Unlock()
		}
		return fmt.Errorf("backup: --desync: %w", err)
	}
	d.mu.Lock()
	d.on = d.now()
	d.mu.Unlock()
	d.logf("wsrep_desync ON on %s (receive queue %d)", d.key, before.RecvQueue)
	sctx, cancel := context.WithCancel(ctx)
	d.stopSampler, d.samplerDone = cancel, make(chan struct{})
	go d.runSampler(sctx)
	return nil
}

// runSampler samples every interval until the queue drained after off or
// ctx is done.
func (d *desync) runSampler(ctx context.Context) {
	defer close(d.samplerDone)
	t := time.NewTicker(d.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s, err := d.sample(ctx)
		d.mu.Lock()
		if err != nil {
			if ctx.Err() == nil {
				d.sampleErr = err
			}
			d.mu.Unlock()
			continue
		}
		d.samples = append(d.samples, s)
		done := !d.off.IsZero() && s.At.After(d.off) && caughtUp(d.before, s)
		d.mu.Unlock()
		if done {
			close(d.drained)
			return
		}
	}
}

// turnOff sets wsrep_desync=OFF, with its own context (bounded by
// desyncOffTimeout) so that it runs also when ctx is done. It takes a last
// sample first, for the queue at off. It does nothing when the desync was
// not attempted or is off already.
func (d *desync) turnOff(ctx context.Context) error {
	d.mu.Lock()
	if !d.attempted || !d.off.IsZero() {
		d.mu.Unlock()
		return nil
	}
	d.mu.Unlock()
	octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), desyncOffTimeout)
	defer cancel()
	if ctx.Err() == nil {
		if s, err := d.sample(octx); err == nil {
			d.mu.Lock()
			d.samples = append(d.samples, s)
			d.mu.Unlock()
		}
	}
	if err := d.db.Exec(octx, "SET GLOBAL wsrep_desync = OFF"); err != nil {
		err = fmt.Errorf("backup: wsrep_desync may still be ON on %s; turn it off there with SET GLOBAL wsrep_desync = OFF: %w", d.key, err)
		d.mu.Lock()
		d.offErr = err
		d.mu.Unlock()
		return err
	}
	d.mu.Lock()
	d.off = d.now()
	on, queue := d.on, int64(0)
	if n := len(d.samples); n > 0 {
		queue = d.samples[n-1].RecvQueue
	}
	d.mu.Unlock()
	if !on.IsZero() {
		d.logf("wsrep_desync OFF on %s after %s (receive queue %d)", d.key, d.off.Sub(on).Round(time.Millisecond), queue)
	}
	return nil
}

// finish ends the desync whatever happened to the dump (dumpErr): it turns
// wsrep_desync off if it is still on; after a dump that succeeded, it waits
// up to the drain wait for the receive queue to drain (less if ctx ends);
// it stops the sampler, hands the report to the OnDesync callback, and
// closes the connection. It returns dumpErr, with the failure to turn the
// desync off added.
func (d *desync) finish(ctx context.Context, dumpErr error) error {
	defer d.db.Close()
	d.mu.Lock()
	prevOffErr := d.offErr
	d.mu.Unlock()
	offErr := d.turnOff(ctx)
	if d.stopSampler != nil {
		if dumpErr == nil && offErr == nil {
			t := time.NewTimer(d.wait)
			select {
			case <-d.drained:
			case <-t.C:
				d.logf("the receive queue of %s has not drained %s after the dump; the report covers what was sampled", d.key, d.wait)
			case <-ctx.Done():
			}
			t.Stop()
		}
		d.stopSampler()
		<-d.samplerDone
	}
	d.mu.Lock()
	attempted, on := d.attempted, d.on
	rep := buildDesyncReport(d.key.String(), d.before, d.samples, d.on, d.off)
	d.mu.Unlock()
	if attempted && !on.IsZero() && d.report != nil {
		d.report(rep)
	}
	switch {
	case offErr == nil:
		return dumpErr
	case dumpErr == nil:
		return offErr
	case prevOffErr != nil && errors.Is(dumpErr, prevOffErr):
		return dumpErr // it says so already
	}
	return fmt.Errorf("%w; %w", dumpErr, offErr)
}
