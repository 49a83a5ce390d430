package backup

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback asks the kernel to start writing a finished file back to
// disk now (sync_file_range, SYNC_FILE_RANGE_WRITE, which does not wait),
// so that the fsync before the manifest finds little left to do.
func startWriteback(f fileWriter) {
	if osf, ok := f.(*os.File); ok {
		_ = unix.SyncFileRange(int(osf.Fd()), 0, 0, unix.SYNC_FILE_RANGE_WRITE)
	}
}
