package pitr

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/dbpilot/dbpilot"
	"github.com/klauspost/compress/zstd"
)

// IndexFile is the archive's list of finished files, one JSON object a line.
const IndexFile = "index.jsonl"

// IndexEntry is one line of index.jsonl, written by `dbpilot binlog stream`.
type IndexEntry struct {
	Name         string `json:"name"` // the server's file name, mariadb-bin.000007
	File         string `json:"file"` // the archive's file, mariadb-bin.000007.zst
	Size         int64  `json:"size"`
	SHA256       string `json:"sha256"` // of the uncompressed file
	ZstSHA256    string `json:"zst_sha256"`
	GTIDStart    string `json:"gtid_start"`
	GTIDEnd      string `json:"gtid_end"`
	FirstGTID    string `json:"first_gtid"`
	LastGTID     string `json:"last_gtid"`
	FirstTime    string `json:"first_time"`
	LastTime     string `json:"last_time"`
	Transactions int64  `json:"transactions"`
	Events       int64  `json:"events"`
	Source       string `json:"source"`
	ServerID     uint32 `json:"server_id"`
	Flavor       string `json:"flavor"`
}

// File is one binary log file of an archive, in order.
type File struct {
	Name    string // the server's name of the file
	Path    string // where it is
	Seq     int    // its numeric suffix
	Partial bool   // still being written: may end mid-transaction
	// Index is the file's index entry (nil for a plain directory).
	Index *IndexEntry
}

// Archive is a directory of binary log files: a `dbpilot binlog stream`
// archive (index.jsonl, NAME.zst, NAME.partial) or a plain copy of a
// server's own binary logs.
type Archive struct {
	Dir   string
	Files []File
}

var binlogName = regexp.MustCompile(`^(.+)\.([0-9]{6,})(\.zst|\.partial)?$`)

// OpenArchive lists the files of the archive in dir, in order. A hole in
// the file numbers is an error naming the missing file.
func OpenArchive(dir string) (*Archive, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, dbpilot.WrapError(dbpilot.EINVALID, err, "pitr: read binlog archive")
	}
	a := &Archive{Dir: dir}
	idx, err := readIndex(dir)
	if err != nil {
		return nil, err
	}
	byName := map[string]File{}
	prefix := ""
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		m := binlogName.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		if prefix != "" && m[1] != prefix {
			return nil, dbpilot.Errorf(dbpilot.EINVALID, "pitr: %s holds binary logs of two names (%s.*, %s.*); keep one server's files per directory", dir, prefix, m[1])
		}
		prefix = m[1]
		seq, _ := strconv.Atoi(m[2])
		name := m[1] + "." + m[2]
		f := File{Name: name, Path: filepath.Join(dir, e.Name()), Seq: seq, Partial: m[3] == ".partial"}
		if old, ok := byName[name]; ok {
			// NAME.zst wins over a leftover NAME.partial or plain NAME.
			if old.Partial || (m[3] != ".zst" && !strings.HasSuffix(old.Path, ".zst")) {
				byName[name] = f
			} else if m[3] == ".zst" {
				byName[name] = f
			}
			continue
		}
		byName[name] = f
	}
	for _, ie := range idx {
		ie := ie
		f, ok := byName[ie.Name]
		if !ok || f.Partial {
			return nil, dbpilot.Errorf(dbpilot.EINVALID, "pitr: archive %s: file %s is missing (%s lists it, GTIDs after %s up to %s)", dir, ie.File, IndexFile, orNone(ie.GTIDStart), orNone(ie.GTIDEnd))
		}
		f.Index = &ie
		byName[ie.Name] = f
	}
	for _, f := range byName {
		a.Files = append(a.Files, f)
	}
	slices.SortFunc(a.Files, func(x, y File) int { return x.Seq - y.Seq })
	if len(a.Files) == 0 {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "pitr: %s holds no binary log files", dir)
	}
	if idx == nil {
		// A copy of a server's own files: the last one may have been in
		// use when copied, so it may end inside a transaction.
		a.Files[len(a.Files)-1].Partial = true
	}
	for i := 1; i < len(a.Files); i++ {
		if a.Files[i-1].Partial {
			return nil, dbpilot.Errorf(dbpilot.EINVALID, "pitr: archive %s: %s is still partial but %s follows it", dir, filepath.Base(a.Files[i-1].Path), a.Files[i].Name)
		}
		if gap := a.Files[i].Seq - a.Files[i-1].Seq; gap != 1 {
			missing := fmt.Sprintf("%s.%0*d", prefix, len(a.Files[i].Name)-len(prefix)-1, a.Files[i-1].Seq+1)
			if gap > 2 {
				missing += fmt.Sprintf(" (and %d more)", gap-2)
			}
			return nil, &GapError{Dir: dir, File: missing, After: a.Files[i-1].Name, Before: a.Files[i].Name}
		}
	}
	return a, nil
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func readIndex(dir string) ([]IndexEntry, error) {
	f, err := os.Open(filepath.Join(dir, IndexFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, dbpilot.WrapError(dbpilot.EINVALID, err, "pitr: read archive index")
	}
	defer f.Close()
	var out []IndexEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var e IndexEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Name == "" {
			return nil, dbpilot.Errorf(dbpilot.EINVALID, "pitr: %s line %d is not an index entry", filepath.Join(dir, IndexFile), line)
		}
		if e.File == "" {
			e.File = e.Name + ".zst"
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, dbpilot.WrapError(dbpilot.EINVALID, err, "pitr: read archive index")
	}
	return out, nil
}

// GapError is a missing piece of the archive: a file, or GTIDs between two
// files.
type GapError struct {
	Dir           string
	File          string // the missing file, when known
	After, Before string // the files around the gap
	From, To      string // GTID positions around the gap, when known
}

func (e *GapError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "pitr: archive %s: ", e.Dir)
	if e.File != "" {
		fmt.Fprintf(&b, "file %s is missing (between %s and %s)", e.File, e.After, e.Before)
	} else {
		fmt.Fprintf(&b, "GTIDs are missing between %s and %s", e.After, e.Before)
	}
	if e.From != "" || e.To != "" {
		fmt.Fprintf(&b, ": GTID gap after %s up to %s", orNone(e.From), orNone(e.To))
	}
	b.WriteString("; nothing applied")
	return b.String()
}

// CorruptError is an archive file that cannot be read as it was written.
type CorruptError struct {
	File     string
	Reason   string
	From, To string // the GTID range the file holds, when known
}

func (e *CorruptError) Error() string {
	s := fmt.Sprintf("pitr: archive file %s is corrupt: %s", e.File, e.Reason)
	if e.From != "" || e.To != "" {
		s += fmt.Sprintf("; GTID gap after %s up to %s", orNone(e.From), orNone(e.To))
	}
	return s + "; nothing applied"
}

// fileReader reads one archive file's uncompressed bytes and hashes them.
type fileReader struct {
	f   *os.File
	zr  *zstd.Decoder
	r   *bufio.Reader
	sum hash.Hash
	n   int64
}

func openFile(f File) (*fileReader, error) {
	fh, err := os.Open(f.Path)
	if err != nil {
		return nil, dbpilot.WrapError(dbpilot.EINVALID, err, "pitr: open archive file")
	}
	fr := &fileReader{f: fh, sum: sha256.New()}
	var src io.Reader = fh
	if strings.HasSuffix(f.Path, ".zst") {
		zr, err := zstd.NewReader(bufio.NewReaderSize(fh, 256<<10), zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
		if err != nil {
			fh.Close()
			return nil, &CorruptError{File: filepath.Base(f.Path), Reason: err.Error()}
		}
		fr.zr = zr
		src = zr
	}
	fr.r = bufio.NewReaderSize(io.TeeReader(src, hashCounter{fr}), 256<<10)
	return fr, nil
}

type hashCounter struct{ fr *fileReader }

func (h hashCounter) Write(p []byte) (int, error) {
	h.fr.n += int64(len(p))
	return h.fr.sum.Write(p)
}

func (fr *fileReader) sha256() string { return hex.EncodeToString(fr.sum.Sum(nil)) }

func (fr *fileReader) Close() {
	if fr.zr != nil {
		fr.zr.Close()
	}
	fr.f.Close()
}

// eventReader splits a binary log stream into events.
type eventReader struct {
	r   *bufio.Reader
	buf []byte
	pos int64 // offset of the next event
}

// readMagic checks the file's first four bytes.
func (er *eventReader) readMagic() error {
	var m [4]byte
	if _, err := io.ReadFull(er.r, m[:]); err != nil {
		return fmt.Errorf("no binlog header: %w", err)
	}
	if string(m[:]) != binlogMagic {
		return fmt.Errorf("not a binary log (magic %x)", m)
	}
	er.pos = 4
	return nil
}

// next returns the next event; the slice is valid until the next call.
// io.EOF at an event boundary, io.ErrUnexpectedEOF inside an event.
func (er *eventReader) next() ([]byte, error) {
	if cap(er.buf) < headerLen {
		er.buf = make([]byte, 0, 64<<10)
	}
	b := er.buf[:headerLen]
	n, err := io.ReadFull(er.r, b)
	if err == io.EOF && n == 0 {
		return nil, io.EOF
	}
	if err != nil {
		return nil, io.ErrUnexpectedEOF
	}
	size := int(parseHeader(b).Size)
	if size < headerLen || size > 1<<30 {
		return nil, fmt.Errorf("event at %d has an impossible size %d", er.pos, size)
	}
	// Grow as the bytes arrive: a corrupt size fails at the end of the
	// data, not with a huge allocation.
	for len(b) < size {
		n := min(size-len(b), 1<<20)
		b = slices.Grow(b, n)
		if _, err := io.ReadFull(er.r, b[len(b):len(b)+n]); err != nil {
			return nil, io.ErrUnexpectedEOF
		}
		b = b[:len(b)+n]
	}
	er.buf = b
	er.pos += int64(size)
	return b, nil
}
