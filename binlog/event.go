package binlog

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strings"

	"github.com/go-mysql-org/go-mysql/replication"
)

// Magic is the 4 bytes every binary log file starts with.
var Magic = []byte{0xfe, 'b', 'i', 'n'}

// Event header layout (binlog format v4).
const (
	headerLen   = 19
	checksumLen = 4
)

// Event types dbpilot reads (the others are copied without a look).
const (
	typeQuery           = 2
	typeStop            = 3
	typeRotate          = 4
	typeFormatDesc      = 15
	typeXID             = 16
	typeHeartbeat       = 27
	typeMySQLGTID       = 33
	typeMySQLAnonGTID   = 34
	typeMySQLPrevGTIDs  = 35
	typeXAPrepare       = 38
	typeMySQLTaggedGTID = 42
	typeMariaCheckpoint = 161
	typeMariaGTID       = 162
	typeMariaGTIDList   = 163
	typeMariaQueryZ     = 165
)

// flagArtificial marks events the server made up for the stream (the
// first Rotate, a Gtid_list with the replica's start position); they are
// not in the server's file.
const flagArtificial = 0x20

// MariaDB GTID event flags (flags2).
const (
	mariaFlStandalone = 0x01
)

// Event is one binary log event: its raw bytes as the server sent them
// (header, body and, when the file has checksums, the CRC-32 trailer) and
// its decoded header.
type Event struct {
	Raw       []byte
	Timestamp uint32 // seconds since the epoch; 0 for artificial events
	Type      byte
	ServerID  uint32
	LogPos    uint32 // end position in the server's file; 0 for some artificial events
	Flags     uint16
}

// Artificial reports whether the server made the event up for the stream.
func (e Event) Artificial() bool { return e.Flags&flagArtificial != 0 }

// parseEvent decodes the header of raw, which must be exactly one event.
func parseEvent(raw []byte) (Event, error) {
	if len(raw) < headerLen {
		return Event{}, fmt.Errorf("event of %d bytes is shorter than its header", len(raw))
	}
	size := binary.LittleEndian.Uint32(raw[9:])
	if int(size) != len(raw) {
		return Event{}, fmt.Errorf("event header says %d bytes, got %d", size, len(raw))
	}
	return Event{
		Raw:       raw,
		Timestamp: binary.LittleEndian.Uint32(raw[0:]),
		Type:      raw[4],
		ServerID:  binary.LittleEndian.Uint32(raw[5:]),
		LogPos:    binary.LittleEndian.Uint32(raw[13:]),
		Flags:     binary.LittleEndian.Uint16(raw[17:]),
	}, nil
}

// format is what a file's Format_description event says about the events
// that follow it.
type format struct {
	checksum bool // events end with a CRC-32
	server   string
}

func parseFormat(e Event) (format, error) {
	var fde replication.FormatDescriptionEvent
	body := e.Raw[headerLen:]
	if len(body) < 2+50+4+1+5 {
		return format{}, fmt.Errorf("format description event too short (%d bytes)", len(e.Raw))
	}
	if err := fde.Decode(body); err != nil {
		return format{}, fmt.Errorf("format description event: %v", err)
	}
	return format{checksum: fde.ChecksumAlgorithm == replication.BINLOG_CHECKSUM_ALG_CRC32, server: fde.ServerVersion}, nil
}

// body returns the event's body without header and checksum.
func (f format) body(e Event) []byte {
	b := e.Raw[headerLen:]
	if f.checksum && e.Type != typeFormatDesc && len(b) >= checksumLen {
		b = b[:len(b)-checksumLen]
	}
	return b
}

// checkCRC verifies the event's CRC-32 when the format has checksums.
func (f format) checkCRC(e Event) error {
	if !f.checksum || e.Type == typeFormatDesc && len(e.Raw) < headerLen+checksumLen {
		return nil
	}
	n := len(e.Raw) - checksumLen
	want := binary.LittleEndian.Uint32(e.Raw[n:])
	if got := crc32.ChecksumIEEE(e.Raw[:n]); got != want {
		return fmt.Errorf("%s event at server position %d: checksum %08x, computed %08x", typeName(e.Type), e.LogPos, want, got)
	}
	return nil
}

// mariaGTIDEvent is the part of a MariaDB GTID event that matters here.
type mariaGTIDEvent struct {
	domain     uint32
	seq        uint64
	standalone bool
}

func decodeMariaGTID(body []byte) (mariaGTIDEvent, error) {
	if len(body) < 13 {
		return mariaGTIDEvent{}, fmt.Errorf("GTID event body of %d bytes", len(body))
	}
	return mariaGTIDEvent{
		seq:        binary.LittleEndian.Uint64(body[0:]),
		domain:     binary.LittleEndian.Uint32(body[8:]),
		standalone: body[12]&mariaFlStandalone != 0,
	}, nil
}

// mariaGTIDList is a Gtid_list event: the binlog state (one GTID per domain
// and server) at the start of a file, or, when artificial, the replica's
// start position.
type mariaGTIDList []struct {
	domain, server uint32
	seq            uint64
}

func decodeMariaGTIDList(body []byte) (mariaGTIDList, error) {
	if len(body) < 4 {
		return nil, fmt.Errorf("gtid_list event body of %d bytes", len(body))
	}
	n := int(binary.LittleEndian.Uint32(body) & 0x0fffffff)
	if len(body) < 4+16*n {
		return nil, fmt.Errorf("gtid_list event of %d GTIDs has %d bytes", n, len(body))
	}
	out := make(mariaGTIDList, n)
	for i := range out {
		p := body[4+16*i:]
		out[i].domain = binary.LittleEndian.Uint32(p)
		out[i].server = binary.LittleEndian.Uint32(p[4:])
		out[i].seq = binary.LittleEndian.Uint64(p[8:])
	}
	return out, nil
}

// mysqlGTID decodes a MySQL Gtid event: "uuid:gno" (untagged only).
func decodeMySQLGTID(body []byte) (uuid string, gno uint64, err error) {
	if len(body) < 25 {
		return "", 0, fmt.Errorf("GTID event body of %d bytes", len(body))
	}
	s := body[1:17]
	uuid = fmt.Sprintf("%x-%x-%x-%x-%x", s[0:4], s[4:6], s[6:8], s[8:10], s[10:16])
	return uuid, binary.LittleEndian.Uint64(body[17:]), nil
}

// queryText returns the statement of a Query event ("" when it cannot be
// read, e.g. compressed).
func queryText(body []byte) string {
	const post = 4 + 4 + 1 + 2 + 2
	if len(body) < post {
		return ""
	}
	dbLen := int(body[8])
	varsLen := int(binary.LittleEndian.Uint16(body[11:]))
	p := post + varsLen + dbLen + 1
	if p > len(body) {
		return ""
	}
	return string(body[p:])
}

// rotateTarget returns the file a Rotate event names. The server sends the
// artificial Rotate that starts a connection without a checksum, the
// others with one (when the file has checksums): a trailer that is the
// CRC-32 of the rest is taken off.
func rotateTarget(e Event) string {
	raw := e.Raw
	if n := len(raw) - checksumLen; n >= headerLen+8 && binary.LittleEndian.Uint32(raw[n:]) == crc32.ChecksumIEEE(raw[:n]) {
		raw = raw[:n]
	}
	body := raw[headerLen:]
	if len(body) < 8 {
		return ""
	}
	return string(bytes.TrimRight(body[8:], "\x00"))
}

// endsGroup reports whether a Query event's statement ends a transaction.
func endsGroup(stmt string) bool {
	s := strings.ToUpper(strings.TrimSpace(stmt))
	return s == "COMMIT" || s == "ROLLBACK" || strings.HasPrefix(s, "XA COMMIT") || strings.HasPrefix(s, "XA ROLLBACK")
}

func typeName(t byte) string {
	return replication.EventType(t).String()
}
