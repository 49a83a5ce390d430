package remotewrite

import (
	"bytes"
	"math"
	"testing"

	"github.com/prometheus/prometheus/prompb"
)

// TestWireMatchesPrompb: the hand-written encoding is byte for byte what
// prompb marshals, zero values, negative timestamps, NaN and staleness
// markers included, and prompb decodes it back to the same request.
func TestWireMatchesPrompb(t *testing.T) {
	stale := math.Float64frombits(0x7ff0000000000002)
	ours := writeRequest{Timeseries: []timeSeries{
		{
			Labels:  []label{{"__name__", "mysql_up"}, {"instance", "127.0.0.1:3306"}, {"role", ""}},
			Samples: []sample{{1, 1700000000000}, {0, 1700000001000}, {-2.5, 0}, {math.NaN(), -5}, {stale, math.MaxInt64}},
		},
		{Labels: []label{{"__name__", "x"}, {"", "v"}}},
		{Samples: []sample{{math.Inf(1), 1}}},
		{},
	}}
	var theirs prompb.WriteRequest
	for _, ts := range ours.Timeseries {
		var pts prompb.TimeSeries
		for _, l := range ts.Labels {
			pts.Labels = append(pts.Labels, prompb.Label{Name: l.Name, Value: l.Value})
		}
		for _, s := range ts.Samples {
			pts.Samples = append(pts.Samples, prompb.Sample{Value: s.Value, Timestamp: s.Timestamp})
		}
		theirs.Timeseries = append(theirs.Timeseries, pts)
	}
	want, err := theirs.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if ours.size() != len(want) {
		t.Errorf("size() = %d, prompb's encoding has %d bytes", ours.size(), len(want))
	}
	got := ours.appendTo([]byte("prefix"))
	if !bytes.Equal(got[len("prefix"):], want) {
		t.Fatalf("encoding differs from prompb's:\n got %x\nwant %x", got[len("prefix"):], want)
	}
	var back prompb.WriteRequest
	if err := back.Unmarshal(got[len("prefix"):]); err != nil {
		t.Fatalf("prompb cannot decode it: %v", err)
	}
	if len(back.Timeseries) != 4 || len(back.Timeseries[0].Samples) != 5 || back.Timeseries[0].Samples[0].Timestamp != 1700000000000 ||
		back.Timeseries[0].Labels[1].Value != "127.0.0.1:3306" || math.Float64bits(back.Timeseries[0].Samples[4].Value) != 0x7ff0000000000002 {
		t.Errorf("decoded %+v", back.Timeseries)
	}
}
