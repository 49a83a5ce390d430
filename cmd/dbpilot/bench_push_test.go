package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/loadgen"
)

// benchSink records the batches a benchPusher writes.
type benchSink struct {
	dbpilot.ClusterService
	batches []dbpilot.Batch
}

func (s *benchSink) WriteBenchMetrics(_ context.Context, b dbpilot.Batch) error {
	s.batches = append(s.batches, b)
	return nil
}

// sampleOf returns the value of the sample name{class} in b, and whether it
// is there.
func sampleOf(b dbpilot.Batch, name, class string) (dbpilot.Sample, bool) {
	for _, s := range b.Samples {
		if s.Name != name {
			continue
		}
		c := ""
		for _, l := range s.Labels {
			if l.Name == "class" {
				c = l.Value
			}
		}
		if c == class {
			return s, true
		}
	}
	return dbpilot.Sample{}, false
}

// The pusher writes what the incident report reads: errors by class as a
// counter per class (its first sample from zero), the write stall, the
// ledger's acknowledged writes and, at the end, its check.
func TestBenchPusher(t *testing.T) {
	sink := &benchSink{}
	ledger := &loadgen.Ledger{}
	r := &benchRouter{api: sink, cluster: "main", primary: dbpilot.InstanceKey{Host: "127.0.0.1", Port: 3306}}
	p := newBenchPusher(r, "oltp_write_only", ledger, func(err error) { t.Errorf("warned: %v", err) })
	// Intervals an hour ahead: the check, made now, is stamped at the end
	// of the interval after the last one.
	start := time.Now().Add(time.Hour).Truncate(time.Second)
	ledger.Ack(ledger.Next())
	p.push(context.Background(), loadgen.Interval{Start: start, Seconds: 1, WriteStallMS: 12})
	ledger.Ack(ledger.Next())
	p.push(context.Background(), loadgen.Interval{Start: start.Add(time.Second), Seconds: 1, WriteStallMS: 900, Errors: 5,
		ErrorsBy: map[string]int64{"connection": 3, "read_only": 2}})
	p.push(context.Background(), loadgen.Interval{Start: start.Add(2 * time.Second), Seconds: 1, WriteStallMS: 30, Errors: 1,
		ErrorsBy: map[string]int64{"connection": 1}})
	p.pushLedger(context.Background(), 2, 1, nil)
	p.pushLedger(context.Background(), 2, 0, errors.New("no primary"))
	if len(sink.batches) != 5 {
		t.Fatalf("%d batches, want 5", len(sink.batches))
	}
	b := sink.batches
	// The check is stamped an interval after the last one at the earliest
	// (it ends the run's series).
	if !b[3].Time.Equal(start.Add(4 * time.Second)) {
		t.Errorf("the ledger check is stamped %s, want the end of the interval after the last (%s)", b[3].Time, start.Add(4*time.Second))
	}
	if !b[1].Time.Equal(start.Add(2*time.Second)) || b[1].Cluster != "main" || b[1].Instance.Port != 3306 {
		t.Errorf("batch 2: time %s, cluster %q, instance %s", b[1].Time, b[1].Cluster, b[1].Instance)
	}
	if _, ok := sampleOf(b[0], benchErrorsTotal, "connection"); ok {
		t.Error("an error counter before any error")
	}
	for i, want := range []struct {
		class    string
		v        float64
		fromZero bool
		batch    int
		stall    float64
		acked    float64
	}{
		{"connection", 3, true, 1, 0.9, 2},
		{"read_only", 2, true, 1, 0.9, 2},
		{"connection", 4, false, 2, 0.03, 2},
		{"read_only", 2, false, 2, 0.03, 2},
	} {
		s, ok := sampleOf(b[want.batch], benchErrorsTotal, want.class)
		if !ok || s.Value != want.v || s.FromZero != want.fromZero || s.Type != dbpilot.Counter {
			t.Errorf("%d: %s{class=%s} in batch %d: %+v (found %v); want %v, from zero %v, a counter", i, benchErrorsTotal, want.class, want.batch, s, ok, want.v, want.fromZero)
		}
		if s, _ := sampleOf(b[want.batch], benchWriteStall, ""); s.Value != want.stall {
			t.Errorf("%d: write stall %v s, want %v", i, s.Value, want.stall)
		}
		if s, _ := sampleOf(b[want.batch], benchLedgerAcked, ""); s.Value != want.acked {
			t.Errorf("%d: ledger acknowledged %v, want %v", i, s.Value, want.acked)
		}
	}
	for i, want := range map[int]map[string]float64{
		3: {benchLedgerAcked: 2, benchLedgerFound: 1, benchLedgerLost: 1},
		4: {benchLedgerAcked: 2, benchLedgerFailed: 1},
	} {
		if len(b[i].Samples) != len(want) {
			t.Errorf("ledger batch %d: %+v, want %v", i, b[i].Samples, want)
		}
		for name, v := range want {
			if s, ok := sampleOf(b[i], name, ""); !ok || s.Value != v {
				t.Errorf("ledger batch %d: %s = %v (found %v), want %v", i, name, s.Value, ok, v)
			}
		}
	}

	// Without a ledger (a run without --during) no ledger sample is written.
	sink.batches = nil
	p = newBenchPusher(r, "oltp_write_only", nil, func(err error) { t.Errorf("warned: %v", err) })
	p.push(context.Background(), loadgen.Interval{Start: start, Seconds: 1})
	p.pushLedger(context.Background(), 0, 0, nil)
	if len(sink.batches) != 1 {
		t.Fatalf("%d batches without a ledger, want 1", len(sink.batches))
	}
	if _, ok := sampleOf(sink.batches[0], benchLedgerAcked, ""); ok {
		t.Error("a ledger sample without a ledger")
	}
	if _, ok := sampleOf(sink.batches[0], benchWriteStall, ""); ok {
		t.Error("a write stall sample for an interval without writes")
	}
}
