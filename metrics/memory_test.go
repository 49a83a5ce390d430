package metrics

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/tsdb"

	"github.com/dbpilot/dbpilot"
)

// fleet simulates instances × series (~600, as global status, variables,
// InnoDB and replication give a real server) sampled every second.
type fleet struct {
	instances []dbpilot.InstanceKey
	names     []string
	rnd       []*rand.Rand
	values    [][]float64
}

func newFleet(instances, series int) *fleet {
	f := &fleet{}
	for i := range instances {
		f.instances = append(f.instances, dbpilot.InstanceKey{Host: fmt.Sprintf("db%02d.example.net", i), Port: 3306})
		f.rnd = append(f.rnd, rand.New(rand.NewPCG(uint64(i), 1)))
		f.values = append(f.values, make([]float64, series))
	}
	for j := range series {
		f.names = append(f.names, fmt.Sprintf("mysql_global_status_synthetic_%03d", j))
	}
	return f
}

// batch returns instance i's batch at second sec: three quarters counters
// (most moving, some busy), a quarter gauges (mostly flat).
func (f *fleet) batch(i int, at time.Time) dbpilot.Batch {
	r, vals := f.rnd[i], f.values[i]
	samples := make([]dbpilot.Sample, len(f.names))
	for j, name := range f.names {
		typ := dbpilot.Counter
		switch {
		case j%4 == 3: // gauge
			typ = dbpilot.Gauge
			if r.IntN(10) == 0 {
				vals[j] = float64(r.IntN(100))
			}
		case j%8 == 0: // busy counter
			vals[j] += float64(r.IntN(100000))
		case j%2 == 0:
			vals[j] += float64(r.IntN(50))
		}
		samples[j] = dbpilot.Sample{Name: name, Value: vals[j], Type: typ}
	}
	role := "replica"
	if i%5 == 0 {
		role = "primary"
	}
	return dbpilot.Batch{Instance: f.instances[i], Cluster: "c" + strconv.Itoa(i/5), Role: role, Collector: "global_status", Time: at, Samples: samples}
}

// write writes seconds of samples from start with 8 writers. Every
// simulated minute it has the TSDB m-map its full head chunks, as it does
// every real minute.
func (f *fleet) write(t *testing.T, s *Store, start time.Time, from, to int) {
	t.Helper()
	for m := from; m < to; m += 60 {
		f.writeSpan(t, s, start, m, min(m+60, to))
		s.db.ForceHeadMMap()
	}
}

func (f *fleet) writeSpan(t *testing.T, s *Store, start time.Time, from, to int) {
	t.Helper()
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			for sec := from; sec < to; sec++ {
				at := start.Add(time.Duration(sec) * time.Second)
				for i := w; i < len(f.instances); i += 8 {
					if err := s.Write(context.Background(), f.batch(i, at)); err != nil {
						errc <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

type memFigures struct{ heapInuse, heapAlloc, sys, rssAnon, rssFile uint64 }

func measure() memFigures {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	anon, file := rss()
	return memFigures{heapInuse: ms.HeapInuse, heapAlloc: ms.HeapAlloc, sys: ms.Sys, rssAnon: anon, rssFile: file}
}

func (m memFigures) rss() uint64 { return m.rssAnon + m.rssFile }

func (m memFigures) String() string {
	return fmt.Sprintf("heap in use %d MiB, heap alloc %d MiB, Go sys %d MiB, RSS %d MiB (anon %d, file %d)",
		m.heapInuse>>20, m.heapAlloc>>20, m.sys>>20, m.rss()>>20, m.rssAnon>>20, m.rssFile>>20)
}

// rss reads the anonymous and file-backed (m-mapped TSDB files) resident
// memory on Linux; zeros elsewhere.
func rss() (anon, file uint64) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, 0
	}
	kib := func(v string) uint64 {
		n, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		return n << 10
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "RssAnon:"); ok {
			anon = kib(v)
		} else if v, ok := strings.CutPrefix(line, "RssFile:"); ok {
			file = kib(v)
		}
	}
	return anon, file
}

// TestMemory writes 50 instances × 600 series × 120 s and logs the memory
// used; it asserts nothing about time or memory. The process also holds
// the test binary and the other tests' garbage: compare heap figures.
func TestMemory(t *testing.T) {
	const instances, series, seconds = 50, 600, 120
	before := measure()
	s, err := Open(Options{Dir: t.TempDir(), MinFreeBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	f := newFleet(instances, series)
	start := time.Now().Add(-seconds * time.Second).Truncate(time.Second)
	began := time.Now()
	f.write(t, s, start, 0, seconds)
	took := time.Since(began)
	after := measure()
	t.Logf("%d instances × %d series × %d s = %d samples in %s (%.0f samples/s)",
		instances, series, seconds, instances*series*seconds, took.Round(time.Millisecond), float64(instances*series*seconds)/took.Seconds())
	t.Logf("before: %s", before)
	t.Logf("after:  %s; head series %d", after, s.db.Head().NumSeries())
	t.Logf("store: +%d MiB heap in use (%.0f bytes per series)",
		(after.heapInuse-before.heapInuse)>>20, float64(after.heapInuse-before.heapInuse)/float64(instances*series))

	// One scrape and one fleet-wide query, for the record.
	began = time.Now()
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	t.Logf("/metrics: %d KiB in %s", rec.Body.Len()>>10, time.Since(began).Round(time.Millisecond))
	for _, q := range []string{
		`sum by (cluster) ({__name__=~"mysql_global_status_synthetic_.*"})`,
		`sum by (cluster) (rate(mysql_global_status_synthetic_000[1m]))`,
	} {
		began = time.Now()
		got, err := s.QueryInstant(context.Background(), q, start.Add((seconds-1)*time.Second))
		if err != nil || len(got) != instances/5 {
			t.Fatalf("%s: %d series, %v", q, len(got), err)
		}
		t.Logf("%s: %s", q, time.Since(began).Round(time.Millisecond))
	}
	t.Logf("at the end: %s", measure())
}

// TestMemorySoak writes hours of samples (DBPILOT_METRICS_SOAK=3h30m) to
// watch the head through a compaction; skipped unless asked for.
func TestMemorySoak(t *testing.T) {
	d, err := time.ParseDuration(os.Getenv("DBPILOT_METRICS_SOAK"))
	if err != nil || d <= 0 {
		t.Skip("set DBPILOT_METRICS_SOAK=3h30m to run")
	}
	const instances, series = 50, 600
	seconds := int(d / time.Second)
	before := measure()
	// Experiments: DBPILOT_METRICS_SOAK_BLOCK=1h (head block duration),
	// DBPILOT_METRICS_SOAK_SPC=120 (samples per chunk).
	s, err := open(Options{Dir: t.TempDir(), MinFreeBytes: -1}, func(o *tsdb.Options) {
		if b, err := time.ParseDuration(os.Getenv("DBPILOT_METRICS_SOAK_BLOCK")); err == nil {
			o.MinBlockDuration = b.Milliseconds()
			o.MaxBlockDuration = max(o.MaxBlockDuration, o.MinBlockDuration)
		}
		if n, err := strconv.Atoi(os.Getenv("DBPILOT_METRICS_SOAK_SPC")); err == nil {
			o.SamplesPerChunk = n
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	f := newFleet(instances, series)
	start := time.Now().Add(-d).Truncate(time.Second)
	began := time.Now()
	var peak uint64
	for from := 0; from < seconds; from += 600 {
		f.write(t, s, start, from, min(from+600, seconds))
		m := measure()
		peak = max(peak, m.rss())
		t.Logf("%6s simulated (%s real): %s; head series %d, blocks %d", time.Duration(min(from+600, seconds))*time.Second,
			time.Since(began).Round(time.Second), m, s.db.Head().NumSeries(), len(s.db.Blocks()))
		if p := os.Getenv("DBPILOT_METRICS_SOAK_HEAPPROFILE"); p != "" {
			if f, err := os.Create(p); err == nil {
				pprof.WriteHeapProfile(f)
				f.Close()
			}
		}
	}
	t.Logf("before: %s; peak RSS %d MiB", before, peak>>20)
}
