package pitr

import (
	"context"
	"testing"
	"time"
)

// TestMeasureServe serves the recorded archive's plan to a discarding sink:
// every planned transaction and event is sent, once.
func TestMeasureServe(t *testing.T) {
	r, s := loadRecorded(t)
	start := list(t, r.DumpPosition)
	p, err := NewPlan(s, start, Target{GTIDs: list(t, r.After)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := MeasureServe(context.Background(), s, p, start, SourceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Txns != int64(p.Txns) || got.Events != p.Events {
		t.Errorf("served %d transactions, %d events; the plan has %d, %d", got.Txns, got.Events, p.Txns, p.Events)
	}
	if got.Bytes <= got.Events*19 {
		t.Errorf("served %d bytes for %d events: fewer than their headers", got.Bytes, got.Events)
	}
	t.Logf("served %d transactions, %d events, %d bytes in %s (%.0f events/s)", got.Txns, got.Events, got.Bytes, got.Elapsed, got.EventsPerSec())

	// From a later position only the rest is sent.
	mid := list(t, r.Until)
	rest, err := MeasureServe(context.Background(), s, p, mid, SourceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, tx := range s.Txns {
		if wants(tx.GTID, mid, map[uint32]uint64{0: list(t, r.After)[0].Seq, 1: list(t, r.After)[1].Seq}) {
			want++
		}
	}
	if rest.Txns != int64(want) {
		t.Errorf("from %s: served %d transactions, want %d", mid, rest.Txns, want)
	}
}

// TestServePace: at Pace x, a stretch recorded over S seconds is not sent
// in less than S/x (the recorded archive has a 2 s pause in it).
func TestServePace(t *testing.T) {
	r, s := loadRecorded(t)
	start := list(t, r.DumpPosition)
	p, err := NewPlan(s, start, Target{GTIDs: list(t, r.After)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var first, last uint32
	for _, tx := range s.Txns {
		if wants(tx.GTID, start, map[uint32]uint64{0: p.Until[0].Seq, 1: p.Until[1].Seq}) {
			if first == 0 {
				first = tx.Time
			}
			last = max(last, tx.Time)
		}
	}
	span := time.Duration(last-first) * time.Second
	if span < 2*time.Second {
		t.Fatalf("the recorded stretch spans %s; want the 2 s pause in it", span)
	}
	const pace = 4
	got, err := MeasureServe(context.Background(), s, p, start, SourceOptions{Pace: pace})
	if err != nil {
		t.Fatal(err)
	}
	// Timestamps are whole seconds: the first and last transactions may be
	// up to 1 s closer than their recorded seconds say.
	if min := (span - time.Second) / pace; got.Elapsed < min {
		t.Errorf("at pace %d a stretch of %s was served in %s, under %s", pace, span, got.Elapsed, min)
	}
	if got.Txns != int64(p.Txns) {
		t.Errorf("served %d transactions, want %d", got.Txns, p.Txns)
	}
	t.Logf("span %s served at pace %d in %s", span, pace, got.Elapsed)
}
