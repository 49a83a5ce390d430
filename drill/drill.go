// Package drill proves recovery with a real kill: a writer commits uniquely
// numbered rows at a steady rate to whichever server is primary, the primary
// is killed with SIGKILL (or a switchover is requested), and the drill
// measures write-unavailability (the kill to the first acknowledged write on
// the new primary) and detection time, and checks that every acknowledged
// write survived and every surviving replica follows the new primary.
package drill

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/daemon"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/sandbox"
)

// Modes.
const (
	ModeFailover   = "failover"
	ModeSwitchover = "switchover"
)

// Options configure a drill.
type Options struct {
	Mode    string
	Sandbox string
	Rounds  int
	Rate    int           // writes per second
	Before  time.Duration // writing before the kill
	After   time.Duration // longest wait for writes to resume
	Log     io.Writer     // progress lines; nil discards
	// PollInterval of the in-process daemon (default 1s, as serve).
	PollInterval time.Duration
	Verbose      bool
}

// Round is one measured kill (or switchover).
type Round struct {
	N                 int     `json:"round"`
	OldPrimary        string  `json:"old_primary"`
	NewPrimary        string  `json:"new_primary"`
	WriteUnavailableS float64 `json:"write_unavailable_s"`
	DetectionS        float64 `json:"detection_s"`
	RecoveryS         float64 `json:"recovery_s"`
	Acked             int     `json:"acked"`
	LostAcked         int     `json:"lost_acked"`
	ReplicasFollowing int     `json:"replicas_following"`
	ReplicasExpected  int     `json:"replicas_expected"`
	Restored          string  `json:"restored"` // how the sandbox was restored afterwards
	Error             string  `json:"error,omitempty"`
}

// Summary aggregates rounds.
type Summary struct {
	Mode       string  `json:"mode"`
	SemiSync   bool    `json:"semi_sync"`
	Rounds     int     `json:"rounds"`
	Failed     int     `json:"failed"`
	P50S       float64 `json:"p50_s"`
	P95S       float64 `json:"p95_s"`
	MaxS       float64 `json:"max_s"`
	DetectP50S float64 `json:"detection_p50_s"`
	LostAcked  int     `json:"lost_acked"`
}

// Result is a whole drill.
type Result struct {
	Rounds  []Round `json:"rounds"`
	Summary Summary `json:"summary"`
}

func (o *Options) defaults() error {
	if o.Mode != ModeFailover && o.Mode != ModeSwitchover {
		return dbpilot.Errorf(dbpilot.EINVALID, "drill: mode %q: use failover or switchover", o.Mode)
	}
	if o.Rounds <= 0 {
		o.Rounds = 1
	}
	if o.Rate <= 0 {
		o.Rate = 50
	}
	if o.Rate > 2000 {
		return dbpilot.Errorf(dbpilot.EINVALID, "drill: --rate %d is above 2000 writes/s", o.Rate)
	}
	if o.Before <= 0 {
		o.Before = 2 * time.Second
	}
	if o.After <= 0 {
		o.After = 60 * time.Second
	}
	if o.PollInterval <= 0 {
		o.PollInterval = time.Second
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	return nil
}

// Run runs the drill. It owns the sandbox's state file for its duration (a
// running `serve --sandbox` must be stopped first: two daemons must not
// recover the same cluster).
func Run(ctx context.Context, opt Options) (*Result, error) {
	if err := opt.defaults(); err != nil {
		return nil, err
	}
	d, err := sandbox.Load(opt.Sandbox)
	if err != nil {
		return nil, err
	}
	if d.Topology != sandbox.TopologyReplication {
		return nil, dbpilot.Errorf(dbpilot.EUNSUPPORTED, "drill: sandbox %s is a %s topology; drills need a replication sandbox", d.Name, d.Topology)
	}
	res := &Result{Summary: Summary{Mode: opt.Mode, SemiSync: d.SemiSync, Rounds: opt.Rounds}}
	for n := 1; n <= opt.Rounds; n++ {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		r, redeployWhy, err := runRound(ctx, opt, d, n)
		if err != nil && r == nil {
			return res, err
		}
		if redeployWhy != "" {
			// The round's daemon has stopped: nothing recovers the sandbox
			// while it is rebuilt.
			d, r.Restored = redeploy(ctx, d, redeployWhy)
		}
		res.Rounds = append(res.Rounds, *r)
		det := "-"
		if opt.Mode == ModeFailover {
			det = fmt.Sprintf("%.3fs", r.DetectionS)
		}
		fmt.Fprintf(opt.Log, "round %2d: %s → %s  write-unavailable %.3fs  detection %s  acked %d  lost %d  replicas %d/%d  restored: %s%s\n",
			n, r.OldPrimary, r.NewPrimary, r.WriteUnavailableS, det, r.Acked, r.LostAcked, r.ReplicasFollowing, r.ReplicasExpected, r.Restored, errSuffix(r.Error))
	}
	res.Summary = summarize(opt.Mode, d.SemiSync, res.Rounds)
	return res, nil
}

func errSuffix(s string) string {
	if s == "" {
		return ""
	}
	return "  ERROR: " + s
}

func summarize(mode string, semi bool, rounds []Round) Summary {
	s := Summary{Mode: mode, SemiSync: semi, Rounds: len(rounds)}
	var un, det []float64
	for _, r := range rounds {
		s.LostAcked += r.LostAcked
		if r.Error != "" {
			s.Failed++
			continue
		}
		un = append(un, r.WriteUnavailableS)
		det = append(det, r.DetectionS)
	}
	s.P50S, s.P95S, s.MaxS = quantile(un, 0.5), quantile(un, 0.95), quantile(un, 1)
	s.DetectP50S = quantile(det, 0.5)
	return s
}

// quantile uses the nearest-rank method.
func quantile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	if i < 0 {
		i = 0
	}
	return math.Round(s[i]*1000) / 1000
}

// runRound runs one round on a healthy sandbox and restores it afterwards;
// when it cannot, it returns why the sandbox must be redeployed.
func runRound(ctx context.Context, opt Options, d *sandbox.Descriptor, n int) (*Round, string, error) {
	r := &Round{N: n}
	cfg, err := daemon.ConfigFromSandbox(d)
	if err != nil {
		return nil, "", err
	}
	cfg.PollInterval = daemon.Duration(opt.PollInterval)
	cfg.Clusters[0].Rejoin = true
	if err := cfg.Validate(); err != nil {
		return nil, "", err
	}
	lvl := slog.LevelWarn
	if opt.Verbose {
		lvl = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(opt.Log, &slog.HandlerOptions{Level: lvl}))
	dm, err := daemon.Open(cfg, daemon.Wiring{Logger: log, Version: "drill"})
	if err != nil {
		if dbpilot.ErrorCode(err) == dbpilot.ECONFLICT {
			return nil, "", dbpilot.WrapError(dbpilot.ECONFLICT, err, "drill: stop 'dbpilot serve --sandbox %s' first: two daemons must not recover one cluster", d.Name)
		}
		return nil, "", err
	}
	defer dm.Close()
	// A drill's recoveries are acknowledged as it goes: the anti-flapping
	// block must not hold the next round.
	if _, err := dm.Ack(ctx, d.Name, "drill", "drill round start"); err != nil {
		return nil, "", err
	}
	dctx, stopDaemon := context.WithCancel(ctx)
	daemonDone := make(chan struct{})
	go func() { dm.Run(dctx); close(daemonDone) }()
	defer func() { stopDaemon(); <-daemonDone }()

	primary, err := findPrimary(ctx, d)
	if err != nil {
		return nil, "", err
	}
	r.OldPrimary = primary.Key().String()
	if err := prepareTable(ctx, d, primary); err != nil {
		return nil, "", err
	}
	w := newWriter(d, opt.Rate, primary)
	wctx, stopWriter := context.WithCancel(ctx)
	writerDone := make(chan struct{})
	go func() { w.run(wctx); close(writerDone) }()
	stop := func() { stopWriter(); <-writerDone }

	// Let the daemon observe the healthy cluster and the writer warm up.
	sleep(ctx, opt.Before)
	event := time.Now()
	var recErr error
	switch opt.Mode {
	case ModeFailover:
		recErr = sandbox.Kill(d, primary.Name)
	case ModeSwitchover:
		var rec *dbpilot.Recovery
		rec, recErr = dm.Switchover(ctx, d.Name, dbpilot.OperationOptions{})
		if rec != nil && !rec.NewPrimary.IsZero() {
			r.NewPrimary = rec.NewPrimary.String()
		}
	}
	if recErr != nil {
		stop()
		r.Error = recErr.Error()
		return r, "", nil
	}
	first, newKey, ok := w.firstAckAfter(ctx, event, opt.After)
	stop()
	if !ok {
		r.Error = fmt.Sprintf("writes did not resume within %s", opt.After)
	} else {
		r.WriteUnavailableS = round3(first.Sub(event).Seconds())
		r.NewPrimary = newKey.String()
	}
	r.Acked = w.ackedCount()
	// Detection and recovery times from the audit log.
	if opt.Mode == ModeFailover {
		r.DetectionS, r.RecoveryS = auditTimes(ctx, dm, d.Name, event)
	}
	if ok {
		newNode := nodeByKey(d, newKey)
		lost, err := w.verify(ctx, d, newNode)
		if err != nil {
			r.Error = "verify: " + err.Error()
		}
		r.LostAcked = lost
		r.ReplicasFollowing, r.ReplicasExpected = following(ctx, d, newNode, primary, opt.Mode)
	}
	how, redeployWhy := restore(ctx, d, primary, opt, dm.Daemon)
	r.Restored = how
	return r, redeployWhy, nil
}

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// auditTimes returns detection time (event → the "detect" audit entry) and
// recovery time (event → "recovered").
func auditTimes(ctx context.Context, store dbpilot.ClusterService, cluster string, event time.Time) (float64, float64) {
	evs, err := store.AuditEvents(ctx, dbpilot.AuditFilter{Cluster: cluster, Since: event})
	if err != nil {
		return 0, 0
	}
	var det, rec float64
	for _, e := range evs {
		switch e.Event {
		case dbpilot.AuditDetect:
			if det == 0 {
				det = round3(e.Time.Sub(event).Seconds())
			}
		case dbpilot.AuditRecovered:
			if rec == 0 {
				rec = round3(e.Time.Sub(event).Seconds())
			}
		}
	}
	return det, rec
}

func nodeByKey(d *sandbox.Descriptor, k dbpilot.InstanceKey) *sandbox.Node {
	for _, n := range d.Nodes {
		if n.Key().Equal(k) {
			return n
		}
	}
	return nil
}

// findPrimary returns the writable node without replication channels.
func findPrimary(ctx context.Context, d *sandbox.Descriptor) (*sandbox.Node, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		for _, n := range d.Nodes {
			if isPrimary(ctx, d, n) {
				return n, nil
			}
		}
		if time.Now().After(deadline) {
			return nil, dbpilot.Errorf(dbpilot.EUNAVAIL, "drill: sandbox %s has no writable primary", d.Name)
		}
		sleep(ctx, 100*time.Millisecond)
	}
}

func isPrimary(ctx context.Context, d *sandbox.Descriptor, n *sandbox.Node) bool {
	db, err := mysql.Open(ctx, n.Key(), mysql.Options{Credentials: d.Admin, ConnectTimeout: 300 * time.Millisecond, QueryTimeout: time.Second, TLS: d.ClientTLS()})
	if err != nil {
		return false
	}
	defer db.Close()
	inst, err := db.Inspect(ctx)
	return err == nil && !inst.ReadOnly && !inst.IsReplica()
}

// writerUser is the drill's application account: like a real application it
// has no privilege that bypasses read_only.
var writerUser = mysql.Credentials{User: "dbpilot_drill", Password: "drill-writer-pw"}

func prepareTable(ctx context.Context, d *sandbox.Descriptor, p *sandbox.Node) error {
	db, err := mysql.Open(ctx, p.Key(), d.AdminOptions())
	if err != nil {
		return err
	}
	defer db.Close()
	stmts := []string{
		"CREATE DATABASE IF NOT EXISTS dbpilot_drill",
		"CREATE TABLE IF NOT EXISTS dbpilot_drill.writes (id BIGINT PRIMARY KEY, at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6))",
	}
	for _, h := range []string{"127.0.0.1", "localhost"} {
		stmts = append(stmts,
			fmt.Sprintf("CREATE USER IF NOT EXISTS %s@%s IDENTIFIED BY %s", mysql.Quote(writerUser.User), mysql.Quote(h), mysql.Quote(writerUser.Password)),
			fmt.Sprintf("GRANT SELECT, INSERT ON dbpilot_drill.* TO %s@%s", mysql.Quote(writerUser.User), mysql.Quote(h)))
	}
	return db.Exec(ctx, stmts...)
}

// writer commits numbered rows at a rate to whichever node is primary.
type writer struct {
	d     *sandbox.Descriptor
	rate  int
	mu    sync.Mutex
	next  int64
	acked []ack
	cur   *sandbox.Node
}

type ack struct {
	id  int64
	at  time.Time
	key dbpilot.InstanceKey
}

func newWriter(d *sandbox.Descriptor, rate int, p *sandbox.Node) *writer {
	return &writer{d: d, rate: rate, cur: p, next: time.Now().UnixNano() / 1000}
}

func (w *writer) open(ctx context.Context, n *sandbox.Node) *sql.DB {
	db, err := mysql.Open(ctx, n.Key(), mysql.Options{Credentials: writerUser, ConnectTimeout: 200 * time.Millisecond, QueryTimeout: 2 * time.Second, TLS: w.d.ClientTLS()})
	if err != nil {
		return nil
	}
	return db.SQL()
}

func (w *writer) run(ctx context.Context) {
	interval := time.Second / time.Duration(w.rate)
	t := time.NewTicker(interval)
	defer t.Stop()
	var db *sql.DB
	defer func() {
		if db != nil {
			db.Close()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if db == nil {
			db = w.open(ctx, w.cur)
			if db == nil {
				w.findNext(ctx)
				continue
			}
		}
		w.mu.Lock()
		w.next++
		id := w.next
		w.mu.Unlock()
		qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := db.ExecContext(qctx, "INSERT INTO dbpilot_drill.writes (id) VALUES (?)", id)
		cancel()
		if err != nil {
			db.Close()
			db = nil
			w.findNext(ctx)
			continue
		}
		w.mu.Lock()
		w.acked = append(w.acked, ack{id: id, at: time.Now(), key: w.cur.Key()})
		w.mu.Unlock()
	}
}

// findNext probes every node for the writable primary.
func (w *writer) findNext(ctx context.Context) {
	for _, n := range w.d.Nodes {
		if isPrimary(ctx, w.d, n) {
			w.mu.Lock()
			w.cur = n
			w.mu.Unlock()
			return
		}
	}
}

// firstAckAfter waits for the first write acknowledged after t by a server
// other than the one before t... or by any server for a switchover back.
func (w *writer) firstAckAfter(ctx context.Context, t time.Time, limit time.Duration) (time.Time, dbpilot.InstanceKey, bool) {
	deadline := t.Add(limit)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		w.mu.Lock()
		var before dbpilot.InstanceKey
		for _, a := range w.acked {
			if !a.at.After(t) {
				before = a.key
				continue
			}
			if !a.key.Equal(before) {
				w.mu.Unlock()
				return a.at, a.key, true
			}
		}
		w.mu.Unlock()
		sleep(ctx, 20*time.Millisecond)
	}
	return time.Time{}, dbpilot.InstanceKey{}, false
}

func (w *writer) ackedCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acked)
}

// verify counts acknowledged rows missing on the new primary.
func (w *writer) verify(ctx context.Context, d *sandbox.Descriptor, n *sandbox.Node) (int, error) {
	if n == nil {
		return 0, fmt.Errorf("new primary is not a node of the sandbox")
	}
	db, err := mysql.Open(ctx, n.Key(), mysql.Options{Credentials: d.Admin, QueryTimeout: 30 * time.Second, TLS: d.ClientTLS()})
	if err != nil {
		return 0, err
	}
	defer db.Close()
	w.mu.Lock()
	ids := make([]int64, len(w.acked))
	for i, a := range w.acked {
		ids[i] = a.id
	}
	w.mu.Unlock()
	if len(ids) == 0 {
		return 0, nil
	}
	have := map[int64]bool{}
	rows, err := db.Query(ctx, fmt.Sprintf("SELECT id FROM dbpilot_drill.writes WHERE id BETWEEN %d AND %d", ids[0], ids[len(ids)-1]))
	if err != nil {
		return 0, err
	}
	for _, r := range rows.Values {
		if r[0] != nil {
			v, _ := strconv.ParseInt(*r[0], 10, 64)
			have[v] = true
		}
	}
	lost := 0
	for _, id := range ids {
		if !have[id] {
			lost++
		}
	}
	return lost, nil
}

// following counts the surviving replicas that replicate from the new primary.
func following(ctx context.Context, d *sandbox.Descriptor, newNode, old *sandbox.Node, mode string) (int, int) {
	if newNode == nil {
		return 0, 0
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		got, want := 0, 0
		for _, n := range d.Nodes {
			if n == newNode || (mode == ModeFailover && n == old) {
				continue
			}
			want++
			db, err := mysql.Open(ctx, n.Key(), d.AdminOptions())
			if err != nil {
				continue
			}
			inst, err := db.Inspect(ctx)
			db.Close()
			if err != nil {
				continue
			}
			if ch := inst.Channel(newNode.Key()); ch != nil && ch.Healthy() {
				got++
			}
		}
		if got == want || time.Now().After(deadline) {
			return got, want
		}
		sleep(ctx, 200*time.Millisecond)
	}
}

// restore brings the sandbox back to every node up and replicating from the
// current primary: after a failover, the killed node is started; the daemon
// fences it and, when it has no errant transactions, rejoins it. When it
// cannot (errant transactions after an async failover), the sandbox is
// redeployed.
func restore(ctx context.Context, d *sandbox.Descriptor, old *sandbox.Node, opt Options, dm *daemon.Daemon) (how, redeployWhy string) {
	if opt.Mode == ModeSwitchover {
		return "none needed", ""
	}
	if err := sandbox.Start(ctx, d, old.Name, sandbox.ProcessOptions{}); err != nil {
		return "", "start failed: " + err.Error()
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		st, err := dm.ClusterStatus(ctx, d.Name)
		if err == nil && len(st.Instances) == len(d.Nodes) {
			healthy := true
			for _, i := range st.Instances {
				if !i.Reachable {
					healthy = false
				}
				for _, c := range i.Channels {
					if !c.Healthy() {
						healthy = false
					}
				}
			}
			if healthy {
				return "old primary rejoined as a replica", ""
			}
		}
		sleep(ctx, 200*time.Millisecond)
	}
	evs, _ := dm.AuditEvents(ctx, dbpilot.AuditFilter{Cluster: d.Name, Limit: 50})
	why := "old primary did not rejoin"
	for _, e := range evs {
		if e.Event == dbpilot.AuditFence && strings.Contains(e.Message, "errant") {
			why = "old primary has errant transactions"
		}
	}
	return "", why
}

func redeploy(ctx context.Context, d *sandbox.Descriptor, why string) (*sandbox.Descriptor, string) {
	spec := sandbox.Spec{Name: d.Name, Topology: d.Topology, Nodes: len(d.Nodes), SemiSync: d.SemiSync,
		Basedir: d.Server.Basedir, PortBase: d.Nodes[0].Port - 1, Options: d.Options, Force: true}
	nd, err := sandbox.Deploy(ctx, spec)
	if err != nil {
		return d, "redeploy failed: " + err.Error()
	}
	return nd, "redeployed (" + why + ")"
}
