package remotewrite

import (
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// The remote-write 1.0 messages dbpilot sends (prometheus/prompb's
// types.proto), encoded here with protowire instead of through prompb, whose
// gogo-protobuf code and registered descriptors would weigh on the binary
// for four small messages. Fields at their zero value are omitted, as
// proto3 wants and as prompb writes them:
//
//	message WriteRequest { repeated TimeSeries timeseries = 1; }
//	message TimeSeries   { repeated Label labels = 1; repeated Sample samples = 2; }
//	message Label        { string name = 1; string value = 2; }
//	message Sample       { double value = 1; int64 timestamp = 2; }
type (
	label struct {
		Name, Value string
	}
	sample struct {
		Value     float64
		Timestamp int64
	}
	timeSeries struct {
		Labels  []label
		Samples []sample
	}
	writeRequest struct {
		Timeseries []timeSeries
	}
)

func stringFieldSize(s string) int {
	if s == "" {
		return 0
	}
	return 1 + protowire.SizeBytes(len(s))
}

func (l *label) size() int { return stringFieldSize(l.Name) + stringFieldSize(l.Value) }

func (s *sample) size() int {
	n := 0
	if s.Value != 0 {
		n += 1 + 8
	}
	if s.Timestamp != 0 {
		n += 1 + protowire.SizeVarint(uint64(s.Timestamp))
	}
	return n
}

func (t *timeSeries) size() int {
	n := 0
	for i := range t.Labels {
		n += 1 + protowire.SizeBytes(t.Labels[i].size())
	}
	for i := range t.Samples {
		n += 1 + protowire.SizeBytes(t.Samples[i].size())
	}
	return n
}

// size is the encoded length of r.
func (r *writeRequest) size() int {
	n := 0
	for i := range r.Timeseries {
		n += 1 + protowire.SizeBytes(r.Timeseries[i].size())
	}
	return n
}

func appendString(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

// appendTo appends r's encoding to b.
func (r *writeRequest) appendTo(b []byte) []byte {
	for i := range r.Timeseries {
		t := &r.Timeseries[i]
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(t.size()))
		for j := range t.Labels {
			l := &t.Labels[j]
			b = protowire.AppendTag(b, 1, protowire.BytesType)
			b = protowire.AppendVarint(b, uint64(l.size()))
			b = appendString(b, 1, l.Name)
			b = appendString(b, 2, l.Value)
		}
		for j := range t.Samples {
			s := &t.Samples[j]
			b = protowire.AppendTag(b, 2, protowire.BytesType)
			b = protowire.AppendVarint(b, uint64(s.size()))
			if s.Value != 0 {
				b = protowire.AppendTag(b, 1, protowire.Fixed64Type)
				b = protowire.AppendFixed64(b, math.Float64bits(s.Value))
			}
			if s.Timestamp != 0 {
				b = protowire.AppendTag(b, 2, protowire.VarintType)
				b = protowire.AppendVarint(b, uint64(s.Timestamp))
			}
		}
	}
	return b
}
