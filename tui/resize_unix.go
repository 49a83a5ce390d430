//go:build unix

package tui

import (
	"os"
	"os/signal"
	"syscall"
)

// notifyResize signals SIGWINCH (the terminal changed size) until stop.
func notifyResize() (<-chan struct{}, func()) {
	sig := make(chan os.Signal, 1)
	out := make(chan struct{}, 1)
	done := make(chan struct{})
	signal.Notify(sig, syscall.SIGWINCH)
	go func() {
		for {
			select {
			case <-sig:
				select {
				case out <- struct{}{}:
				default:
				}
			case <-done:
				return
			}
		}
	}()
	return out, func() {
		signal.Stop(sig)
		close(done)
	}
}
