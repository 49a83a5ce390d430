//go:build !linux

package backup

import "os"

func openFile(path string) (fileWriter, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
}

func startWriteback(fileWriter) {}
