package simulator

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Handler is the fleet's HTTP control endpoint:
//
//	POST /kill?port=P     the instance dies: listener and connections closed at once
//	POST /revive?port=P   it starts again on its port
//	GET  /clusters        every cluster's primary and replicas (JSON)
//	GET  /stats           statements answered, connections, unknown statements
//
// /kill and /revive answer {"port": P, "at": RFC 3339 time, "unix_ms": ms}.
func (f *Fleet) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /kill", func(w http.ResponseWriter, r *http.Request) { f.act(w, r, f.Kill) })
	mux.HandleFunc("POST /revive", func(w http.ResponseWriter, r *http.Request) { f.act(w, r, f.Revive) })
	mux.HandleFunc("GET /clusters", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, f.Info()) })
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, f.Stats()) })
	return mux
}

func (f *Fleet) act(w http.ResponseWriter, r *http.Request, do func(int) (time.Time, error)) {
	port, err := strconv.Atoi(r.URL.Query().Get("port"))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "port: want a number"})
		return
	}
	at, err := do(port)
	switch {
	case errors.Is(err, ErrNoInstance):
		writeJSON(w, http.StatusNotFound, map[string]string{"error": err.Error()})
	case err != nil:
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
	default:
		writeJSON(w, http.StatusOK, map[string]any{"port": port, "at": at.Format(time.RFC3339Nano), "unix_ms": at.UnixMilli()})
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// ConfigOptions are the serve settings WriteConfig writes besides the
// clusters.
type ConfigOptions struct {
	Listen string // default 127.0.0.1:7070
	State  string // the state file; default: serve's own default
	// AutoFailover sets auto_failover on every cluster (default off:
	// detection only).
	AutoFailover bool
}

// WriteConfig writes a `dbpilot serve` YAML configuration watching every
// cluster of the fleet, seeded with its primary. Credentials are anything:
// the simulator accepts any user and password.
func (f *Fleet) WriteConfig(w io.Writer, o ConfigOptions) error {
	var b strings.Builder
	b.WriteString("# dbpilot serve configuration for a simulated fleet (dbpilot-sim): not real servers.\n")
	if o.Listen == "" {
		o.Listen = "127.0.0.1:7070"
	}
	fmt.Fprintf(&b, "listen: %s\n", o.Listen)
	if o.State != "" {
		fmt.Fprintf(&b, "state: %s\n", strconv.Quote(o.State))
	}
	b.WriteString("token: dbpilot-sim\n")
	b.WriteString("credentials: {user: dbpilot, password: dbpilot-sim}\n")
	b.WriteString("replication: {user: repl, password: dbpilot-sim}\n")
	b.WriteString("clusters:\n")
	for _, c := range f.clusters {
		fmt.Fprintf(&b, "  - {name: %s, seeds: ['%s'], auto_failover: %t}\n", c.Name, c.Members[0].Key(), o.AutoFailover)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
