// Command coordbench measures dbpilot serves coordinated through etcd
// (bench/coordination.sh runs it): how long the serves take to replace a
// killed leader serve, and the write-unavailability a client sees when the
// MariaDB primary is killed, with one serve alone and with three
// coordinated serves, on the same sandbox in the same run.
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/sandbox"
)

func main() {
	bin := flag.String("dbpilot", "bin/dbpilot", "dbpilot binary")
	sb := flag.String("sandbox", "", "replication sandbox (rejoin on)")
	rounds := flag.Int("rounds", 10, "rounds")
	flag.Parse()
	if err := run(*bin, *sb, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "coordbench:", err)
		os.Exit(1)
	}
}

func freePort() int {
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

type proc struct {
	id, url string
	args    []string
	cmd     *exec.Cmd
}

func (p *proc) start(dir string) error {
	log, _ := os.OpenFile(filepath.Join(dir, p.id+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	p.cmd = exec.Command(p.args[0], p.args[1:]...)
	p.cmd.Stdout, p.cmd.Stderr = log, log
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return p.cmd.Start()
}

func (p *proc) kill() {
	if p.cmd != nil && p.cmd.Process != nil {
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		p.cmd.Wait()
		p.cmd = nil
	}
}

func getJSON(url string, v any) error {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("%s: %d", url, resp.StatusCode)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

func waitFor(d time.Duration, what string, f func() bool) error {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if f() {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("timed out: %s", what)
}

func run(bin, name string, rounds int) error {
	d, err := sandbox.Load(name)
	if err != nil {
		return err
	}
	dir, _ := os.MkdirTemp("", "coordbench")
	defer os.RemoveAll(dir)
	// A 3-member etcd on loopback.
	var eps, peers []string
	var etcds []*proc
	for i := range 3 {
		cp, pp := freePort(), freePort()
		eps = append(eps, fmt.Sprintf("http://127.0.0.1:%d", cp))
		peers = append(peers, fmt.Sprintf("m%d=http://127.0.0.1:%d", i, pp))
		etcds = append(etcds, &proc{id: fmt.Sprintf("etcd%d", i), args: []string{"etcd", "--name", fmt.Sprintf("m%d", i),
			"--data-dir", filepath.Join(dir, fmt.Sprintf("etcd%d", i)), "--listen-client-urls", eps[i], "--advertise-client-urls", eps[i],
			"--listen-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", pp), "--initial-advertise-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", pp),
			"--initial-cluster-state", "new", "--heartbeat-interval", "50", "--election-timeout", "500"}})
	}
	for _, e := range etcds {
		e.args = append(e.args, "--initial-cluster", strings.Join(peers, ","))
		if err := e.start(dir); err != nil {
			return err
		}
		defer e.kill()
	}
	mkServe := func(id string, coordinated bool) *proc {
		port := freePort()
		cfg := fmt.Sprintf("state: %s\nmetrics: {dir: %s}\ntoken: tok\ncredentials: {user: %q, password: %q}\nreplication: {user: %q, password: %q}\npoll_interval: 1s\nrecovery: {block_period: 1s}\nclusters:\n  - {name: c, seeds: [\"127.0.0.1:%d\"], auto_failover: true, rejoin: false}\n",
			filepath.Join(dir, id+".db"), filepath.Join(dir, id+"-m"), d.Admin.User, d.Admin.Password, d.Repl.User, d.Repl.Password, d.Nodes[0].Port)
		if coordinated {
			cfg += fmt.Sprintf("coordination: {etcd: {endpoints: [%s], lease_ttl: 2s}}\n", strings.Join(eps, ", "))
		}
		os.WriteFile(filepath.Join(dir, id+".yaml"), []byte(cfg), 0o600)
		args := []string{bin, "serve", "--config", filepath.Join(dir, id+".yaml"), "--listen", fmt.Sprintf("127.0.0.1:%d", port)}
		if coordinated {
			args = append(args, "--id", id)
		}
		return &proc{id: id, url: fmt.Sprintf("http://127.0.0.1:%d", port), args: args}
	}
	leaderOf := func(p *proc) string {
		var st dbpilot.CoordinationStatus
		if getJSON(p.url+"/api/coordination", &st) != nil || st.State != dbpilot.CoordinationOK || len(st.Leaders) != 1 {
			return ""
		}
		return st.Leaders[0].Member
	}

	fmt.Printf("%-44s %6s %8s %8s %8s\n", "measure", "rounds", "p50 s", "p95 s", "max s")
	// 1. Manager failover: the leader serve SIGKILLed → another leads.
	serves := []*proc{mkServe("a", true), mkServe("b", true), mkServe("c", true)}
	for _, s := range serves {
		if err := s.start(dir); err != nil {
			return err
		}
	}
	stopAll := func() {
		for _, s := range serves {
			s.kill()
		}
	}
	if err := waitFor(60*time.Second, "a leader", func() bool { return leaderOf(serves[0]) != "" }); err != nil {
		stopAll()
		return err
	}
	var mgr []float64
	for range rounds {
		lead := leaderOf(serves[0])
		var killed *proc
		for _, s := range serves {
			if s.id == lead {
				killed = s
			}
		}
		if killed == nil {
			lead = leaderOf(serves[1])
			for _, s := range serves {
				if s.id == lead {
					killed = s
				}
			}
		}
		if killed == nil {
			stopAll()
			return fmt.Errorf("no leader")
		}
		var other *proc
		for _, s := range serves {
			if s != killed {
				other = s
				break
			}
		}
		t0 := time.Now()
		killed.kill()
		if err := waitFor(20*time.Second, "new leader", func() bool { l := leaderOf(other); return l != "" && l != lead }); err != nil {
			stopAll()
			return err
		}
		mgr = append(mgr, time.Since(t0).Seconds())
		if err := killed.start(dir); err != nil {
			stopAll()
			return err
		}
		waitFor(20*time.Second, "restarted serve registered", func() bool {
			var st dbpilot.CoordinationStatus
			return getJSON(killed.url+"/api/coordination", &st) == nil && st.State == dbpilot.CoordinationOK && len(st.Members) == 3
		})
	}
	report("manager failover (leader serve SIGKILL, ttl 2s)", mgr)

	// 2. Primary failover as a client sees it: 3 coordinated serves, then 1.
	coord, err := primaryRounds(d, rounds, serves[0])
	stopAll()
	if err != nil {
		return err
	}
	single := mkServe("solo", false)
	if err := single.start(dir); err != nil {
		return err
	}
	defer single.kill()
	if err := waitFor(30*time.Second, "solo serve", func() bool {
		var cs dbpilot.ClusterStatus
		return getJSON(single.url+"/api/clusters/c", &cs) == nil && cs.State == dbpilot.ClusterOK
	}); err != nil {
		return err
	}
	solo, err := primaryRounds(d, rounds, single)
	if err != nil {
		return err
	}
	report("primary failover, 3 coordinated serves", coord)
	report("primary failover, 1 serve", solo)
	fmt.Printf("coordination adds %.3f s at p50, %.3f s at p95 (target <= 0.050 s)\n", pct(coord, 50)-pct(solo, 50), pct(coord, 95)-pct(solo, 95))
	return nil
}

// primaryRounds kills the primary each round while a client writes every
// 5 ms to whichever node is writable, and returns kill → first
// acknowledged write on another node; then it restarts the old primary and
// waits until it replicates again (rejoin).
func primaryRounds(d *sandbox.Descriptor, rounds int, watcher *proc) ([]float64, error) {
	dbs := map[string]*sql.DB{}
	for _, n := range d.Nodes {
		db, err := sql.Open("mysql", fmt.Sprintf("%s:%s@tcp(127.0.0.1:%d)/?timeout=200ms&readTimeout=500ms&writeTimeout=500ms", d.Admin.User, d.Admin.Password, n.Port))
		if err != nil {
			return nil, err
		}
		db.SetMaxOpenConns(2)
		defer db.Close()
		dbs[n.Name] = db
	}
	primary := func() string {
		for _, n := range d.Nodes {
			var ro int
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			err := dbs[n.Name].QueryRowContext(ctx, "SELECT @@read_only").Scan(&ro)
			cancel()
			if err == nil && ro == 0 {
				return n.Name
			}
		}
		return ""
	}
	p := primary()
	if p == "" {
		return nil, fmt.Errorf("no writable node")
	}
	// The client writes as an application account: read_only stops it on
	// replicas (the admin account could write there, making errant GTIDs).
	for _, q := range []string{"CREATE DATABASE IF NOT EXISTS coordbench",
		// Random keys: a row the killed primary kept (never replicated) does
		// not collide when it replicates again.
		"CREATE TABLE IF NOT EXISTS coordbench.t (id BIGINT PRIMARY KEY, at DATETIME(6))",
		"CREATE USER IF NOT EXISTS coordapp@'127.0.0.1' IDENTIFIED BY 'coordapp'",
		"GRANT SELECT, INSERT ON coordbench.* TO coordapp@'127.0.0.1'"} {
		if _, err := dbs[p].Exec(q); err != nil {
			return nil, fmt.Errorf("%s: %w", q, err)
		}
	}
	app := map[string]*sql.DB{}
	for _, n := range d.Nodes {
		db, err := sql.Open("mysql", fmt.Sprintf("coordapp:coordapp@tcp(127.0.0.1:%d)/?timeout=200ms&readTimeout=500ms&writeTimeout=500ms", n.Port))
		if err != nil {
			return nil, err
		}
		db.SetMaxOpenConns(2)
		defer db.Close()
		app[n.Name] = db
	}
	var out []float64
	for range rounds {
		old := primary()
		time.Sleep(1500 * time.Millisecond)
		t0 := time.Now()
		if err := sandbox.Kill(d, old); err != nil {
			return nil, err
		}
		var took float64
		err := waitFor(30*time.Second, "a write on a new primary", func() bool {
			for _, n := range d.Nodes {
				if n.Name == old {
					continue
				}
				ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
				_, err := app[n.Name].ExecContext(ctx, "INSERT INTO coordbench.t (id, at) VALUES (FLOOR(RAND() * 9e18), NOW(6))")
				cancel()
				if err == nil {
					took = time.Since(t0).Seconds()
					return true
				}
			}
			time.Sleep(5 * time.Millisecond)
			return false
		})
		if err != nil {
			return nil, err
		}
		out = append(out, took)
		if err := sandbox.Start(context.Background(), d, old, sandbox.ProcessOptions{}); err != nil {
			return nil, err
		}
		// The killed primary may hold transactions nobody received (async
		// replication): serve rightly keeps such a server out. The bench
		// makes it a replica of the new primary itself, dropping them.
		newp := primary()
		var pos string
		if err := dbs[newp].QueryRow("SELECT @@gtid_binlog_pos").Scan(&pos); err != nil {
			return nil, err
		}
		var port int
		for _, n := range d.Nodes {
			if n.Name == newp {
				port = n.Port
			}
		}
		waitFor(30*time.Second, old+" answers", func() bool { return dbs[old].Ping() == nil })
		for _, q := range []string{"STOP SLAVE", "RESET SLAVE ALL", "RESET MASTER", "SET GLOBAL read_only = 1",
			fmt.Sprintf("SET GLOBAL gtid_slave_pos = '%s'", pos),
			fmt.Sprintf("CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=%d, MASTER_USER='%s', MASTER_PASSWORD='%s', MASTER_USE_GTID=slave_pos", port, d.Repl.User, d.Repl.Password),
			"START SLAVE"} {
			var err error
			for range 5 { // the pool may hand out a connection from before the kill
				if _, err = dbs[old].Exec(q); err == nil {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if err != nil && strings.Contains(err.Error(), "running slave") {
				// serve rejoined it meanwhile (no errant transactions left
				// after RESET MASTER): what the next wait checks.
				break
			}
			if err != nil {
				return nil, fmt.Errorf("re-attach %s: %s: %w", old, q, err)
			}
		}
		// Re-attached: the old primary replicates again, and the watcher sees it
		// (serve runs with rejoin off here: the bench re-attaches, no race).
		if err := waitFor(60*time.Second, old+" rejoined", func() bool {
			var io, sqlr string
			row := dbs[old].QueryRow("SELECT 1")
			if row.Err() != nil {
				return false
			}
			rows, err := dbs[old].Query("SHOW SLAVE STATUS")
			if err != nil {
				return false
			}
			defer rows.Close()
			cols, _ := rows.Columns()
			if !rows.Next() {
				return false
			}
			vals := make([]sql.RawBytes, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			rows.Scan(ptrs...)
			for i, c := range cols {
				switch c {
				case "Slave_IO_Running":
					io = string(vals[i])
				case "Slave_SQL_Running":
					sqlr = string(vals[i])
				}
			}
			var cs dbpilot.ClusterStatus
			return io == "Yes" && sqlr == "Yes" && getJSON(watcher.url+"/api/clusters/c", &cs) == nil && cs.State == dbpilot.ClusterOK && len(cs.Instances) == len(d.Nodes)
		}); err != nil {
			return nil, err
		}
		time.Sleep(1500 * time.Millisecond) // the block period passes
	}
	return out, nil
}

func pct(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	i := int(float64(len(s)-1)*p/100 + 0.5)
	return s[i]
}

func report(label string, v []float64) {
	fmt.Printf("%-44s %6d %8.3f %8.3f %8.3f\n", label, len(v), pct(v, 50), pct(v, 95), pct(v, 100))
}
