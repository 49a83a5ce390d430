//go:build !(linux || darwin || freebsd)

package metrics

import "errors"

// freeSpace cannot tell here; the free-space check is skipped.
func freeSpace(string) (uint64, error) {
	return 0, errors.New("free space unknown on this system")
}
