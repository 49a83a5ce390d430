package simulator

import (
	"strconv"
	"time"
)

// performance_schema as a MariaDB 10.11 started with performance_schema=ON
// shows it to the statements collector: both consumers on, the digest
// table (data/digests.txt, a recording) with its counters moving with the
// instance's uptime, as the statements of a steady workload move them.

// digestRates is how many times a second each recorded digest runs, by row
// (scaled by the instance's factor); the rows past the list run once a
// minute.
var digestRates = []float64{0.1, 0.05, 0.1, 0, 0, 0, 0, 0, 0, 0.2, 0, 0, 2, 6, 1, 0.5, 0.05, 0.1, 0.1, 0.1, 0.1, 1}

// digest table columns (data/digests.txt, MariaDB's order): the counters
// that move, and FIRST_SEEN and LAST_SEEN.
const (
	digCount        = 3
	digSumWait      = 4
	digRowsExamined = 6
	digRowsSent     = 7
	digFirstSeen    = 13
	digLastSeen     = 14
)

// digests answers the SELECT of performance_schema.events_statements_summary_by_digest.
func (in *Instance) digests(r *response, now time.Time) {
	t := in.fleet.tmpl.digests
	r.columns(t.cols...)
	up := in.uptime(now)
	first := time.Unix(0, in.started.Load()).UTC().Format(time.DateTime)
	last := now.UTC().Format(time.DateTime)
	vals := make([]string, len(t.cols))
	for i, row := range t.rows {
		copy(vals, row)
		rate := 1.0 / 60
		if i < len(digestRates) {
			rate = digestRates[i]
		}
		base, _ := strconv.ParseFloat(row[digCount], 64)
		runs := uint64(rate * in.factor * up)
		if base > 0 && runs > 0 {
			per := func(col int) {
				v, err := strconv.ParseFloat(row[col], 64)
				if err == nil {
					vals[col] = strconv.FormatUint(uint64(v+v/base*float64(runs)), 10)
				}
			}
			per(digSumWait)
			per(digRowsExamined)
			per(digRowsSent)
			vals[digCount] = strconv.FormatUint(uint64(base)+runs, 10)
			vals[digLastSeen] = last
		}
		vals[digFirstSeen] = first
		r.row(vals...)
	}
	r.eof()
}

// consumers answers the read of performance_schema.setup_consumers.
func (in *Instance) consumers(r *response) {
	t := in.fleet.tmpl.consumers
	r.columns(t.cols...)
	for _, row := range t.rows {
		r.row(row...)
	}
	r.eof()
}
