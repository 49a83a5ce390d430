package daemon

import "syscall"

// hookProcAttr puts a hook in its own process group, and has the kernel kill
// its shell when serve dies.
func hookProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
