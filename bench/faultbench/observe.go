package main

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/sandbox"
)

// Files an observation leaves in its directory.
const (
	acksFile    = "acks.tsv"    // id, node, attempt start ns, acknowledged ns
	monitorFile = "monitor.tsv" // sample ns, node, W (writable) / R (read_only) / X (no answer)
	primaryFile = "primary"     // the writable node when the observation began
	readyFile   = "ready"       // written once the writer had its first acknowledgement
	faultFile   = "fault"       // written by the script: ns of the fault injection
)

// observe runs the writer and the monitor until SIGTERM or SIGINT.
func observe(args []string) error {
	fs := flag.NewFlagSet("observe", flag.ExitOnError)
	name := fs.String("sandbox", "", "sandbox")
	dir := fs.String("dir", "", "directory for the observation's files")
	every := fs.Duration("write-every", 10*time.Millisecond, "pause between two inserts on a node")
	sample := fs.Duration("sample-every", 100*time.Millisecond, "monitor interval")
	parse(fs, args)
	d, err := sandbox.Load(*name)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	primary, err := setup(ctx, d)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(*dir, primaryFile), []byte(primary+"\n"), 0o600); err != nil {
		return err
	}
	acks, err := newLog(filepath.Join(*dir, acksFile))
	if err != nil {
		return err
	}
	samples, err := newLog(filepath.Join(*dir, monitorFile))
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); monitor(ctx, d, samples, *sample) }()
	var first sync.Once
	firstAck := make(chan struct{})
	go func() {
		defer wg.Done()
		writer(ctx, d, acks, *every, func() { first.Do(func() { close(firstAck) }) })
	}()
	select {
	case <-firstAck:
		_ = os.WriteFile(filepath.Join(*dir, readyFile), []byte("ok\n"), 0o600)
	case <-time.After(20 * time.Second):
		stop()
		wg.Wait()
		return errors.New("the writer had no write acknowledged within 20 s")
	case <-ctx.Done():
	}
	<-ctx.Done()
	wg.Wait()
	return errors.Join(acks.close(), samples.close())
}

// setup finds the writable node, creates the bench table and the
// application account there (they replicate) and waits until every
// running node has them.
func setup(ctx context.Context, d *sandbox.Descriptor) (string, error) {
	var w []string
	for end := time.Now().Add(20 * time.Second); ; {
		w = writableNames(states(ctx, d, time.Second))
		if len(w) == 1 {
			break
		}
		if time.Now().After(end) {
			return "", fmt.Errorf("want one writable node to set up on, have %v", w)
		}
		time.Sleep(100 * time.Millisecond)
	}
	p, _ := d.Node(w[0])
	db := rootDB(d, p, 5*time.Second)
	defer db.Close()
	for _, s := range []string{
		"CREATE DATABASE IF NOT EXISTS " + benchDB,
		"CREATE TABLE IF NOT EXISTS " + benchDB + ".t (id BIGINT PRIMARY KEY, node VARCHAR(16) NOT NULL, at DATETIME(6) NOT NULL)",
		"CREATE TABLE IF NOT EXISTS " + benchDB + ".bulk (id INT AUTO_INCREMENT PRIMARY KEY, v INT NOT NULL)",
		fmt.Sprintf("CREATE USER IF NOT EXISTS %s@'127.0.0.1' IDENTIFIED BY %s", mysql.Quote(appUser), mysql.Quote(appPassword)),
		fmt.Sprintf("GRANT INSERT, SELECT ON %s.* TO %s@'127.0.0.1'", benchDB, mysql.Quote(appUser)),
	} {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return "", fmt.Errorf("set up on %s: %w", p.Name, err)
		}
	}
	for _, n := range d.Nodes {
		ndb := rootDB(d, n, time.Second)
		ok := false
		for end := time.Now().Add(20 * time.Second); time.Now().Before(end) && !ok; {
			var c int
			err := ndb.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema=? AND table_name='t'", benchDB).Scan(&c)
			var u int
			if err == nil {
				err = ndb.QueryRowContext(ctx, "SELECT COUNT(*) FROM mysql.user WHERE user=?", appUser).Scan(&u)
			}
			ok = err == nil && c == 1 && u == 1
			if !ok {
				time.Sleep(100 * time.Millisecond)
			}
		}
		ndb.Close()
		if !ok {
			return "", fmt.Errorf("the bench table and account did not reach %s within 20 s", n.Name)
		}
	}
	return p.Name, nil
}

// tsvLog is a file of lines, flushed often so that the script can read it
// while the observation goes on.
type tsvLog struct {
	mu sync.Mutex
	f  *os.File
	w  *bufio.Writer
}

func newLog(path string) (*tsvLog, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	return &tsvLog{f: f, w: bufio.NewWriter(f)}, nil
}

func (l *tsvLog) printf(format string, a ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, format, a...)
}

func (l *tsvLog) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	_ = l.w.Flush()
}

func (l *tsvLog) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return errors.Join(l.w.Flush(), l.f.Close())
}

// writer inserts numbered rows as the application account into every node
// that accepts them, each node in its own loop: a client that writes to
// whichever server accepts writes. Ids are unique across nodes; each
// acknowledged insert is logged.
func writer(ctx context.Context, d *sandbox.Descriptor, acks *tsvLog, every time.Duration, acked func()) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for _, n := range d.Nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cfg := gomysql.NewConfig()
			cfg.User, cfg.Passwd, cfg.Net, cfg.Addr = appUser, appPassword, "tcp", n.Key().String()
			cfg.Timeout, cfg.ReadTimeout, cfg.WriteTimeout = 300*time.Millisecond, time.Second, time.Second
			cfg.InterpolateParams = true
			c, err := gomysql.NewConnector(cfg)
			if err != nil {
				panic(err)
			}
			db := sql.OpenDB(c)
			defer db.Close()
			db.SetMaxOpenConns(1)
			for ctx.Err() == nil {
				id := next.Add(1)
				start := time.Now()
				qctx, cancel := context.WithTimeout(ctx, time.Second)
				_, err := db.ExecContext(qctx, "INSERT INTO "+benchDB+".t (id, node, at) VALUES (?, ?, NOW(6))", id, n.Name)
				cancel()
				pause := every
				if err == nil {
					acks.printf("%d\t%s\t%d\t%d\n", id, n.Name, start.UnixNano(), time.Now().UnixNano())
					acked()
				} else if !isServerError(err) {
					pause = 50 * time.Millisecond // down: no need to knock 100 times a second
				}
				sleepCtx(ctx, pause)
			}
		}()
	}
	// Acknowledgements reach the file within 100 ms.
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			return
		case <-t.C:
			acks.flush()
		}
	}
}

// isServerError reports whether err is an error packet from the server
// (read_only, access denied, ...): the server answered.
func isServerError(err error) bool {
	var me *gomysql.MySQLError
	return errors.As(err, &me)
}

// monitor samples every node's @@read_only each interval, all nodes at
// once, over one root session per node. A sample is what a node answers
// within the interval: a query still unanswered then is cancelled (its
// session closed) and the sample reads X. A query left pending on a hung
// node and answered the moment it runs again would be attributed to the
// time it was sent, and the round it held up would be followed at once by
// another: every hang would end in a sample taken right at the resume.
func monitor(ctx context.Context, d *sandbox.Descriptor, samples *tsvLog, every time.Duration) {
	dbs := make([]*sql.DB, len(d.Nodes))
	for i, n := range d.Nodes {
		dbs[i] = rootDB(d, n, 300*time.Millisecond)
		defer dbs[i].Close()
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		at := time.Now().UnixNano()
		res := make([]byte, len(d.Nodes))
		var wg sync.WaitGroup
		for i := range d.Nodes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				qctx, cancel := context.WithTimeout(ctx, every)
				defer cancel()
				var ro int
				switch err := dbs[i].QueryRowContext(qctx, "SELECT @@read_only").Scan(&ro); {
				case err != nil:
					res[i] = 'X'
				case ro == 0:
					res[i] = 'W'
				default:
					res[i] = 'R'
				}
			}()
		}
		wg.Wait()
		if ctx.Err() != nil {
			return // a sample cut short by the end is no observation
		}
		for i, n := range d.Nodes {
			samples.printf("%d\t%s\t%c\n", at, n.Name, res[i])
		}
		samples.flush()
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
