//go:build pprof

package main

// Built only with -tags pprof (bench/scale.sh SCALE_PROFILE=1): when
// DBPILOT_PPROF is set to an address, serve the net/http/pprof handlers on
// it, to profile `dbpilot serve` under load. Release builds have none of it.

import (
	"log/slog"
	"net/http"
	_ "net/http/pprof" // registers /debug/pprof/ on http.DefaultServeMux
	"os"
)

func init() {
	addr := os.Getenv("DBPILOT_PPROF")
	if addr == "" {
		return
	}
	go func() {
		srv := &http.Server{Addr: addr, Handler: http.DefaultServeMux}
		if err := srv.ListenAndServe(); err != nil {
			slog.Warn("pprof server", "addr", addr, "err", err)
		}
	}()
}
