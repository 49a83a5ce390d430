package mysql

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	gmysql "github.com/go-mysql-org/go-mysql/mysql"
)

// StreamText runs q as a text-protocol query and calls row with each
// row's column values exactly as the server sent them (nil for NULL). The
// values point into the connection's read buffer and are valid during the
// call only: rows are parsed in place, with no copy, conversion or
// allocation per row — the dump's bulk read, where the driver's boxing of
// every value was a fifth of the CPU. Returning false from row stops the
// calls; the rest of the result is read and dropped. An error from row
// closes the connection (the rest of the result is not read) and is
// returned as it is. StreamText returns the result's column names (none
// for a statement without a result set).
func (w *WireConn) StreamText(ctx context.Context, q string, row func(vals [][]byte) (bool, error)) ([]string, error) {
	defer w.done()
	if err := w.start(ctx); err != nil {
		return nil, w.fail(ctx, q, err)
	}
	cols, err := w.streamText(q, row)
	if err != nil {
		var rowErr *callbackError
		if errors.As(err, &rowErr) {
			w.Close()
			return nil, rowErr.err
		}
		var me *gmysql.MyError
		if !errors.As(err, &me) {
			// A broken or misread connection is not used again.
			w.Close()
		}
		return nil, w.fail(ctx, q, err)
	}
	return cols, nil
}

// callbackError carries the row function's error through the reader.
type callbackError struct{ err error }

func (e *callbackError) Error() string { return e.err.Error() }

func (w *WireConn) streamText(q string, row func(vals [][]byte) (bool, error)) ([]string, error) {
	pc := w.conn.Conn
	if w.pr == nil {
		w.pr = &packetReader{buf: make([]byte, textReadBuf)}
	}
	pr := w.pr
	pr.r = pc.Conn
	pc.ResetSequence()
	cmd := make([]byte, 5, 5+len(q))
	cmd[4] = comQuery
	if err := pc.WritePacket(append(cmd, q...)); err != nil {
		return nil, err
	}
	seq := pc.Sequence
	var cols []string
	keep := true
	for first := true; ; first = false {
		data, err := pr.next(&seq)
		if err != nil {
			return nil, err
		}
		switch {
		case len(data) == 0:
			return nil, fmt.Errorf("mysql: empty response: %w", gmysql.ErrMalformPacket)
		case data[0] == okHeader:
			if !moreResults(okStatus(data)) {
				return cols, pr.idle()
			}
			continue
		case data[0] == errHeader:
			e := errPacket(data)
			if err := pr.idle(); err != nil {
				return nil, err
			}
			return nil, e
		case data[0] == localInfileHeader:
			return nil, fmt.Errorf("mysql: unexpected LOCAL INFILE request: %w", gmysql.ErrMalformPacket)
		}
		n, _, m := gmysql.LengthEncodedInt(data)
		if m != len(data) || n == 0 {
			return nil, gmysql.ErrMalformPacket
		}
		// The column definitions, then an EOF packet (CLIENT_DEPRECATE_EOF
		// is never asked for).
		names := make([]string, 0, n)
		for {
			def, err := pr.next(&seq)
			if err != nil {
				return nil, err
			}
			if isEOF(def) {
				break
			}
			name, err := columnName(def)
			if err != nil {
				return nil, err
			}
			names = append(names, name)
		}
		if len(names) != int(n) {
			return nil, fmt.Errorf("mysql: %d column definitions for %d columns: %w", len(names), n, gmysql.ErrMalformPacket)
		}
		if first {
			cols = names
		}
		vals := make([][]byte, n)
		for {
			data, err := pr.next(&seq)
			if err != nil {
				return nil, err
			}
			if isEOF(data) {
				if len(data) < 5 || !moreResults(binary.LittleEndian.Uint16(data[3:])) {
					return cols, pr.idle()
				}
				break // another result follows (dropped: only the first is the caller's)
			}
			if len(data) > 0 && data[0] == errHeader {
				e := errPacket(data)
				if err := pr.idle(); err != nil {
					return nil, err
				}
				return nil, e
			}
			if !keep || !first {
				continue
			}
			if err := parseTextRow(data, vals); err != nil {
				return nil, err
			}
			if keep, err = row(vals); err != nil {
				return nil, &callbackError{err}
			}
		}
	}
}

const (
	comQuery          = 0x03
	okHeader          = 0x00
	errHeader         = 0xff
	eofHeader         = 0xfe
	localInfileHeader = 0xfb
	maxPayload        = 1<<24 - 1
	textReadBuf       = 256 << 10
	statusMoreResults = 0x0008
)

func isEOF(data []byte) bool { return len(data) > 0 && data[0] == eofHeader && len(data) < 9 }

func moreResults(status uint16) bool { return status&statusMoreResults != 0 }

// okStatus is the status flags of an OK packet.
func okStatus(data []byte) uint16 {
	pos := 1
	for range 2 { // affected rows, last insert id
		_, _, n := gmysql.LengthEncodedInt(data[pos:])
		pos += n
		if pos > len(data) {
			return 0
		}
	}
	if pos+2 > len(data) {
		return 0
	}
	return binary.LittleEndian.Uint16(data[pos:])
}

// errPacket is a server error, as go-mysql reports it (classifyWire turns
// it into the driver's *MySQLError).
func errPacket(data []byte) error {
	e := &gmysql.MyError{}
	if len(data) < 3 {
		return gmysql.ErrMalformPacket
	}
	e.Code = binary.LittleEndian.Uint16(data[1:])
	pos := 3
	if len(data) >= 9 && data[3] == '#' {
		e.State = string(data[4:9])
		pos = 9
	}
	e.Message = string(data[pos:])
	return e
}

// columnName reads the name from a Protocol::ColumnDefinition41: catalog,
// schema, table, org_table, then name.
func columnName(def []byte) (string, error) {
	pos := 0
	for i := range 5 {
		s, _, n, err := gmysql.LengthEncodedString(def[pos:])
		if err != nil {
			return "", fmt.Errorf("mysql: column definition: %w", gmysql.ErrMalformPacket)
		}
		pos += n
		if i == 4 {
			return string(s), nil
		}
	}
	return "", gmysql.ErrMalformPacket
}

// parseTextRow splits a text-protocol row into vals, in place: a value is
// NULL (0xfb, nil here) or a length-encoded string. An empty value is a
// non-nil empty slice.
func parseTextRow(data []byte, vals [][]byte) error {
	pos := 0
	for i := range vals {
		if pos >= len(data) {
			return fmt.Errorf("mysql: row of %d bytes ends at column %d of %d: %w", len(data), i+1, len(vals), gmysql.ErrMalformPacket)
		}
		c := data[pos]
		var n uint64
		switch {
		case c < 0xfb:
			n = uint64(c)
			pos++
		case c == 0xfb:
			vals[i] = nil
			pos++
			continue
		case c == 0xfc && pos+3 <= len(data):
			n = uint64(binary.LittleEndian.Uint16(data[pos+1:]))
			pos += 3
		case c == 0xfd && pos+4 <= len(data):
			n = uint64(data[pos+1]) | uint64(data[pos+2])<<8 | uint64(data[pos+3])<<16
			pos += 4
		case c == 0xfe && pos+9 <= len(data):
			n = binary.LittleEndian.Uint64(data[pos+1:])
			pos += 9
		default:
			return fmt.Errorf("mysql: row: bad length prefix 0x%02x at byte %d: %w", c, pos, gmysql.ErrMalformPacket)
		}
		if n > uint64(len(data)-pos) {
			return fmt.Errorf("mysql: row: a value of %d bytes at byte %d of %d: %w", n, pos, len(data), gmysql.ErrMalformPacket)
		}
		end := pos + int(n)
		vals[i] = data[pos:end:end]
		pos = end
	}
	if pos != len(data) {
		return fmt.Errorf("mysql: row: %d bytes after %d columns: %w", len(data)-pos, len(vals), gmysql.ErrMalformPacket)
	}
	return nil
}

// packetReader reads protocol packets from a connection in large reads,
// returning payloads in place in its buffer (a payload split over several
// packets, 16 MiB or more, is joined in a buffer of its own).
type packetReader struct {
	r        io.Reader
	buf      []byte
	off, end int
	big      []byte
}

// next returns the next payload, valid until the following call, and
// checks and advances the sequence number.
func (p *packetReader) next(seq *uint8) ([]byte, error) {
	payload, last, err := p.one(seq)
	if err != nil || last {
		return payload, err
	}
	p.big = append(p.big[:0], payload...)
	for !last {
		if payload, last, err = p.one(seq); err != nil {
			return nil, err
		}
		p.big = append(p.big, payload...)
	}
	return p.big, nil
}

func (p *packetReader) one(seq *uint8) ([]byte, bool, error) {
	if err := p.fill(4); err != nil {
		return nil, false, err
	}
	h := p.buf[p.off : p.off+4]
	n := int(h[0]) | int(h[1])<<8 | int(h[2])<<16
	if h[3] != *seq {
		return nil, false, fmt.Errorf("mysql: packet sequence %d, want %d: %w", h[3], *seq, gmysql.ErrMalformPacket)
	}
	*seq++
	if err := p.fill(4 + n); err != nil {
		return nil, false, err
	}
	payload := p.buf[p.off+4 : p.off+4+n : p.off+4+n]
	p.off += 4 + n
	return payload, n < maxPayload, nil
}

// fill makes n bytes available from off, moving the unread bytes to the
// buffer's start or growing it as needed.
func (p *packetReader) fill(n int) error {
	if p.end-p.off >= n {
		return nil
	}
	if n > len(p.buf) {
		nb := make([]byte, max(n, 2*len(p.buf)))
		p.end = copy(nb, p.buf[p.off:p.end])
		p.off, p.buf = 0, nb
	} else if p.off+n > len(p.buf) {
		p.end = copy(p.buf, p.buf[p.off:p.end])
		p.off = 0
	}
	for p.end-p.off < n {
		m, err := p.r.Read(p.buf[p.end:])
		p.end += m
		if err != nil && p.end-p.off < n {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("mysql: read: %v: %w", err, gmysql.ErrBadConn)
		}
	}
	return nil
}

// idle checks that nothing is left unread after a response, and gives a
// buffer grown for a huge row back.
func (p *packetReader) idle() error {
	if p.off != p.end {
		return fmt.Errorf("mysql: %d unexpected bytes after a result: %w", p.end-p.off, gmysql.ErrMalformPacket)
	}
	p.off, p.end = 0, 0
	if len(p.buf) > textReadBuf {
		p.buf = make([]byte, textReadBuf)
	}
	if cap(p.big) > textReadBuf {
		p.big = nil
	}
	return nil
}
