//go:build !unix

package sqlite

import (
	"os"

	"github.com/dbpilot/dbpilot"
)

// lockFile opens the lock file without locking it: on this platform nothing
// stops a second serve from using the same state file.
func lockFile(name, state string) (*os.File, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, dbpilot.WrapError(dbpilot.EINVALID, err, "sqlite: cannot open the state lock file")
	}
	return f, nil
}

func unlockFile(f *os.File) { _ = f.Close() }
