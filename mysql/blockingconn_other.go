//go:build !linux

package mysql

import (
	"context"
	"net"
)

// BlockingIOSupported reports whether Options.BlockingIO is honoured on
// this platform: only on Linux; elsewhere it is ignored.
const BlockingIOSupported = false

// DialBlocking returns dial (or a net.Dialer's) unchanged.
func DialBlocking(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if dial != nil {
		return dial
	}
	return (&net.Dialer{}).DialContext
}
