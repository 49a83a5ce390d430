package binlog

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dbpilot/dbpilot"
	"github.com/klauspost/compress/zstd"
)

// writer is an archive directory opened for writing: it holds the lock,
// the file being written (NAME.partial) and the position after the last
// complete transaction. Events go in through add, in the order the server
// sent them.
type writer struct {
	dir      string
	lock     *os.File
	flavor   string
	source   string
	serverID uint32
	index    []IndexEntry
	hook     func(path string, w io.Writer) io.Writer // tests: inject write faults
	stopAt   string                                   // tests: finish stops at this step, as a crash there would (see step)

	syncCommits bool // fsync the partial file at every commit (semi-sync)

	// The partial file; f is nil between a Rotate and the next file.
	f         *os.File
	bw        *bufio.Writer
	name      string // server file name
	file      string // archive file name (without suffix): name, or name@SERVERID when another source used name
	fileSrvID uint32 // server id of the source that wrote the partial file (its Format_description)
	pending   string // name of the next file (from a Rotate)
	size      int64
	boundary  int64 // offset after the last complete transaction
	lastPos   uint32
	fresh     bool   // the file was started on this connection
	skipUntil string // ignore events until the server reaches this file
	t         *tracker
	broken    error // a failed write: nothing more is written

	// Counters for progress.
	bytes, events, txns int64
	finished            int
	onFinish            func(IndexEntry)
}

// openWriter locks dir (creating it), reads its index and recovers its
// partial file: a finished one (ending with the server's Rotate) is
// compressed and indexed, an unfinished one cut back to its last complete
// transaction. from is the start position of a new, empty archive; source
// (host:port) and serverID name the server the stream reads from.
func openWriter(dir, flavor string, from position, source string, serverID uint32) (*writer, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, dbpilot.WrapError(dbpilot.EINVALID, err, "binlog: create archive directory %s", dir)
	}
	lf, err := os.OpenFile(filepath.Join(dir, LockName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, dbpilot.WrapError(dbpilot.EINVALID, err, "binlog: open lock of archive %s", dir)
	}
	if err := flock(lf); err != nil {
		holder, _ := os.ReadFile(lf.Name())
		lf.Close()
		if errors.Is(err, errLocked) {
			who := strings.TrimSpace(string(holder))
			if who != "" {
				who = " (pid " + who + ")"
			}
			return nil, dbpilot.Errorf(dbpilot.ECONFLICT, "binlog: archive %s is in use by another stream%s; one writer per directory", dir, who)
		}
		return nil, dbpilot.WrapError(dbpilot.EINTERNAL, err, "binlog: lock archive %s", dir)
	}
	_ = lf.Truncate(0)
	_, _ = lf.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	w := &writer{dir: dir, lock: lf, flavor: flavor, source: source, serverID: serverID}
	if err := w.recover(from); err != nil {
		w.close()
		return nil, err
	}
	return w, nil
}

// recover reads the archive's state.
func (w *writer) recover(from position) error {
	idx, err := ReadIndex(w.dir)
	if err != nil {
		return dbpilot.WrapError(dbpilot.EINVALID, err, "binlog: read index of archive %s", w.dir)
	}
	w.index = idx
	if ents, err := os.ReadDir(w.dir); err == nil {
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".tmp") {
				os.Remove(filepath.Join(w.dir, e.Name()))
			}
		}
	}
	pos := from
	if n := len(idx); n > 0 {
		last := idx[n-1]
		if last.Flavor != "" && last.Flavor != w.flavor {
			return dbpilot.Errorf(dbpilot.EINVALID, "binlog: archive %s holds %s binary logs, the server is %s", w.dir, last.Flavor, w.flavor)
		}
		p, err := parsePosition(w.flavor, last.GTIDEnd)
		if err != nil {
			return dbpilot.WrapError(dbpilot.EINVALID, err, "binlog: index of %s: gtid_end of %s", w.dir, last.Name)
		}
		pos = p
	}
	partials, err := partialFiles(w.dir)
	if err != nil {
		return dbpilot.WrapError(dbpilot.EINVALID, err, "binlog: read archive %s", w.dir)
	}
	if len(partials) > 1 {
		return dbpilot.Errorf(dbpilot.EINVALID, "binlog: archive %s has %d files being written (%s); keep one", w.dir, len(partials), strings.Join(partials, ", "))
	}
	w.t = newTracker(pos)
	if len(partials) == 0 {
		return nil
	}
	file := strings.TrimSuffix(partials[0], PartialSuffix)
	name := serverName(file)
	path := filepath.Join(w.dir, partials[0])
	for _, e := range idx {
		if e.File == file+ZstSuffix { // crashed after indexing, before removing it
			return os.Remove(path)
		}
	}
	var start *position
	if len(idx) > 0 {
		start = &pos
	}
	fs, err := scanFile(path, start, w.flavor)
	if err != nil {
		return dbpilot.WrapError(dbpilot.EINVALID, err, "binlog: read %s", path)
	}
	var torn *TornError
	if fs.err != nil && !errors.As(fs.err, &torn) {
		return dbpilot.Errorf(dbpilot.EINVALID, "binlog: %s is damaged (%v); move it away to stream again from %s", path, fs.err, fs.stats.start)
	}
	if fs.flavor != "" && fs.flavor != w.flavor {
		return dbpilot.Errorf(dbpilot.EINVALID, "binlog: archive %s holds %s binary logs, the server is %s", w.dir, fs.flavor, w.flavor)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0o600)
	if err != nil {
		return dbpilot.WrapError(dbpilot.EINVALID, err, "binlog: open %s", path)
	}
	if fs.boundary < 4+headerLen { // not even a format description: start it again
		f.Close()
		return os.Remove(path)
	}
	if err := f.Truncate(fs.boundary); err != nil {
		f.Close()
		return w.ioError(err, path)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return w.ioError(err, path)
	}
	if _, err := f.Seek(fs.boundary, io.SeekStart); err != nil {
		f.Close()
		return w.ioError(err, path)
	}
	t := newTracker(fs.bStats.start)
	t.fmt, t.haveFmt = fs.bFmt, true
	t.stats = fs.bStats
	// The position at the boundary: replay is needless, the scan's end is
	// at the boundary unless it ended inside a transaction.
	if fs.inTxn || fs.size != fs.boundary {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			f.Close()
			return w.ioError(err, path)
		}
		fs2, err := scanReader(io.LimitReader(f, fs.boundary), start, w.flavor)
		if err == nil && fs2.err != nil {
			err = fs2.err
		}
		if err != nil {
			f.Close()
			return dbpilot.WrapError(dbpilot.EINTERNAL, err, "binlog: re-read %s up to offset %d", path, fs.boundary)
		}
		fs = fs2
		if _, err := f.Seek(fs.boundary, io.SeekStart); err != nil {
			f.Close()
			return w.ioError(err, path)
		}
	}
	t.pos = fs.end
	t.gaps = nil
	w.t = t
	w.f, w.name, w.file, w.fileSrvID = f, name, file, fs.fdeServer
	w.bw = bufio.NewWriterSize(w.wrap(path, f), 256<<10)
	w.size, w.boundary, w.lastPos = fs.boundary, fs.boundary, fs.bLogPos
	if fs.rotated {
		return w.finish()
	}
	return nil
}

func (w *writer) wrap(path string, f io.Writer) io.Writer {
	if w.hook != nil {
		return w.hook(path, f)
	}
	return f
}

// position is the archive's position: after its last complete transaction.
func (w *writer) position() position { return w.t.pos }

// ioError classifies a failed write.
func (w *writer) ioError(err error, path string) error {
	if isNoSpace(err) {
		return dbpilot.WrapError(dbpilot.EUNAVAIL, err, "binlog: archive %s is out of space writing %s; streaming stopped, start it again when there is room (it resumes after the last complete transaction)", w.dir, filepath.Base(path))
	}
	return dbpilot.WrapError(dbpilot.EUNAVAIL, err, "binlog: write %s", path)
}

// startConnection is called when a new connection to the server starts:
// events already in the partial file will be sent again and are skipped.
func (w *writer) startConnection() {
	w.fresh = false
	w.skipUntil = ""
}

// add writes one event the server sent.
func (w *writer) add(e Event) (result, error) {
	var r result
	if w.broken != nil {
		return r, w.broken
	}
	if e.Type == typeHeartbeat {
		return r, nil
	}
	if e.Type == typeRotate && e.Artificial() {
		return r, w.serverFile(rotateTarget(e))
	}
	if w.skipUntil != "" {
		if e.Type == typeMariaGTID || e.Type == typeMySQLGTID || e.Type == typeMySQLAnonGTID {
			return r, dbpilot.Errorf(dbpilot.EINTERNAL, "binlog: server sent a transaction from a file before %s, which the archive holds already", w.skipUntil)
		}
		return r, nil
	}
	if w.f == nil {
		if w.pending == "" {
			return r, dbpilot.Errorf(dbpilot.EINTERNAL, "binlog: %s event before the server named its file", typeName(e.Type))
		}
		if err := w.create(w.pending); err != nil {
			return r, err
		}
	}
	if !w.fresh {
		// Resumed into a partial file: the server sends the file's
		// header events again, and events we hold already.
		if e.Type == typeFormatDesc || e.Artificial() {
			return r, nil
		}
		if e.LogPos != 0 && e.LogPos <= w.lastPos && !w.t.inTxn {
			return r, nil
		}
		if e.Type != typeMariaGTIDList && e.Type != typeMariaCheckpoint && e.Type != typeMySQLPrevGTIDs {
			w.fresh = true // from here on, new events
		}
	}
	if err := w.write(e.Raw); err != nil {
		return r, err
	}
	res, err := w.t.feed(e)
	if err != nil {
		w.broken = dbpilot.WrapError(dbpilot.EINTERNAL, err, "binlog: read event from %s", w.source)
		return r, w.broken
	}
	w.events++
	if e.LogPos != 0 && !e.Artificial() {
		w.lastPos = e.LogPos
	}
	if !w.t.inTxn {
		w.boundary = w.size
	}
	if res.committed {
		w.txns++
		if err := w.flush(w.syncCommits); err != nil {
			return res, err
		}
	}
	if e.Type == typeRotate && !e.Artificial() {
		next := rotateTarget(e)
		if err := w.finish(); err != nil {
			return res, err
		}
		w.pending = next
	}
	return res, nil
}

// serverFile handles the server naming the file it sends from (the
// artificial Rotate at the start of a connection and after each rotation).
func (w *writer) serverFile(name string) error {
	if name == "" {
		return nil
	}
	if w.f == nil {
		w.pending = name
		return nil
	}
	switch c := compareNames(name, w.name); {
	case c == 0:
		w.skipUntil = ""
	case c > 0: // the server moved on: the partial file has all its transactions
		if w.t.inTxn {
			return dbpilot.Errorf(dbpilot.EINTERNAL, "binlog: server switched to %s inside a transaction of %s", name, w.name)
		}
		if err := w.finish(); err != nil {
			return err
		}
		w.pending = name
	default:
		w.skipUntil = w.name
	}
	return nil
}

// serverName is the server's file name of an archive file name:
// NAME@SERVERID (a name another source used first) is NAME.
func serverName(file string) string {
	if i := strings.LastIndexByte(file, '@'); i > 0 {
		if _, err := strconv.ParseUint(file[i+1:], 10, 32); err == nil {
			return file[:i]
		}
	}
	return file
}

// newSource finishes the partial file when the server streamed from now is
// not the one that wrote it (a failover): the file is at a transaction
// boundary once recovered, and the new source's files follow it.
func (w *writer) newSource(serverID uint32) error {
	if w.f == nil || w.fileSrvID == 0 || w.fileSrvID == serverID {
		return nil
	}
	return w.finish()
}

// compareNames orders binary log names by their numeric extension.
func compareNames(a, b string) int {
	na, ea := splitName(a)
	nb, eb := splitName(b)
	if na == nb && ea >= 0 && eb >= 0 {
		switch {
		case ea < eb:
			return -1
		case ea > eb:
			return 1
		}
		return 0
	}
	return strings.Compare(a, b)
}

func splitName(s string) (string, int64) {
	i := strings.LastIndexByte(s, '.')
	if i < 0 {
		return s, -1
	}
	n, err := strconv.ParseInt(s[i+1:], 10, 64)
	if err != nil {
		return s, -1
	}
	return s[:i], n
}

func (w *writer) create(name string) error {
	if name != filepath.Base(name) || name == "." || name == ".." {
		return dbpilot.Errorf(dbpilot.EINVALID, "binlog: server file name %q cannot be a file name", name)
	}
	// After a failover the new source's files may bear names the archive
	// holds already: the archive's file is then NAME@SERVERID.
	file := name
	if _, err := os.Stat(filepath.Join(w.dir, file+ZstSuffix)); err == nil {
		file = name + "@" + strconv.FormatUint(uint64(w.serverID), 10)
	}
	path := filepath.Join(w.dir, file+PartialSuffix)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return w.ioError(err, path)
	}
	w.f, w.name, w.file, w.fileSrvID, w.pending = f, name, file, w.serverID, ""
	w.bw = bufio.NewWriterSize(w.wrap(path, f), 256<<10)
	w.size, w.boundary, w.lastPos, w.fresh = 0, 0, 0, true
	w.t.newFile()
	if err := w.write(Magic); err != nil {
		return err
	}
	w.boundary = w.size
	return syncDir(w.dir)
}

func (w *writer) write(b []byte) error {
	if _, err := w.bw.Write(b); err != nil {
		w.broken = w.ioError(err, w.name+PartialSuffix)
		return w.broken
	}
	w.size += int64(len(b))
	w.bytes += int64(len(b))
	return nil
}

// flush writes the buffer to the file and, with sync, to the disk.
func (w *writer) flush(sync bool) error {
	if w.f == nil || w.broken != nil {
		return w.broken
	}
	if err := w.bw.Flush(); err != nil {
		w.broken = w.ioError(err, w.name+PartialSuffix)
		return w.broken
	}
	if sync {
		if err := w.f.Sync(); err != nil {
			w.broken = w.ioError(err, w.name+PartialSuffix)
			return w.broken
		}
	}
	return nil
}

// finish closes the partial file, compresses it to NAME.zst, records it
// in the index and removes the plain file.
func (w *writer) finish() error {
	if err := w.flush(true); err != nil {
		return err
	}
	if err := w.step("synced"); err != nil {
		return err
	}
	plain := filepath.Join(w.dir, w.file+PartialSuffix)
	zname := w.file + ZstSuffix
	zpath := filepath.Join(w.dir, zname)
	tmp := zpath + ".tmp"
	if _, err := w.f.Seek(0, io.SeekStart); err != nil {
		return w.fail(w.ioError(err, plain))
	}
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return w.fail(w.ioError(err, tmp))
	}
	zsum := sha256.New()
	// The fastest level: the stream waits while a finished file is
	// compressed (a 1 GB binary log: about 3 s here, 6 s at the default
	// level), and on row events it compresses as well (3.2:1).
	enc, err := zstd.NewWriter(io.MultiWriter(w.wrap(tmp, out), zsum), zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(4<<20),
		zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		out.Close()
		return w.fail(dbpilot.WrapError(dbpilot.EINTERNAL, err, "binlog: zstd"))
	}
	sum := sha256.New()
	n, err := io.Copy(io.MultiWriter(enc, sum), w.f)
	if err == nil {
		err = enc.Close()
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return w.fail(w.ioError(err, tmp))
	}
	if err := w.step("compressed"); err != nil {
		return err
	}
	if err := os.Rename(tmp, zpath); err != nil {
		os.Remove(tmp)
		return w.fail(w.ioError(err, zpath))
	}
	if err := syncDir(w.dir); err != nil {
		return w.fail(w.ioError(err, w.dir))
	}
	if err := w.step("renamed"); err != nil {
		return err
	}
	first, last := w.t.stats.times()
	e := IndexEntry{
		Name: w.name, File: zname, Size: n,
		SHA256: hex.EncodeToString(sum.Sum(nil)), ZstSHA256: hex.EncodeToString(zsum.Sum(nil)),
		GTIDStart: w.t.stats.start.String(), GTIDEnd: w.t.pos.String(),
		FirstGTID: w.t.stats.firstGTID, LastGTID: w.t.stats.lastGTID,
		FirstTime: first, LastTime: last,
		Transactions: w.t.stats.transactions, Events: w.t.stats.events,
		Source: w.sourceOf(w.fileSrvID), ServerID: w.fileSrvID, Flavor: w.flavor,
	}
	if err := appendIndex(w.dir, e); err != nil {
		return w.fail(w.ioError(err, IndexName))
	}
	w.index = append(w.index, e)
	if err := w.step("indexed"); err != nil {
		return err
	}
	w.f.Close()
	w.f, w.bw = nil, nil
	if err := os.Remove(plain); err != nil {
		return w.fail(w.ioError(err, plain))
	}
	if err := syncDir(w.dir); err != nil {
		return w.fail(w.ioError(err, w.dir))
	}
	w.finished++
	w.t.newFile()
	if w.onFinish != nil {
		w.onFinish(e)
	}
	return nil
}

// step is a point in finish where tests stop it as a crash would: with
// stopAt set to its name, finish stops there, the files as they are.
func (w *writer) step(name string) error {
	if w.stopAt != name {
		return nil
	}
	return w.fail(dbpilot.Errorf(dbpilot.EINTERNAL, "binlog: stopped at %q finishing %s (test)", name, w.file))
}

// sourceOf names the server (host:port) a file whose Format_description
// came from serverID was streamed from: the stream's own server, or, for a
// file of an earlier source (finished when a stream on a new primary
// starts), what the index says of that server ("" when it says nothing).
func (w *writer) sourceOf(serverID uint32) string {
	if serverID == 0 || serverID == w.serverID {
		return w.source
	}
	for i := len(w.index) - 1; i >= 0; i-- {
		if w.index[i].ServerID == serverID {
			return w.index[i].Source
		}
	}
	return ""
}

func (w *writer) fail(err error) error {
	w.broken = err
	return err
}

// close flushes and syncs the partial file and releases the lock.
func (w *writer) close() error {
	var err error
	if w.f != nil {
		if w.broken == nil {
			err = w.flush(true)
		}
		w.f.Close()
		w.f = nil
	}
	if w.lock != nil {
		w.lock.Close() // releases the flock
		w.lock = nil
	}
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
