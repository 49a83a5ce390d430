package report

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/gtid"
)

// Check outcomes. NoneFound is said only of a check that ran and found
// nothing; NotChecked when nothing was recorded to check with.
const (
	Found      = "found"
	NoneFound  = "none found"
	NotChecked = "not checked"
)

// Check is one check for lost or errant transactions.
type Check struct {
	ID     string // lost-replicas, missing-transactions, errant, acknowledged-writes
	Title  string
	Status string
	// Lines say what was compared and what was found.
	Lines []string
}

func checks(in *Input) []Check {
	out := []Check{lostReplicas(in), missingTransactions(in), errantTransactions(in)}
	if in.Bench != nil {
		out = append(out, ledgerCheck(in.Bench.Ledger))
	}
	return out
}

// lostReplicas: the replicas the recovery could not move below the new
// primary (Recovery.LostReplicas, the "lost" events' reasons).
func lostReplicas(in *Input) Check {
	rec := in.Recovery
	c := Check{ID: "lost-replicas", Title: "Replicas lost (could not follow the new primary)"}
	reasons := map[string]string{}
	for _, e := range in.RecoveryEvents {
		if e.Event == dbpilot.AuditLost {
			reasons[e.Instance.String()] = e.Message
		}
	}
	switch {
	case len(rec.LostReplicas) > 0 || len(reasons) > 0:
		c.Status = Found
		seen := map[string]bool{}
		for _, k := range rec.LostReplicas {
			seen[k.String()] = true
			c.Lines = append(c.Lines, cmp.Or(reasons[k.String()], k.String()))
		}
		for _, k := range slices.Sorted(maps.Keys(reasons)) {
			if !seen[k] {
				c.Lines = append(c.Lines, reasons[k])
			}
		}
	case rec.Ended.IsZero():
		c.Status, c.Lines = NotChecked, []string{"the recovery has not ended"}
	case !rec.Success:
		c.Status, c.Lines = NotChecked, []string{"the recovery failed before every replica was moved: " + rec.Error}
	default:
		c.Status, c.Lines = NoneFound, []string{fmt.Sprintf("every replica the plan kept replicates from %s", rec.NewPrimary)}
	}
	return c
}

// candidateReceived is what the new primary had received when it was
// promoted: its apply-relay-log event's "received", else its position in
// the plan.
func candidateReceived(in *Input) (pos, from string) {
	rec := in.Recovery
	for _, e := range in.RecoveryEvents {
		if e.Event == dbpilot.AuditApplyRelayLog && e.Instance.Equal(rec.NewPrimary) && e.Detail["received"] != "" {
			pos, from = e.Detail["received"], "its apply-relay-log step"
		}
	}
	if pos != "" {
		return pos, from
	}
	for _, c := range decision(rec, in.RecoveryEvents).Candidates {
		if c.Chosen && c.Received != "" && c.Received != "unknown" {
			return c.Received, "the plan"
		}
	}
	return "", ""
}

// missingTransactions compares the old primary's last GTID position read
// before the detection with what the new primary had received when it was
// promoted.
func missingTransactions(in *Input) Check {
	rec := in.Recovery
	c := Check{ID: "missing-transactions", Title: "Transactions of the old primary the new primary lacks"}
	old := in.OldPrimaryPosition
	received, from := candidateReceived(in)
	switch {
	case rec.NewPrimary.IsZero():
		c.Status, c.Lines = NotChecked, []string{"no replica was promoted"}
		return c
	case old == nil || (len(old.Domains) == 0 && old.Executed == 0):
		c.Status, c.Lines = NotChecked, []string{fmt.Sprintf("serve read no GTID position of the old primary %s before the detection (metrics dbpilot_replication_gtid_seq, dbpilot_gtid_executed_count)", rec.OldPrimary)}
		return c
	case received == "":
		c.Status, c.Lines = NotChecked, []string{fmt.Sprintf("the recovery recorded no position of the new primary %s", rec.NewPrimary)}
		return c
	}
	at := old.At.UTC().Format("15:04:05.000")
	if len(old.Domains) > 0 {
		l, err := gtid.ParseMariaList(received)
		if err != nil {
			c.Status, c.Lines = NotChecked, []string{fmt.Sprintf("the new primary's position %q (from %s) cannot be read: %v", received, from, err)}
			return c
		}
		var missing uint64
		for _, d := range slices.Sorted(maps.Keys(old.Domains)) {
			want := old.Domains[d]
			var have uint64
			if g, ok := l.DomainSeq(d); ok {
				have = g.Seq
			}
			line := fmt.Sprintf("domain %d: the old primary was at sequence %d (read at %s UTC), the new primary had received up to %d (%s)", d, want, at, have, from)
			if want > have {
				missing += want - have
				line += fmt.Sprintf(": %d transaction(s) missing", want-have)
			}
			c.Lines = append(c.Lines, line)
		}
		c.Status = NoneFound
		if missing > 0 {
			c.Status = Found
			c.Lines = append(c.Lines, fmt.Sprintf("up to %d transaction(s) the old primary committed were not on the new primary; with semi-sync none of them was acknowledged to a client", missing))
		}
		c.Lines = append(c.Lines, "the old primary may have committed more after serve's last read of it: this check finds losses it saw, not all")
		return c
	}
	s, err := gtid.ParseMySQLSet(received)
	if err != nil {
		c.Status, c.Lines = NotChecked, []string{fmt.Sprintf("the new primary's position %q (from %s) cannot be read: %v", received, from, err)}
		return c
	}
	have := float64(s.Count())
	c.Lines = []string{fmt.Sprintf("the old primary had executed %.0f transactions (read at %s UTC), the new primary had received %.0f (%s)", old.Executed, at, have, from)}
	c.Status = NoneFound
	if old.Executed > have {
		c.Status = Found
		c.Lines = append(c.Lines, fmt.Sprintf("up to %.0f transaction(s) missing", old.Executed-have))
	}
	c.Lines = append(c.Lines, "the old primary may have committed more after serve's last read of it: this check finds losses it saw, not all")
	return c
}

// errantTransactions: what serve found on the old primary when it
// answered again (the fence's comparison with the new primary, a
// reclone's discarded GTIDs, its rejoin).
func errantTransactions(in *Input) Check {
	rec := in.Recovery
	c := Check{ID: "errant", Title: "Errant transactions on the old primary (it has, the new primary lacks)"}
	if rec.Kind != dbpilot.RecoveryFailoverAuto && rec.Kind != dbpilot.RecoveryFailoverManual {
		c.Status, c.Lines = NotChecked, []string{"not a failover: the old primary was made read-only and replicates from the new one"}
		return c
	}
	var found, clean []string
	for _, e := range in.OldPrimaryEvents {
		if !e.Instance.Equal(rec.OldPrimary) {
			continue
		}
		at := e.Time.UTC().Format("2006-01-02 15:04:05")
		switch {
		case e.Event == dbpilot.AuditFence && e.Detail["errant"] != "":
			found = append(found, fmt.Sprintf("%s UTC: %s (errant %s)", at, e.Message, e.Detail["errant"]))
		case e.Event == dbpilot.AuditReclone && e.Detail["errant"] != "":
			found = append(found, fmt.Sprintf("%s UTC: re-provisioned, discarding %s", at, e.Detail["errant"]))
		case e.Event == dbpilot.AuditRejoin:
			clean = append(clean, fmt.Sprintf("%s UTC: %s", at, e.Message))
		}
	}
	if f := in.Fenced; f != nil && f.Key.Equal(rec.OldPrimary) && f.Compared {
		if f.Errant != "" {
			found = append(found, fmt.Sprintf("now: compared with %s, errant %s", f.Primary, f.Errant))
		} else {
			clean = append(clean, fmt.Sprintf("now: compared with %s, no errant transaction", f.Primary))
		}
	}
	switch {
	case len(found) > 0:
		c.Status, c.Lines = Found, found
	case len(clean) > 0:
		c.Status, c.Lines = NoneFound, clean
	default:
		c.Status, c.Lines = NotChecked, []string{fmt.Sprintf("the old primary %s has not been compared with the new primary (serve compares it when it answers again)", rec.OldPrimary)}
	}
	return c
}

// ledgerCheck: the bench run's acknowledged writes looked up on the new
// primary at the end of the run.
func ledgerCheck(l LedgerInput) Check {
	c := Check{ID: "acknowledged-writes", Title: "Writes acknowledged to the bench client, missing on the new primary"}
	switch {
	case l.HasLost && l.Lost > 0:
		c.Status = Found
		c.Lines = []string{fmt.Sprintf("%.0f of %.0f acknowledged writes missing", l.Lost, l.Acked)}
	case l.HasLost:
		c.Status = NoneFound
		c.Lines = []string{fmt.Sprintf("all %.0f acknowledged writes found on the new primary", l.Acked)}
	case l.Failed:
		c.Status, c.Lines = NotChecked, []string{"the bench run could not read its ledger on the new primary"}
	case l.HasAcked:
		c.Status, c.Lines = NotChecked, []string{"the bench run had not ended when this report was made (it checks its ledger at its end)"}
	default:
		c.Status, c.Lines = NotChecked, []string{"the bench run kept no ledger (only a run with --during numbers its writes)"}
	}
	return c
}

// Impact is what bench clients saw of the recovery.
type Impact struct {
	From, To  time.Time
	Workloads []string
	// LongestStall is the longest time without an acknowledged write;
	// HasStall is false when the runs wrote nothing.
	LongestStall time.Duration
	HasStall     bool
	Errors       []ClassCount
	ErrorsTotal  int64
	Seconds      []SecondRow
	Ledger       Check
	// LedgerChecked: the run checked its ledger; LedgerAcked and
	// LedgerLost are its acknowledged and missing writes.
	LedgerChecked           bool
	LedgerAcked, LedgerLost int64
	Chart                   Chart
}

// ClassCount is the errors of one class.
type ClassCount struct {
	Class string
	N     int64
}

// SecondRow is the bench at one second.
type SecondRow struct {
	Time               time.Time
	Offset             time.Duration // from the detection
	Rate, ErrorsPerSec float64
	P50, P99, Max      float64 // ms
	HasLatency         bool
}

func impact(b *BenchInput, origin time.Time, marks []mark) *Impact {
	im := &Impact{From: b.From, To: b.To, Workloads: b.Workloads, HasStall: b.HasStall, Ledger: ledgerCheck(b.Ledger),
		LedgerChecked: b.Ledger.HasLost, LedgerAcked: int64(math.Round(b.Ledger.Acked)), LedgerLost: int64(math.Round(b.Ledger.Lost))}
	if b.HasStall {
		im.LongestStall = time.Duration(math.Round(b.LongestStall * float64(time.Second)))
	}
	by := errorsByClass(b.ErrorsBase, b.ErrorsRaw)
	for _, k := range slices.Sorted(maps.Keys(by)) {
		if by[k] > 0 {
			im.Errors = append(im.Errors, ClassCount{k, by[k]})
			im.ErrorsTotal += by[k]
		}
	}
	slices.SortStableFunc(im.Errors, func(a, b ClassCount) int { return cmp.Compare(b.N, a.N) })

	rows := map[int64]*SecondRow{}
	row := func(t time.Time) *SecondRow {
		r := rows[t.UnixMilli()]
		if r == nil {
			r = &SecondRow{Time: t, Offset: t.Sub(origin)}
			rows[t.UnixMilli()] = r
		}
		return r
	}
	for _, s := range b.Rate {
		for _, p := range s.Points {
			row(p.T).Rate += p.V
		}
	}
	for _, s := range b.ErrorsPerSecond {
		for _, p := range s.Points {
			row(p.T).ErrorsPerSec += p.V
		}
	}
	var lat []dbpilot.Series
	for _, s := range b.Latency {
		q := s.Labels["quantile"]
		name := map[string]string{"0.5": "p50", "0.99": "p99", "1": "max"}[q]
		if name == "" {
			continue
		}
		ms := dbpilot.Series{Labels: map[string]string{"quantile": name}}
		for _, p := range s.Points {
			r := row(p.T)
			r.HasLatency = true
			v := p.V * 1000
			switch name {
			case "p50":
				r.P50 = v
			case "p99":
				r.P99 = v
			case "max":
				r.Max = v
			}
			ms.Points = append(ms.Points, dbpilot.Point{T: p.T, V: v})
		}
		lat = append(lat, ms)
	}
	for _, k := range slices.Sorted(maps.Keys(rows)) {
		im.Seconds = append(im.Seconds, *rows[k])
	}
	slices.SortFunc(lat, func(a, b dbpilot.Series) int {
		order := map[string]int{"p50": 0, "p99": 1, "max": 2}
		return cmp.Compare(order[a.Labels["quantile"]], order[b.Labels["quantile"]])
	})
	im.Chart = newChart(ChartInput{ID: "bench-latency", Title: "Bench latency per second (from each transaction's intended start)", Unit: "ms",
		Legend: "quantile", Series: lat}, b.From, b.To, origin, marks)
	return im
}

// errorsByClass is the increase of each class's error counter from From to
// To: its samples in the window added up from the value at From (a drop is
// a new run: its counter starts again from 0).
func errorsByClass(base, raw []dbpilot.Series) map[string]int64 {
	key := func(s dbpilot.Series) string {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(s.Labels)) {
			if k != "__name__" {
				parts = append(parts, k+"="+s.Labels[k])
			}
		}
		return strings.Join(parts, ",")
	}
	start := map[string]float64{}
	for _, s := range base {
		if n := len(s.Points); n > 0 {
			start[key(s)] = s.Points[n-1].V
		}
	}
	out := map[string]int64{}
	for _, s := range raw {
		prev := start[key(s)]
		var n float64
		for _, p := range s.Points {
			if p.V >= prev {
				n += p.V - prev
			} else {
				n += p.V
			}
			prev = p.V
		}
		out[s.Labels["class"]] += int64(math.Round(n))
	}
	return out
}

// fmtMS formats milliseconds with three significant digits.
func fmtMS(v float64) string {
	switch a := math.Abs(v); {
	case v == 0:
		return "0"
	case a < 1:
		return strconv.FormatFloat(v, 'f', 3, 64)
	case a < 10:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case a < 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}
