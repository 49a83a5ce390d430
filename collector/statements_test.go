package collector

import (
	"testing"

	"github.com/dbpilot/dbpilot/mysql"
)

// tracked returns the digests with series in a run's samples.
func trackedOf(t *testing.T, s *Statements, prev map[string]bool, deltas []mysql.Digest, cur *mysql.DigestSnapshot) map[string]bool {
	t.Helper()
	s.run++
	out := map[string]bool{}
	for _, smp := range s.track(prev, deltas, cur) {
		if smp.Name != MetricQueryCalls {
			continue
		}
		for _, l := range smp.Labels {
			if l.Name == "digest" {
				out[l.Value] = true
			}
		}
	}
	return out
}

func TestStatementsTrackTop(t *testing.T) {
	s := NewStatements(StatementsOptions{Top: 2})
	dg := func(digest string, count, wait uint64) mysql.Digest {
		return mysql.Digest{Digest: digest, Text: "SELECT " + digest, Count: count, TotalWait: wait}
	}
	cur := &mysql.DigestSnapshot{Digests: []mysql.Digest{dg("a", 10, 100), dg("b", 10, 50), dg("c", 10, 10)}}
	// The baseline tracks nothing: no interval yet.
	if got := trackedOf(t, s, nil, nil, cur); len(got) != 0 {
		t.Fatalf("baseline tracked %v", got)
	}
	// The two costliest of the interval get series.
	deltas := []mysql.Digest{dg("a", 1, 100), dg("b", 1, 50), dg("c", 1, 10)}
	got := trackedOf(t, s, map[string]bool{"\x00a": true, "\x00b": true, "\x00c": true}, deltas, cur)
	if !got["a"] || !got["b"] || len(got) != 2 {
		t.Fatalf("tracked %v, want a and b", got)
	}
	// A new, costlier digest waits until the tracked ones are held long
	// enough, then replaces the cheapest.
	cur.Digests = append(cur.Digests, dg("d", 5, 1000))
	var samplesD int
	for i := 0; i < statementsMinHold+1; i++ {
		got = trackedOf(t, s, map[string]bool{"\x00a": true, "\x00b": true, "\x00c": true, "\x00d": true},
			[]mysql.Digest{dg("a", 1, 100), dg("d", 1, 1000)}, cur)
		if len(got) > 2 {
			t.Fatalf("run %d: %d digests tracked, want at most 2", i, len(got))
		}
		if got["d"] {
			samplesD++
		}
	}
	if !got["d"] || !got["a"] || got["b"] {
		t.Fatalf("tracked %v: want d to replace b (idle), a kept", got)
	}
	if samplesD == 0 {
		t.Fatal("d never tracked")
	}
}

func TestStatementsFromZero(t *testing.T) {
	s := NewStatements(StatementsOptions{Top: 5})
	cur := &mysql.DigestSnapshot{Digests: []mysql.Digest{{Digest: "old", Count: 100, TotalWait: 5}, {Digest: "new", Count: 3, TotalWait: 5}}}
	s.run++
	samples := s.track(map[string]bool{"\x00old": true}, []mysql.Digest{{Digest: "old", Count: 1, TotalWait: 5}, {Digest: "new", Count: 3, TotalWait: 5}}, cur)
	for _, smp := range samples {
		digest := smp.Labels[1].Value
		if smp.FromZero != (digest == "new") {
			t.Errorf("%s %s: FromZero %v; want it only for the digest new since the previous read", smp.Name, digest, smp.FromZero)
		}
	}
	// Written once, a series never starts from zero again.
	s.run++
	for _, smp := range s.track(map[string]bool{"\x00old": true, "\x00new": true}, []mysql.Digest{{Digest: "new", Count: 1, TotalWait: 5}}, cur) {
		if smp.FromZero {
			t.Errorf("%s: FromZero on a later run", smp.Name)
		}
	}
}
