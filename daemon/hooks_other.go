//go:build !linux

package daemon

import "syscall"

// hookProcAttr puts a hook in its own process group.
func hookProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
