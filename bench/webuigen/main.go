// Command webuigen writes synthetic history into serve's embedded
// time-series store (package metrics, the same Store and Write path serve
// uses), so that bench/webui.sh can time the web console's charts over 1 h
// and 24 h of 1-second samples for many instances without waiting a day.
//
// Run it on a stopped serve's metrics directory (the store takes a lock):
//
//	go run ./bench/webuigen -dir STATE/metrics -c main=127.0.0.1:3306,127.0.0.1:3307 -c big=50@40001 -hours 24
//
// All clusters are written in one run, in time order: the TSDB refuses a
// sample more than half a block (30 min) older than its newest.
//
// Each instance gets the series the cluster charts read, once per second
// up to -end (default now): questions and commands counters, threads
// running and connected, heartbeat lag, InnoDB dirty pages and checkpoint
// age, with values that vary so that the charts draw real lines.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/metrics"
)

// clusterFlag is one -c NAME=HOST:PORT,... or NAME=N@PORT (N instances
// 127.0.0.1:PORT, PORT+1, ...).
type clusterFlag []target

type target struct {
	cluster string
	key     dbpilot.InstanceKey
	primary bool
}

func (c *clusterFlag) String() string { return fmt.Sprint(len(*c), " instances") }

func (c *clusterFlag) Set(v string) error {
	name, list, ok := strings.Cut(v, "=")
	if !ok || name == "" || list == "" {
		return fmt.Errorf("%q: want NAME=HOST:PORT,... or NAME=N@PORT", v)
	}
	var keys []dbpilot.InstanceKey
	if n, port, ok := strings.Cut(list, "@"); ok {
		count, err1 := strconv.Atoi(n)
		first, err2 := strconv.Atoi(port)
		if err1 != nil || err2 != nil || count < 1 {
			return fmt.Errorf("%q: want N@PORT", list)
		}
		for i := 0; i < count; i++ {
			keys = append(keys, dbpilot.InstanceKey{Host: "127.0.0.1", Port: first + i})
		}
	} else {
		for _, k := range strings.Split(list, ",") {
			key, err := dbpilot.ParseInstanceKey(strings.TrimSpace(k))
			if err != nil {
				return err
			}
			keys = append(keys, key)
		}
	}
	for i, k := range keys {
		*c = append(*c, target{cluster: name, key: k, primary: i == 0})
	}
	return nil
}

func main() {
	dir := flag.String("dir", "", "the metrics directory (serve's metrics.dir; default: metrics beside the state file)")
	var targets clusterFlag
	flag.Var(&targets, "c", "a cluster: NAME=HOST:PORT,... or NAME=N@PORT (repeatable; the first instance is the primary)")
	hours := flag.Float64("hours", 24, "how much history")
	end := flag.Int64("end", 0, "the last sample's unix time (default now)")
	flag.Parse()
	if *dir == "" || len(targets) == 0 {
		fmt.Fprintln(os.Stderr, "webuigen: -dir and at least one -c are required")
		os.Exit(2)
	}
	if err := generate(*dir, targets, time.Duration(*hours*float64(time.Hour)), *end); err != nil {
		fmt.Fprintln(os.Stderr, "webuigen:", err)
		os.Exit(1)
	}
}

func generate(dir string, insts []target, span time.Duration, endUnix int64) error {
	st, err := metrics.Open(metrics.Options{Dir: dir, MinFreeBytes: -1})
	if err != nil {
		return err
	}
	last := time.Now().Truncate(time.Second)
	if endUnix > 0 {
		last = time.Unix(endUnix, 0)
	}
	first := last.Add(-span)
	steps := int(span / time.Second)
	began := time.Now()
	// Two writers, each owning half of the instances (a series is only ever
	// appended in time order by one writer), kept within 5 minutes of each
	// other: the TSDB refuses samples older than half a block (30 min)
	// behind the newest.
	const window = 300
	questions := make([]float64, len(insts))
	sel := make([]float64, len(insts))
	ins := make([]float64, len(insts))
	write := func(i, s int) error {
		t := first.Add(time.Duration(s) * time.Second)
		role := "replica"
		if insts[i].primary {
			role = "primary"
		}
		// A daily wave, a per-instance phase and some noise.
		x := float64(s)
		wave := 1 + 0.5*math.Sin(2*math.Pi*x/86400+float64(i)) + 0.1*math.Sin(x/7+float64(i*i))
		qps := 200 * wave
		questions[i] += qps
		sel[i] += qps * 0.8
		ins[i] += qps * 0.1
		smp := []dbpilot.Sample{
			{Name: "mysql_global_status_questions", Value: questions[i], Type: dbpilot.Counter},
			{Name: "mysql_global_status_commands_total", Labels: []dbpilot.Label{{Name: "command", Value: "select"}}, Value: sel[i], Type: dbpilot.Counter},
			{Name: "mysql_global_status_commands_total", Labels: []dbpilot.Label{{Name: "command", Value: "insert"}}, Value: ins[i], Type: dbpilot.Counter},
			{Name: "mysql_global_status_threads_running", Value: math.Round(1 + 4*wave), Type: dbpilot.Gauge},
			{Name: "mysql_global_status_threads_connected", Value: math.Round(10 + 10*wave), Type: dbpilot.Gauge},
			{Name: "dbpilot_innodb_buffer_pool_dirty_percent", Value: 5 + 10*wave, Type: dbpilot.Gauge},
			{Name: "dbpilot_innodb_checkpoint_age_percent", Value: 10 + 20*wave, Type: dbpilot.Gauge},
		}
		if role != "primary" {
			smp = append(smp, dbpilot.Sample{Name: "dbpilot_heartbeat_lag_seconds", Value: 0.05 * wave, Type: dbpilot.Gauge})
		}
		return st.Write(context.Background(), dbpilot.Batch{Instance: insts[i].key, Cluster: insts[i].cluster, Role: role, Collector: "webuigen", Time: t, Samples: smp})
	}
	const workers = 2
	var werr error
	for from := 0; from <= steps && werr == nil; from += window {
		to := min(from+window, steps+1)
		errs := make([]error, workers)
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Go(func() {
				for s := from; s < to; s++ {
					for i := w; i < len(insts); i += workers {
						if err := write(i, s); err != nil {
							errs[w] = err
							return
						}
					}
				}
			})
		}
		wg.Wait()
		werr = errors.Join(errs...)
	}
	if werr != nil {
		st.Close()
		return werr
	}
	if err := st.Close(); err != nil {
		return err
	}
	fmt.Printf("webuigen: %d instances x %d s (%s .. %s) written in %s\n",
		len(insts), steps+1, first.Format(time.RFC3339), last.Format(time.RFC3339), time.Since(began).Round(time.Millisecond))
	return nil
}
