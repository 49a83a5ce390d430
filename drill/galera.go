package drill

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/galera"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/sandbox"
)

// The Galera node-loss drill (`dbpilot drill galera-node-loss`): clients
// write numbered rows at a steady rate to every node of a Galera sandbox
// (or through one), one node is killed with SIGKILL, and the drill
// measures what the clients of the surviving nodes saw — how long their
// writes stalled while the cluster evicted the dead member, and how many
// failed — then restarts the killed node and measures how long it took to
// be Synced again and whether it caught up by IST or needed a full SST.
// Every acknowledged write must be on every node afterwards.

// ModeGaleraNodeLoss is the drill of a Galera sandbox.
const ModeGaleraNodeLoss = "galera-node-loss"

// GaleraOptions configure a Galera node-loss drill.
type GaleraOptions struct {
	Sandbox string
	Rounds  int
	Rate    int    // writes per second, over all writing nodes
	Through string // write through this node only ("": every node)
	Victim  string // the node to kill ("": a different one each round)
	// Before is the writing before the kill; After the writing after it,
	// before the killed node is restarted.
	Before, After time.Duration
	// SyncTimeout bounds the wait for the restarted node to be Synced.
	SyncTimeout time.Duration
	Log         io.Writer
}

// GaleraRound is one kill of a Galera node.
type GaleraRound struct {
	N      int    `json:"round"`
	Killed string `json:"killed"`
	// WriteStallS is the longest time a surviving node's client went
	// without an acknowledged write, from the kill until the restart (the
	// interval between one client's writes is its floor).
	WriteStallS float64 `json:"write_stall_s"`
	// FirstAckS is the time from the kill to the first write a surviving
	// node acknowledged that was sent after the kill (the slowest
	// survivor's).
	FirstAckS     float64 `json:"first_ack_after_kill_s"`
	FailedWrites  int     `json:"failed_writes_on_survivors"`
	ClusterSizeS  float64 `json:"cluster_size_reduced_s"` // kill → survivors report wsrep_cluster_size N-1
	RejoinS       float64 `json:"rejoin_s"`               // restart → Synced
	RejoinMethod  string  `json:"rejoin_method"`          // IST, SST or unknown (from the error log)
	Acked         int     `json:"acked"`
	LostAcked     int     `json:"lost_acked"`
	WritingNodes  int     `json:"writing_nodes"`
	SurvivorNodes int     `json:"surviving_writing_nodes"`
	Error         string  `json:"error,omitempty"`
}

// GaleraSummary sums the rounds up.
type GaleraSummary struct {
	Rounds       int     `json:"rounds"`
	Failed       int     `json:"failed"`
	StallP50     float64 `json:"write_stall_p50_s"`
	StallMax     float64 `json:"write_stall_max_s"`
	FirstAckP50  float64 `json:"first_ack_p50_s"`
	FirstAckMax  float64 `json:"first_ack_max_s"`
	RejoinP50    float64 `json:"rejoin_p50_s"`
	RejoinMax    float64 `json:"rejoin_max_s"`
	IST          int     `json:"rejoined_by_ist"`
	FailedWrites int     `json:"failed_writes_on_survivors"`
	LostAcked    int     `json:"lost_acked"`
}

// GaleraResult is the whole drill.
type GaleraResult struct {
	Summary GaleraSummary `json:"summary"`
	Rounds  []GaleraRound `json:"rounds"`
}

func (o *GaleraOptions) defaults() error {
	if o.Rounds <= 0 {
		o.Rounds = 1
	}
	if o.Rate <= 0 {
		o.Rate = 60
	}
	if o.Rate > 2000 {
		return dbpilot.Errorf(dbpilot.EINVALID, "drill: --rate %d is above 2000 writes/s", o.Rate)
	}
	if o.Before <= 0 {
		o.Before = 2 * time.Second
	}
	if o.After <= 0 {
		o.After = 10 * time.Second
	}
	if o.SyncTimeout <= 0 {
		o.SyncTimeout = 120 * time.Second
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	return nil
}

// RunGalera runs the Galera node-loss drill on a Galera sandbox whose
// nodes are all running and Synced.
func RunGalera(ctx context.Context, opt GaleraOptions) (*GaleraResult, error) {
	if err := opt.defaults(); err != nil {
		return nil, err
	}
	d, err := sandbox.Load(opt.Sandbox)
	if err != nil {
		return nil, err
	}
	if !sandbox.IsGalera(d.Topology) {
		return nil, dbpilot.Errorf(dbpilot.EUNSUPPORTED, "drill: sandbox %s is a %s topology; galera-node-loss needs a galera sandbox", d.Name, d.Topology)
	}
	gnodes, err := d.GaleraNodes(sandbox.ProcessOptions{StartTimeout: opt.SyncTimeout})
	if err != nil {
		return nil, err
	}
	status := map[string]galera.Node{}
	for _, g := range gnodes {
		status[g.Name()] = g
	}
	members := galeraMembers(d)
	if len(members) < 3 {
		return nil, dbpilot.Errorf(dbpilot.EUNSUPPORTED, "drill: sandbox %s has %d Galera nodes; losing one of fewer than 3 leaves no primary component", d.Name, len(members))
	}
	writers := members
	if opt.Through != "" {
		n, err := d.Node(opt.Through)
		if err != nil {
			return nil, err
		}
		writers = []*sandbox.Node{n}
	}
	if opt.Victim != "" {
		v, err := d.Node(opt.Victim)
		if err != nil {
			return nil, err
		}
		if opt.Through == v.Name {
			return nil, dbpilot.Errorf(dbpilot.EINVALID, "drill: --victim %s is the node written through; kill another one", v.Name)
		}
	}
	for _, g := range gnodes {
		if _, err := galera.WaitSynced(ctx, g, 30*time.Second); err != nil {
			return nil, fmt.Errorf("drill: before the first round: %w", err)
		}
	}
	if err := prepareTable(ctx, d, members[0]); err != nil {
		return nil, fmt.Errorf("drill: prepare the writes table: %w", err)
	}
	res := &GaleraResult{}
	for n := 1; n <= opt.Rounds; n++ {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		victim := chooseVictim(d, members, opt, n)
		r := runGaleraRound(ctx, opt, d, status, members, writers, victim, n)
		res.Rounds = append(res.Rounds, r)
		fmt.Fprintf(opt.Log, "round %2d: killed %s  write stall %.3fs  first ack %.3fs  failed %d  size reduced %.3fs  rejoin %.3fs by %s  acked %d  lost %d%s\n",
			n, r.Killed, r.WriteStallS, r.FirstAckS, r.FailedWrites, r.ClusterSizeS, r.RejoinS, r.RejoinMethod, r.Acked, r.LostAcked, errSuffix(r.Error))
		if r.Error != "" && r.RejoinS == 0 {
			// The killed node did not come back: the next round would
			// lose a second member.
			break
		}
	}
	res.Summary = summarizeGalera(res.Rounds)
	return res, nil
}

// galeraMembers are the sandbox's Galera nodes (not an async replica of
// one of them).
func galeraMembers(d *sandbox.Descriptor) []*sandbox.Node {
	var out []*sandbox.Node
	for _, n := range d.Nodes {
		if n.IsGalera() { // not galera+replica's async replica
			out = append(out, n)
		}
	}
	return out
}

// chooseVictim returns opt.Victim, or a different member each round that
// is not the node written through.
func chooseVictim(d *sandbox.Descriptor, members []*sandbox.Node, opt GaleraOptions, round int) *sandbox.Node {
	if opt.Victim != "" {
		n, _ := d.Node(opt.Victim)
		return n
	}
	var pool []*sandbox.Node
	for _, m := range members {
		if m.Name != opt.Through {
			pool = append(pool, m)
		}
	}
	return pool[(round-1)%len(pool)]
}

// galeraAck is one acknowledged or failed write.
type galeraWrite struct {
	id     int64
	node   string
	sent   time.Time
	done   time.Time
	failed bool
}

// galeraWriters write to several nodes, each its own client.
type galeraWriters struct {
	tls    *mysql.TLS // the sandbox's (nil: plain text)
	mu     sync.Mutex
	next   int64
	writes []galeraWrite
}

func (g *galeraWriters) id() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.next++
	return g.next
}

func (g *galeraWriters) add(w galeraWrite) {
	g.mu.Lock()
	g.writes = append(g.writes, w)
	g.mu.Unlock()
}

func (g *galeraWriters) snapshot() []galeraWrite {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]galeraWrite(nil), g.writes...)
}

// client writes to node n every interval until ctx ends, sequentially as
// an application's connection does: a stalled write holds the next ones.
func (g *galeraWriters) client(ctx context.Context, n *sandbox.Node, interval time.Duration) {
	var db *mysql.DB
	defer func() {
		if db != nil {
			db.Close()
		}
	}()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		sent := time.Now()
		if db == nil {
			var err error
			db, err = mysql.Open(ctx, n.Key(), mysql.Options{Credentials: writerUser, ConnectTimeout: 500 * time.Millisecond, QueryTimeout: 30 * time.Second, TLS: g.tls})
			if err != nil {
				db = nil
				if ctx.Err() == nil {
					g.add(galeraWrite{node: n.Name, sent: sent, done: time.Now(), failed: true})
				}
				continue
			}
		}
		id := g.id()
		qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, err := db.SQL().ExecContext(qctx, "INSERT INTO dbpilot_drill.writes (id) VALUES (?)", id)
		cancel()
		if ctx.Err() != nil {
			return // the drill's end, not the server's answer
		}
		g.add(galeraWrite{id: id, node: n.Name, sent: sent, done: time.Now(), failed: err != nil})
		if err != nil {
			db.Close()
			db = nil
		}
	}
}

func runGaleraRound(ctx context.Context, opt GaleraOptions, d *sandbox.Descriptor, status map[string]galera.Node,
	members, writers []*sandbox.Node, victim *sandbox.Node, n int) GaleraRound {
	r := GaleraRound{N: n, Killed: victim.Name, WritingNodes: len(writers)}
	g := &galeraWriters{next: time.Now().UnixNano() / 1000, tls: d.ClientTLS()}
	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	interval := time.Second * time.Duration(len(writers)) / time.Duration(opt.Rate)
	for _, w := range writers {
		wg.Go(func() { g.client(wctx, w, interval) })
	}
	defer func() {
		stop()
		wg.Wait()
	}()
	sleep(ctx, opt.Before)

	var survivors []*sandbox.Node
	for _, m := range members {
		if m != victim {
			survivors = append(survivors, m)
		}
	}
	killAt := time.Now()
	if err := sandbox.Kill(d, victim.Name); err != nil {
		r.Error = "kill: " + err.Error()
		return r
	}
	// The survivors' view: cluster size N-1 once the dead member is evicted.
	if t, ok := waitClusterSize(ctx, status, survivors, len(members)-1, opt.After); ok {
		r.ClusterSizeS = round3(t.Sub(killAt).Seconds())
	}
	sleep(ctx, time.Until(killAt.Add(opt.After)))

	logOffset := fileSize(victim.ErrorLog)
	restartAt := time.Now()
	if err := sandbox.Start(ctx, d, victim.Name, sandbox.ProcessOptions{StartTimeout: opt.SyncTimeout}); err != nil {
		r.Error = "restart: " + err.Error()
		return r
	}
	if _, err := galera.WaitSynced(ctx, status[victim.Name], opt.SyncTimeout); err != nil {
		r.Error = "rejoin: " + err.Error() + "; " + logExcerpt(victim.ErrorLog, logOffset)
		return r
	}
	r.RejoinS = round3(time.Since(restartAt).Seconds())
	r.RejoinMethod = rejoinMethod(victim.ErrorLog, logOffset)
	sleep(ctx, time.Second) // writes to the rejoined node too
	stop()
	wg.Wait()

	writes := g.snapshot()
	survived := map[string]bool{}
	for _, s := range survivors {
		survived[s.Name] = true
	}
	r.WriteStallS, r.FirstAckS, r.FailedWrites, r.SurvivorNodes = survivorView(writes, survived, killAt, restartAt)
	acked := map[int64]bool{}
	for _, w := range writes {
		if !w.failed {
			acked[w.id] = true
		}
	}
	r.Acked = len(acked)
	lost, err := lostOnAnyNode(ctx, d, members, acked)
	if err != nil {
		r.Error = "verify: " + err.Error()
	}
	r.LostAcked = lost
	return r
}

// survivorView measures what the surviving nodes' clients saw between the
// kill and the restart: the longest time without an acknowledged write on
// one of them, the time to the first acknowledged write sent after the
// kill (the slowest survivor's), and the writes that failed.
func survivorView(writes []galeraWrite, survived map[string]bool, killAt, restartAt time.Time) (stallS, firstAckS float64, failed, nodes int) {
	byNode := map[string][]galeraWrite{}
	for _, w := range writes {
		if survived[w.node] {
			byNode[w.node] = append(byNode[w.node], w)
		}
	}
	for _, ws := range byNode {
		nodes++
		sort.Slice(ws, func(i, j int) bool { return ws[i].done.Before(ws[j].done) })
		last := killAt
		var longest time.Duration
		first := time.Duration(-1)
		for _, w := range ws {
			if w.done.Before(killAt) {
				continue
			}
			if w.sent.After(restartAt) {
				break
			}
			if w.failed {
				failed++
				continue
			}
			if gap := w.done.Sub(last); gap > longest {
				longest = gap
			}
			last = w.done
			if first < 0 && !w.sent.Before(killAt) {
				first = w.done.Sub(killAt)
			}
		}
		if tail := restartAt.Sub(last); tail > longest {
			longest = tail // no write acknowledged since
		}
		stallS = max(stallS, round3(longest.Seconds()))
		if first < 0 {
			first = restartAt.Sub(killAt)
		}
		firstAckS = max(firstAckS, round3(first.Seconds()))
	}
	return stallS, firstAckS, failed, nodes
}

// waitClusterSize waits until every node in nodes reports a cluster size
// of size, and returns when.
func waitClusterSize(ctx context.Context, status map[string]galera.Node, nodes []*sandbox.Node, size int, timeout time.Duration) (time.Time, bool) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		all := true
		for _, n := range nodes {
			st, err := status[n.Name].Status(ctx)
			if err != nil || st.ClusterSize != size {
				all = false
				break
			}
		}
		if all {
			return time.Now(), true
		}
		sleep(ctx, 20*time.Millisecond)
	}
	return time.Time{}, false
}

// lostOnAnyNode counts the acknowledged writes missing on at least one
// member. Reads wait for the node to have applied everything it received
// (wsrep_sync_wait).
func lostOnAnyNode(ctx context.Context, d *sandbox.Descriptor, members []*sandbox.Node, acked map[int64]bool) (int, error) {
	if len(acked) == 0 {
		return 0, nil
	}
	lo, hi := int64(-1), int64(0)
	for id := range acked {
		if lo < 0 || id < lo {
			lo = id
		}
		hi = max(hi, id)
	}
	missing := map[int64]bool{}
	for _, n := range members {
		db, err := mysql.Open(ctx, n.Key(), d.AdminOptions())
		if err != nil {
			return 0, err
		}
		have := map[int64]bool{}
		err = func() error {
			defer db.Close()
			conn, err := db.SQL().Conn(ctx)
			if err != nil {
				return err
			}
			defer conn.Close()
			if _, err := conn.ExecContext(ctx, "SET SESSION wsrep_sync_wait = 1"); err != nil {
				return fmt.Errorf("%s: %w", n.Name, err)
			}
			rows, err := conn.QueryContext(ctx, "SELECT id FROM dbpilot_drill.writes WHERE id BETWEEN ? AND ?", lo, hi)
			if err != nil {
				return fmt.Errorf("%s: %w", n.Name, err)
			}
			defer rows.Close()
			for rows.Next() {
				var id int64
				if err := rows.Scan(&id); err != nil {
					return err
				}
				have[id] = true
			}
			return rows.Err()
		}()
		if err != nil {
			return 0, err
		}
		for id := range acked {
			if !have[id] {
				missing[id] = true
			}
		}
	}
	return len(missing), nil
}

// fileSize is the size of path (0 when missing).
func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// logLines returns the lines of path after offset.
func logLines(path string, offset int64) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil
	}
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// rejoinMethod tells from the node's error log since its restart whether
// it caught up by IST (incremental, from the donor's gcache) or needed a
// full SST.
func rejoinMethod(errorLog string, offset int64) string {
	return classifyRejoin(logLines(errorLog, offset))
}

func classifyRejoin(lines []string) string {
	ist, sst := false, false
	for _, l := range lines {
		switch {
		// MariaDB runs the SST script for an IST too ("SST received" is
		// logged either way); the script says which it did.
		case strings.Contains(l, "SST completed on joiner"), strings.Contains(l, "Proceeding with SST"):
			sst = true
		case strings.Contains(l, "IST completed on joiner"), strings.Contains(l, "Receiving IST"), strings.Contains(l, "IST received"):
			ist = true
		}
	}
	switch {
	case sst:
		return "SST" // a full transfer, perhaps followed by an IST of the tail
	case ist:
		return "IST"
	}
	return "unknown"
}

// logExcerpt is the last WSREP or error lines of the log since offset,
// for a failed rejoin.
func logExcerpt(errorLog string, offset int64) string {
	var keep []string
	for _, l := range logLines(errorLog, offset) {
		if strings.Contains(l, "[ERROR]") || strings.Contains(l, "WSREP: ") && (strings.Contains(l, "fail") || strings.Contains(l, "abort")) {
			keep = append(keep, strings.TrimSpace(l))
		}
	}
	if len(keep) > 5 {
		keep = keep[len(keep)-5:]
	}
	if len(keep) == 0 {
		return "no error in " + errorLog
	}
	return errorLog + ": " + strings.Join(keep, " | ")
}

func summarizeGalera(rounds []GaleraRound) GaleraSummary {
	s := GaleraSummary{Rounds: len(rounds)}
	var stall, first, rejoin []float64
	for _, r := range rounds {
		if r.Error != "" {
			s.Failed++
		}
		stall = append(stall, r.WriteStallS)
		first = append(first, r.FirstAckS)
		if r.RejoinS > 0 {
			rejoin = append(rejoin, r.RejoinS)
		}
		if r.RejoinMethod == "IST" {
			s.IST++
		}
		s.FailedWrites += r.FailedWrites
		s.LostAcked += r.LostAcked
	}
	s.StallP50, s.StallMax = quantile(stall, 0.5), quantile(stall, 1)
	s.FirstAckP50, s.FirstAckMax = quantile(first, 0.5), quantile(first, 1)
	s.RejoinP50, s.RejoinMax = quantile(rejoin, 0.5), quantile(rejoin, 1)
	return s
}
