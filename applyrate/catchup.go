// Package applyrate measures how fast replicas apply what their primary
// commits: the backlog from GTID positions, the apply and commit rates
// over the last minute, the prediction of a lagging replica's catch-up;
// and a primary's group commit figures with the advice they support. It is
// pure: observations and status counters in, figures out.
package applyrate

import (
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/gtid"
)

// Window is how far back rates are measured.
const Window = time.Minute

// MinApplySpan is the apply measured (with a backlog, the SQL thread
// running) before a prediction is made. Shorter spans were too noisy on a
// loaded host: a replica's pace varies by 10-15 % from one second to the
// next, and the prediction divides by apply − commit rate, which
// magnifies the error (by 1.4 when the primary commits a third of what the
// replica applies).
const MinApplySpan = 5 * time.Second

// RecentSpan bounds the apply measured: the last seconds of the run, so
// that a replica whose apply speeds up as it warms (its buffer pool, its
// relay log cached) is predicted from its pace now, not its average.
const RecentSpan = 10 * time.Second

// Point is one observation of one server.
type Point struct {
	At time.Time
	// Count counts transactions: on a primary those it committed, on a
	// replica those it applied (Committed, Applied). Only its changes
	// matter.
	Count uint64
	// Known is false when the server's GTID positions could not be read.
	Known bool

	// A replica's, relative to its cluster's primary.
	Backlog      int64 // transactions (Backlog)
	BacklogBytes int64 // relay log bytes (BacklogBytes)
	Running      bool  // every SQL thread runs
}

// Committed returns the transaction counter of a primary: MariaDB, the sum
// over domains of gtid_binlog_pos's seq_no (gtid_current_pos without a
// binary log); MySQL, the transactions in gtid_executed.
func Committed(in *dbpilot.Instance) (uint64, bool) {
	if in.Flavor == dbpilot.FlavorMariaDB {
		pos := in.GTID.BinlogPos
		if pos == "" {
			pos = in.GTID.CurrentPos
		}
		return mariaSum(pos)
	}
	return mysqlCount(in.GTID.Executed)
}

// Applied returns the transaction counter of a replica: MariaDB, the sum
// over domains of gtid_slave_pos's seq_no; MySQL, the transactions in
// gtid_executed.
func Applied(in *dbpilot.Instance) (uint64, bool) {
	if in.Flavor == dbpilot.FlavorMariaDB {
		return mariaSum(in.GTID.SlavePos)
	}
	return mysqlCount(in.GTID.Executed)
}

func mariaSum(pos string) (uint64, bool) {
	if pos == "" {
		return 0, false
	}
	l, err := gtid.ParseMariaList(pos)
	if err != nil {
		return 0, false
	}
	var n uint64
	for _, d := range l.Domains() {
		if g, ok := l.DomainSeq(d); ok {
			n += g.Seq
		}
	}
	return n, true
}

func mysqlCount(set string) (uint64, bool) {
	if set == "" {
		return 0, false
	}
	s, err := gtid.ParseMySQLSet(set)
	if err != nil {
		return 0, false
	}
	return s.Count(), true
}

// Backlog returns the transactions primary has committed that replica has
// not applied. MariaDB: per domain of the primary's gtid_binlog_pos, its
// seq_no minus the replica's gtid_slave_pos seq_no in that domain (a
// domain the replica has no position in is left out: it never replicated
// it), summed; MySQL: the size of the primary's gtid_executed minus the
// replica's. false when a position is missing or unreadable.
func Backlog(primary, replica *dbpilot.Instance) (int64, bool) {
	if replica.Flavor == dbpilot.FlavorMariaDB {
		ppos := primary.GTID.BinlogPos
		if ppos == "" {
			ppos = primary.GTID.CurrentPos
		}
		if ppos == "" || replica.GTID.SlavePos == "" {
			return 0, false
		}
		p, err := gtid.ParseMariaList(ppos)
		if err != nil {
			return 0, false
		}
		r, err := gtid.ParseMariaList(replica.GTID.SlavePos)
		if err != nil {
			return 0, false
		}
		var n int64
		for _, d := range p.Domains() {
			pg, _ := p.DomainSeq(d)
			rg, ok := r.DomainSeq(d)
			if ok && pg.Seq > rg.Seq {
				n += int64(pg.Seq - rg.Seq)
			}
		}
		return n, true
	}
	if primary.GTID.Executed == "" || replica.GTID.Executed == "" {
		return 0, false
	}
	p, err := gtid.ParseMySQLSet(primary.GTID.Executed)
	if err != nil {
		return 0, false
	}
	r, err := gtid.ParseMySQLSet(replica.GTID.Executed)
	if err != nil {
		return 0, false
	}
	return int64(p.Subtract(r).Count()), true
}

// BacklogBytes returns the relay log bytes replica has still to apply,
// summed over its channels: Read_Master_Log_Pos − Exec_Master_Log_Pos
// while the IO and SQL threads are in the same source binary log, else
// Relay_Log_Space (every relay log: an upper bound).
func BacklogBytes(replica *dbpilot.Instance) int64 {
	var n int64
	for _, c := range replica.Channels {
		switch {
		case c.SourceLogFile != "" && c.SourceLogFile == c.RelaySourceLogFile && c.ReadSourceLogPos >= c.ExecSourceLogPos:
			n += int64(c.ReadSourceLogPos - c.ExecSourceLogPos)
		default:
			n += int64(c.RelayLogSpace)
		}
	}
	return n
}

// readAt is when in's GTID positions were read: an inspection reads them
// in its first round trip, so when it began (ReadStartedAt), not when it
// ended (ObservedAt, after the replica status and the replicas, later by
// a varying tens to hundreds of milliseconds on a loaded host).
func readAt(in *dbpilot.Instance) time.Time {
	if !in.ReadStartedAt.IsZero() {
		return in.ReadStartedAt
	}
	return in.ObservedAt
}

// PrimaryPoint is an observation of the cluster's primary.
func PrimaryPoint(primary *dbpilot.Instance) Point {
	n, ok := Committed(primary)
	return Point{At: readAt(primary), Count: n, Known: ok}
}

// ReplicaPoint is an observation of a replica of primary.
func ReplicaPoint(primary, replica *dbpilot.Instance) Point {
	n, ok := Applied(replica)
	b, bok := Backlog(primary, replica)
	running := len(replica.Channels) > 0
	for _, c := range replica.Channels {
		running = running && c.SQLRunning
	}
	return Point{At: readAt(replica), Count: n, Known: ok && bok, Backlog: b, BacklogBytes: BacklogBytes(replica), Running: running}
}

// CommitRate returns the transactions per second of the primary's points
// over the window that ends at its last point (0 with less than a second
// of points).
func CommitRate(primary []Point) float64 {
	var known []Point
	for _, p := range primary {
		if p.Known {
			known = append(known, p)
		}
	}
	if len(known) < 2 {
		return 0
	}
	last := known[len(known)-1]
	first := len(known) - 1
	for first > 0 && last.At.Sub(known[first-1].At) <= Window && known[first-1].Count <= known[first].Count {
		first--
	}
	span := last.At.Sub(known[first].At)
	if span < time.Second {
		return 0
	}
	return float64(last.Count-known[first].Count) / span.Seconds()
}

// ApplyRate returns the transactions per second a replica applied over
// the run of points that ends at its last one in which it had a backlog
// and its SQL thread ran (its last RecentSpan), with the seconds measured:
// its apply speed, not capped by the primary's pace, and not diluted by a
// time it was stopped or caught up. The rate is the least-squares slope
// of the run's points, not the difference of its ends: one observation
// read late or early moves it by a fraction of what it moves the ends'.
func ApplyRate(replica []Point) (rate float64, span time.Duration) {
	if len(replica) < 2 {
		return 0, 0
	}
	last := replica[len(replica)-1]
	if !last.Known {
		return 0, 0
	}
	k := len(replica) - 1
	for k > 0 {
		p := replica[k-1]
		if !p.Known || !p.Running || p.Backlog <= 0 || last.At.Sub(p.At) > Window || p.Count > replica[k].Count || last.At.Sub(p.At) > RecentSpan {
			break
		}
		k--
	}
	if k > 0 && !replica[k-1].Running && k < len(replica)-1 && last.At.Sub(replica[k-1].At) <= RecentSpan {
		// The run began with a start of the SQL thread: its first interval
		// is the thread's start-up, slower than what follows (a 2-core
		// sandbox: about half), and made the first prediction half as
		// long again as the catch-up. It is left out.
		k++
	}
	span = last.At.Sub(replica[k].At)
	if span <= 0 {
		return 0, 0
	}
	return slope(replica[k:]), span
}

// slope returns the least-squares slope of the points' counts over their
// times, per second (at least two points, not all at one time).
func slope(ps []Point) float64 {
	t0, c0 := ps[0].At, ps[0].Count
	var n, sx, sy, sxx, sxy float64
	for _, p := range ps {
		x, y := p.At.Sub(t0).Seconds(), float64(p.Count-c0)
		n++
		sx += x
		sy += y
		sxx += x * x
		sxy += x * y
	}
	den := n*sxx - sx*sx
	if den <= 0 {
		return 0
	}
	return (n*sxy - sx*sy) / den
}

// Predict returns a replica's apply figures and catch-up prediction from
// its points and its primary's, oldest first (Key is the caller's to
// set). A replica less than one second of the primary's commits behind
// is caught up; one with a stopped SQL thread is stopped; otherwise,
// with at least MinApplySpan of apply measured, it catches up in
// backlog / (apply rate − commit rate) when it applies faster than the
// primary commits, and falls behind by the difference when not.
func Predict(primary, replica []Point) dbpilot.ReplicaApply {
	out := dbpilot.ReplicaApply{State: dbpilot.CatchUpUnknown}
	if len(replica) == 0 {
		return out
	}
	last := replica[len(replica)-1]
	if !last.Known {
		return out
	}
	out.BacklogTransactions, out.BacklogBytes = last.Backlog, last.BacklogBytes
	out.CommitRate = CommitRate(primary)
	rate, span := ApplyRate(replica)
	if span >= MinApplySpan {
		out.ApplyRate, out.RateSeconds = rate, span.Seconds()
	}
	switch {
	case !last.Running:
		out.State = dbpilot.CatchUpStopped
		out.FallingBehindBy = out.CommitRate
	case last.Backlog <= 0 || float64(last.Backlog) <= out.CommitRate:
		out.State = dbpilot.CatchUpCaughtUp
	case span < MinApplySpan:
		out.State = dbpilot.CatchUpUnknown
	case out.ApplyRate > out.CommitRate:
		out.State = dbpilot.CatchUpCatching
		out.CatchUpSeconds = float64(last.Backlog) / (out.ApplyRate - out.CommitRate)
	default:
		out.State = dbpilot.CatchUpFalling
		out.FallingBehindBy = out.CommitRate - out.ApplyRate
	}
	return out
}

// Ring keeps one server's points of the last Window (and one before it).
type Ring struct {
	points []Point
}

// Add appends p; a point not after the last one replaces it.
func (r *Ring) Add(p Point) {
	if n := len(r.points); n > 0 && !p.At.After(r.points[n-1].At) {
		r.points[n-1] = p
		return
	}
	r.points = append(r.points, p)
	// Drop what is older than the window, keeping one point before it.
	cut := 0
	for cut+1 < len(r.points) && p.At.Sub(r.points[cut+1].At) > Window {
		cut++
	}
	if cut > 0 {
		r.points = append(r.points[:0], r.points[cut:]...)
	}
}

// Points returns the points, oldest first (the caller does not modify
// them).
func (r *Ring) Points() []Point { return r.points }

// Reset forgets every point.
func (r *Ring) Reset() { r.points = r.points[:0] }
