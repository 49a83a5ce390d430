package httpapi

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/dbpilot/dbpilot"
)

// Event stream timing: a status is sent at most every eventMinGap (the
// transitions of a sub-second failover — dead, recovering, the new primary —
// still arrive one by one), and a comment every eventKeepAlive keeps
// proxies from closing an idle stream.
const (
	eventMinGap    = 50 * time.Millisecond
	eventKeepAlive = 15 * time.Second
)

// clusterEvents serves GET /api/clusters/{name}/events: a text/event-stream
// of the cluster's status. The first event is the status now; each later one
// follows a change (dbpilot.ClusterWatcher), so a client sees a failover
// as it happens instead of at its next poll. Every event is
// "event: cluster" with the same JSON as GET /api/clusters/{name}. The
// stream ends when the client goes away or serve stops.
func (s *Server) clusterEvents(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	watcher, ok := s.svc.(dbpilot.ClusterWatcher)
	if !ok {
		s.writeError(w, dbpilot.Errorf(dbpilot.EUNSUPPORTED, "this service has no event stream; poll GET /api/clusters/%s", name), nil)
		return
	}
	ctx := r.Context()
	changed, err := watcher.ClusterChanged(ctx, name)
	if err != nil {
		s.writeError(w, err, nil)
		return
	}
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	send := func() bool {
		st, err := s.svc.ClusterStatus(ctx, name)
		if err != nil {
			if ctx.Err() != nil {
				return false
			}
			b, _ := json.Marshal(errorBody{Error: err.Error(), Code: dbpilot.ErrorCode(err)})
			_, err = w.Write(append(append([]byte("event: error\ndata: "), b...), "\n\n"...))
			return err == nil && rc.Flush() == nil
		}
		b, err := json.Marshal(st)
		if err != nil {
			return false
		}
		if _, err := w.Write(append(append([]byte("event: cluster\ndata: "), b...), "\n\n"...)); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send() {
		return
	}
	keepAlive := time.NewTicker(eventKeepAlive)
	defer keepAlive.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.stopStreams:
			return
		case <-keepAlive.C:
			if _, err := w.Write([]byte(": keep-alive\n\n")); err != nil || rc.Flush() != nil {
				return
			}
		case <-changed:
			// Changes that come together are sent as one.
			select {
			case <-ctx.Done():
				return
			case <-time.After(eventMinGap):
			}
			if changed, err = watcher.ClusterChanged(ctx, name); err != nil {
				return
			}
			if !send() {
				return
			}
		}
	}
}
