package backup

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
)

// Data files use the default format of LOAD DATA: fields separated by a
// tab, rows ended by a newline, NULL written as \N, and backslash, tab,
// newline, carriage return and NUL escaped with a backslash. The bytes are
// the column values exactly as the server sends them on a connection with
// character_set_results=binary, so no character set conversion happens on
// the way out or back in (LOAD DATA ... CHARACTER SET binary).

// LoadFormat is the FIELDS/LINES clause matching the data files.
const LoadFormat = `FIELDS TERMINATED BY '\t' ESCAPED BY '\\' LINES TERMINATED BY '\n'`

var escapeTable = func() (t [256]byte) {
	t['\\'] = '\\'
	t['\t'] = 't'
	t['\n'] = 'n'
	t['\r'] = 'r'
	t[0] = '0'
	return t
}()

// rowEncoder writes rows to a data file and keeps their count, size and
// checksum.
type rowEncoder struct {
	w      *bufio.Writer
	rows   int64
	bytes  int64
	sum    RowSum
	nulls  []byte
	crcBuf []byte
}

func newRowEncoder(w *bufio.Writer) *rowEncoder { return &rowEncoder{w: w} }

// writeRow encodes one row; a nil value is NULL.
func (e *rowEncoder) writeRow(vals [][]byte) error {
	if cap(e.nulls) < len(vals) {
		e.nulls = make([]byte, len(vals))
	}
	nulls := e.nulls[:len(vals)]
	// The checksum input is the non-NULL values joined with '#', then '#'
	// and the NULL flags: gathered first so that the CRC runs once over a
	// contiguous buffer (its fast path needs 64 bytes or more).
	e.crcBuf = e.crcBuf[:0]
	n := int64(0)
	for i, v := range vals {
		if i > 0 {
			if err := e.w.WriteByte('\t'); err != nil {
				return err
			}
			n++
		}
		if v == nil {
			nulls[i] = '1'
			if _, err := e.w.WriteString(`\N`); err != nil {
				return err
			}
			n += 2
			continue
		}
		nulls[i] = '0'
		e.crcBuf = append(e.crcBuf, v...)
		e.crcBuf = append(e.crcBuf, '#')
		m, err := writeEscaped(e.w, v)
		if err != nil {
			return err
		}
		n += int64(m)
	}
	e.crcBuf = append(e.crcBuf, nulls...)
	if err := e.w.WriteByte('\n'); err != nil {
		return err
	}
	e.rows++
	e.bytes += n + 1
	e.sum.Add(crc32.ChecksumIEEE(e.crcBuf))
	return nil
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// maybeSpecial reports whether any byte of the 8-byte word x may need
// escaping: a byte below 0x0e (NUL, tab, newline, CR among them) or a
// backslash. It is a filter: false means none does.
func maybeSpecial(x uint64) bool {
	below := (x - 0x0e*lsb) & ^x & msb
	y := x ^ ('\\' * lsb)
	bs := (y - lsb) & ^y & msb
	return below|bs != 0
}

func writeEscaped(w *bufio.Writer, v []byte) (int, error) {
	n := 0
	start := 0
	i := 0
	for i < len(v) {
		// Skip 8 clean bytes at a time.
		for i+8 <= len(v) && !maybeSpecial(binary.LittleEndian.Uint64(v[i:])) {
			i += 8
		}
		end := min(i+8, len(v))
		for ; i < end; i++ {
			esc := escapeTable[v[i]]
			if esc == 0 {
				continue
			}
			if start < i {
				m, err := w.Write(v[start:i])
				n += m
				if err != nil {
					return n, err
				}
			}
			if err := w.WriteByte('\\'); err != nil {
				return n, err
			}
			if err := w.WriteByte(esc); err != nil {
				return n, err
			}
			n += 2
			start = i + 1
		}
	}
	if start < len(v) {
		m, err := w.Write(v[start:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// errBadRow reports a data file line that does not decode.
var errBadRow = errors.New("malformed row")

// rowDecoder reads rows back from a data file (verify --deep and tests).
type rowDecoder struct {
	r    *bufio.Reader
	cols int
}

func newRowDecoder(r io.Reader, cols int) *rowDecoder {
	return &rowDecoder{r: bufio.NewReaderSize(r, 256<<10), cols: cols}
}

// next returns the next row's values (nil for NULL), or io.EOF.
func (d *rowDecoder) next() ([][]byte, error) {
	line, err := d.r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		buf := append([]byte(nil), line...)
		for err == bufio.ErrBufferFull {
			line, err = d.r.ReadSlice('\n')
			buf = append(buf, line...)
		}
		line = buf
	}
	if err != nil {
		if err == io.EOF && len(line) > 0 {
			return nil, errBadRow
		}
		return nil, err
	}
	line = line[:len(line)-1]
	fields := bytes.Split(line, []byte{'\t'})
	if len(fields) != d.cols {
		return nil, errBadRow
	}
	out := make([][]byte, len(fields))
	for i, f := range fields {
		if len(f) == 2 && f[0] == '\\' && f[1] == 'N' {
			continue
		}
		v := make([]byte, 0, len(f))
		for j := 0; j < len(f); j++ {
			c := f[j]
			if c != '\\' {
				v = append(v, c)
				continue
			}
			j++
			if j == len(f) {
				return nil, errBadRow
			}
			switch f[j] {
			case 't':
				v = append(v, '\t')
			case 'n':
				v = append(v, '\n')
			case 'r':
				v = append(v, '\r')
			case '0':
				v = append(v, 0)
			default:
				v = append(v, f[j])
			}
		}
		out[i] = v
	}
	return out, nil
}
