package simulator

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// initialUptime is how long the servers seem to have run when the fleet starts.
const initialUptime = 24 * time.Hour

// Options shape a fleet.
type Options struct {
	// Instances is how many servers to simulate (default 5).
	Instances int
	// ClusterSize is the number of servers per cluster: one primary and
	// ClusterSize-1 replicas of it (default 5). The last cluster may be
	// smaller.
	ClusterSize int
	// BasePort is the first port; instance i listens on BasePort+i. Zero
	// picks free ports (tests).
	BasePort int
	// Host is the loopback address to listen on (default 127.0.0.1).
	Host string
	// Log, when set, receives one line per statement the simulator does
	// not know (the first time it is seen) and per kill and revive.
	Log io.Writer
}

// Fleet is the simulated servers.
type Fleet struct {
	opt      Options
	tmpl     *templates
	hostname string
	start    time.Time

	// topo guards every instance's replication wiring (source, replicas,
	// thread states), which statements like CHANGE MASTER change.
	topo sync.RWMutex

	clusters []*Cluster
	byPort   map[int]*Instance
	connID   atomic.Uint32

	statsMu sync.Mutex
	queries uint64
	unknown map[string]uint64
	kinds   map[string]uint64 // statements answered by statementKind
}

// Cluster is one primary and its replicas.
type Cluster struct {
	Name    string
	Members []*Instance // [0] is the primary

	mu       sync.Mutex
	seqBase  uint64    // GTID sequence at seqSince
	seqSince time.Time // when the primary (re)started writing
	writing  bool      // the primary is alive
	// The dbpilot.heartbeat table, shared by the cluster as replication
	// would: made by the first CREATE, its single row written by REPLACE.
	hbTable    bool
	hbServerID uint32
	hbTS       time.Time
}

// Instance is one simulated server.
type Instance struct {
	fleet    *Fleet
	cluster  *Cluster
	Port     int
	ServerID uint32
	factor   float64 // scales the status counters' rates: 0.5..1.5

	// Replication wiring, under fleet.topo.
	source      *Instance
	replicas    []*Instance
	ioRunning   bool
	sqlRunning  bool
	stoppedSeq  uint64 // applied position while the SQL thread is stopped
	everReplica bool   // gtid_slave_pos stays set after RESET SLAVE

	readOnly atomic.Bool
	alive    atomic.Bool
	started  atomic.Int64 // unix ns of the (simulated) start
	sleepers atomic.Int32

	mu    sync.Mutex
	ln    net.Listener
	conns map[*conn]struct{}
}

// Key returns HOST:PORT.
func (in *Instance) Key() string { return net.JoinHostPort(in.fleet.opt.Host, strconv.Itoa(in.Port)) }

// New builds a fleet; Start opens its ports.
func New(opt Options) *Fleet {
	if opt.Instances <= 0 {
		opt.Instances = 5
	}
	if opt.ClusterSize <= 0 {
		opt.ClusterSize = 5
	}
	if opt.Host == "" {
		opt.Host = "127.0.0.1"
	}
	f := &Fleet{opt: opt, tmpl: loadTemplates(), start: time.Now(), byPort: map[int]*Instance{}, unknown: map[string]uint64{}, kinds: map[string]uint64{}}
	f.hostname, _ = os.Hostname()
	if f.hostname == "" {
		f.hostname = "localhost"
	}
	for i := 0; i < opt.Instances; i += opt.ClusterSize {
		c := &Cluster{Name: fmt.Sprintf("sim%04d", i/opt.ClusterSize+1), seqBase: 1000, seqSince: f.start, writing: true}
		for j := i; j < min(i+opt.ClusterSize, opt.Instances); j++ {
			in := &Instance{fleet: f, cluster: c, conns: map[*conn]struct{}{}}
			in.started.Store(f.start.Add(-initialUptime).UnixNano())
			c.Members = append(c.Members, in)
		}
		primary := c.Members[0]
		for _, r := range c.Members[1:] {
			r.source, r.ioRunning, r.sqlRunning, r.everReplica = primary, true, true, true
			r.readOnly.Store(true)
			primary.replicas = append(primary.replicas, r)
		}
		f.clusters = append(f.clusters, c)
	}
	return f
}

// Start listens on every instance's port.
func (f *Fleet) Start() error {
	i := 0
	for _, c := range f.clusters {
		for _, in := range c.Members {
			port := 0
			if f.opt.BasePort > 0 {
				port = f.opt.BasePort + i
			}
			i++
			ln, err := net.Listen("tcp", net.JoinHostPort(f.opt.Host, strconv.Itoa(port)))
			if err != nil {
				f.Close()
				return fmt.Errorf("simulator: listen: %w", err)
			}
			in.Port = ln.Addr().(*net.TCPAddr).Port
			// server_id: the port, as dbpilot's sandboxes do.
			in.ServerID = uint32(in.Port)
			in.factor = 0.5 + float64((uint32(in.Port)*2654435761)%1000)/1000
			f.byPort[in.Port] = in
			in.mu.Lock()
			in.ln = ln
			in.alive.Store(true)
			in.mu.Unlock()
			go in.accept(ln)
		}
	}
	return nil
}

// Close closes every listener and connection.
func (f *Fleet) Close() error {
	for _, c := range f.clusters {
		for _, in := range c.Members {
			in.shutdown()
		}
	}
	return nil
}

// Clusters returns the clusters.
func (f *Fleet) Clusters() []*Cluster { return f.clusters }

// Instance returns the instance listening on port, or nil.
func (f *Fleet) Instance(port int) *Instance { return f.byPort[port] }

// ErrNoInstance is returned for a port no instance listens on.
var ErrNoInstance = errors.New("simulator: no instance on that port")

// Kill makes the instance on port die: its listener closes (connections are
// refused) and every connection is reset at once. Its replicas lose it (IO
// thread Connecting, error 2003). It returns when it died.
func (f *Fleet) Kill(port int) (time.Time, error) {
	in := f.byPort[port]
	if in == nil {
		return time.Time{}, ErrNoInstance
	}
	now := time.Now()
	// Replicas lose their source before dbpilot's sessions break, as they
	// do when a server crashes: its sockets are reset together.
	in.alive.Store(false)
	if in == in.cluster.Members[0] {
		in.cluster.stopWriting(now)
	}
	in.shutdown()
	f.logf("killed %s", in.Key())
	return now, nil
}

// Revive restarts a killed instance on its port: uptime and counters start
// again, its replicas reconnect.
func (f *Fleet) Revive(port int) (time.Time, error) {
	in := f.byPort[port]
	if in == nil {
		return time.Time{}, ErrNoInstance
	}
	if in.alive.Load() {
		return time.Now(), nil
	}
	ln, err := net.Listen("tcp", in.Key())
	if err != nil {
		return time.Time{}, fmt.Errorf("simulator: revive %s: %w", in.Key(), err)
	}
	now := time.Now()
	in.mu.Lock()
	in.ln = ln
	in.started.Store(now.UnixNano())
	in.mu.Unlock()
	in.alive.Store(true)
	if in == in.cluster.Members[0] {
		in.cluster.startWriting(now)
	}
	go in.accept(ln)
	f.logf("revived %s", in.Key())
	return now, nil
}

func (f *Fleet) logf(format string, args ...any) {
	if f.opt.Log != nil {
		fmt.Fprintf(f.opt.Log, "dbpilot-sim: "+format+"\n", args...)
	}
}

// noteUnknown counts a statement the simulator does not answer.
func (f *Fleet) noteUnknown(q string) {
	if len(q) > 120 {
		q = q[:120]
	}
	f.statsMu.Lock()
	n := f.unknown[q]
	f.unknown[q] = n + 1
	f.statsMu.Unlock()
	if n == 0 {
		f.logf("unknown statement: %s", q)
	}
}

// Stats are counts since the start.
type Stats struct {
	Queries     uint64            `json:"queries"`
	Connections int               `json:"connections"`
	Unknown     map[string]uint64 `json:"unknown"`
	// Kinds counts statements by their first words (statementKind).
	Kinds map[string]uint64 `json:"kinds"`
}

// statementKind names a statement by its first three words (SHOW GLOBAL
// STATUS, SELECT @@global.version, ...), for Stats.
func statementKind(q string) string {
	f := strings.Fields(q)
	if len(f) > 3 {
		f = f[:3]
	}
	k := strings.Join(f, " ")
	if len(k) > 48 {
		k = k[:48]
	}
	return k
}

// Stats returns the statements answered and those not known.
func (f *Fleet) Stats() Stats {
	f.statsMu.Lock()
	s := Stats{Queries: f.queries, Unknown: make(map[string]uint64, len(f.unknown)), Kinds: make(map[string]uint64, len(f.kinds))}
	for k, v := range f.unknown {
		s.Unknown[k] = v
	}
	for k, v := range f.kinds {
		s.Kinds[k] = v
	}
	f.statsMu.Unlock()
	for _, in := range f.byPort {
		in.mu.Lock()
		s.Connections += len(in.conns)
		in.mu.Unlock()
	}
	return s
}

// seq returns the cluster's GTID sequence number at now.
func (c *Cluster) seq(now time.Time) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seqLocked(now)
}

func (c *Cluster) seqLocked(now time.Time) uint64 {
	if !c.writing {
		return c.seqBase
	}
	return c.seqBase + uint64(max(0, now.Sub(c.seqSince).Seconds())*gtidRate)
}

func (c *Cluster) stopWriting(now time.Time) {
	c.mu.Lock()
	c.seqBase = c.seqLocked(now)
	c.writing = false
	c.mu.Unlock()
}

func (c *Cluster) startWriting(now time.Time) {
	c.mu.Lock()
	if !c.writing {
		c.seqSince, c.writing = now, true
	}
	c.mu.Unlock()
}

// gtidString is the cluster's domain-0 position at seq, written by its
// first primary.
func (c *Cluster) gtidString(seq uint64) string {
	return "0-" + strconv.FormatUint(uint64(c.Members[0].ServerID), 10) + "-" + strconv.FormatUint(seq, 10)
}

// replicaSource returns the instance's source, nil for a primary.
func (in *Instance) replicaSource() *Instance {
	in.fleet.topo.RLock()
	defer in.fleet.topo.RUnlock()
	return in.source
}

// ioConnected reports whether the IO thread runs and its source is alive.
func (in *Instance) ioConnected() bool {
	in.fleet.topo.RLock()
	src, io := in.source, in.ioRunning
	in.fleet.topo.RUnlock()
	return src != nil && io && src.alive.Load()
}

func (in *Instance) sqlOn() bool {
	in.fleet.topo.RLock()
	defer in.fleet.topo.RUnlock()
	return in.sqlRunning
}

// liveReplicas are the replicas connected to this instance now.
func (in *Instance) liveReplicas() []*Instance {
	in.fleet.topo.RLock()
	defer in.fleet.topo.RUnlock()
	var out []*Instance
	for _, r := range in.replicas {
		if r.alive.Load() && r.ioRunning && in.alive.Load() {
			out = append(out, r)
		}
	}
	return out
}

// ClusterInfo is a cluster as GET /clusters shows it.
type ClusterInfo struct {
	Name     string         `json:"name"`
	Primary  InstanceInfo   `json:"primary"`
	Replicas []InstanceInfo `json:"replicas"`
}

// InstanceInfo is one instance in ClusterInfo.
type InstanceInfo struct {
	Key      string `json:"key"`
	Port     int    `json:"port"`
	ServerID uint32 `json:"server_id"`
	Alive    bool   `json:"alive"`
	Source   string `json:"source,omitempty"`
}

// Info describes every cluster: its first primary and the other members.
func (f *Fleet) Info() []ClusterInfo {
	out := make([]ClusterInfo, 0, len(f.clusters))
	f.topo.RLock()
	defer f.topo.RUnlock()
	for _, c := range f.clusters {
		ci := ClusterInfo{Name: c.Name, Replicas: []InstanceInfo{}}
		for i, in := range c.Members {
			ii := InstanceInfo{Key: in.Key(), Port: in.Port, ServerID: in.ServerID, Alive: in.alive.Load()}
			if in.source != nil {
				ii.Source = in.source.Key()
			}
			if i == 0 {
				ci.Primary = ii
			} else {
				ci.Replicas = append(ci.Replicas, ii)
			}
		}
		out = append(out, ci)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
