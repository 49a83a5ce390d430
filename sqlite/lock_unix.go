//go:build unix

package sqlite

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/dbpilot/dbpilot"
)

// lockFile takes an exclusive, non-blocking flock on name and writes this
// process's id into it, so that a second serve can say who holds it. The lock
// lasts until unlockFile (or the process's end: the kernel releases it).
//
// The lock file is never removed: removing it would let two processes lock two
// different files of the same name.
func lockFile(name, state string) (*os.File, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, dbpilot.WrapError(dbpilot.EINVALID, err, "sqlite: cannot open the state lock file")
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			holder := "pid unknown"
			if b, rerr := io.ReadAll(io.LimitReader(f, 64)); rerr == nil {
				if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil && pid > 0 {
					holder = fmt.Sprintf("pid %d", pid)
				}
			}
			return nil, dbpilot.Errorf(dbpilot.ECONFLICT,
				"state file %s is in use by another dbpilot serve (%s); stop it or use another state file", state, holder)
		}
		return nil, dbpilot.WrapError(dbpilot.EINTERNAL, err, "sqlite: cannot lock %s", name)
	}
	if err := f.Truncate(0); err == nil {
		// The pid only names the holder in the error above; failing to write
		// it does not weaken the lock.
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

// unlockFile clears the pid and releases the lock.
func unlockFile(f *os.File) {
	_ = f.Truncate(0)
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	_ = f.Close()
}
