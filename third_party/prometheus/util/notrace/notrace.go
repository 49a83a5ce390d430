// Package notrace stands in for the OpenTelemetry API in promql and
// util/stats (dbpilot patch, see README.dbpilot.md): the same calls, spans
// that record nothing. Upstream's calls go to OpenTelemetry's global
// tracer, which is a no-op unless a program installs a tracer provider;
// dbpilot never does, so the behaviour is the same, without the 20
// OpenTelemetry packages in the binary. promql/engine.go and
// util/stats/query_stats.go import this package under the names otel,
// trace, attribute and codes.
package notrace

import (
	"context"
	"encoding/hex"
)

// KeyValue is an attribute (attribute.KeyValue).
type KeyValue struct{}

// String, Int, Int64 and Float64 make attributes (attribute.*).
func String(string, string) KeyValue   { return KeyValue{} }
func Int(string, int) KeyValue         { return KeyValue{} }
func Int64(string, int64) KeyValue     { return KeyValue{} }
func Float64(string, float64) KeyValue { return KeyValue{} }

// Code is a span status (codes.Code).
type Code uint32

// Error is the error status (codes.Error).
const Error Code = 1

// TraceID and SpanID identify a span (trace.TraceID, trace.SpanID); here
// always zero.
type (
	TraceID [16]byte
	SpanID  [8]byte
)

func (t TraceID) String() string { return hex.EncodeToString(t[:]) }
func (s SpanID) String() string  { return hex.EncodeToString(s[:]) }

// SpanContext is a span's identity (trace.SpanContext).
type SpanContext struct{}

func (SpanContext) TraceID() TraceID { return TraceID{} }
func (SpanContext) SpanID() SpanID   { return SpanID{} }

// Span is a span (trace.Span); here every span records nothing.
type Span interface {
	End(...any)
	RecordError(error, ...any)
	SetStatus(Code, string)
	SetAttributes(...KeyValue)
	SpanContext() SpanContext
}

type noopSpan struct{}

func (noopSpan) End(...any)                {}
func (noopSpan) RecordError(error, ...any) {}
func (noopSpan) SetStatus(Code, string)    {}
func (noopSpan) SetAttributes(...KeyValue) {}
func (noopSpan) SpanContext() SpanContext  { return SpanContext{} }

// SpanFromContext returns the span of ctx (trace.SpanFromContext).
func SpanFromContext(context.Context) Span { return noopSpan{} }

// StartOption configures a span's start (trace.SpanStartOption).
type StartOption struct{}

// WithAttributes sets a span's attributes (trace.WithAttributes).
func WithAttributes(...KeyValue) StartOption { return StartOption{} }

type tracer struct{}

// Tracer returns a tracer (otel.Tracer).
func Tracer(string) tracer { return tracer{} }

// Start returns ctx unchanged and a span that records nothing.
func (tracer) Start(ctx context.Context, _ string, _ ...StartOption) (context.Context, Span) {
	return ctx, noopSpan{}
}
