package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
)

// watchingService is a fakeService whose cluster "main" changes state on
// demand and tells its watchers (dbpilot.ClusterWatcher).
type watchingService struct {
	*fakeService
	mu      sync.Mutex
	state   string
	changed chan struct{}
}

func (w *watchingService) ClusterStatus(ctx context.Context, name string) (*dbpilot.ClusterStatus, error) {
	st, err := w.fakeService.ClusterStatus(ctx, name)
	if err != nil {
		return nil, err
	}
	c := *st
	w.mu.Lock()
	c.State = w.state
	w.mu.Unlock()
	return &c, nil
}

func (w *watchingService) ClusterChanged(ctx context.Context, name string) (<-chan struct{}, error) {
	if _, err := w.fakeService.ClusterStatus(ctx, name); err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.changed, nil
}

func (w *watchingService) set(state string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.state = state
	close(w.changed)
	w.changed = make(chan struct{})
}

// sseReader reads "event: X\ndata: Y\n\n" frames, skipping comments.
type sseReader struct{ sc *bufio.Scanner }

func (r *sseReader) next(t *testing.T) (event, data string) {
	t.Helper()
	for r.sc.Scan() {
		line := r.sc.Text()
		switch {
		case line == "" && event != "":
			return event, data
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		}
	}
	t.Fatalf("the stream ended before an event: %v", r.sc.Err())
	return "", ""
}

func TestClusterEvents(t *testing.T) {
	e := newEnv(t, "tok", "tok")
	w := &watchingService{fakeService: e.fake, state: dbpilot.ClusterOK, changed: make(chan struct{})}
	api := NewServer(w, ServerOptions{Token: "tok"})
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/clusters/main/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("status %d, content type %q", resp.StatusCode, ct)
	}
	r := &sseReader{bufio.NewScanner(resp.Body)}
	r.sc.Buffer(nil, 1<<20)
	var st dbpilot.ClusterStatus
	// The status now, then each change as it happens.
	for _, want := range []string{dbpilot.ClusterOK, dbpilot.ClusterDead, dbpilot.ClusterRecovering} {
		if want != dbpilot.ClusterOK {
			w.set(want)
		}
		ev, data := r.next(t)
		if ev != "cluster" {
			t.Fatalf("event %q, want cluster", ev)
		}
		if err := json.Unmarshal([]byte(data), &st); err != nil {
			t.Fatalf("event data %q: %v", data, err)
		}
		if st.Name != "main" || st.State != want || st.Primary.Port != 3306 {
			t.Errorf("event: cluster %q state %q primary %v, want main %s db1:3306", st.Name, st.State, st.Primary, want)
		}
	}

	// serve stopping ends the stream (http.Server.Shutdown waits for it).
	done := make(chan struct{})
	go func() {
		defer close(done)
		for r.sc.Scan() {
		}
	}()
	api.StopStreams()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the stream did not end after StopStreams")
	}

	// An unknown cluster is a JSON 404, not a stream.
	resp2, err := http.Get(srv.URL + "/api/clusters/nosuch/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp2.Body.Close()
	var body errorBody
	json.NewDecoder(resp2.Body).Decode(&body)
	if resp2.StatusCode != 404 || body.Code != dbpilot.ENOTFOUND || !strings.Contains(body.Error, "nosuch") {
		t.Errorf("unknown cluster: %d %+v", resp2.StatusCode, body)
	}

	// A service that cannot watch says so; the page then polls.
	resp3, err := http.Get(e.srv.URL + "/api/clusters/main/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp3.Body.Close()
	body = errorBody{}
	json.NewDecoder(resp3.Body).Decode(&body)
	if resp3.StatusCode < 400 || body.Code != dbpilot.EUNSUPPORTED {
		t.Errorf("a service without ClusterWatcher: %d %+v", resp3.StatusCode, body)
	}
}
