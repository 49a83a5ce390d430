//go:build linux || darwin || freebsd

package metrics

import "syscall"

// freeSpace returns the bytes of the file system of dir available to
// unprivileged users.
func freeSpace(dir string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return uint64(st.Bavail) * uint64(st.Bsize), nil
}
