// Package binlog archives a server's binary logs continuously and reads the
// archive back: a Streamer connects as a replica with a GTID position (the
// go-mysql replication library's BinlogSyncer, with MariaDB GTIDs) and
// writes every event unchanged into an archive directory; List and Verify
// read the archive for `dbpilot binlog ls|verify` and for point-in-time
// restore.
//
// # Archive format (fixed; point-in-time restore relies on it)
//
// A directory DIR holds:
//
//   - LOCK: flock'ed by the one writer (a second Streamer on DIR fails
//     with ECONFLICT).
//   - NAME.partial: the file being written, under the server's file name:
//     a valid binary log (magic "\xfebin", a Format_description event
//     first, then the events as the server sent them, with their
//     checksums). It may end inside a transaction; the next stream cuts it
//     back to its last complete transaction.
//   - NAME.zst: a finished file (the server rotated), zstd-compressed;
//     written only at a transaction boundary.
//   - index.jsonl: one IndexEntry per finished file, in order, appended
//     and fsynced: name, file, size and sha256 of the uncompressed bytes,
//     zst_sha256, gtid_start and gtid_end (positions before the first and
//     after the last transaction, as gtid_slave_pos), first_gtid,
//     last_gtid, first_time, last_time (RFC 3339), transactions, events,
//     source, server_id, flavor.
//
// README.md in this directory describes the format in full.
//
// # Streaming
//
// Run resumes an archive after its last complete transaction, or starts a
// new one after Options.From, as a replica's gtid_slave_pos. Errors are
// dbpilot errors: a start position the server purged is ENOTFOUND with a
// *PurgedError naming the oldest available position; a full disk is
// EUNAVAIL and the next Run resumes where it stopped. With SemiSync the
// stream acknowledges each transaction after it is written and synced to
// the partial file.
package binlog
