package pitr

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strings"

	"github.com/dbpilot/dbpilot/gtid"
)

// Binary log event types this package looks at (MariaDB numbering).
const (
	evQuery           = 2
	evStop            = 3
	evRotate          = 4
	evFormatDesc      = 15
	evXID             = 16
	evHeartbeat       = 27
	evXAPrepare       = 38
	evAnnotateRows    = 160
	evBinlogCheckpt   = 161
	evGTID            = 162
	evGTIDList        = 163
	evStartEncryption = 164
)

const (
	headerLen = 19

	flagInUse      = 0x01 // LOG_EVENT_BINLOG_IN_USE_F
	flagArtificial = 0x20 // LOG_EVENT_ARTIFICIAL_F

	// GTID event flags (MariaDB Gtid_log_event::flags2).
	gtidStandalone    = 0x01
	gtidGroupCommitID = 0x02
	gtidDDL           = 0x20
	gtidPreparedXA    = 0x40
	gtidCompletedXA   = 0x80

	checksumOff   = 0
	checksumCRC32 = 1
)

// header is the fixed part of a binary log event (v4).
type header struct {
	Timestamp uint32
	Type      byte
	ServerID  uint32
	Size      uint32
	LogPos    uint32
	Flags     uint16
}

func parseHeader(b []byte) header {
	return header{
		Timestamp: binary.LittleEndian.Uint32(b[0:]),
		Type:      b[4],
		ServerID:  binary.LittleEndian.Uint32(b[5:]),
		Size:      binary.LittleEndian.Uint32(b[9:]),
		LogPos:    binary.LittleEndian.Uint32(b[13:]),
		Flags:     binary.LittleEndian.Uint16(b[17:]),
	}
}

// body returns the event's payload after the header, without the checksum.
func body(ev []byte, alg byte) []byte {
	end := len(ev)
	if alg == checksumCRC32 {
		end -= 4
	}
	if end < headerLen {
		return nil
	}
	return ev[headerLen:end]
}

// checkCRC verifies an event's CRC32 checksum.
func checkCRC(ev []byte) bool {
	if len(ev) < headerLen+4 {
		return false
	}
	n := len(ev) - 4
	return crc32.ChecksumIEEE(ev[:n]) == binary.LittleEndian.Uint32(ev[n:])
}

// setCRC rewrites an event's CRC32 checksum after a change.
func setCRC(ev []byte) {
	n := len(ev) - 4
	binary.LittleEndian.PutUint32(ev[n:], crc32.ChecksumIEEE(ev[:n]))
}

// fdeChecksum returns the checksum algorithm a Format_description event
// declares: the byte before its own 4-byte checksum, or, for a server
// without checksum support, none.
func fdeChecksum(ev []byte) (byte, error) {
	if len(ev) < headerLen+57 {
		return 0, fmt.Errorf("format description event too short (%d bytes)", len(ev))
	}
	// Servers since 5.6.1 / MariaDB 5.3 end the FDE with the algorithm
	// byte and a 4-byte checksum (present also when the algorithm is OFF).
	alg := ev[len(ev)-5]
	switch alg {
	case checksumCRC32:
		// The server computes the checksum with LOG_EVENT_BINLOG_IN_USE_F
		// clear: the flag is set while the file is written and cleared in
		// place when it is closed.
		c := bytes.Clone(ev)
		c[17] &^= flagInUse
		if !checkCRC(c) {
			return 0, fmt.Errorf("format description event checksum mismatch")
		}
		return checksumCRC32, nil
	case checksumOff:
		return checksumOff, nil
	}
	return 0, fmt.Errorf("unsupported binlog checksum algorithm %d", alg)
}

// gtidEvent is the decoded part of a MariaDB GTID event.
type gtidEvent struct {
	GTID  gtid.MariaGTID
	Flags byte
}

func parseGTIDEvent(ev []byte, alg byte) (gtidEvent, error) {
	b := body(ev, alg)
	if len(b) < 13 {
		return gtidEvent{}, fmt.Errorf("GTID event too short")
	}
	h := parseHeader(ev)
	return gtidEvent{
		GTID: gtid.MariaGTID{
			Seq:    binary.LittleEndian.Uint64(b[0:]),
			Domain: binary.LittleEndian.Uint32(b[8:]),
			Server: h.ServerID,
		},
		Flags: b[12],
	}, nil
}

// parseGTIDList decodes a Gtid_list event: the binlog state before the file.
func parseGTIDList(ev []byte, alg byte) (gtid.MariaList, error) {
	b := body(ev, alg)
	if len(b) < 4 {
		return nil, fmt.Errorf("gtid list event too short")
	}
	n := int(binary.LittleEndian.Uint32(b) & 0x0fffffff)
	b = b[4:]
	if len(b) < n*16 {
		return nil, fmt.Errorf("gtid list event truncated")
	}
	out := make([]gtid.MariaGTID, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, gtid.MariaGTID{
			Domain: binary.LittleEndian.Uint32(b[0:]),
			Server: binary.LittleEndian.Uint32(b[4:]),
			Seq:    binary.LittleEndian.Uint64(b[8:]),
		})
		b = b[16:]
	}
	return gtid.NewMariaList(out...), nil
}

// queryText returns the statement of a Query event.
func queryText(ev []byte, alg byte) string {
	b := body(ev, alg)
	if len(b) < 13 {
		return ""
	}
	dbLen := int(b[8])
	varsLen := int(binary.LittleEndian.Uint16(b[11:]))
	off := 13 + varsLen + dbLen + 1
	if off > len(b) {
		return ""
	}
	return string(b[off:])
}

// endsGroup reports whether a Query event's statement ends a transaction.
func endsGroup(q string) bool {
	q = strings.TrimSpace(q)
	return strings.EqualFold(q, "COMMIT") || strings.EqualFold(q, "ROLLBACK") ||
		(len(q) > 8 && strings.EqualFold(q[:9], "XA COMMIT")) || (len(q) > 10 && strings.EqualFold(q[:11], "XA ROLLBACK"))
}

// event builds an artificial or synthesized event.
func event(typ byte, serverID, logPos uint32, flags uint16, timestamp uint32, alg byte, payload []byte) []byte {
	size := headerLen + len(payload)
	if alg == checksumCRC32 {
		size += 4
	}
	ev := make([]byte, size)
	binary.LittleEndian.PutUint32(ev[0:], timestamp)
	ev[4] = typ
	binary.LittleEndian.PutUint32(ev[5:], serverID)
	binary.LittleEndian.PutUint32(ev[9:], uint32(size))
	binary.LittleEndian.PutUint32(ev[13:], logPos)
	binary.LittleEndian.PutUint16(ev[17:], flags)
	copy(ev[headerLen:], payload)
	if alg == checksumCRC32 {
		setCRC(ev)
	}
	return ev
}

// rotateEvent is the artificial Rotate a source sends first: it names the
// file the following events come from.
func rotateEvent(serverID uint32, alg byte, file string, pos uint64) []byte {
	p := make([]byte, 8, 8+len(file))
	binary.LittleEndian.PutUint64(p, pos)
	p = append(p, file...)
	return event(evRotate, serverID, 0, flagArtificial, 0, alg, p)
}

// heartbeatEvent tells an idle replica that the source is alive.
func heartbeatEvent(serverID uint32, alg byte, file string, pos uint32) []byte {
	return event(evHeartbeat, serverID, pos, 0, 0, alg, []byte(file))
}

// commitEvent is a Query event "COMMIT": with the GTID event it leads, an
// empty transaction that keeps an excluded GTID in the sequence.
func commitEvent(serverID, logPos, timestamp uint32, alg byte) []byte {
	p := make([]byte, 13, 13+1+6)
	// thread id 0, exec time 0, db length 0, error code 0, status vars 0.
	p = append(p, 0)
	p = append(p, "COMMIT"...)
	return event(evQuery, serverID, logPos, 0, timestamp, alg, p)
}

// emptyGTIDEvent rewrites a GTID event as the start of an empty
// transaction: not standalone, not DDL, no XA.
func emptyGTIDEvent(ev []byte, alg byte) []byte {
	out := bytes.Clone(ev)
	b := out[headerLen:]
	b[12] &^= gtidStandalone | gtidDDL | gtidPreparedXA | gtidCompletedXA
	if alg == checksumCRC32 {
		setCRC(out)
	}
	return out
}
