package mysql

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	gmysql "github.com/go-mysql-org/go-mysql/mysql"
)

// lenenc appends s as a length-encoded string (nil as NULL).
func lenenc(dst []byte, s []byte) []byte {
	if s == nil {
		return append(dst, 0xfb)
	}
	return append(append(dst, gmysql.PutLengthEncodedInt(uint64(len(s)))...), s...)
}

func row(vals ...[]byte) []byte {
	var b []byte
	for _, v := range vals {
		b = append(b, lenenc(nil, v)...)
	}
	return b
}

func TestParseTextRow(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 70000) // a 3-byte length
	mid := bytes.Repeat([]byte("y"), 300)   // a 2-byte length
	data := row([]byte("1"), nil, []byte{}, mid, big, []byte("\x00\t\n\\"))
	vals := make([][]byte, 6)
	if err := parseTextRow(data, vals); err != nil {
		t.Fatal(err)
	}
	want := [][]byte{[]byte("1"), nil, {}, mid, big, []byte("\x00\t\n\\")}
	for i := range want {
		if (vals[i] == nil) != (want[i] == nil) || !bytes.Equal(vals[i], want[i]) {
			t.Errorf("column %d: %q, want %q", i, vals[i], want[i])
		}
	}
	// Appending to a value must not overwrite the next one.
	_ = append(vals[0], 'Z')
	if vals[1] != nil || len(vals[2]) != 0 || vals[3][0] != 'y' {
		t.Error("a value's capacity reaches into the next")
	}
	for name, bad := range map[string][]byte{
		"too few columns": row([]byte("1")),
		"too many bytes":  append(data, 'x'),
		"value too long":  {5, 'a', 'b'},
		"bad prefix":      {0xff},
		"short prefix":    {0xfc, 1},
	} {
		if err := parseTextRow(bad, make([][]byte, 6)); err == nil || !errors.Is(err, gmysql.ErrMalformPacket) {
			t.Errorf("%s: %v, want a malformed packet error", name, err)
		}
	}
}

// packet frames payload as one or more protocol packets from sequence seq.
func packet(seq *uint8, payload []byte) []byte {
	var out []byte
	for {
		n := min(len(payload), maxPayload)
		out = append(out, byte(n), byte(n>>8), byte(n>>16), *seq)
		*seq++
		out = append(out, payload[:n]...)
		payload = payload[n:]
		if n < maxPayload {
			return out
		}
	}
}

func TestPacketReader(t *testing.T) {
	var seq uint8
	small := []byte("hello")
	huge := bytes.Repeat([]byte("abcdefgh"), maxPayload/8+10) // two packets
	exact := bytes.Repeat([]byte("z"), maxPayload)            // a full packet, then an empty one
	var stream []byte
	for _, p := range [][]byte{small, huge, exact, small} {
		stream = append(stream, packet(&seq, p)...)
	}
	// One byte per read: every refill path is taken.
	for name, r := range map[string]io.Reader{"whole": bytes.NewReader(stream), "one byte": iotest.OneByteReader(bytes.NewReader(stream))} {
		t.Run(name, func(t *testing.T) {
			p := &packetReader{r: r, buf: make([]byte, 64)}
			var s uint8
			for i, want := range [][]byte{small, huge, exact, small} {
				got, err := p.next(&s)
				if err != nil {
					t.Fatalf("packet %d: %v", i, err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("packet %d: %d bytes, want %d", i, len(got), len(want))
				}
			}
			if err := p.idle(); err != nil {
				t.Fatal(err)
			}
			if _, err := p.next(&s); !errors.Is(err, gmysql.ErrBadConn) {
				t.Fatalf("read past the end: %v, want ErrBadConn", err)
			}
		})
	}
	// A wrong sequence number.
	var s0 uint8 = 3
	bad := packet(&s0, small)
	p := &packetReader{r: bytes.NewReader(bad), buf: make([]byte, 64)}
	var s uint8
	if _, err := p.next(&s); err == nil || !strings.Contains(err.Error(), "sequence") {
		t.Fatalf("sequence 3 read as 0: %v", err)
	}
}

func TestErrPacket(t *testing.T) {
	e := errPacket(append([]byte{0xff, 0x7a, 0x04, '#', '4', '2', 'S', '0', '2'}, "Table 'x.y' doesn't exist"...))
	var me *gmysql.MyError
	if !errors.As(e, &me) || me.Code != 1146 || me.State != "42S02" || me.Message != "Table 'x.y' doesn't exist" {
		t.Fatalf("%#v", e)
	}
}

func FuzzParseTextRow(f *testing.F) {
	f.Add(row([]byte("1"), nil, []byte("abc")), uint8(3))
	f.Add([]byte{0xfe, 1, 0, 0, 0, 0, 0, 0, 0, 'x'}, uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, n uint8) {
		vals := make([][]byte, int(n)%40)
		if err := parseTextRow(data, vals); err != nil {
			return
		}
		// What parsed re-encodes to the same bytes.
		if got := row(vals...); len(vals) > 0 && len(got) > len(data) {
			t.Fatalf("re-encoded %d bytes from %d", len(got), len(data))
		}
	})
}
