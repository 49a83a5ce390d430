package binlog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/gtid"
)

// DivergedDir is the archive's subdirectory for transactions set aside by
// SetAside.
const DivergedDir = "diverged"

// Aside is what SetAside moved out of the archive.
type Aside struct {
	File  string   // the file in DivergedDir holding them ("" when nothing moved)
	GTIDs []string // the transactions, in order
}

// SetAside makes the archive continue on a server that does not have its
// last transactions: after a failover, the archive may hold transactions of
// the old primary that no replica received, and the new primary's history
// goes on without them. state is the server's @@gtid_binlog_state (MariaDB:
// the last sequence number of every domain and server it has logged). The
// transactions at the end of the file being written that the server does
// not have are moved, unchanged, into DIR/diverged/NAME.TIME (a binary log
// file with the original's Format_description, readable by mariadb-binlog),
// and the file is cut back before the first of them; the next Run resumes
// from the server with no duplicate sequence number.
//
// Only the file being written is cut: when a finished file holds a
// transaction the server lacks, SetAside changes nothing and fails with
// ECONFLICT naming it (the archive and the cluster diverged further back;
// a person decides). MySQL archives are not handled (EUNSUPPORTED). It
// takes the archive's lock: no Streamer may be running on dir.
func SetAside(dir, state string) (Aside, error) {
	var aside Aside
	lf, err := os.OpenFile(filepath.Join(dir, LockName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return aside, dbpilot.WrapError(dbpilot.EINVALID, err, "binlog: open lock of archive %s", dir)
	}
	defer lf.Close()
	if err := flock(lf); err != nil {
		return aside, dbpilot.Errorf(dbpilot.ECONFLICT, "binlog: archive %s is in use by a stream: stop it before setting transactions aside", dir)
	}
	has, err := stateHas(state)
	if err != nil {
		return aside, dbpilot.WrapError(dbpilot.EINVALID, err, "binlog: server state %q", state)
	}
	idx, err := ReadIndex(dir)
	if err != nil {
		return aside, dbpilot.WrapError(dbpilot.EINVALID, err, "binlog: read index of archive %s", dir)
	}
	if n := len(idx); n > 0 {
		last := idx[n-1]
		if last.Flavor == FlavorMySQL {
			return aside, dbpilot.Errorf(dbpilot.EUNSUPPORTED, "binlog: archive %s: setting diverged transactions aside is done for MariaDB archives only", dir)
		}
		l, err := gtid.ParseMariaList(last.LastGTID)
		if err != nil {
			return aside, dbpilot.WrapError(dbpilot.EINVALID, err, "binlog: index of %s: last_gtid of %s", dir, last.Name)
		}
		for _, g := range l {
			if !has(g) {
				return aside, dbpilot.Errorf(dbpilot.ECONFLICT, "binlog: archive %s: finished file %s holds %s, which the server does not have: the archive and the server diverged before the file being written; move the files from there on away by hand to stream again", dir, last.File, g)
			}
		}
	}
	partials, err := partialFiles(dir)
	if err != nil || len(partials) != 1 {
		return aside, err
	}
	path := filepath.Join(dir, partials[0])
	rc, err := OpenFile(path)
	if err != nil {
		return aside, dbpilot.WrapError(dbpilot.EINVALID, err, "binlog: open %s", path)
	}
	var (
		fde   []byte
		ff    format
		cut   int64 = -1
		gtids []string
	)
	err = ReadEvents(rc, func(off int64, e Event) error {
		switch e.Type {
		case typeFormatDesc:
			if fde == nil {
				fde = append([]byte(nil), e.Raw...)
				f, err := parseFormat(e)
				if err != nil {
					return err
				}
				ff = f
			}
		case typeMySQLGTID, typeMySQLTaggedGTID:
			return dbpilot.Errorf(dbpilot.EUNSUPPORTED, "binlog: archive %s: setting diverged transactions aside is done for MariaDB archives only", dir)
		case typeMariaGTID:
			g, err := decodeMariaGTID(ff.body(e))
			if err != nil {
				return fmt.Errorf("offset %d: %v", off, err)
			}
			id := gtid.MariaGTID{Domain: g.domain, Server: e.ServerID, Seq: g.seq}
			if cut < 0 && !has(id) {
				cut = off
			}
			if cut >= 0 {
				gtids = append(gtids, id.String())
			}
		}
		return nil
	})
	rc.Close()
	var torn *TornError
	if err != nil && !errors.As(err, &torn) {
		return aside, dbpilot.WrapError(dbpilot.EINVALID, err, "binlog: read %s", path)
	}
	if cut < 0 {
		return aside, nil
	}
	if fde == nil {
		return aside, dbpilot.Errorf(dbpilot.EINVALID, "binlog: %s has no format description before offset %d", path, cut)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return aside, dbpilot.WrapError(dbpilot.EINVALID, err, "binlog: read %s", path)
	}
	if err := os.MkdirAll(filepath.Join(dir, DivergedDir), 0o700); err != nil {
		return aside, fmt.Errorf("binlog: %w", err)
	}
	name := strings.TrimSuffix(partials[0], PartialSuffix) + "." + time.Now().UTC().Format("20060102T150405Z")
	out := filepath.Join(dir, DivergedDir, name)
	body := append(append(append([]byte(nil), Magic...), fde...), data[cut:]...)
	if err := writeSynced(out, body); err != nil {
		return aside, fmt.Errorf("binlog: write %s: %w", out, err)
	}
	if err := syncDir(filepath.Join(dir, DivergedDir)); err != nil {
		return aside, fmt.Errorf("binlog: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0o600)
	if err != nil {
		return aside, fmt.Errorf("binlog: %w", err)
	}
	defer f.Close()
	if err := f.Truncate(cut); err != nil {
		return aside, fmt.Errorf("binlog: cut %s back to offset %d: %w", path, cut, err)
	}
	if err := f.Sync(); err != nil {
		return aside, fmt.Errorf("binlog: cut %s back to offset %d: %w", path, cut, err)
	}
	return Aside{File: out, GTIDs: gtids}, nil
}

// stateHas returns whether a server with the MariaDB gtid_binlog_state
// state has logged a GTID: the state's last sequence number for its domain
// and server is at least the GTID's.
func stateHas(state string) (func(gtid.MariaGTID) bool, error) {
	l, err := gtid.ParseMariaList(state)
	if err != nil {
		return nil, err
	}
	type ds struct{ d, s uint32 }
	last := map[ds]uint64{}
	for _, g := range l {
		k := ds{g.Domain, g.Server}
		last[k] = max(last[k], g.Seq)
	}
	return func(g gtid.MariaGTID) bool {
		n, ok := last[ds{g.Domain, g.Server}]
		return ok && n >= g.Seq
	}, nil
}
