package metrics

import (
	"bufio"
	"cmp"
	"compress/gzip"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/dbpilot/dbpilot"
)

// exposed is one series of /metrics.
type exposed struct {
	name string
	lset labels.Labels
	help string
	v    float64
	typ  dbpilot.MetricType
}

var gzipPool = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}

// Handler serves /metrics: the latest values of every monitored instance
// in Prometheus' text format (0.0.4), as mysqld_exporter names them, with
// instance, cluster and role labels and without timestamps; then dbpilot's
// own go_*, process_* and dbpilot_tsdb_* metrics. A series collected twice
// (by two collectors) is exposed once. Scrape it with honor_labels: true,
// so that instance names the MySQL server rather than dbpilot.
func (s *Store) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		self, err := s.reg.Gather()
		if err != nil {
			s.log.Warn("metrics: gather own metrics", "error", err) // what was gathered is still written
		}
		w.Header().Set("Content-Type", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
		w.Header().Set("Cache-Control", "no-store")
		var out io.Writer = w
		if acceptsGzip(r) {
			w.Header().Set("Content-Encoding", "gzip")
			gz := gzipPool.Get().(*gzip.Writer)
			gz.Reset(w)
			defer func() { gz.Close(); gzipPool.Put(gz) }()
			out = gz
		}
		if r.Method == http.MethodHead {
			return
		}
		bw := bufio.NewWriterSize(out, 64<<10)
		own := make(map[string]bool, len(self))
		for _, mf := range self {
			own[mf.GetName()] = true
		}
		writeExposition(bw, s.snapshot(), own)
		enc := expfmt.NewEncoder(bw, expfmt.NewFormat(expfmt.TypeTextPlain))
		for _, mf := range self {
			if err := enc.Encode(mf); err != nil {
				return // the client went away
			}
		}
		bw.Flush()
	})
}

func acceptsGzip(r *http.Request) bool {
	for part := range strings.SplitSeq(r.Header.Get("Accept-Encoding"), ",") {
		enc, _, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(enc, "gzip") {
			return true
		}
	}
	return false
}

// snapshot copies the latest values, sorted by name then labels.
func (s *Store) snapshot() []exposed {
	s.mu.RLock()
	srcs := make([]*source, 0, len(s.sources))
	for _, src := range s.sources {
		srcs = append(srcs, src)
	}
	s.mu.RUnlock()
	var out []exposed
	for _, src := range srcs {
		src.mu.Lock()
		for _, e := range src.entries {
			if e.gen == src.gen {
				out = append(out, exposed{name: e.name, lset: e.lset, help: e.help, v: e.v, typ: e.typ})
			}
		}
		src.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b exposed) int {
		return cmp.Or(strings.Compare(a.name, b.name), labels.Compare(a.lset, b.lset))
	})
	return out
}

// writeExposition writes series sorted by name and labels as text, one
// HELP and TYPE per family (the first series' type wins), skipping the
// families in skip and repeated series.
func writeExposition(w *bufio.Writer, series []exposed, skip map[string]bool) {
	var buf []byte
	for i := 0; i < len(series); {
		name := series[i].name
		j := i
		for j < len(series) && series[j].name == name {
			j++
		}
		fam := series[i:j]
		i = j
		if skip[name] {
			continue
		}
		help := ""
		for _, e := range fam {
			if e.help != "" {
				help = e.help
				break
			}
		}
		if help == "" {
			help = "Collected by dbpilot."
		}
		typ := "gauge"
		if fam[0].typ == dbpilot.Counter {
			typ = "counter"
		}
		buf = append(buf[:0], "# HELP "...)
		buf = append(buf, name...)
		buf = append(buf, ' ')
		buf = appendEscaped(buf, help, false)
		buf = append(buf, "\n# TYPE "...)
		buf = append(buf, name...)
		buf = append(buf, ' ')
		buf = append(buf, typ...)
		buf = append(buf, '\n')
		for k, e := range fam {
			if k > 0 && labels.Equal(e.lset, fam[k-1].lset) {
				continue
			}
			buf = append(buf, name...)
			first := true
			e.lset.Range(func(l labels.Label) {
				if l.Name == model.MetricNameLabel {
					return
				}
				if first {
					buf = append(buf, '{')
					first = false
				} else {
					buf = append(buf, ',')
				}
				buf = append(buf, l.Name...)
				buf = append(buf, '=', '"')
				buf = appendEscaped(buf, l.Value, true)
				buf = append(buf, '"')
			})
			if !first {
				buf = append(buf, '}')
			}
			buf = append(buf, ' ')
			buf = appendFloat(buf, e.v)
			buf = append(buf, '\n')
			if len(buf) > 32<<10 {
				w.Write(buf)
				buf = buf[:0]
			}
		}
		w.Write(buf)
	}
}

// appendEscaped escapes a HELP text (\ and newline) or a label value (and ").
func appendEscaped(dst []byte, s string, quote bool) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			dst = append(dst, '\\', '\\')
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '"' && quote:
			dst = append(dst, '\\', '"')
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

func appendFloat(dst []byte, v float64) []byte {
	switch {
	case math.IsNaN(v):
		return append(dst, "NaN"...)
	case math.IsInf(v, 1):
		return append(dst, "+Inf"...)
	case math.IsInf(v, -1):
		return append(dst, "-Inf"...)
	}
	return strconv.AppendFloat(dst, v, 'g', -1, 64)
}

// Register adds a collector of dbpilot's own metrics (such as the
// remote-write targets' dbpilot_remote_write_*) to those /metrics exposes.
func (s *Store) Register(c prometheus.Collector) error { return s.reg.Register(c) }
