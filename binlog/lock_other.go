//go:build !unix

package binlog

import (
	"errors"
	"os"
)

var errLocked = errors.New("locked")

// flock is a no-op where flock(2) does not exist.
func flock(f *os.File) error { return nil }

func isNoSpace(err error) bool { return false }
