//go:build !unix

package tui

// notifyResize has no SIGWINCH to watch here: the size is read on every
// refresh.
func notifyResize() (<-chan struct{}, func()) { return nil, func() {} }
