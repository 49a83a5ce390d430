//go:build pprof

package main

// Built only with -tags pprof (bench/scale.sh SCALE_PROFILE=1): when
// DBPILOT_PPROF is set to an address, serve the net/http/pprof handlers on
// it, to profile `dbpilot serve` under load; when DBPILOT_CPUPROFILE is set
// to a file, write the whole run's CPU profile there (for short commands
// such as dump). Release builds have none of it.

import (
	"log/slog"
	"net/http"
	_ "net/http/pprof" // registers /debug/pprof/ on http.DefaultServeMux
	"os"
	"runtime/pprof"
)

func init() {
	if path := os.Getenv("DBPILOT_CPUPROFILE"); path != "" {
		if f, err := os.Create(path); err != nil {
			slog.Warn("cpu profile", "path", path, "err", err)
		} else if err := pprof.StartCPUProfile(f); err != nil {
			slog.Warn("cpu profile", "path", path, "err", err)
		} else {
			atExit = func() { pprof.StopCPUProfile(); _ = f.Close() }
		}
	}
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
