package simulator

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
)

// This file is the server side of the MySQL client/server protocol, as much
// as dbpilot's driver (go-sql-driver/mysql) uses: the v10 handshake with
// mysql_native_password (any user and password are accepted), COM_QUERY
// answered with OK, error or text result set packets (with EOF packets:
// CLIENT_DEPRECATE_EOF is not offered), COM_PING, COM_INIT_DB, COM_QUIT.

// Commands.
const (
	comQuit           = 0x01
	comInitDB         = 0x02
	comQuery          = 0x03
	comPing           = 0x0e
	comSetOption      = 0x1b
	comResetConn      = 0x1f
	maxPacket         = 1<<24 - 1
	serverStatusAutoc = 0x0002
	serverMoreResults = 0x0008 // SERVER_MORE_RESULTS_EXISTS
	charsetUTF8MB4    = 45     // utf8mb4_general_ci
	typeVarString     = 253    // MYSQL_TYPE_VAR_STRING
)

// Capabilities offered: protocol 4.1 with secure (20-byte scramble)
// authentication through plugins. CLIENT_LONG_PASSWORD (bit 0, the bit
// MariaDB leaves clear) is set, so clients do not look for MariaDB's
// extended capabilities.
const serverCaps = 1 | // CLIENT_LONG_PASSWORD
	2 | // CLIENT_FOUND_ROWS
	4 | // CLIENT_LONG_FLAG
	8 | // CLIENT_CONNECT_WITH_DB
	0x200 | // CLIENT_PROTOCOL_41
	0x2000 | // CLIENT_TRANSACTIONS
	0x8000 | // CLIENT_SECURE_CONNECTION
	0x10000 | // CLIENT_MULTI_STATEMENTS
	0x20000 | // CLIENT_MULTI_RESULTS
	0x80000 | // CLIENT_PLUGIN_AUTH
	0x200000 // CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA

// handshakeVersion is what the handshake announces; MariaDB prefixes
// "5.5.5-" for old clients.
const handshakeVersion = "5.5.5-" + serverVersion

// Null is the value that a result set writes as SQL NULL.
const Null = "\x00<NULL>\x00"

// packetReader reads one packet at a time.
type packetReader struct {
	r   *bufio.Reader
	seq byte
	buf []byte
}

// next reads a packet (joining 16 MB continuations) and returns its payload,
// valid until the next call.
func (p *packetReader) next() ([]byte, error) {
	p.buf = p.buf[:0]
	var hdr [4]byte
	for {
		if _, err := io.ReadFull(p.r, hdr[:]); err != nil {
			return nil, err
		}
		n := int(hdr[0]) | int(hdr[1])<<8 | int(hdr[2])<<16
		p.seq = hdr[3] + 1
		start := len(p.buf)
		if cap(p.buf)-start < n {
			nb := make([]byte, start, start+n)
			copy(nb, p.buf)
			p.buf = nb
		}
		p.buf = p.buf[:start+n]
		if _, err := io.ReadFull(p.r, p.buf[start:]); err != nil {
			return nil, err
		}
		if n < maxPacket {
			return p.buf, nil
		}
	}
}

// response builds the packets of one answer in one buffer, so that it goes
// out in one write.
type response struct {
	buf []byte
	seq byte
	// more: another result follows this statement's (several statements
	// in one query); its last EOF or OK says so. failed: it ended in an
	// error (the statements after it are not run).
	more, failed bool
}

var responsePool = sync.Pool{New: func() any { return &response{buf: make([]byte, 0, 4096)} }}

func newResponse(seq byte) *response {
	r := responsePool.Get().(*response)
	r.buf, r.seq, r.more, r.failed = r.buf[:0], seq, false, false
	return r
}

// release returns the buffer to the pool (large ones are dropped, so that a
// burst does not pin memory).
func (r *response) release() {
	if cap(r.buf) <= 256<<10 {
		responsePool.Put(r)
	}
}

// begin starts a packet; end fills its header.
func (r *response) begin() int {
	r.buf = append(r.buf, 0, 0, 0, r.seq)
	r.seq++
	return len(r.buf) - 4
}

func (r *response) end(at int) {
	n := len(r.buf) - at - 4
	if n >= maxPacket {
		panic("simulator: packet too large") // answers are kilobytes
	}
	r.buf[at], r.buf[at+1], r.buf[at+2] = byte(n), byte(n>>8), byte(n>>16)
}

func (r *response) ok(affected uint64) {
	at := r.begin()
	r.buf = append(r.buf, 0x00)
	r.buf = appendLenInt(r.buf, affected)
	r.buf = appendLenInt(r.buf, 0) // last insert id
	r.buf = binary.LittleEndian.AppendUint16(r.buf, r.status())
	r.buf = binary.LittleEndian.AppendUint16(r.buf, 0) // warnings
	r.end(at)
}

// eof ends a result set.
func (r *response) eof() { r.eofStatus(r.status()) }

// eofStatus writes an EOF packet with the server status flags st.
func (r *response) eofStatus(st uint16) {
	at := r.begin()
	r.buf = append(r.buf, 0xfe, 0, 0)
	r.buf = binary.LittleEndian.AppendUint16(r.buf, st)
	r.end(at)
}

// status is the server status of the packet that ends a result.
func (r *response) status() uint16 {
	if r.more {
		return serverStatusAutoc | serverMoreResults
	}
	return serverStatusAutoc
}

// sqlError is a server error: number, SQLSTATE and message.
type sqlError struct {
	Code  uint16
	State string
	Msg   string
}

func (e *sqlError) Error() string { return fmt.Sprintf("ERROR %d (%s): %s", e.Code, e.State, e.Msg) }

func (r *response) err(e *sqlError) {
	r.failed = true
	at := r.begin()
	r.buf = append(r.buf, 0xff)
	r.buf = binary.LittleEndian.AppendUint16(r.buf, e.Code)
	r.buf = append(r.buf, '#')
	r.buf = append(r.buf, (e.State + "00000")[:5]...)
	r.buf = append(r.buf, e.Msg...)
	r.end(at)
}

// columns writes the column count, one definition per name and the EOF.
func (r *response) columns(names ...string) {
	at := r.begin()
	r.buf = appendLenInt(r.buf, uint64(len(names)))
	r.end(at)
	for _, n := range names {
		at := r.begin()
		r.buf = appendLenStr(r.buf, "def")
		r.buf = appendLenStr(r.buf, "") // schema
		r.buf = appendLenStr(r.buf, "") // table
		r.buf = appendLenStr(r.buf, "") // org_table
		r.buf = appendLenStr(r.buf, n)
		r.buf = appendLenStr(r.buf, n)
		r.buf = append(r.buf, 0x0c)
		r.buf = binary.LittleEndian.AppendUint16(r.buf, charsetUTF8MB4)
		r.buf = binary.LittleEndian.AppendUint32(r.buf, 1024)
		r.buf = append(r.buf, typeVarString, 0, 0, 0, 0, 0) // type, flags, decimals, filler
		r.end(at)
	}
	r.eofStatus(serverStatusAutoc) // the column definitions' end: rows follow
}

// row writes one row of text values; Null writes NULL.
func (r *response) row(vals ...string) {
	at := r.begin()
	for _, v := range vals {
		r.buf = appendValue(r.buf, v)
	}
	r.end(at)
}

// rawRow writes a row whose payload was encoded beforehand (appendValue).
func (r *response) rawRow(payload []byte) {
	at := r.begin()
	r.buf = append(r.buf, payload...)
	r.end(at)
}

func appendValue(b []byte, v string) []byte {
	if v == Null {
		return append(b, 0xfb)
	}
	return appendLenStr(b, v)
}

func appendLenInt(b []byte, n uint64) []byte {
	switch {
	case n < 251:
		return append(b, byte(n))
	case n < 1<<16:
		return append(b, 0xfc, byte(n), byte(n>>8))
	case n < 1<<24:
		return append(b, 0xfd, byte(n), byte(n>>8), byte(n>>16))
	}
	b = append(b, 0xfe)
	return binary.LittleEndian.AppendUint64(b, n)
}

func appendLenStr(b []byte, s string) []byte {
	b = appendLenInt(b, uint64(len(s)))
	return append(b, s...)
}

// handshake writes the initial handshake packet (seq 0).
func handshake(connID uint32, scramble [20]byte) []byte {
	r := newResponse(0)
	defer r.release()
	at := r.begin()
	r.buf = append(r.buf, 10) // protocol version
	r.buf = append(r.buf, handshakeVersion...)
	r.buf = append(r.buf, 0)
	r.buf = binary.LittleEndian.AppendUint32(r.buf, connID)
	r.buf = append(r.buf, scramble[:8]...)
	r.buf = append(r.buf, 0)
	r.buf = binary.LittleEndian.AppendUint16(r.buf, uint16(serverCaps&0xffff))
	r.buf = append(r.buf, charsetUTF8MB4)
	r.buf = binary.LittleEndian.AppendUint16(r.buf, serverStatusAutoc)
	r.buf = binary.LittleEndian.AppendUint16(r.buf, uint16(serverCaps>>16))
	r.buf = append(r.buf, 21)                           // auth plugin data length
	r.buf = append(r.buf, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0) // reserved
	r.buf = append(r.buf, scramble[8:]...)
	r.buf = append(r.buf, 0)
	r.buf = append(r.buf, "mysql_native_password"...)
	r.buf = append(r.buf, 0)
	r.end(at)
	return append([]byte(nil), r.buf...)
}

// clientHello is what the handshake response tells: the user (for the
// processlist) and the schema.
type clientHello struct {
	user, db string
}

var errShortHandshake = errors.New("simulator: short handshake response")

// parseHello reads a HandshakeResponse41. The password is not checked.
func parseHello(p []byte) (clientHello, error) {
	var h clientHello
	if len(p) < 32 {
		return h, errShortHandshake
	}
	caps := binary.LittleEndian.Uint32(p)
	p = p[32:] // caps, max packet, charset, 23 reserved
	i := indexZero(p)
	if i < 0 {
		return h, errShortHandshake
	}
	h.user, p = string(p[:i]), p[i+1:]
	var n int
	switch {
	case caps&0x200000 != 0:
		v, w := readLenInt(p)
		n, p = int(v), p[w:]
	case len(p) > 0:
		n, p = int(p[0]), p[1:]
	}
	if n > len(p) {
		return h, errShortHandshake
	}
	p = p[n:]
	if caps&8 != 0 {
		if i := indexZero(p); i >= 0 {
			h.db = string(p[:i])
		}
	}
	return h, nil
}

func indexZero(p []byte) int {
	for i, c := range p {
		if c == 0 {
			return i
		}
	}
	return -1
}

func readLenInt(p []byte) (uint64, int) {
	if len(p) == 0 {
		return 0, 0
	}
	switch p[0] {
	case 0xfc:
		if len(p) >= 3 {
			return uint64(p[1]) | uint64(p[2])<<8, 3
		}
	case 0xfd:
		if len(p) >= 4 {
			return uint64(p[1]) | uint64(p[2])<<8 | uint64(p[3])<<16, 4
		}
	case 0xfe:
		if len(p) >= 9 {
			return binary.LittleEndian.Uint64(p[1:]), 9
		}
	default:
		return uint64(p[0]), 1
	}
	return 0, len(p)
}
