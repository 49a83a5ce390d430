// Package tui is `dbpilot top`: a live terminal view of MySQL and MariaDB
// servers in the spirit of myq_status and innotop, refreshed every second,
// one row per instance.
//
// Data comes from a Source: Direct reads the servers itself (mysql's
// inspection, SHOW GLOBAL STATUS, SHOW ENGINE INNODB STATUS read with the
// collector package's parser) and computes rates from the deltas of two
// reads; Server asks a running `dbpilot serve` through httpapi.Client
// (clusters, PromQL metric queries, firing alerts). Rendering is a
// pure function of a Frame (Render for the screen, Lines for the one line per
// instance printed when stdout is not a terminal); Run drives a source and
// draws, switching views on key presses.
//
// The q view (top digests now) costs the servers more than the others: a
// Source that implements ViewSetter is told which view is shown and reads
// statement digests only while the q view is.
package tui

import (
	"context"
	"math"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot"
)

// Source produces one Frame per refresh.
type Source interface {
	// Describe names the source in the header, e.g. "direct" or
	// "server http://127.0.0.1:7070".
	Describe() string
	// Poll reads every instance once. It fails only when nothing at all
	// could be read (the server API is down); an instance that cannot be
	// read is a Row with Err set.
	Poll(ctx context.Context) (*Frame, error)
	// Close releases connections.
	Close() error
}

// Num is a value that may be unknown: a rate before the second read, a
// metric the server does not have. The zero Num is unknown.
type Num struct {
	V     float64
	Valid bool
}

// N returns a known Num; NaN and infinities are unknown.
func N(v float64) Num {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return Num{}
	}
	return Num{V: v, Valid: true}
}

// Roles an instance can have in a Row.
const (
	RolePrimary      = "primary"      // has no replication channel (or is a writer in a ring) and is writable or feeds others
	RoleReplica      = "replica"      // replicates from a source
	RoleIntermediate = "intermediate" // replicates and is replicated from
	RoleReadOnly     = "readonly"     // no channel, read_only, feeds nobody observed
)

// Row is what one refresh shows of one instance.
type Row struct {
	Instance string // host:port
	Role     string
	// Err is set when the instance could not be read; the other fields are
	// then empty.
	Err string

	ReadOnly bool

	QPS                              Num // Questions per second
	Select, Insert, Update, Delete   Num // Com_* per second
	ThreadsRunning, ThreadsConnected Num

	// Lag is the replication lag in seconds: the heartbeat lag when serve
	// measures it, else the largest Seconds_Behind_Master of the channels.
	// LagNull is set when a channel reports NULL (a thread stopped).
	Lag     Num
	LagNull bool

	DirtyPct      Num // Innodb_buffer_pool_pages_dirty / _total, percent
	CheckpointAge Num // bytes: log sequence number - last checkpoint
	CheckpointPct Num // CheckpointAge / redo log capacity, percent

	RowsRead, RowsInserted, RowsUpdated, RowsDeleted Num // Innodb_rows_* per second (Handler_* where absent)
	HistoryLength                                    Num
	PendingReads, PendingWrites, PendingFsyncs       Num // Innodb_data_pending_*

	// GTID is the executed GTID position: gtid_current_pos (MariaDB) or
	// gtid_executed (MySQL).
	GTID     string
	Channels []Channel

	Wsrep            bool   // Galera is on
	WsrepState       string // wsrep_local_state_comment
	WsrepClusterSize Num
	WsrepRecvQueue   Num
	WsrepSendQueue   Num
	WsrepFlowPaused  Num // percent of the last interval spent paused by flow control
	WsrepFCSent      Num // flow-control messages sent per second (the node cannot keep up)
	WsrepFCRecv      Num // flow-control messages received per second
	WsrepCertDeps    Num // wsrep_cert_deps_distance: write sets that could apply in parallel

	// Alerts is the number of firing alerts on the instance (Server only).
	Alerts int

	// Apply is serve's catch-up figures of a replica, GroupCommit its
	// group commit figures of a primary (Server only; nil otherwise).
	Apply       *dbpilot.ReplicaApply
	GroupCommit *dbpilot.GroupCommit
}

// Channel is one replication channel of a Row.
type Channel struct {
	Name          string // "" for the default
	Source        string // host:port
	IORunning     string // Yes, No, Connecting
	SQLRunning    string // Yes, No
	Lag           Num    // Seconds_Behind_Master; unknown when NULL
	RelayLogSpace Num    // bytes
}

// Frame is one refresh of every instance.
type Frame struct {
	Time   time.Time
	Source string
	Rows   []Row
	// Alerts are the firing alerts; AlertsKnown says the source can tell
	// (Server).
	Alerts      []dbpilot.Alert
	AlertsKnown bool
	// Notes are source-level problems shown under the header ("metrics:
	// ...", "alerts: ...").
	Notes []string
	// Warmup is set on a first read, before any rate can be computed.
	Warmup bool
	// Queries are the top digests, read only while the q view is shown
	// (nil otherwise, or when the source has none).
	Queries *Queries
}

// View is one of the screens of top.
type View int

// Views, switched by the key of each.
const (
	ViewOverview View = iota
	ViewInnoDB
	ViewReplication
	ViewWsrep
	ViewQueries
)

var views = []struct {
	key  byte
	name string
}{
	{'o', "overview"},
	{'i', "innodb"},
	{'r', "replication"},
	{'w', "wsrep"},
	{'q', "queries"},
}

// String returns the view's name.
func (v View) String() string {
	if v < 0 || int(v) >= len(views) {
		return "unknown"
	}
	return views[v].name
}

// ParseView returns the view named s (or its key letter).
func ParseView(s string) (View, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	for i, v := range views {
		if s == v.name || len(s) == 1 && s[0] == v.key {
			return View(i), nil
		}
	}
	return 0, dbpilot.Errorf(dbpilot.EINVALID, "unknown view %q: want overview, innodb, replication, wsrep or queries", s)
}

// viewForKey returns the view switched to by key.
func viewForKey(key byte) (View, bool) {
	for i, v := range views {
		if key == v.key {
			return View(i), true
		}
	}
	return 0, false
}

// assignRoles sets each reachable row's role from its channels and
// read_only, among the observed rows:
//   - a row on a replication cycle (a ring: following sources leads back to
//     it) is a primary, a writer;
//   - a row that replicates and feeds another observed row is intermediate;
//   - a row that replicates is a replica;
//   - a row without channels is a primary unless it is read_only and feeds
//     nobody observed (readonly).
func assignRoles(rows []Row) {
	norm := func(s string) string {
		k, err := dbpilot.ParseInstanceKey(s)
		if err != nil {
			return s
		}
		return k.Normalized().String()
	}
	sources := make(map[string]map[string]bool, len(rows)) // instance → its sources
	for _, r := range rows {
		m := map[string]bool{}
		for _, c := range r.Channels {
			m[norm(c.Source)] = true
		}
		sources[norm(r.Instance)] = m
	}
	for i := range rows {
		r := &rows[i]
		if r.Err != "" || r.Role != "" {
			continue
		}
		self := norm(r.Instance)
		feeds := false
		for other, srcs := range sources {
			if other != self && srcs[self] {
				feeds = true
			}
		}
		ring := reaches(sources, self)
		switch {
		case len(r.Channels) > 0 && ring:
			r.Role = RolePrimary
		case len(r.Channels) > 0 && feeds:
			r.Role = RoleIntermediate
		case len(r.Channels) > 0:
			r.Role = RoleReplica
		case r.ReadOnly && !feeds:
			r.Role = RoleReadOnly
		default:
			r.Role = RolePrimary
		}
	}
}

// reaches reports whether following sources from self leads back to self.
func reaches(sources map[string]map[string]bool, self string) bool {
	seen := map[string]bool{}
	next := []string{self}
	for len(next) > 0 {
		n := next[len(next)-1]
		next = next[:len(next)-1]
		for s := range sources[n] {
			if s == self {
				return true
			}
			if !seen[s] {
				seen[s] = true
				next = append(next, s)
			}
		}
	}
	return false
}
