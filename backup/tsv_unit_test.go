package backup

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"strings"
	"testing"
)

// encodeRows encodes rows with a rowEncoder and returns the file bytes.
func encodeRows(t testing.TB, rows [][][]byte) ([]byte, *rowEncoder) {
	t.Helper()
	var buf bytes.Buffer
	w := bufio.NewWriterSize(&buf, 4096)
	enc := newRowEncoder(w)
	for _, r := range rows {
		if err := enc.writeRow(r); err != nil {
			t.Fatalf("writeRow(%q): %v", r, err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), enc
}

// decodeRows decodes every row of data.
func decodeRows(t testing.TB, data []byte, cols int) [][][]byte {
	t.Helper()
	dec := newRowDecoder(bytes.NewReader(data), cols)
	var out [][][]byte
	for {
		r, err := dec.next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("decode row %d: %v", len(out)+1, err)
		}
		out = append(out, r)
	}
}

// sameRow compares values, NULL (nil) differing from empty.
func sameRow(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if (a[i] == nil) != (b[i] == nil) || !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

func bs(vals ...any) [][]byte {
	out := make([][]byte, len(vals))
	for i, v := range vals {
		switch x := v.(type) {
		case nil:
		case string:
			out[i] = []byte(x)
		case []byte:
			out[i] = x
		default:
			panic("bs: bad value")
		}
	}
	return out
}

func TestRowEncoding(t *testing.T) {
	tests := []struct {
		name string
		row  [][]byte
		want string
	}{
		{"plain", bs("a", "b"), "a\tb\n"},
		{"null and empty", bs(nil, ""), "\\N\t\n"},
		{"empty and null", bs("", nil), "\t\\N\n"},
		{"literal backslash N", bs(`\N`), "\\\\N\n"},
		{"tab newline cr nul", bs("a\tb\nc\rd\x00e"), "a\\tb\\nc\\rd\\0e\n"},
		{"backslashes", bs(`\`, `a\\b`), "\\\\\t" + `a\\\\b` + "\n"},
		{"0x1a and invalid UTF-8 pass through", bs("\x1a\xff\xfe"), "\x1a\xff\xfe\n"},
		{"single NULL", bs(nil), "\\N\n"},
		{"single empty", bs(""), "\n"},
		{"all nulls", bs(nil, nil, nil), "\\N\t\\N\t\\N\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, enc := encodeRows(t, [][][]byte{tc.row})
			if string(got) != tc.want {
				t.Errorf("encoded %q, want %q", got, tc.want)
			}
			if enc.rows != 1 || enc.bytes != int64(len(tc.want)) {
				t.Errorf("rows %d bytes %d, want 1 and %d", enc.rows, enc.bytes, len(tc.want))
			}
		})
	}
}

func TestRowRoundTrip(t *testing.T) {
	long := strings.Repeat("0123456789abcdef", 300<<10/16) // 300 KiB, more than the decoder's buffer
	longEsc := strings.Repeat("x\t\\\n", 100<<10)          // 400 KiB raw, 800 KiB encoded
	tests := []struct {
		name string
		rows [][][]byte
	}{
		{"null vs empty", [][][]byte{bs(nil, ""), bs("", nil), bs(nil, nil), bs("", "")}},
		{"backslash N text", [][][]byte{bs(`\N`, "N", `\`, `\\N`, `N\`)}},
		{"separators inside values", [][][]byte{bs("a\tb", "c\nd", "e\rf", "\r\n", "\t")}},
		{"NUL and 0x1a", [][][]byte{bs("\x00", "a\x00b", "\x1a", "\\0", "\\Z")}},
		{"backslashes", [][][]byte{bs(`\`, `\\`, `a\`, `\t`, `\n`)}},
		{"invalid UTF-8", [][][]byte{bs("\xff", "\xc3", "ok\xe2\x82", "é", "\x80\x80")}},
		{"one column", [][][]byte{bs("a"), bs(nil), bs(""), bs(`\N`), bs("\n"), bs("\t")}},
		{"long value", [][][]byte{bs(long, "x"), bs("after", "long")}},
		{"long escaped value", [][][]byte{bs("before", nil), bs(longEsc, nil), bs("y", "")}},
		{"long value at end", [][][]byte{bs("a", "b"), bs(nil, long)}},
		{"exactly the buffer size", [][][]byte{bs(strings.Repeat("z", 256<<10-1)), bs(strings.Repeat("z", 256<<10)), bs("z")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data, enc := encodeRows(t, tc.rows)
			if enc.rows != int64(len(tc.rows)) || enc.bytes != int64(len(data)) {
				t.Errorf("encoder counts rows %d bytes %d, want %d and %d", enc.rows, enc.bytes, len(tc.rows), len(data))
			}
			got := decodeRows(t, data, len(tc.rows[0]))
			if len(got) != len(tc.rows) {
				t.Fatalf("decoded %d rows, want %d", len(got), len(tc.rows))
			}
			for i := range got {
				if !sameRow(got[i], tc.rows[i]) {
					t.Errorf("row %d: decoded %.80q, want %.80q", i, got[i], tc.rows[i])
				}
			}
		})
	}
}

func TestRowDecoderErrors(t *testing.T) {
	tests := []struct {
		name string
		data string
		cols int
		want error
	}{
		{"empty file", "", 2, io.EOF},
		{"too few fields", "a\tb\n", 3, errBadRow},
		{"too many fields", "a\tb\tc\n", 2, errBadRow},
		{"missing final newline", "a\tb", 2, errBadRow},
		{"trailing backslash", "a\tb\\\n", 2, errBadRow},
		{"long line without newline", strings.Repeat("q", 300<<10), 1, errBadRow},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newRowDecoder(strings.NewReader(tc.data), tc.cols).next()
			if !errors.Is(err, tc.want) {
				t.Errorf("next() error = %v, want %v", err, tc.want)
			}
		})
	}
	// Unknown escapes decode to the escaped byte, as LOAD DATA does.
	got := decodeRows(t, []byte("\\x\\'\\\\\n"), 1)
	if len(got) != 1 || string(got[0][0]) != `x'\` {
		t.Errorf("decoded %q, want [[x'\\]]", got)
	}
	// A good row, then a bad one.
	dec := newRowDecoder(strings.NewReader("a\n\\"), 1)
	if r, err := dec.next(); err != nil || string(r[0]) != "a" {
		t.Fatalf("first row = %q, %v", r, err)
	}
	if _, err := dec.next(); !errors.Is(err, errBadRow) {
		t.Errorf("second row error = %v, want errBadRow", err)
	}
}

// refRowCRC is the server's CRC32(CONCAT_WS('#', v1, ..., vn,
// CONCAT(ISNULL(v1), ..., ISNULL(vn)))) computed from its definition:
// CONCAT_WS skips NULL arguments.
func refRowCRC(row [][]byte) uint32 {
	var parts [][]byte
	flags := make([]byte, len(row))
	for i, v := range row {
		if v == nil {
			flags[i] = '1'
			continue
		}
		flags[i] = '0'
		parts = append(parts, v)
	}
	parts = append(parts, flags)
	return crc32.ChecksumIEEE(bytes.Join(parts, []byte("#")))
}

func TestRowChecksum(t *testing.T) {
	tests := []struct {
		row  [][]byte
		text string // the CONCAT_WS result
		crc  uint32 // computed independently (zlib.crc32)
	}{
		{bs("a", "b"), "a#b#00", 2796612070},
		{bs(nil, "x"), "x#10", 1430296776},
		{bs(nil, nil), "11", 3596227959},
		{bs("", ""), "##00", 1347887402},
		{bs("abc"), "abc#0", 566142172},
		{bs(nil), "1", 2212294583},
		{bs("a", nil, "c"), "a#c#010", 2574200948},
	}
	var all RowSum
	var rows [][][]byte
	for _, tc := range tests {
		if got := crc32.ChecksumIEEE([]byte(tc.text)); got != tc.crc {
			t.Fatalf("test table: crc32(%q) = %d, not %d", tc.text, got, tc.crc)
		}
		if got := refRowCRC(tc.row); got != tc.crc {
			t.Errorf("reference CRC of %q = %d, want %d", tc.row, got, tc.crc)
		}
		_, enc := encodeRows(t, [][][]byte{tc.row})
		if enc.sum != (RowSum{Xor: tc.crc, Sum: uint64(tc.crc)}) {
			t.Errorf("row %q: sum %+v, want xor=sum=%d (crc32 of %q)", tc.row, enc.sum, tc.crc, tc.text)
		}
		all.Add(tc.crc)
		rows = append(rows, tc.row)
	}
	// Rows of different widths share no file, but the sum folds anyway.
	var enc *rowEncoder
	{
		var buf bytes.Buffer
		w := bufio.NewWriter(&buf)
		enc = newRowEncoder(w)
		for _, r := range rows {
			if err := enc.writeRow(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	if enc.sum != all {
		t.Errorf("folded sum %+v, want %+v", enc.sum, all)
	}
	var wantXor uint32
	var wantSum uint64
	for _, tc := range tests {
		wantXor ^= tc.crc
		wantSum += uint64(tc.crc)
	}
	if all.Xor != wantXor || all.Sum != wantSum {
		t.Errorf("RowSum.Add: %+v, want xor %d sum %d", all, wantXor, wantSum)
	}
	if wantSum <= 1<<32 {
		t.Errorf("test expects the sum to exceed 32 bits (got %d)", wantSum)
	}
}

func TestRowSumFolding(t *testing.T) {
	rows := [][][]byte{bs("1", "a"), bs("2", nil), bs("3", ""), bs("4", `\N`), bs("5", "x\ty"), bs("6", "\x00")}
	_, whole := encodeRows(t, rows)
	// Order does not matter.
	rev := make([][][]byte, len(rows))
	for i, r := range rows {
		rev[len(rows)-1-i] = r
	}
	_, back := encodeRows(t, rev)
	if whole.sum != back.sum {
		t.Errorf("sum depends on row order: %+v vs %+v", whole.sum, back.sum)
	}
	// Merging the chunks' sums gives the table's.
	_, a := encodeRows(t, rows[:2])
	_, b := encodeRows(t, rows[2:])
	m := a.sum
	m.Merge(b.sum)
	if m != whole.sum {
		t.Errorf("merged %+v, want %+v", m, whole.sum)
	}
	var empty RowSum
	empty.Merge(whole.sum)
	if empty != whole.sum {
		t.Errorf("merge into zero = %+v, want %+v", empty, whole.sum)
	}
	// Per-row reference.
	var ref RowSum
	for _, r := range rows {
		ref.Add(refRowCRC(r))
	}
	if ref != whole.sum {
		t.Errorf("encoder sum %+v, reference %+v", whole.sum, ref)
	}
	// The same row twice cancels in Xor but not in Sum.
	_, twice := encodeRows(t, [][][]byte{rows[0], rows[0]})
	c := refRowCRC(rows[0])
	if twice.sum.Xor != 0 || twice.sum.Sum != 2*uint64(c) {
		t.Errorf("twice: %+v, want xor 0 sum %d", twice.sum, 2*uint64(c))
	}
}

// fuzzRow builds a row from fuzz input: fields separated by 0xfe (at most
// 12), NULL where the mask has a bit set.
func fuzzRow(data []byte, nulls uint16) [][]byte {
	fields := bytes.SplitN(data, []byte{0xfe}, 12)
	row := make([][]byte, len(fields))
	for i, f := range fields {
		if nulls&(1<<i) == 0 {
			row[i] = append([]byte{}, f...)
		}
	}
	return row
}

func FuzzRowRoundTrip(f *testing.F) {
	f.Add([]byte("a\xfeb"), uint16(0))
	f.Add([]byte("\xfe"), uint16(1))
	f.Add([]byte(`\N`+"\xfe\\N"), uint16(2))
	f.Add([]byte("a\tb\nc\rd\x00e\\\x1a\xff"), uint16(0))
	f.Add([]byte("\xfe\xfe\xfe"), uint16(0b1010))
	f.Add([]byte("trailing\\"), uint16(0))
	f.Fuzz(func(t *testing.T, data []byte, nulls uint16) {
		row := fuzzRow(data, nulls)
		other := make([][]byte, len(row))
		for i := range other {
			if i%2 == 0 {
				other[i] = []byte{}
			}
		}
		rows := [][][]byte{row, other, row}
		enc, e := encodeRows(t, rows)
		if e.bytes != int64(len(enc)) || e.rows != 3 {
			t.Fatalf("encoder counted %d rows %d bytes, wrote %d bytes", e.rows, e.bytes, len(enc))
		}
		if bytes.Count(enc, []byte{'\n'}) != 3 {
			t.Fatalf("encoded %q: want exactly 3 raw newlines", enc)
		}
		got := decodeRows(t, enc, len(row))
		if len(got) != 3 {
			t.Fatalf("decoded %d rows, want 3", len(got))
		}
		for i := range rows {
			if !sameRow(got[i], rows[i]) {
				t.Fatalf("row %d: decoded %q, want %q (file %q)", i, got[i], rows[i], enc)
			}
		}
		var ref RowSum
		for _, r := range rows {
			ref.Add(refRowCRC(r))
		}
		if e.sum != ref {
			t.Fatalf("checksum %+v, reference %+v", e.sum, ref)
		}
	})
}

// refEscape is the LOAD DATA escaping written out plainly.
func refEscape(v []byte) []byte {
	var out []byte
	for _, c := range v {
		switch c {
		case '\\':
			out = append(out, '\\', '\\')
		case '\t':
			out = append(out, '\\', 't')
		case '\n':
			out = append(out, '\\', 'n')
		case '\r':
			out = append(out, '\\', 'r')
		case 0:
			out = append(out, '\\', '0')
		default:
			out = append(out, c)
		}
	}
	return out
}

func escapeWith(t testing.TB, v []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := bufio.NewWriterSize(&buf, 16) // small: Write goes around the buffer too
	n, err := writeEscaped(w, v)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if n != buf.Len() {
		t.Fatalf("writeEscaped(%q) reported %d bytes, wrote %d", v, n, buf.Len())
	}
	return buf.Bytes()
}

// TestMaybeSpecial checks the 8-byte filter never misses a byte that needs
// escaping, whatever the other bytes of the word are.
func TestMaybeSpecial(t *testing.T) {
	special := func(c byte) bool { return c < 0x0e || c == '\\' }
	falsePos := 0
	for b := 0; b < 256; b++ {
		for f := 0; f < 256; f++ {
			for p := 0; p < 8; p++ {
				var word [8]byte
				for i := range word {
					word[i] = byte(f)
				}
				word[p] = byte(b)
				x := binary.LittleEndian.Uint64(word[:])
				has := special(byte(b)) || special(byte(f))
				got := maybeSpecial(x)
				if has && !got {
					t.Fatalf("maybeSpecial(% x) = false, but it holds a byte to escape", word)
				}
				if !has && got {
					falsePos++
				}
			}
		}
	}
	if falsePos > 0 {
		t.Logf("%d false positives (harmless: the scalar loop decides)", falsePos)
	}
}

func TestWriteEscapedPositions(t *testing.T) {
	specials := []byte{0, '\t', '\n', '\r', '\\', 0x01, 0x0b, 0x0d, 0x0e, 0x1a, 0x5b, 0x5d, 0x80, 0xff}
	for l := 0; l <= 24; l++ {
		base := bytes.Repeat([]byte{'x'}, l)
		if got := escapeWith(t, base); !bytes.Equal(got, base) {
			t.Fatalf("clean %q escaped to %q", base, got)
		}
		for p := 0; p < l; p++ {
			for _, s := range specials {
				v := bytes.Clone(base)
				v[p] = s
				if got, want := escapeWith(t, v), refEscape(v); !bytes.Equal(got, want) {
					t.Fatalf("writeEscaped(%q) = %q, want %q", v, got, want)
				}
				for q := p + 1; q < l; q += 3 {
					v2 := bytes.Clone(v)
					v2[q] = specials[(p+q)%len(specials)]
					if got, want := escapeWith(t, v2), refEscape(v2); !bytes.Equal(got, want) {
						t.Fatalf("writeEscaped(%q) = %q, want %q", v2, got, want)
					}
				}
			}
		}
	}
}

func FuzzWriteEscaped(f *testing.F) {
	f.Add([]byte("0123456\\89abcdef\x00"))
	f.Add([]byte("\t\n\r\\\x00"))
	f.Fuzz(func(t *testing.T, v []byte) {
		if got, want := escapeWith(t, v), refEscape(v); !bytes.Equal(got, want) {
			t.Fatalf("writeEscaped(%q) = %q, want %q", v, got, want)
		}
	})
}
