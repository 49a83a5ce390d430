package binlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// File names in an archive directory.
const (
	IndexName     = "index.jsonl"
	PrunedName    = "PRUNED" // the oldest file kept by retention (prune.go)
	LockName      = "LOCK"
	PartialSuffix = ".partial"
	ZstSuffix     = ".zst"
)

// IndexEntry is one line of index.jsonl: a finished, compressed binary log
// file. The format is fixed (point-in-time restore reads it).
type IndexEntry struct {
	Name         string    `json:"name"`       // the server's file name, e.g. mariadb-bin.000012
	File         string    `json:"file"`       // the archive's file, NAME.zst
	Size         int64     `json:"size"`       // uncompressed bytes
	SHA256       string    `json:"sha256"`     // hex, of the uncompressed bytes
	ZstSHA256    string    `json:"zst_sha256"` // hex, of the .zst file
	GTIDStart    string    `json:"gtid_start"` // position before the first transaction (gtid_slave_pos form)
	GTIDEnd      string    `json:"gtid_end"`   // position after the last transaction
	FirstGTID    string    `json:"first_gtid"`
	LastGTID     string    `json:"last_gtid"`
	FirstTime    time.Time `json:"first_time"`
	LastTime     time.Time `json:"last_time"`
	Transactions int       `json:"transactions"`
	Events       int       `json:"events"`
	Source       string    `json:"source"`
	ServerID     uint32    `json:"server_id"`
	Flavor       string    `json:"flavor"`
}

// ReadIndex reads dir's index.jsonl; a missing index is an empty one. A
// last line without its newline (a torn append) is ignored. The entries of
// files pruned by retention (before the file PrunedName names) are left
// out: the archive starts at the oldest file kept.
func ReadIndex(dir string) ([]IndexEntry, error) {
	data, err := os.ReadFile(filepath.Join(dir, IndexName))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	all, err := parseIndex(data)
	if err != nil {
		return all, err
	}
	return afterPruned(dir, all)
}

func parseIndex(data []byte) ([]IndexEntry, error) {
	var out []IndexEntry
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var e IndexEntry
		if err := json.Unmarshal(b, &e); err != nil {
			if line == bytes.Count(data, []byte("\n"))+1 && !bytes.HasSuffix(data, []byte("\n")) {
				break // torn last line
			}
			return out, fmt.Errorf("%s line %d: %v", IndexName, line, err)
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

// appendIndex appends e to the index and fsyncs it. A torn last line left
// by a crash is cut off first.
func appendIndex(dir string, e IndexEntry) error {
	path := filepath.Join(dir, IndexName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if n := bytes.LastIndexByte(data, '\n') + 1; n != len(data) {
		if err := f.Truncate(int64(n)); err != nil {
			return err
		}
		data = data[:n]
	}
	line, err := json.Marshal(e)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(append(line, '\n'), int64(len(data))); err != nil {
		return err
	}
	return f.Sync()
}
