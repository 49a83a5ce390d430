package backup

import (
	"errors"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Dump files are written with O_DIRECT where the file system allows it:
// the data goes from the worker's aligned buffer to the device without a
// copy into the page cache and without the kernel's writeback later. On the
// machines measured, buffered writes cost about three times the CPU of the
// direct ones, and a dump is CPU-bound when the server shares the host.

const (
	directAlign = 4096
	directBuf   = 1 << 20
)

// directFile writes through an aligned buffer with O_DIRECT; the last,
// partial block is written after O_DIRECT is switched off.
type directFile struct {
	f      *os.File
	buf    []byte
	n      int
	direct bool
}

func alignedBuffer(size int) []byte {
	b := make([]byte, size+directAlign)
	off := int(uintptr(unsafe.Pointer(&b[0])) & (directAlign - 1))
	if off != 0 {
		off = directAlign - off
	}
	return b[off : off+size : off+size]
}

// openFile creates a new dump file, direct when the file system allows it.
func openFile(path string) (fileWriter, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_DIRECT, 0o600)
	if errors.Is(err, unix.EINVAL) { // no O_DIRECT here (tmpfs, ...)
		return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	}
	if err != nil {
		return nil, err
	}
	return &directFile{f: f, buf: alignedBuffer(directBuf), direct: true}, nil
}

func (d *directFile) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		c := copy(d.buf[d.n:], p)
		d.n += c
		p = p[c:]
		written += c
		if d.n == len(d.buf) {
			if err := d.flushFull(); err != nil {
				return written, err
			}
		}
	}
	return written, nil
}

func (d *directFile) flushFull() error {
	if err := d.writeBlocks(d.buf[:d.n]); err != nil {
		return err
	}
	d.n = 0
	return nil
}

// writeBlocks writes whole blocks; a file system that accepted O_DIRECT at
// open but refuses the write (EINVAL) gets the file switched to buffered
// writes instead of failing the dump.
func (d *directFile) writeBlocks(p []byte) error {
	_, err := d.f.Write(p)
	if errors.Is(err, unix.EINVAL) && d.direct {
		if err := d.buffered(); err != nil {
			return err
		}
		_, err = d.f.Write(p)
	}
	return err
}

// buffered turns O_DIRECT off.
func (d *directFile) buffered() error {
	fl, err := unix.FcntlInt(d.f.Fd(), unix.F_GETFL, 0)
	if err != nil {
		return err
	}
	if _, err := unix.FcntlInt(d.f.Fd(), unix.F_SETFL, fl&^unix.O_DIRECT); err != nil {
		return err
	}
	d.direct = false
	return nil
}

// finish writes what is left: whole blocks directly, the rest buffered.
func (d *directFile) finish() error {
	whole := d.n &^ (directAlign - 1)
	if whole > 0 {
		if err := d.writeBlocks(d.buf[:whole]); err != nil {
			return err
		}
	}
	rest := d.buf[whole:d.n]
	d.n = 0
	if len(rest) == 0 {
		return nil
	}
	if d.direct {
		if err := d.buffered(); err != nil {
			return err
		}
	}
	_, err := d.f.Write(rest)
	return err
}

func (d *directFile) Sync() error {
	if err := d.finish(); err != nil {
		return err
	}
	return d.f.Sync()
}

func (d *directFile) Close() error {
	err := d.finish()
	if cerr := d.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// startWriteback asks the kernel to start writing a finished buffered file
// back to disk now (sync_file_range, SYNC_FILE_RANGE_WRITE, which does not
// wait), so that the fsync before the manifest finds little left to do.
func startWriteback(f fileWriter) {
	var osf *os.File
	switch x := f.(type) {
	case *os.File:
		osf = x
	case *directFile:
		if err := x.finish(); err != nil {
			return
		}
		osf = x.f
	default:
		return
	}
	_ = unix.SyncFileRange(int(osf.Fd()), 0, 0, unix.SYNC_FILE_RANGE_WRITE)
}
