package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// bridge carries TCP connections between two network namespaces through
// unix sockets in a directory both see (the file system is shared). The
// fault matrix runs serve in a network namespace of its own, so that its
// path to one server can be cut while the replicas and the clients keep
// theirs.
//
// Inside serve's namespace (--side inside) the bridge listens on
// 127.0.0.1:PORT for every server port of --ports (the same numbers, so
// that every address serve reads from the servers works unchanged) and
// carries each connection to DIR/fwd-PORT.sock; outside (--side outside)
// it listens on those sockets and dials the real 127.0.0.1:PORT. The ports
// of --reverse (serve's listen port) go the other way: outside
// 127.0.0.1:PORT, DIR/rev-PORT.sock, inside 127.0.0.1:PORT.
//
// The path to a server port is cut while DIR/cut-PORT exists: the outside
// half closes every connection it carries for that port at once, and each
// new one as soon as it is accepted (the client inside sees its connection
// closed before the greeting: a transport failure, never an answer);
// removing the file restores the path.
//
// Inside, the command after the flags (serve) runs as the bridge's child,
// killed with it (PR_SET_PDEATHSIG); the bridge exits when it exits.
func bridge(args []string) error {
	fs := flag.NewFlagSet("bridge", flag.ExitOnError)
	side := fs.String("side", "", "inside (serve's namespace; runs the command after the flags) or outside")
	dir := fs.String("dir", "", "directory of the unix sockets and the cut files")
	fwd := fs.String("ports", "", "comma-separated server ports carried from inside to outside")
	rev := fs.String("reverse", "", "comma-separated ports carried from outside to inside (serve's listen port)")
	every := fs.Duration("poll", 20*time.Millisecond, "how often the outside half looks for cut files")
	parse(fs, args)
	fwdPorts, err := ports(*fwd)
	if err != nil {
		return fmt.Errorf("--ports: %w", err)
	}
	revPorts, err := ports(*rev)
	if err != nil {
		return fmt.Errorf("--reverse: %w", err)
	}
	if *dir == "" {
		return errors.New("--dir is required")
	}
	logf := func(format string, a ...any) {
		fmt.Printf("%s bridge %s: %s\n", time.Now().Format("15:04:05.000"), *side, fmt.Sprintf(format, a...))
	}
	var links []*link
	defer func() {
		for _, l := range links {
			l.close()
		}
	}()
	add := func(l *link, err error) error {
		if err != nil {
			return err
		}
		links = append(links, l)
		go l.serve()
		return nil
	}
	switch *side {
	case "inside":
		for _, p := range fwdPorts {
			if err := add(tcpToUnix(tcpAddr(p), fwdSocket(*dir, p), "", logf)); err != nil {
				return err
			}
		}
		for _, p := range revPorts {
			if err := add(unixToTCP(revSocket(*dir, p), tcpAddr(p), "", logf)); err != nil {
				return err
			}
		}
		if fs.NArg() == 0 {
			return waitSignal()
		}
		return runChild(fs.Args())
	case "outside":
		for _, p := range fwdPorts {
			if err := add(unixToTCP(fwdSocket(*dir, p), tcpAddr(p), cutPath(*dir, p), logf)); err != nil {
				return err
			}
		}
		for _, p := range revPorts {
			if err := add(tcpToUnix(tcpAddr(p), revSocket(*dir, p), "", logf)); err != nil {
				return err
			}
		}
		done := make(chan struct{})
		defer close(done)
		for _, l := range links {
			go l.watch(done, *every)
		}
		if err := os.WriteFile(filepath.Join(*dir, "outside.ready"), []byte("ok\n"), 0o600); err != nil {
			return err
		}
		logf("carrying %v, reverse %v", fwdPorts, revPorts)
		return waitSignal()
	default:
		return fmt.Errorf("--side %q: want inside or outside", *side)
	}
}

func ports(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		p, err := strconv.Atoi(f)
		if err != nil || p <= 0 || p > 65535 {
			return nil, fmt.Errorf("bad port %q", f)
		}
		out = append(out, p)
	}
	return out, nil
}

func tcpAddr(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }
func fwdSocket(dir string, port int) string {
	return filepath.Join(dir, fmt.Sprintf("fwd-%d.sock", port))
}
func revSocket(dir string, port int) string {
	return filepath.Join(dir, fmt.Sprintf("rev-%d.sock", port))
}

// cutPath is the file whose existence cuts the path to a server port.
func cutPath(dir string, port int) string { return filepath.Join(dir, fmt.Sprintf("cut-%d", port)) }

func tcpToUnix(addr, sock, cutFile string, logf func(string, ...any)) (*link, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return newLink(ln, "unix", sock, addr, cutFile, logf), nil
}

func unixToTCP(sock, addr, cutFile string, logf func(string, ...any)) (*link, error) {
	_ = os.Remove(sock) // a socket left by an earlier bridge
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return nil, err
	}
	return newLink(ln, "tcp", addr, addr, cutFile, logf), nil
}

// link accepts connections on one listener and carries each to a new
// connection to its target; while its cut file exists it carries none.
type link struct {
	ln            net.Listener
	network, addr string // the target
	name          string // the server's address, in log lines
	cutFile       string // "": never cut
	logf          func(string, ...any)

	mu      sync.Mutex
	cut     bool // as the watcher last saw the cut file
	conns   map[net.Conn]struct{}
	refused int // connections closed at once since the cut
}

func newLink(ln net.Listener, network, addr, name, cutFile string, logf func(string, ...any)) *link {
	return &link{ln: ln, network: network, addr: addr, name: name, cutFile: cutFile, logf: logf, conns: map[net.Conn]struct{}{}}
}

func (l *link) close() { l.ln.Close() }

// isCut reports whether the path is cut now: the watcher saw the file, or
// it exists already.
func (l *link) isCut() bool {
	if l.cutFile == "" {
		return false
	}
	l.mu.Lock()
	cut := l.cut
	l.mu.Unlock()
	if cut {
		return true
	}
	_, err := os.Stat(l.cutFile)
	return err == nil
}

func (l *link) serve() {
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return // closed
		}
		if l.isCut() {
			c.Close()
			l.mu.Lock()
			l.refused++
			l.mu.Unlock()
			continue
		}
		go l.pipe(c)
	}
}

// pipe carries c to a new connection to the target until either side
// closes or the path is cut.
func (l *link) pipe(c net.Conn) {
	u, err := net.DialTimeout(l.network, l.addr, 3*time.Second)
	if err != nil {
		c.Close()
		return
	}
	l.mu.Lock()
	if l.cut {
		l.refused++
		l.mu.Unlock()
		c.Close()
		u.Close()
		return
	}
	l.conns[c], l.conns[u] = struct{}{}, struct{}{}
	l.mu.Unlock()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _, _ = io.Copy(u, c); u.Close(); c.Close() }()
	go func() { defer wg.Done(); _, _ = io.Copy(c, u); c.Close(); u.Close() }()
	wg.Wait()
	l.mu.Lock()
	delete(l.conns, c)
	delete(l.conns, u)
	l.mu.Unlock()
}

// watch follows the cut file until done: when it appears, every carried
// connection is closed; the changes are logged.
func (l *link) watch(done <-chan struct{}, every time.Duration) {
	if l.cutFile == "" {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		_, err := os.Stat(l.cutFile)
		l.setCut(err == nil)
	}
}

// setCut records the cut file's state; on a cut it closes every carried
// connection.
func (l *link) setCut(cut bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if cut == l.cut {
		return
	}
	l.cut = cut
	if cut {
		n := len(l.conns) / 2
		for c := range l.conns {
			c.Close()
		}
		l.logf("path to %s cut: %d open connection(s) closed", l.name, n)
		return
	}
	l.logf("path to %s restored: %d connection(s) closed at once while it was cut", l.name, l.refused)
	l.refused = 0
}

// runChild runs the command as a child killed with the bridge, passes it
// SIGTERM and SIGINT, and returns when it exits.
func runChild(argv []string) error {
	// PR_SET_PDEATHSIG follows the thread that started the child: keep it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, os.Interrupt)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("%s: %w", argv[0], err)
	}
	return nil
}

func waitSignal() error {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, os.Interrupt)
	<-sigs
	return nil
}
