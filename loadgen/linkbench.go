package loadgen

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
)

// LinkBench's social-graph workload (github.com/facebookarchive/linkbench),
// with the schema of its MySQL store and the request mix, id distributions
// and statements of its default workload (config/FBWorkload.properties and
// LinkStoreMysql):
//
// Schema (LinkBench's README; without its PARTITION BY KEY(id1) PARTITIONS
// 16, a tuning choice left to the operator):
//
//	linktable  (id1, id2, link_type, visibility, data, time, version,
//	            PRIMARY KEY (link_type, id1, id2),
//	            KEY id1_type (id1, link_type, visibility, time, id2, version, data))
//	counttable (id, link_type, count, time, version, PRIMARY KEY (id, link_type))
//	nodetable  (id AUTO_INCREMENT PRIMARY KEY, type, version, time, data)
//
// Operation mix (percent, FBWorkload.properties): get_node 12.93,
// add_node 2.57, update_node 7.37, delete_node 1.01, add_link 8.99,
// delete_link 2.99, update_link 8.01, get_link 0.53, get_link_list 50.71,
// count_link 4.89.
//
// Ids: id1 of link reads (get_link, get_link_list, count_link) follow
// LinkBench's ZipfDistribution with shape 0.8 (read_uncorr_shape), of link
// writes shape 0.741 (write_shape), of node reads 0.625 (node_read_shape)
// and node updates 0.606 (node_update_shape), each over [1, Nodes] with
// the ranks shuffled into ids by a permutation of its own (LinkBench's
// InvertibleShuffler does the same); node deletes are uniform. LinkBench
// sends a small share of link reads and writes (0.5% and 5%) to a
// distribution correlated with out-degree; here all are uncorrelated.
//
// Link types: two (link_type_count), 123456789 and 123456790, each link
// operation picking one uniformly. id2s as LinkBench's ID2Chooser: the
// initial links of id1 of a type are id1+0 .. id1+n-1, and an operation
// picks id2 = id1 + uniform[0, n/p) with p = 0.5 for add, update and get
// (about half exist) and 1 for delete. get_link fetches a number of id2s
// from LinkBench's GeometricDistribution (prob 0.382 over [1, 128), mean
// about 3.6 as LinkBench computes it).
//
// Out-degree (a simplification of LinkBench's empirical distribution,
// which loads about 4.7 links per node): a power law, Lomax with shape 2
// and scale 4.5, floored (mean about 4 links per node, a third of the
// nodes without links, at most 10000), split evenly between the two link
// types. Each node's degree is a hash of its id, so clients know it
// without asking the server.
//
// Writes run as LinkStoreMysql runs them, in one transaction: add_link and
// update_link insert the link with ON DUPLICATE KEY UPDATE of visibility,
// then from the affected rows (1 new, 2 made visible, 0 found visible)
// increment counttable and/or update the link's data; delete_link reads
// the link's visibility (FOR UPDATE here, so that concurrent deletes
// cannot both decrement) and hides a visible link and decrements its
// count. add_link relies on the driver's default affected-rows semantics
// (no clientFoundRows). get_link_list is LinkBench's range query (visible
// links by time, newest first, up to 10000); its 0.3% "history" queries
// are not made. Reads run without BEGIN/COMMIT.

// LinkBench's tables.
const (
	lbLinkTable  = "linktable"
	lbCountTable = "counttable"
	lbNodeTable  = "nodetable"
)

// LinkBench's constants (LinkStore).
const (
	lbLinkType       = 123456789 // LinkStore.DEFAULT_LINK_TYPE
	lbLinkTypeCount  = 2         // link_type_count
	lbNodeType       = 2048      // LinkStore.ID1_TYPE
	lbVisible        = 1         // VISIBILITY_DEFAULT
	lbHidden         = 0         // VISIBILITY_HIDDEN
	lbRangeLimit     = 10000     // LinkStore.DEFAULT_LIMIT
	lbLinkDataSize   = 8         // link_datasize (median)
	lbNodeDataSize   = 128       // node_datasize (median)
	lbMultigetMax    = 128       // link_multiget_dist_max (exclusive)
	lbMultigetProb   = 0.382     // link_multiget_dist_prob
	lbDefaultNodes   = 100000    // default PrepareOptions.Nodes
	lbLoadChunk      = 1000      // ids per load task and rows per INSERT
	lbDegreeShape    = 2.0       // out-degree power law: Lomax shape
	lbDegreeScale    = 4.5       // and scale
	lbDegreeMax      = 10000     // out-degree cap
	lbReadShape      = 0.8       // read_uncorr_shape
	lbWriteShape     = 0.741     // write_shape
	lbNodeReadShape  = 0.625     // node_read_shape
	lbNodeWriteShape = 0.606     // node_update_shape
)

// LinkBench's operations, in Ops order.
const (
	lbGetNode = iota
	lbAddNode
	lbUpdateNode
	lbDeleteNode
	lbAddLink
	lbDeleteLink
	lbUpdateLink
	lbGetLink
	lbGetLinkList
	lbCountLink
)

// lbOps are the operations' names, in Ops order.
var lbOps = []string{
	lbGetNode:     "get_node",
	lbAddNode:     "add_node",
	lbUpdateNode:  "update_node",
	lbDeleteNode:  "delete_node",
	lbAddLink:     "add_link",
	lbDeleteLink:  "delete_link",
	lbUpdateLink:  "update_link",
	lbGetLink:     "get_link",
	lbGetLinkList: "get_link_list",
	lbCountLink:   "count_link",
}

// LinkBenchMix is the operation mix of LinkBench's FBWorkload.properties,
// in percent, in Ops order (getnode, addnode, updatenode, deletenode,
// addlink, deletelink, updatelink, getlink, getlinklist, countlink).
var LinkBenchMix = []float64{
	lbGetNode:     12.9326683,
	lbAddNode:     2.5732789,
	lbUpdateNode:  7.366437,
	lbDeleteNode:  1.0115914,
	lbAddLink:     8.9886601,
	lbDeleteLink:  2.9907664,
	lbUpdateLink:  8.0122125,
	lbGetLink:     0.5261142,
	lbGetLinkList: 50.7119145,
	lbCountLink:   4.8863567,
}

// lbWrites reports whether op writes.
func lbWrites(op int) bool { return op >= lbAddNode && op <= lbUpdateLink }

// LinkBench is LinkBench's graph workload. Its clients pick ids within the
// number of nodes it was prepared with or configured to (Configure); by
// default 100000.
type LinkBench struct {
	mu    sync.Mutex
	nodes int
	dists *lbDists // for nodes
}

// newLinkBench returns the workload with the default number of nodes.
func newLinkBench() *LinkBench { return &LinkBench{nodes: lbDefaultNodes} }

// Name is "linkbench".
func (w *LinkBench) Name() string { return "linkbench" }

// Ops are LinkBench's operations: get_node, add_node, update_node,
// delete_node, add_link, delete_link, update_link, get_link,
// get_link_list, count_link.
func (w *LinkBench) Ops() []string { return append([]string(nil), lbOps...) }

// Configure sets the number of nodes clients choose ids from (LinkBench's
// maxid1 - 1); zero keeps the current value. Prepare configures the
// workload too.
func (w *LinkBench) Configure(opt PrepareOptions) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if opt.Nodes > 0 && opt.Nodes != w.nodes {
		w.nodes = opt.Nodes
		w.dists = nil
	}
}

// Detect takes MAX(id) of nodetable in db's current database as the
// number of nodes and configures the workload with it. It fails when
// nodetable is missing or empty.
func (w *LinkBench) Detect(ctx context.Context, db *sql.DB) (PrepareOptions, error) {
	dbName, err := currentDatabase(ctx, db)
	if err != nil {
		return PrepareOptions{}, err
	}
	ok, err := tableExists(ctx, db, lbNodeTable)
	if err != nil {
		return PrepareOptions{}, err
	}
	if !ok {
		return PrepareOptions{}, fmt.Errorf("bench: no table %s in %s; run prepare first", lbNodeTable, dbName)
	}
	var opt PrepareOptions
	if opt.Nodes, err = maxID(ctx, db, lbNodeTable); err != nil {
		return PrepareOptions{}, err
	}
	if opt.Nodes == 0 {
		return PrepareOptions{}, fmt.Errorf("bench: table %s in %s is empty; run prepare first", lbNodeTable, dbName)
	}
	w.Configure(opt)
	return opt, nil
}

// distributions returns the id distributions for the configured nodes,
// built once and shared by the clients (they are read-only).
func (w *LinkBench) distributions() *lbDists {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.dists == nil {
		w.dists = newLBDists(int64(w.nodes))
	}
	return w.dists
}

// Prepare creates LinkBench's three tables and loads opt.Nodes nodes, their
// links and the links' counts with opt.Parallel connections, then builds
// the id1_type index (LinkBench's README advises adding it after the
// load). It refuses tables that exist unless opt.Force and records the
// tables it creates in the marker table.
func (w *LinkBench) Prepare(ctx context.Context, db *sql.DB, opt PrepareOptions) error {
	opt = opt.withDefaults()
	w.Configure(opt)
	dbName, err := currentDatabase(ctx, db)
	if err != nil {
		return err
	}
	tables := []string{lbLinkTable, lbCountTable, lbNodeTable}
	if err := checkTables(ctx, db, dbName, tables, opt.Force); err != nil {
		return err
	}
	if err := ensureMarker(ctx, db); err != nil {
		return err
	}
	creates := []string{
		"CREATE TABLE " + lbLinkTable + " (" +
			"id1 BIGINT(20) UNSIGNED NOT NULL DEFAULT '0', " +
			"id2 BIGINT(20) UNSIGNED NOT NULL DEFAULT '0', " +
			"link_type BIGINT(20) UNSIGNED NOT NULL DEFAULT '0', " +
			"visibility TINYINT(3) NOT NULL DEFAULT '0', " +
			"data VARCHAR(255) NOT NULL DEFAULT '', " +
			"time BIGINT(20) UNSIGNED NOT NULL DEFAULT '0', " +
			"version INT(11) UNSIGNED NOT NULL DEFAULT '0', " +
			"PRIMARY KEY (link_type, id1, id2)" +
			") ENGINE=InnoDB DEFAULT CHARSET=latin1",
		"CREATE TABLE " + lbCountTable + " (" +
			"id BIGINT(20) UNSIGNED NOT NULL DEFAULT '0', " +
			"link_type BIGINT(20) UNSIGNED NOT NULL DEFAULT '0', " +
			"count INT(10) UNSIGNED NOT NULL DEFAULT '0', " +
			"time BIGINT(20) UNSIGNED NOT NULL DEFAULT '0', " +
			"version BIGINT(20) UNSIGNED NOT NULL DEFAULT '0', " +
			"PRIMARY KEY (id, link_type)" +
			") ENGINE=InnoDB DEFAULT CHARSET=latin1",
		"CREATE TABLE " + lbNodeTable + " (" +
			"id BIGINT(20) UNSIGNED NOT NULL AUTO_INCREMENT, " +
			"type INT(10) UNSIGNED NOT NULL, " +
			"version BIGINT(20) UNSIGNED NOT NULL, " +
			"time INT(10) UNSIGNED NOT NULL, " +
			"data MEDIUMTEXT NOT NULL, " +
			"PRIMARY KEY (id)" +
			") ENGINE=InnoDB DEFAULT CHARSET=latin1",
	}
	for i, c := range creates {
		if _, err := execTimeout(ctx, db, ddlTimeout, c); err != nil {
			return fmt.Errorf("bench prepare: create %s: %w", tables[i], err)
		}
		if err := MarkTable(ctx, db, w.Name(), tables[i]); err != nil {
			return err
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(opt.Parallel)
	now := time.Now()
	for first := 1; first <= opt.Nodes; first += lbLoadChunk {
		last := min(first+lbLoadChunk-1, opt.Nodes)
		g.Go(func() error { return lbLoadChunkOf(gctx, db, first, last, now) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if _, err := execTimeout(ctx, db, loadTimeout, "ALTER TABLE "+lbLinkTable+
		" ADD KEY id1_type (id1, link_type, visibility, time, id2, version, data)"); err != nil {
		return fmt.Errorf("bench prepare: index %s: %w", lbLinkTable, err)
	}
	return nil
}

// lbLoadChunkOf loads nodes first..last, their links and counts.
func lbLoadChunkOf(ctx context.Context, db *sql.DB, first, last int, now time.Time) error {
	rng := rand.New(rand.NewPCG(uint64(first), uint64(now.UnixNano())))
	var b strings.Builder
	b.WriteString("INSERT INTO " + lbNodeTable + " (id, type, version, time, data) VALUES ")
	secs := strconv.FormatInt(now.Unix(), 10)
	for id := first; id <= last; id++ {
		if id > first {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "(%d,%d,1,%s,'%s')", id, lbNodeType, secs, lbData(rng, lbNodeDataSize, 1024, 'a'))
	}
	if _, err := execTimeout(ctx, db, loadTimeout, b.String()); err != nil {
		return fmt.Errorf("bench prepare: load %s: %w", lbNodeTable, err)
	}

	ms := now.UnixMilli()
	links := &lbBatch{head: "INSERT INTO " + lbLinkTable + " (id1, id2, link_type, visibility, data, time, version) VALUES ", table: lbLinkTable}
	counts := &lbBatch{head: "INSERT INTO " + lbCountTable + " (id, link_type, count, time, version) VALUES ", table: lbCountTable}
	for id1 := first; id1 <= last; id1++ {
		for t := range lbLinkTypeCount {
			n := lbLinkCount(int64(id1), t)
			if n == 0 {
				continue
			}
			lt := lbLinkType + t
			for j := range n {
				if err := links.add(ctx, db, fmt.Sprintf("(%d,%d,%d,%d,'%s',%d,0)",
					id1, int64(id1)+j, lt, lbVisible, lbData(rng, lbLinkDataSize, 255, 'a'), ms)); err != nil {
					return err
				}
			}
			if err := counts.add(ctx, db, fmt.Sprintf("(%d,%d,%d,%d,0)", id1, lt, n, ms)); err != nil {
				return err
			}
		}
	}
	if err := links.flush(ctx, db); err != nil {
		return err
	}
	return counts.flush(ctx, db)
}

// lbBatch collects the rows of a multi-row INSERT and sends them by
// lbLoadChunk.
type lbBatch struct {
	head, table string
	rows        []string
}

// add appends a row, sending the batch when full.
func (b *lbBatch) add(ctx context.Context, db *sql.DB, row string) error {
	b.rows = append(b.rows, row)
	if len(b.rows) >= lbLoadChunk {
		return b.flush(ctx, db)
	}
	return nil
}

// flush sends the rows collected.
func (b *lbBatch) flush(ctx context.Context, db *sql.DB) error {
	if len(b.rows) == 0 {
		return nil
	}
	q := b.head + strings.Join(b.rows, ",")
	b.rows = b.rows[:0]
	if _, err := execTimeout(ctx, db, loadTimeout, q); err != nil {
		return fmt.Errorf("bench prepare: load %s: %w", b.table, err)
	}
	return nil
}

// Cleanup drops the tables the marker table lists for linkbench, and
// nothing else.
func (w *LinkBench) Cleanup(ctx context.Context, db *sql.DB) error {
	return cleanupFamily(ctx, db, []string{w.Name()})
}

// NewClient returns a client whose operations and ids come from a
// generator seeded by seed.
func (w *LinkBench) NewClient(seed int64) Client {
	c := &lbClient{
		d:   w.distributions(),
		rng: rand.New(rand.NewPCG(uint64(seed), 0x11b_be0c_4000_0001)),
	}
	var sum float64
	for i, p := range LinkBenchMix {
		sum += p
		c.cum[i] = sum
	}
	return c
}

// lbDegree is the out-degree of id1 (both link types): a floored Lomax
// (Pareto II) power law of shape lbDegreeShape and scale lbDegreeScale,
// drawn from a hash of id1 so that it is the same in prepare and in every
// client.
func lbDegree(id1 int64) int64 {
	h := splitmix64(uint64(id1) ^ 0x6c62_6465_6772_6565)
	u := (float64(h>>11) + 0.5) / (1 << 53) // (0, 1)
	d := lbDegreeScale * (math.Pow(u, -1/lbDegreeShape) - 1)
	if d >= lbDegreeMax {
		return lbDegreeMax
	}
	return int64(d)
}

// lbLinkCount is the number of links of id1 of type t (0-based) loaded by
// prepare: the degree split evenly between the types, the first types
// taking the remainder.
func lbLinkCount(id1 int64, t int) int64 {
	d := lbDegree(id1)
	n := d / lbLinkTypeCount
	if int64(t) < d%lbLinkTypeCount {
		n++
	}
	return n
}

// splitmix64 is a 64-bit mixing function (Steele, Lea and Flood's
// SplitMix64 finalizer).
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// lbData returns a payload of lowercase letters starting at from (LinkBench
// uses 'a'..'d' for added links and 'e'..'h' for updated ones) whose
// length is log-normal with the given median (sigma 1), in [1, limit].
func lbData(rng *rand.Rand, median, limit int, from byte) string {
	n := int(float64(median) * math.Exp(rng.NormFloat64()))
	n = max(1, min(n, limit))
	b := make([]byte, n)
	for i := range b {
		b[i] = from + byte(rng.IntN(4))
	}
	return string(b)
}

// zipf is LinkBench's ZipfDistribution: ranks in [0, n), rank 0 the most
// likely, P(rank k) proportional to 1/(k+1)^shape, drawn with the
// quantile of Gray et al., "Quickly Generating Billion-Record Synthetic
// Databases" (1994), which needs shape < 1 (LinkBench's shapes are 0.6 to
// 0.8; math/rand's Zipf needs s > 1).
type zipf struct {
	n                       int64
	shape                   float64
	zetan, alpha, eta, half float64
}

// newZipf returns the distribution over n ranks with shape in (0, 1).
func newZipf(n int64, shape float64) *zipf {
	z := &zipf{n: n, shape: shape}
	z.zetan = harmonic(n, shape)
	z.alpha = 1 / (1 - shape)
	z.half = math.Pow(0.5, shape)
	zeta2 := 1 + z.half
	if n > 2 {
		z.eta = (1 - math.Pow(2/float64(n), 1-shape)) / (1 - zeta2/z.zetan)
	}
	return z
}

// rank maps p in [0, 1) to a rank in [0, n).
func (z *zipf) rank(p float64) int64 {
	uz := p * z.zetan
	switch {
	case z.n <= 1 || uz < 1:
		return 0
	case z.n == 2 || uz < 1+z.half:
		return 1
	}
	r := int64(float64(z.n) * math.Pow(z.eta*p-z.eta+1, z.alpha))
	return max(0, min(r, z.n-1))
}

// harmonic is the generalized harmonic number sum(1/i^s, i = 1..n): exact
// for the first 10000 terms, Euler-Maclaurin beyond (LinkBench's
// ApproxHarmonic approximates too).
func harmonic(n int64, s float64) float64 {
	const exact = 10000
	var sum float64
	for i := int64(1); i <= min(n, exact); i++ {
		sum += math.Pow(float64(i), -s)
	}
	if n <= exact {
		return sum
	}
	a, b := float64(exact+1), float64(n)
	f := func(x float64) float64 { return math.Pow(x, -s) }
	df := func(x float64) float64 { return -s * math.Pow(x, -s-1) }
	sum += (math.Pow(b, 1-s)-math.Pow(a, 1-s))/(1-s) + (f(a)+f(b))/2 + (df(b)-df(a))/12
	return sum
}

// permutation maps ranks [0, n) to ids [1, n] one to one (an affine map
// modulo n), so that the most accessed ids are spread over the id space
// as LinkBench's shuffler spreads them.
type permutation struct{ n, a, b uint64 }

// newPermutation returns the permutation of [0, n) chosen by salt.
func newPermutation(n int64, salt uint64) permutation {
	p := permutation{n: uint64(max(n, 1))}
	p.a = splitmix64(salt)%p.n | 1
	for gcd(p.a, p.n) != 1 {
		p.a++
	}
	p.b = splitmix64(salt+1) % p.n
	return p
}

// id returns the id of rank r.
func (p permutation) id(r int64) int64 {
	hi, lo := bits.Mul64(p.a, uint64(r))
	return int64((bits.Rem64(hi, lo, p.n)+p.b)%p.n) + 1
}

// gcd is the greatest common divisor.
func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// lbAccess is one access distribution: Zipf ranks shuffled into ids.
type lbAccess struct {
	z    *zipf
	perm permutation
}

// id draws an id in [1, n].
func (a *lbAccess) id(rng *rand.Rand) int64 { return a.perm.id(a.z.rank(rng.Float64())) }

// lbDists are the access distributions of one graph size.
type lbDists struct {
	nodes                    int64
	read, write, nread, nupd *lbAccess
}

// newLBDists builds the distributions over [1, nodes].
func newLBDists(nodes int64) *lbDists {
	nodes = max(nodes, 1)
	mk := func(shape float64, salt uint64) *lbAccess {
		return &lbAccess{z: newZipf(nodes, shape), perm: newPermutation(nodes, salt)}
	}
	return &lbDists{
		nodes: nodes,
		read:  mk(lbReadShape, 1),
		write: mk(lbWriteShape, 2),
		nread: mk(lbNodeReadShape, 3),
		nupd:  mk(lbNodeWriteShape, 4),
	}
}

// lbClient is one connection's LinkBench requester.
type lbClient struct {
	d   *lbDists
	rng *rand.Rand
	cum [lbCountLink + 1]float64
}

// Next picks an operation by LinkBench's mix.
func (c *lbClient) Next() (int, bool) {
	r := c.rng.Float64() * c.cum[len(c.cum)-1]
	for op, bound := range c.cum {
		if r < bound {
			return op, lbWrites(op)
		}
	}
	return lbGetLinkList, false
}

// linkType picks one of the link types uniformly.
func (c *lbClient) linkType() (int, int64) {
	t := c.rng.IntN(lbLinkTypeCount)
	return t, int64(lbLinkType + t)
}

// id2 picks an id2 for an operation on (id1, type t) as LinkBench's
// ID2Chooser.chooseForOp: about pExisting of them exist.
func (c *lbClient) id2(id1 int64, t int, pExisting float64) int64 {
	n := lbLinkCount(id1, t)
	r := max(int64(math.Round(float64(n)/pExisting)), 1)
	return id1 + c.rng.Int64N(r)
}

// multiget draws how many id2s get_link fetches: LinkBench's
// GeometricDistribution quantile, min + ceil(ln(1-u)/ln(1-p)), truncated
// below max.
func (c *lbClient) multiget() int {
	u := c.rng.Float64()
	if u == 0 {
		return 1
	}
	n := 1 + int(math.Ceil(math.Log(1-u)/math.Log(1-lbMultigetProb)))
	return min(n, lbMultigetMax-1)
}

// Run executes one LinkBench operation on conn.
func (c *lbClient) Run(ctx context.Context, conn Conn, op int, ledger *Ledger) error {
	if op < 0 || op >= len(lbOps) {
		return fmt.Errorf("bench: linkbench has no operation %d", op)
	}
	if conn == nil {
		return fmt.Errorf("bench: no connection")
	}
	lid := ledgerID(ledger, lbWrites(op))
	s := &session{conn: conn}
	if err := c.run(ctx, s, op, lid); err != nil {
		return s.abort(ctx, fmt.Errorf("%s: %w", lbOps[op], err))
	}
	ledger.Ack(lid)
	return nil
}

// run executes op; write operations run in a transaction that records
// the ledger id lid (when not 0) before COMMIT.
func (c *lbClient) run(ctx context.Context, s *session, op int, lid uint64) error {
	if !lbWrites(op) {
		return c.read(ctx, s, op)
	}
	if err := s.begin(ctx); err != nil {
		return err
	}
	var err error
	switch op {
	case lbAddNode:
		_, err = s.exec(ctx, "INSERT INTO "+lbNodeTable+" (type, version, time, data) VALUES (?, 1, ?, ?)",
			lbNodeType, time.Now().Unix(), lbData(c.rng, lbNodeDataSize, 1024, 'a'))
	case lbUpdateNode:
		_, err = s.exec(ctx, "UPDATE "+lbNodeTable+" SET version = version + 1, time = ?, data = ? WHERE id = ? AND type = ?",
			time.Now().Unix(), lbData(c.rng, lbNodeDataSize, 1024, 'e'), c.d.nupd.id(c.rng), lbNodeType)
	case lbDeleteNode:
		_, err = s.exec(ctx, "DELETE FROM "+lbNodeTable+" WHERE id = ? AND type = ?",
			1+c.rng.Int64N(c.d.nodes), lbNodeType)
	case lbAddLink, lbUpdateLink:
		from := byte('a')
		if op == lbUpdateLink {
			from = 'e'
		}
		err = c.addLink(ctx, s, from)
	case lbDeleteLink:
		err = c.deleteLink(ctx, s)
	}
	if err != nil {
		return err
	}
	if lid != 0 {
		if _, err := s.exec(ctx, InsertSQL(lid)); err != nil {
			return err
		}
	}
	return s.commit(ctx)
}

// addLink adds (or, as update_link, rewrites) a link as LinkStoreMysql's
// addLink does, keeping counttable in step, inside the open transaction.
func (c *lbClient) addLink(ctx context.Context, s *session, from byte) error {
	id1 := c.d.write.id(c.rng)
	t, lt := c.linkType()
	id2 := c.id2(id1, t, 0.5)
	data := lbData(c.rng, lbLinkDataSize, 255, from)
	now := time.Now().UnixMilli()
	n, err := s.exec(ctx, "INSERT INTO "+lbLinkTable+" (id1, id2, link_type, visibility, data, time, version) "+
		"VALUES (?, ?, ?, ?, ?, ?, 0) ON DUPLICATE KEY UPDATE visibility = VALUES(visibility)",
		id1, id2, lt, lbVisible, data, now)
	if err != nil {
		return err
	}
	var count, update bool
	switch n {
	case 1: // inserted
		count = true
	case 0: // found, already visible
		update = true
	case 2: // found hidden, made visible
		count, update = true, true
	default:
		return fmt.Errorf("insert link: %d affected rows (is clientFoundRows set?)", n)
	}
	if count {
		if _, err := s.exec(ctx, "INSERT INTO "+lbCountTable+" (id, link_type, count, time, version) VALUES (?, ?, 1, ?, 0) "+
			"ON DUPLICATE KEY UPDATE count = count + 1, time = VALUES(time), version = version + 1",
			id1, lt, now); err != nil {
			return err
		}
	}
	if update {
		if _, err := s.exec(ctx, "UPDATE "+lbLinkTable+" SET visibility = ?, data = ?, time = ?, version = version + 1 "+
			"WHERE link_type = ? AND id1 = ? AND id2 = ?",
			lbVisible, data, now, lt, id1, id2); err != nil {
			return err
		}
	}
	return nil
}

// deleteLink hides a link as LinkStoreMysql's deleteLink does (not
// expunged), decrementing its count when it was visible, inside the open
// transaction.
func (c *lbClient) deleteLink(ctx context.Context, s *session) error {
	id1 := c.d.write.id(c.rng)
	t, lt := c.linkType()
	id2 := c.id2(id1, t, 1)
	vis := -1
	if err := s.query(ctx, "SELECT visibility FROM "+lbLinkTable+" WHERE link_type = ? AND id1 = ? AND id2 = ? FOR UPDATE",
		func(v []any) error {
			n, err := asInt(v[0])
			vis = int(n)
			return err
		}, lt, id1, id2); err != nil {
		return err
	}
	if vis != lbVisible {
		return nil // missing or hidden already
	}
	if _, err := s.exec(ctx, "UPDATE "+lbLinkTable+" SET visibility = ? WHERE link_type = ? AND id1 = ? AND id2 = ?",
		lbHidden, lt, id1, id2); err != nil {
		return err
	}
	now := time.Now().UnixMilli()
	_, err := s.exec(ctx, "INSERT INTO "+lbCountTable+" (id, link_type, count, time, version) VALUES (?, ?, 0, ?, 0) "+
		"ON DUPLICATE KEY UPDATE count = IF(count = 0, 0, count - 1), time = VALUES(time), version = version + 1",
		id1, lt, now)
	return err
}

// read runs a read operation (one statement, autocommit).
func (c *lbClient) read(ctx context.Context, s *session, op int) error {
	switch op {
	case lbGetNode:
		return s.query(ctx, "SELECT id, type, version, time, data FROM "+lbNodeTable+" WHERE id = ?", nil,
			c.d.nread.id(c.rng))
	case lbGetLink:
		id1 := c.d.read.id(c.rng)
		t, lt := c.linkType()
		n := c.multiget()
		args := make([]any, 0, n+2)
		args = append(args, id1, lt)
		for range n {
			args = append(args, c.id2(id1, t, 0.5))
		}
		return s.query(ctx, "SELECT id1, id2, link_type, visibility, data, time, version FROM "+lbLinkTable+
			" WHERE id1 = ? AND link_type = ? AND id2 IN (?"+strings.Repeat(", ?", n-1)+")", nil, args...)
	case lbGetLinkList:
		id1 := c.d.read.id(c.rng)
		_, lt := c.linkType()
		return s.query(ctx, "SELECT id1, id2, link_type, visibility, data, time, version FROM "+lbLinkTable+
			" WHERE id1 = ? AND link_type = ? AND time >= ? AND time <= ? AND visibility = ? ORDER BY time DESC LIMIT ?, ?", nil,
			id1, lt, 0, int64(math.MaxInt64), lbVisible, 0, lbRangeLimit)
	case lbCountLink:
		id1 := c.d.read.id(c.rng)
		_, lt := c.linkType()
		return s.query(ctx, "SELECT count FROM "+lbCountTable+" WHERE id = ? AND link_type = ?", nil, id1, lt)
	}
	return fmt.Errorf("not a read")
}
