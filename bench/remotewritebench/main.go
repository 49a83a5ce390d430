// Command remotewritebench measures dbpilot's remote-write sink against a
// running receiver (bench/remotewrite.sh starts Prometheus and
// VictoriaMetrics): it writes synthetic batches shaped like serve's (INSTANCES
// instances, SERIES series each, one batch per instance per 1 s step) as
// fast as the sink sends them, never letting its queue overflow, and prints
// one table row: samples/s sustained, the sink's CPU seconds per million
// samples (this process: Write, encoding, HTTP), the receiver's CPU seconds
// per million (from /proc), bytes per sample on the wire, requests. It is
// not a test.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/remotewrite"
)

func main() {
	var (
		url       = flag.String("url", "", "remote-write endpoint")
		name      = flag.String("name", "", "receiver name for the table")
		pid       = flag.Int("receiver-pid", 0, "receiver's process id, for its CPU time")
		instances = flag.Int("instances", 50, "instances")
		series    = flag.Int("series", 1000, "series per instance")
		steps     = flag.Int("steps", 100, "1 s steps (batches per instance)")
		perSend   = flag.Int("max-samples-per-send", remotewrite.DefaultMaxSamplesPerSend, "samples per request")
		header    = flag.Bool("header", false, "print the table header and exit")
	)
	flag.Parse()
	if *header {
		fmt.Printf("%-18s %8s %10s %12s %14s %16s %12s %9s %8s\n", "receiver", "per_send", "samples", "seconds", "samples/s", "sink_cpu_s/M", "recv_cpu_s/M", "B/sample", "requests")
		return
	}
	if err := run(*url, *name, *pid, *instances, *series, *steps, *perSend); err != nil {
		fmt.Fprintln(os.Stderr, "remotewritebench:", err)
		os.Exit(1)
	}
}

func run(url, name string, pid, instances, nseries, steps, perSend int) error {
	sink, err := remotewrite.New(remotewrite.Options{URL: url, MaxSamplesPerSend: perSend, Timeout: 30 * time.Second})
	if err != nil {
		return err
	}
	defer sink.Close()
	capacity := remotewrite.DefaultCapacity
	// Labels as serve's: the batch adds instance, cluster and role; names
	// as mysqld_exporter's, some with a label of their own.
	samples := make([]dbpilot.Sample, nseries)
	for i := range samples {
		samples[i] = dbpilot.Sample{Name: fmt.Sprintf("mysql_global_status_bench_%d", i/4), Type: dbpilot.Counter}
		if i%4 != 0 {
			samples[i].Labels = []dbpilot.Label{{Name: "command", Value: fmt.Sprintf("c%d", i%4)}}
		}
	}
	keys := make([]dbpilot.InstanceKey, instances)
	for i := range keys {
		keys[i] = dbpilot.InstanceKey{Host: fmt.Sprintf("db%03d.example", i), Port: 3306}
	}
	t0 := time.Now().Add(-30 * time.Minute).Truncate(time.Second)
	total := int64(instances * nseries * steps)

	cpu0, rcpu0 := selfCPU(), procCPU(pid)
	start := time.Now()
	for s := range steps {
		for i, k := range keys {
			for j := range samples {
				samples[j].Value = float64(s*1000 + j)
			}
			b := dbpilot.Batch{Instance: k, Cluster: fmt.Sprintf("bench%d-c%d", perSend, i%5), Role: "replica", Collector: "global_status", Time: t0.Add(time.Duration(s) * time.Second), Samples: samples}
			// Keep the queue from overflowing: the figure is what is sent.
			for sink.Stats().Pending > int64(capacity-2*nseries) {
				time.Sleep(200 * time.Microsecond)
			}
			if err := sink.Write(context.Background(), b); err != nil {
				return err
			}
		}
	}
	for {
		st := sink.Stats()
		if st.Pending == 0 && st.Sent+st.Failed+st.Dropped == st.Samples {
			break
		}
		time.Sleep(time.Millisecond)
	}
	took := time.Since(start)
	cpu, rcpu := selfCPU()-cpu0, time.Duration(-1)
	if pid > 0 {
		rcpu = procCPU(pid) - rcpu0
	}
	st := sink.Stats()
	if st.Sent != total || st.Failed != 0 || st.Dropped != 0 {
		return fmt.Errorf("%s: %d of %d samples sent, %d failed, %d dropped (sends %v)", name, st.Sent, total, st.Failed, st.Dropped, st.Sends)
	}
	var requests int64
	for _, n := range st.Sends {
		requests += n
	}
	perM := func(d time.Duration) string {
		if d < 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", d.Seconds()/float64(total)*1e6)
	}
	fmt.Printf("%-18s %8d %10d %12.2f %14.0f %16s %12s %9.2f %8d\n", name, perSend, total, took.Seconds(),
		float64(total)/took.Seconds(), perM(cpu), perM(rcpu), float64(st.Bytes)/float64(total), requests)
	return nil
}

// selfCPU is this process' user and system CPU time.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procCPU is a process' user and system CPU time (with its waited-for
// children), or -1.
func procCPU(pid int) time.Duration {
	if pid <= 0 {
		return -1
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	var ticks int64
	for _, i := range []int{11, 12} { // utime, stime (fields 14 and 15)
		v, _ := strconv.ParseInt(f[i], 10, 64)
		ticks += v
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ
}
