// Command dbpilot-sim impersonates a fleet of MariaDB servers on loopback
// ports for scale tests and benchmarks of dbpilot serve (see
// internal/simulator): N instances in clusters of one primary and its
// replicas, with scripted replication state, moving status counters, and an
// HTTP control endpoint to kill and revive instances. It is not a database:
// use it to measure scale, not correctness.
//
//	dbpilot-sim --instances 1000 --cluster-size 5 --base-port 23000 \
//	    --control 127.0.0.1:7079 --write-config serve.yaml
//
// Control: POST /kill?port=P, POST /revive?port=P, GET /clusters, GET /stats.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/dbpilot/dbpilot/internal/simulator"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "dbpilot-sim:", err)
		os.Exit(2)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dbpilot-sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		instances   = fs.Int("instances", 5, "number of simulated servers")
		clusterSize = fs.Int("cluster-size", 5, "servers per cluster: one primary and its replicas")
		basePort    = fs.Int("base-port", 23000, "port of the first server; server i listens on base-port+i")
		host        = fs.String("host", "127.0.0.1", "address to listen on")
		control     = fs.String("control", "127.0.0.1:7079", "HTTP control address (POST /kill?port=, /revive?port=; GET /clusters, /stats)")
		writeConfig = fs.String("write-config", "", "write a `dbpilot serve` YAML configuration watching every cluster to FILE")
		serveListen = fs.String("serve-listen", "127.0.0.1:7070", "with --write-config: serve's listen address")
		serveState  = fs.String("serve-state", "", "with --write-config: serve's state file (default: serve's own)")
		autoFail    = fs.Bool("auto-failover", false, "with --write-config: set auto_failover on every cluster (default: detection only)")
		verbose     = fs.Bool("v", false, "log kills, revives and every statement the simulator does not know")
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *instances < 1 || *clusterSize < 1 {
		return errors.New("--instances and --cluster-size must be at least 1")
	}
	opt := simulator.Options{Instances: *instances, ClusterSize: *clusterSize, BasePort: *basePort, Host: *host}
	if *verbose {
		opt.Log = stderr
	}
	f := simulator.New(opt)
	if err := f.Start(); err != nil {
		return err
	}
	defer f.Close()
	if *writeConfig != "" {
		out, err := os.Create(*writeConfig)
		if err != nil {
			return err
		}
		err = f.WriteConfig(out, simulator.ConfigOptions{Listen: *serveListen, State: *serveState, AutoFailover: *autoFail})
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("write config: %w", err)
		}
	}
	ln, err := net.Listen("tcp", *control)
	if err != nil {
		return fmt.Errorf("control: %w", err)
	}
	srv := &http.Server{Handler: f.Handler(), ReadHeaderTimeout: 5 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "dbpilot-sim: %d instances in %d clusters on %s:%d-%d; control on http://%s/\n",
		*instances, len(f.Clusters()), *host, *basePort, *basePort+*instances-1, ln.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	select {
	case <-ctx.Done():
	case err := <-errc:
		return fmt.Errorf("control: %w", err)
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}
