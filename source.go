package dbpilot

import "context"

// Sources of a request, recorded in the audit log as detail "source".
const (
	SourceWeb = "web" // the web console
	SourceCLI = "cli" // the CLI through serve's API (--server)
	SourceAPI = "api" // any other client of the HTTP API
)

type sourceKey struct{}

// WithSource returns ctx carrying who made the request (one of the Source*
// names, or another short word a client chose).
func WithSource(ctx context.Context, source string) context.Context {
	return context.WithValue(ctx, sourceKey{}, source)
}

// SourceOf returns the source ctx carries, or "".
func SourceOf(ctx context.Context) string {
	s, _ := ctx.Value(sourceKey{}).(string)
	return s
}

type actorKey struct{}

// WithActor returns ctx carrying who acted: for a request to serve's API,
// "token:NAME", the name of the API token it presented. The audit log
// records it as detail "by".
func WithActor(ctx context.Context, actor string) context.Context {
	return context.WithValue(ctx, actorKey{}, actor)
}

// ActorOf returns the actor ctx carries, or "".
func ActorOf(ctx context.Context) string {
	s, _ := ctx.Value(actorKey{}).(string)
	return s
}

type peerKey struct{}

// WithPeerRead returns ctx marking a read one serve asks of another (the
// fleet-wide overview and metric queries): the serve answers from what it
// observes and collects itself, and never asks its own peers in turn.
func WithPeerRead(ctx context.Context) context.Context {
	return context.WithValue(ctx, peerKey{}, true)
}

// IsPeerRead reports whether ctx carries WithPeerRead's mark.
func IsPeerRead(ctx context.Context) bool {
	b, _ := ctx.Value(peerKey{}).(bool)
	return b
}
