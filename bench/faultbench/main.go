// Command faultbench is the instrument of bench/faults.sh, the fault
// matrix: the script stages each fault against a real MariaDB sandbox and
// the real dbpilot binary, and faultbench watches and judges.
//
//   - observe: a writer and a monitor, from the sandbox's set-up until
//     SIGTERM. The writer is an application account without SUPER or
//     READ_ONLY ADMIN (so read_only really stops it) that inserts numbered
//     rows every 10 ms into every node that accepts them, and records each
//     acknowledged commit (id, node, time). The monitor samples every
//     node's @@read_only (or that it did not answer) every 100 ms.
//   - report: after the scenario, one row of the table: the most nodes
//     writable in one monitor sample, the acknowledged rows missing on the
//     final primary, the time from the fault to the first acknowledged
//     write after it, and the verdict.
//   - helpers the script stages faults with: free ports, a silent TCP
//     listener, account locks, waits, checks through serve's API, two
//     switchovers at once, and a bridge that carries serve's connections
//     out of a network namespace of its own, so that its path to one
//     server can be cut (bridge.go); for the binary log archive, a kill
//     of `dbpilot binlog stream` timed around a rotation (rotate), a wait
//     for the archive to catch up (archive-wait) and its final judgement
//     with `binlog ls|verify` and mariadb-binlog (archive-check).
//
// Everything it observes it reads through root over TCP on 127.0.0.1 with
// the sandbox's admin password (the sandbox gives root that password):
// some scenarios lock the sandbox's dbpilot account, and the observer must
// keep seeing.
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/sandbox"
)

// The application account of the writer, and its database.
const (
	appUser     = "faultapp"
	appPassword = "faultapp-pw"
	benchDB     = "faultbench"
)

func main() {
	// The driver logs every dropped connection to a killed server.
	_ = gomysql.SetLogger(log.New(io.Discard, "", 0))
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: faultbench observe|report|row|table|port|freeport|silent|bridge|lock|wait-writable|wait-serve|wait-recovery|check-unreachable|check-replicas|fenced|switchovers|rotate|archive-wait|archive-check [flags]")
		os.Exit(2)
	}
	cmds := map[string]func([]string) error{
		"observe":           observe,
		"report":            report,
		"row":               row,
		"table":             table,
		"freeport":          freeport,
		"silent":            silent,
		"bridge":            bridge,
		"lock":              lock,
		"wait-writable":     waitWritable,
		"wait-serve":        waitServe,
		"check-unreachable": checkUnreachable,
		"check-replicas":    checkReplicas,
		"fenced":            fenced,
		"switchovers":       switchovers,
		"port":              port,
		"wait-recovery":     waitRecovery,
		"rotate":            rotate,
		"archive-wait":      archiveWait,
		"archive-check":     archiveCheck,
	}
	f, ok := cmds[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "faultbench: unknown command %q\n", os.Args[1])
		os.Exit(2)
	}
	if err := f(os.Args[2:]); err != nil {
		fmt.Fprintf(os.Stderr, "faultbench %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

// parse parses a subcommand's flags; a bad flag exits 2.
func parse(fs *flag.FlagSet, args []string) {
	fs.Init(fs.Name(), flag.ExitOnError)
	_ = fs.Parse(args)
}

// rootDB opens root's pool on node over TCP with short timeouts.
func rootDB(d *sandbox.Descriptor, n *sandbox.Node, timeout time.Duration) *sql.DB {
	cfg := gomysql.NewConfig()
	cfg.User, cfg.Passwd = "root", d.Admin.Password
	cfg.Net, cfg.Addr = "tcp", n.Key().String()
	cfg.Timeout, cfg.ReadTimeout, cfg.WriteTimeout = timeout, timeout, timeout
	cfg.InterpolateParams = true
	c, err := gomysql.NewConnector(cfg)
	if err != nil {
		panic(err) // the config is built here, never invalid
	}
	db := sql.OpenDB(c)
	db.SetMaxOpenConns(1)
	return db
}

// nodeState is one node as the observer sees it now.
type nodeState struct {
	node     *sandbox.Node
	answered bool
	readOnly bool
	err      error
}

func (s nodeState) writable() bool { return s.answered && !s.readOnly }

// states reads every node's @@read_only through root, in parallel.
func states(ctx context.Context, d *sandbox.Descriptor, timeout time.Duration) []nodeState {
	out := make([]nodeState, len(d.Nodes))
	done := make(chan struct{}, len(d.Nodes))
	for i, n := range d.Nodes {
		go func() {
			defer func() { done <- struct{}{} }()
			db := rootDB(d, n, timeout)
			defer db.Close()
			qctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			var ro int
			err := db.QueryRowContext(qctx, "SELECT @@read_only").Scan(&ro)
			out[i] = nodeState{node: n, answered: err == nil, readOnly: ro != 0, err: err}
		}()
	}
	for range d.Nodes {
		<-done
	}
	return out
}

func writableNames(ss []nodeState) []string {
	var w []string
	for _, s := range ss {
		if s.writable() {
			w = append(w, s.node.Name)
		}
	}
	return w
}

func nodeByPort(d *sandbox.Descriptor, port int) string {
	for _, n := range d.Nodes {
		if n.Port == port {
			return n.Name
		}
	}
	return fmt.Sprint(port)
}

// port prints a sandbox node's port.
func port(args []string) error {
	fs := flag.NewFlagSet("port", flag.ExitOnError)
	name := fs.String("sandbox", "", "sandbox")
	node := fs.String("node", "node1", "node")
	parse(fs, args)
	d, err := sandbox.Load(*name)
	if err != nil {
		return err
	}
	n, err := d.Node(*node)
	if err != nil {
		return err
	}
	fmt.Println(n.Port)
	return nil
}

func freeport([]string) error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer l.Close()
	fmt.Println(l.Addr().(*net.TCPAddr).Port)
	return nil
}

// silent listens on a free loopback port, prints it, accepts connections
// and never writes a byte (a server that accepts TCP and never greets),
// until killed.
func silent([]string) error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Println(l.Addr().(*net.TCPAddr).Port)
	held := map[net.Conn]bool{} // kept open, silent
	for {
		c, err := l.Accept()
		if err != nil {
			return fmt.Errorf("accept after %d connections: %w", len(held), err)
		}
		held[c] = true
	}
}

// lock locks (or unlocks) accounts on one node as root through its
// socket, with binary logging off, on every host of each user, and kills
// their sessions: an account lock by a DBA.
func lock(args []string) error {
	fs := flag.NewFlagSet("lock", flag.ExitOnError)
	name := fs.String("sandbox", "", "sandbox")
	node := fs.String("node", "node1", "node")
	users := fs.String("users", "", "comma-separated users (default: the sandbox's dbpilot and replication accounts)")
	unlock := fs.Bool("unlock", false, "unlock instead")
	parse(fs, args)
	d, err := sandbox.Load(*name)
	if err != nil {
		return err
	}
	n, err := d.Node(*node)
	if err != nil {
		return err
	}
	us := []string{d.Admin.User, d.Repl.User}
	if *users != "" {
		us = strings.Split(*users, ",")
	}
	cfg := gomysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.Addr = "root", d.Admin.Password, "unix", n.Socket
	cfg.Timeout, cfg.ReadTimeout, cfg.WriteTimeout = 2*time.Second, 5*time.Second, 5*time.Second
	c, err := gomysql.NewConnector(cfg)
	if err != nil {
		return err
	}
	db := sql.OpenDB(c)
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := db.Conn(ctx) // one session: sql_log_bin=0 holds for all
	if err != nil {
		return fmt.Errorf("root on %s through %s: %w", n.Name, n.Socket, err)
	}
	defer conn.Close()
	in := "'" + strings.Join(us, "','") + "'"
	rows, err := conn.QueryContext(ctx, "SELECT user, host FROM mysql.user WHERE user IN ("+in+")")
	if err != nil {
		return err
	}
	var accounts [][2]string
	for rows.Next() {
		var u, h string
		if err := rows.Scan(&u, &h); err != nil {
			rows.Close()
			return err
		}
		accounts = append(accounts, [2]string{u, h})
	}
	rows.Close()
	what := "ACCOUNT LOCK"
	if *unlock {
		what = "ACCOUNT UNLOCK"
	}
	if _, err := conn.ExecContext(ctx, "SET SESSION sql_log_bin=0"); err != nil {
		return err
	}
	for _, a := range accounts {
		if _, err := conn.ExecContext(ctx, fmt.Sprintf("ALTER USER '%s'@'%s' %s", a[0], a[1], what)); err != nil {
			return fmt.Errorf("ALTER USER %s@%s: %w", a[0], a[1], err)
		}
	}
	killed := 0
	if !*unlock {
		ids, err := conn.QueryContext(ctx, "SELECT id FROM information_schema.processlist WHERE user IN ("+in+")")
		if err != nil {
			return err
		}
		var list []int64
		for ids.Next() {
			var id int64
			if err := ids.Scan(&id); err == nil {
				list = append(list, id)
			}
		}
		ids.Close()
		for _, id := range list {
			if _, err := conn.ExecContext(ctx, fmt.Sprintf("KILL %d", id)); err == nil {
				killed++
			}
		}
	}
	done := "locked"
	if *unlock {
		done = "unlocked"
	}
	fmt.Printf("%s: %d accounts of %s %s, %d sessions killed\n", n.Name, len(accounts), strings.Join(us, ","), done, killed)
	return nil
}

// waitWritable waits until exactly one node is writable (and, with --not,
// it is not that node), and prints its name.
func waitWritable(args []string) error {
	fs := flag.NewFlagSet("wait-writable", flag.ExitOnError)
	name := fs.String("sandbox", "", "sandbox")
	not := fs.String("not", "", "a node that must not be the writable one")
	timeout := fs.Duration("timeout", 30*time.Second, "give up after")
	parse(fs, args)
	d, err := sandbox.Load(*name)
	if err != nil {
		return err
	}
	end := time.Now().Add(*timeout)
	var last []string
	for time.Now().Before(end) {
		last = writableNames(states(context.Background(), d, 300*time.Millisecond))
		if len(last) == 1 && last[0] != *not {
			fmt.Println(last[0])
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("no single writable node other than %q within %s (writable: %v)", *not, *timeout, last)
}

func getJSON(url string, v any) error {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(b)))
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// waitServe waits until serve's API shows the cluster ok with every
// instance reachable (with --primary, that node its primary; with
// --leader, a coordination leader), then lets serve save what it observed.
func waitServe(args []string) error {
	fs := flag.NewFlagSet("wait-serve", flag.ExitOnError)
	url := fs.String("url", "", "serve's URL")
	cluster := fs.String("cluster", "", "cluster")
	n := fs.Int("instances", 3, "instances expected")
	leader := fs.Bool("leader", false, "also wait for a coordination leader")
	name := fs.String("sandbox", "", "sandbox (with --primary)")
	primary := fs.String("primary", "", "also wait for this node to be the cluster's primary")
	timeout := fs.Duration("timeout", 40*time.Second, "give up after")
	parse(fs, args)
	var want dbpilot.InstanceKey
	if *primary != "" {
		d, err := sandbox.Load(*name)
		if err != nil {
			return err
		}
		n, err := d.Node(*primary)
		if err != nil {
			return err
		}
		want = n.Key()
	}
	end := time.Now().Add(*timeout)
	why := ""
	for time.Now().Before(end) {
		why = serveReady(*url, *cluster, *n, *leader, want)
		if why == "" {
			time.Sleep(1500 * time.Millisecond) // the observation is saved
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("serve at %s not ready within %s: %s", *url, *timeout, why)
}

func serveReady(url, cluster string, n int, leader bool, primary dbpilot.InstanceKey) string {
	var cs dbpilot.ClusterStatus
	if err := getJSON(url+"/api/clusters/"+cluster, &cs); err != nil {
		return err.Error()
	}
	if cs.State != dbpilot.ClusterOK || len(cs.Instances) != n {
		return fmt.Sprintf("state %s, %d instances", cs.State, len(cs.Instances))
	}
	if !primary.IsZero() && !cs.Primary.Equal(primary) {
		return fmt.Sprintf("primary %s, want %s", cs.Primary, primary)
	}
	for _, i := range cs.Instances {
		if !i.Reachable {
			return i.Key.String() + " unreachable"
		}
	}
	if leader {
		var st dbpilot.CoordinationStatus
		if err := getJSON(url+"/api/coordination", &st); err != nil {
			return err.Error()
		}
		if st.State != dbpilot.CoordinationOK || len(st.Leaders) == 0 {
			return "no coordination leader yet"
		}
	}
	return ""
}

// waitRecovery waits until serve lists a recovery of the cluster and none
// is running.
func waitRecovery(args []string) error {
	fs := flag.NewFlagSet("wait-recovery", flag.ExitOnError)
	url := fs.String("url", "", "serve's URL")
	cluster := fs.String("cluster", "", "cluster")
	timeout := fs.Duration("timeout", 30*time.Second, "give up after")
	succeeded := fs.Bool("ok", false, "wait for a recovery that succeeded (one that failed may be taken over)")
	parse(fs, args)
	end := time.Now().Add(*timeout)
	for time.Now().Before(end) {
		var recs []dbpilot.Recovery
		if getJSON(*url+"/api/recoveries?cluster="+*cluster, &recs) == nil && len(recs) > 0 &&
			!slices.ContainsFunc(recs, func(r dbpilot.Recovery) bool { return r.Ended.IsZero() }) &&
			(!*succeeded || slices.ContainsFunc(recs, func(r dbpilot.Recovery) bool { return r.Success })) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("no ended recovery of %s at %s within %s", *cluster, *url, *timeout)
}

// checkUnreachable checks that serve's API lists the node among the
// cluster's instances with reachable=false (with --state, the cluster in
// that state; with --problem, that problem code on the node); it prints
// what it saw and fails otherwise.
func checkUnreachable(args []string) error {
	fs := flag.NewFlagSet("check-unreachable", flag.ExitOnError)
	url := fs.String("url", "", "serve's URL")
	cluster := fs.String("cluster", "", "cluster")
	name := fs.String("sandbox", "", "sandbox")
	node := fs.String("node", "", "node")
	state := fs.String("state", "", "also want the cluster in this state (e.g. unreachable)")
	problem := fs.String("problem", "", "also want this problem code on the node (e.g. UnreachablePrimary)")
	parse(fs, args)
	d, err := sandbox.Load(*name)
	if err != nil {
		return err
	}
	n, err := d.Node(*node)
	if err != nil {
		return err
	}
	var cs dbpilot.ClusterStatus
	if err := getJSON(*url+"/api/clusters/"+*cluster, &cs); err != nil {
		fmt.Printf("API unreadable: %v\n", err)
		return errors.New("not seen")
	}
	var why []string
	idx := slices.IndexFunc(cs.Instances, func(i *dbpilot.Instance) bool { return i.Key.Equal(n.Key()) })
	seen := fmt.Sprintf("API: %s not among the cluster's %d instances", n.Name, len(cs.Instances))
	if idx < 0 {
		why = append(why, "not listed")
	} else {
		seen = fmt.Sprintf("API: %s listed, reachable=%v", n.Name, cs.Instances[idx].Reachable)
		if cs.Instances[idx].Reachable {
			why = append(why, "reachable")
		}
	}
	if *state != "" {
		seen += ", cluster " + cs.State
		if cs.State != *state {
			why = append(why, "cluster "+cs.State)
		}
	}
	if *problem != "" {
		var codes []string
		found := false
		for _, p := range cs.Problems {
			if !p.Instance.Equal(n.Key()) {
				continue
			}
			codes = append(codes, string(p.Code))
			if string(p.Code) == *problem {
				found = true
				codes[len(codes)-1] += " (" + cut(p.Message, 200) + ")"
			}
		}
		seen += fmt.Sprintf(", problems of %s: %s", n.Name, strings.Join(codes, ", "))
		if len(codes) == 0 {
			seen += "none"
		}
		if !found {
			why = append(why, "no "+*problem)
		}
	}
	fmt.Println(seen)
	if len(why) > 0 {
		return errors.New(strings.Join(why, ", "))
	}
	return nil
}

// checkReplicas checks that every node answering, but the single writable
// one, replicates from it with both threads running.
func checkReplicas(args []string) error {
	fs := flag.NewFlagSet("check-replicas", flag.ExitOnError)
	name := fs.String("sandbox", "", "sandbox")
	timeout := fs.Duration("timeout", 15*time.Second, "wait this long for it")
	parse(fs, args)
	d, err := sandbox.Load(*name)
	if err != nil {
		return err
	}
	end := time.Now().Add(*timeout)
	var msg string
	for {
		var ok bool
		msg, ok = replicasUnder(d)
		if ok || time.Now().After(end) {
			fmt.Println(msg)
			if !ok {
				return errors.New("replicas not under the primary")
			}
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func replicasUnder(d *sandbox.Descriptor) (string, bool) {
	ss := states(context.Background(), d, time.Second)
	w := writableNames(ss)
	if len(w) != 1 {
		return fmt.Sprintf("writable nodes: %v", w), false
	}
	primary, _ := d.Node(w[0])
	var parts []string
	ok := true
	for _, s := range ss {
		if s.node == primary {
			continue
		}
		if !s.answered {
			parts = append(parts, s.node.Name+" down")
			continue
		}
		src, io, sqlRun := slaveStatus(d, s.node)
		good := src == primary.Port && io == "Yes" && sqlRun == "Yes"
		ok = ok && good
		parts = append(parts, fmt.Sprintf("%s<-%s io=%s sql=%s", s.node.Name, nodeByPort(d, src), io, sqlRun))
	}
	return "primary " + primary.Name + "; " + strings.Join(parts, ", "), ok
}

// slaveStatus returns the default connection's source port and thread
// states of a node.
func slaveStatus(d *sandbox.Descriptor, n *sandbox.Node) (int, string, string) {
	db := rootDB(d, n, time.Second)
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	rows, err := db.QueryContext(ctx, "SHOW SLAVE STATUS")
	if err != nil {
		return 0, "?", "?"
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	if !rows.Next() {
		return 0, "none", "none"
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if rows.Scan(ptrs...) != nil {
		return 0, "?", "?"
	}
	m := map[string]string{}
	for i, c := range cols {
		m[c] = vals[i].String
	}
	var port int
	fmt.Sscan(m["Master_Port"], &port)
	return port, m["Slave_IO_Running"], m["Slave_SQL_Running"]
}
