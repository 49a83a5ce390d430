//go:build !linux

package backup

func startWriteback(fileWriter) {}
