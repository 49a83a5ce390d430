package binlog

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// TornError reports a file that ends inside an event: the bytes from Offset
// on are not a complete event.
type TornError struct {
	Offset int64
}

func (e *TornError) Error() string {
	return fmt.Sprintf("file ends inside an event at offset %d", e.Offset)
}

// OpenFile opens an archive file for reading its binary log bytes: a .zst
// file is decompressed, any other (NAME.partial) read as it is.
func OpenFile(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if !strings.HasSuffix(path, ZstSuffix) {
		return f, nil
	}
	zr, err := zstd.NewReader(f, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(64<<20))
	if err != nil {
		f.Close()
		return nil, err
	}
	return &zstReadCloser{zr: zr, f: f}, nil
}

type zstReadCloser struct {
	zr *zstd.Decoder
	f  *os.File
}

func (z *zstReadCloser) Read(p []byte) (int, error) { return z.zr.Read(p) }
func (z *zstReadCloser) Close() error               { z.zr.Close(); return z.f.Close() }

// ReadEvents calls fn with every event of the binary log in r, in order,
// with the offset at which it starts (the magic is at offset 0, the first
// event at 4). The slice passed to fn is valid only during the call. It
// returns a *TornError when r ends inside an event, and fn's first error.
func ReadEvents(r io.Reader, fn func(off int64, e Event) error) error {
	br := bufio.NewReaderSize(r, 256<<10)
	magic := make([]byte, 4)
	if n, err := io.ReadFull(br, magic); err != nil {
		if n == 0 && errors.Is(err, io.EOF) {
			return &TornError{Offset: 0}
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return &TornError{Offset: 0}
		}
		return err
	}
	if !bytes.Equal(magic, Magic) {
		return fmt.Errorf("not a binary log: starts with %x", magic)
	}
	off := int64(4)
	buf := make([]byte, 64<<10)
	for {
		hdr := buf[:headerLen]
		n, err := io.ReadFull(br, hdr)
		if err != nil {
			if n == 0 && errors.Is(err, io.EOF) {
				return nil
			}
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return &TornError{Offset: off}
			}
			return err
		}
		size := int(binary.LittleEndian.Uint32(hdr[9:]))
		if size < headerLen || size > 1<<30+headerLen {
			return fmt.Errorf("event at offset %d: impossible size %d", off, size)
		}
		if size > len(buf) {
			// Grow with what arrives, not by the declared size: a damaged
			// size field must not allocate a gigabyte for a short file.
			var big bytes.Buffer
			big.Write(hdr)
			n, err := io.CopyN(&big, br, int64(size-headerLen))
			if err != nil {
				if n < int64(size-headerLen) && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) {
					return &TornError{Offset: off}
				}
				return err
			}
			buf = big.Bytes()
		} else if _, err := io.ReadFull(br, buf[headerLen:size]); err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
				return &TornError{Offset: off}
			}
			return err
		}
		e, err := parseEvent(buf[:size])
		if err != nil {
			return fmt.Errorf("event at offset %d: %v", off, err)
		}
		if err := fn(off, e); err != nil {
			return err
		}
		off += int64(size)
	}
}

// fileScan is what reading one archive file tells.
type fileScan struct {
	size       int64     // bytes of complete events, magic included
	sha256     string    // of the complete bytes (a .zst: decompressed)
	boundary   int64     // offset after the last event outside a transaction
	rotated    bool      // the last event is the server's Rotate: the file is finished
	lastLogPos uint32    // server position after the last event
	bStats     fileStats // stats at the boundary
	bLogPos    uint32    // server position at the boundary
	bFmt       format    // the file's format (known once the boundary passed the FDE)
	inTxn      bool      // ends inside a transaction
	end        position
	stats      fileStats
	gaps       []Gap
	flavor     string
	server     string   // server version from the format description
	fdeServer  uint32   // server id in the format description's header: the server that wrote the file
	crcErrs    []string // events whose checksum does not match
	err        error    // a structural problem: torn tail, bad magic, bad event
}

// scanFile reads the archive file at path. start is the position before
// the file; when nil it is taken from the file's Gtid_list events (the
// last one before the first transaction), as for the first file of an
// archive. flavor is the archive's ("" guesses from the events).
func scanFile(path string, start *position, flavor string) (*fileScan, error) {
	rc, err := OpenFile(path)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	h := sha256.New()
	fs, err := scanReader(io.TeeReader(rc, h), start, flavor)
	if err != nil {
		return nil, err
	}
	if fs.err == nil {
		fs.sha256 = hex.EncodeToString(h.Sum(nil))
	} else {
		fs.sha256 = ""
	}
	return fs, nil
}

func scanReader(r io.Reader, start *position, flavor string) (*fileScan, error) {
	fs := &fileScan{flavor: flavor, boundary: 4}
	if flavor == "" {
		flavor = FlavorMariaDB
	}
	pos := newPosition(flavor)
	if start != nil {
		pos = start.clone()
	}
	t := newTracker(pos)
	known := start != nil
	err := ReadEvents(r, func(off int64, e Event) error {
		if e.Type == typeFormatDesc {
			if fs.fdeServer == 0 {
				fs.fdeServer = e.ServerID
			}
			if f, err := parseFormat(e); err == nil {
				fs.server = f.server
				if flavor == "" || fs.flavor == "" {
					if strings.Contains(strings.ToLower(f.server), "mariadb") {
						fs.flavor = FlavorMariaDB
					} else {
						fs.flavor = FlavorMySQL
						if !known {
							t.pos = newPosition(FlavorMySQL)
							t.stats.start = t.pos.clone()
						}
					}
				}
			}
		}
		if t.haveFmt {
			if err := t.fmt.checkCRC(e); err != nil {
				fs.crcErrs = append(fs.crcErrs, fmt.Sprintf("offset %d: %v", off, err))
			}
		}
		if !known && t.stats.transactions == 0 && !t.inTxn && t.haveFmt {
			switch e.Type {
			case typeMariaGTIDList:
				if l, err := decodeMariaGTIDList(t.fmt.body(e)); err == nil {
					p := newPosition(FlavorMariaDB)
					for _, g := range l {
						if h, ok := p.maria[g.domain]; !ok || g.seq > h.Seq {
							p.maria[g.domain] = mariaFromList(g.domain, g.server, g.seq)
						}
					}
					t.pos = p
					t.stats.start = p.clone()
				}
			}
		}
		if _, err := t.feed(e); err != nil {
			return fmt.Errorf("event at offset %d: %w", off, err)
		}
		end := off + int64(len(e.Raw))
		fs.size = end
		fs.rotated = e.Type == typeRotate && !e.Artificial()
		if e.LogPos != 0 && !e.Artificial() {
			fs.lastLogPos = e.LogPos
		}
		if !t.inTxn {
			fs.boundary = end
			fs.bStats = t.stats
			fs.bLogPos = fs.lastLogPos
			fs.bFmt = t.fmt
		}
		return nil
	})
	if err != nil {
		var torn *TornError
		if !errors.As(err, &torn) && !strings.HasPrefix(err.Error(), "event at offset") && !strings.HasPrefix(err.Error(), "not a binary log") {
			return nil, err
		}
		fs.err = err
	}
	if fs.size == 0 && fs.err == nil {
		fs.size = 4
	}
	fs.inTxn = t.inTxn
	fs.end = t.pos
	fs.stats = t.stats
	fs.gaps = t.gaps
	if fs.flavor == "" {
		fs.flavor = t.pos.flavor
	}
	return fs, nil
}

// FileInfo describes one file of an archive for ls: a finished file's
// index entry, or the file being written (Partial), read from its bytes.
type FileInfo struct {
	IndexEntry
	Partial bool `json:"partial,omitempty"`
	// InTransaction: the partial file ends inside a transaction (the next
	// stream cuts it back to Size - TrailingBytes).
	TrailingBytes int64 `json:"trailing_bytes,omitempty"`
}

// List returns the archive's finished files from its index, then the file
// being written, if any (not a partial file left beside its indexed
// NAME.zst by a stream stopped while finishing it).
func List(dir string) ([]FileInfo, error) {
	idx, err := ReadIndex(dir)
	if err != nil {
		return nil, err
	}
	var out []FileInfo
	for _, e := range idx {
		out = append(out, FileInfo{IndexEntry: e})
	}
	partials, err := partialFiles(dir)
	if err != nil {
		return nil, err
	}
	partials, _ = withoutFinished(partials, idx)
	var prev *position
	flavor := ""
	if len(idx) > 0 {
		last := idx[len(idx)-1]
		flavor = last.Flavor
		p, err := parsePosition(last.Flavor, last.GTIDEnd)
		if err == nil {
			prev = &p
		}
	}
	for _, name := range partials {
		fi, err := partialInfo(dir, name, prev, flavor)
		if err != nil {
			return nil, err
		}
		out = append(out, fi)
	}
	return out, nil
}

func partialInfo(dir, name string, prev *position, flavor string) (FileInfo, error) {
	path := filepath.Join(dir, name)
	fs, err := scanFile(path, prev, flavor)
	if err != nil {
		return FileInfo{}, err
	}
	st, _ := os.Stat(path)
	var total int64
	if st != nil {
		total = st.Size()
	}
	first, last := fs.stats.times()
	fi := FileInfo{Partial: true, TrailingBytes: total - fs.boundary}
	fi.Name = serverName(strings.TrimSuffix(name, PartialSuffix))
	fi.File = name
	fi.ServerID = fs.fdeServer
	fi.Size = total
	fi.GTIDStart = fs.stats.start.String()
	fi.GTIDEnd = fs.end.String()
	fi.FirstGTID, fi.LastGTID = fs.stats.firstGTID, fs.stats.lastGTID
	fi.FirstTime, fi.LastTime = first, last
	fi.Transactions = fs.stats.transactions
	fi.Events = fs.stats.events
	fi.Flavor = fs.flavor
	return fi, nil
}

// partialFiles lists the NAME.partial files of dir, sorted.
func partialFiles(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), PartialSuffix) && e.Type().IsRegular() {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	return out, nil
}

// withoutFinished splits the partial files into those being written and
// those already finished and indexed (NAME.zst in idx): a stream stopped
// between recording a finished file in the index and removing its partial
// file leaves one, which the next stream removes. Only the first are the
// archive's.
func withoutFinished(partials []string, idx []IndexEntry) (live, finished []string) {
	for _, p := range partials {
		zst := strings.TrimSuffix(p, PartialSuffix) + ZstSuffix
		if slices.ContainsFunc(idx, func(e IndexEntry) bool { return e.File == zst }) {
			finished = append(finished, p)
		} else {
			live = append(live, p)
		}
	}
	return live, finished
}

// ArchiveFile is one file of an archive, in the archive's order.
type ArchiveFile struct {
	Name    string      // the server's file name (NAME@SERVERID is NAME)
	Path    string      // the archive's file: DIR/FILE.zst or DIR/FILE.partial
	Partial bool        // the file being written: it may end inside a transaction
	Index   *IndexEntry // a finished file's index entry; nil for a partial one
}

// Files returns the archive's files in order without reading them: the
// finished files in index order (ReadIndex: those pruned by retention are
// left out), then the file being written, if any. A listed file may be
// missing from the directory; readers check. A NAME.partial left beside
// its indexed NAME.zst (a crash between the two) is not listed.
func Files(dir string) ([]ArchiveFile, error) {
	var all []IndexEntry
	data, err := os.ReadFile(filepath.Join(dir, IndexName))
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	if all, err = parseIndex(data); err != nil {
		return nil, err
	}
	indexed := map[string]bool{}
	for i := range all {
		if all[i].File == "" {
			all[i].File = all[i].Name + ZstSuffix
		}
		indexed[all[i].File] = true // pruned ones too
	}
	idx, err := afterPruned(dir, all)
	if err != nil {
		return nil, err
	}
	partials, err := partialFiles(dir)
	if err != nil {
		return nil, err
	}
	out := make([]ArchiveFile, 0, len(idx)+len(partials))
	for i := range idx {
		e := &idx[i]
		out = append(out, ArchiveFile{Name: e.Name, Path: filepath.Join(dir, e.File), Index: e})
	}
	for _, p := range partials {
		file := strings.TrimSuffix(p, PartialSuffix)
		if indexed[file+ZstSuffix] {
			continue
		}
		out = append(out, ArchiveFile{Name: serverName(file), Path: filepath.Join(dir, p), Partial: true})
	}
	return out, nil
}
