// Package pitr restores a dbpilot dump to a point in time: it restores the
// dump with its GTID position, then applies the transactions of a binary
// log archive that follow it, up to a GTID position (included, as START
// SLAVE UNTIL master_gtid_pos) or a commit time, optionally leaving some
// out. MariaDB only.
//
// # How the events are applied
//
// dbpilot is a binlog source: a small MySQL-protocol server on 127.0.0.1
// (random port, one-time password; go-mysql's server package does the
// handshake and the command loop) that answers a replica IO thread's
// connect sequence (SELECT UNIX_TIMESTAMP(), SHOW VARIABLES LIKE
// 'SERVER_ID', the @master_* and @slave_* variables, COM_REGISTER_SLAVE,
// COM_BINLOG_DUMP) and streams the archive: an artificial Rotate, each
// file's Format_description, Gtid_list and Binlog_checkpoint, and the
// transactions after the replica's GTID connect state up to the plan's
// until position, exactly as archived (checksums included), then
// heartbeats. The target replicates from it through the temporary
// multi-source connection 'dbpilot_pitr' (CHANGE MASTER ...
// MASTER_USE_GTID=slave_pos; START SLAVE UNTIL master_gtid_pos), which is
// removed (RESET SLAVE ALL) at the end, also on failure, so a replication
// setup of the target's own is not touched.
//
// Why not `mariadb-binlog | mariadb` (decoded BINLOG statements through a
// client session): the server's own applier keeps every GTID, the UNTIL
// semantics are the server's, session state (sql_mode, time zone,
// character sets, temporary tables) is handled the way replication
// handles it rather than re-created from decoded text, parallel
// replication applies independent transactions side by side, and there is
// no parse/print/parse round trip: bench/pitr.sh measured 2.2x the replay
// rate of mariadb-binlog | mariadb on the same archive. Resuming is
// natural: the target's gtid_slave_pos is committed with every
// transaction, and the replica's connect state says where to continue.
// The source also stops sending at the until position itself, so the
// target never sees a later transaction whatever UNTIL does.
//
// Each file is served as a server serves its binary logs: an artificial
// Rotate naming it, then its own Format_description (server id, checksum
// algorithm: files of different servers may differ), Gtid_list and
// Binlog_checkpoint; the Rotates and heartbeats carry the checksum the
// replica expects at that point (the previous file's).
//
// # Planning
//
// Before anything is applied (and before the dump is restored) the whole
// archive is read once (ScanArchive): every event's CRC32, the sha256 and
// size of index.jsonl, the files' order (a hole in the numbers of a plain
// directory is a missing file), and continuity by GTID position: a file's
// start (the index's gtid_start, or its Gtid_list) is not past the end of
// the previous one, and the first file of another server (a failover in a
// streamed archive: its Gtid_list is that server's state, not the
// archive's) continues the archive's sequence number in every domain.
// NewPlan then turns the target into an
// until position per domain and refuses an until GTID that is not a whole
// transaction of the archive, naming the nearest valid points before and
// after it. Problems in files after the target are warnings.
//
// --exclude-gtid transactions are sent as empty transactions (their GTID
// event, made non-standalone, then COMMIT): the target's gtid_slave_pos
// goes through them, so it can later replicate from the original primary
// without a gap in its position. The server does not write an empty
// transaction to its own binary log: there the excluded GTIDs are a gap,
// which gtid_strict_mode accepts.
//
// # Archive format
//
// A `dbpilot binlog stream` archive (it has index.jsonl), read through the
// binlog package (binlog.Files, binlog.OpenFile, binlog.ReadEvents): the
// finished files (NAME.zst, or NAME@SERVERID.zst for a name another
// source used first) in index order, those removed by retention (PRUNED)
// left out, then the current one NAME.partial (may end inside a
// transaction, which is then ignored). Such an archive may hold the files
// of several servers, one after the other, across failovers; the
// transactions set aside in diverged/ are not part of it. A plain copy of
// a server's binary log files (no index; FLUSH BINARY LOGS before
// copying) is accepted too, ordered by the files' numbers; its last file
// is treated as partial.
package pitr
