package fastzstd

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/klauspost/compress/huff0"
	"github.com/klauspost/compress/zstd"
)

// digits is table data an LZ matcher gains little on: sysbench's random
// digit groups.
func digits(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	var b bytes.Buffer
	for i := 1; b.Len() < n; i++ {
		fmt.Fprintf(&b, "%d\t%d\t", i, r.IntN(1000000))
		for g := range 10 {
			if g > 0 {
				b.WriteByte('-')
			}
			for range 11 {
				b.WriteByte(byte('0' + r.IntN(10)))
			}
		}
		b.WriteByte('\n')
	}
	return b.Bytes()[:n]
}

// text is repetitive table data: matches pay.
func text(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 2))
	words := []string{"pending", "shipped", "delivered", "cancelled", "2024-06-01 12:00:00", `{"kind":"order","items":[`, "customer", "EUR", "\\N"}
	var b bytes.Buffer
	for i := 1; b.Len() < n; i++ {
		fmt.Fprintf(&b, "%d", i)
		for range 6 {
			b.WriteByte('\t')
			b.WriteString(words[r.IntN(len(words))])
		}
		b.WriteByte('\n')
	}
	return b.Bytes()[:n]
}

func compress(t testing.TB, z *Writer, data []byte, pieces int) []byte {
	t.Helper()
	var out bytes.Buffer
	z.Reset(&out)
	r := rand.New(rand.NewPCG(uint64(len(data)), uint64(pieces)))
	p := data
	for len(p) > 0 {
		n := len(p)
		if pieces > 0 {
			n = min(len(p), 1+r.IntN(2*len(data)/pieces+1))
		}
		if _, err := z.Write(p[:n]); err != nil {
			t.Fatal(err)
		}
		p = p[n:]
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func decodeGo(t testing.TB, b []byte) []byte {
	t.Helper()
	d, err := zstd.NewReader(bytes.NewReader(b), zstd.WithDecoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	got, err := io.ReadAll(d)
	if err != nil {
		t.Fatalf("klauspost decoder: %v", err)
	}
	return got
}

func decodeCLI(t *testing.T, b []byte) []byte {
	t.Helper()
	if _, err := exec.LookPath("zstd"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("the zstd tool is not installed (make test-deps installs it)")
		}
		t.Skip("the zstd tool is not installed")
	}
	cmd := exec.Command("zstd", "-d", "-c", "-q")
	cmd.Stdin = bytes.NewReader(b)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	got, err := cmd.Output()
	if err != nil {
		t.Fatalf("zstd -d: %v: %s", err, stderr.String())
	}
	return got
}

func TestRoundTrip(t *testing.T) {
	z := NewWriter(nil)
	mixed := append(append(append([]byte{}, digits(3<<20, 1)...), text(3<<20, 2)...), digits(1<<20, 3)...)
	cases := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"one byte", []byte("x")},
		{"small", []byte("1\tabc\t\\N\n2\tdef\t\\N\n")},
		{"under 1 KiB", digits(700, 4)},
		{"one block exactly", digits(BlockSize, 5)},
		{"one block and a byte", digits(BlockSize+1, 6)},
		{"RLE", bytes.Repeat([]byte{'a'}, 3*BlockSize+17)},
		{"incompressible", func() []byte {
			b := make([]byte, 2*BlockSize+100)
			r := rand.New(rand.NewPCG(7, 7))
			for i := range b {
				b[i] = byte(r.Uint32())
			}
			return b
		}()},
		{"digits", digits(5<<20, 8)},
		{"text", text(5<<20, 9)},
		{"mixed", mixed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, pieces := range []int{0, 1000} {
				enc := compress(t, z, c.data, pieces)
				if got := decodeGo(t, enc); !bytes.Equal(got, c.data) {
					t.Fatalf("klauspost decoder: %d bytes back, want %d (pieces %d)", len(got), len(c.data), pieces)
				}
				if got := decodeCLI(t, enc); !bytes.Equal(got, c.data) {
					t.Fatalf("zstd -d: %d bytes back, want %d (pieces %d)", len(got), len(c.data), pieces)
				}
			}
		})
	}
}

// TestModes checks the choice: literals only on digits, LZ on text, both
// on data that changes, and a ratio close to the LZ encoder's.
func TestModes(t *testing.T) {
	lzOnly, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(LZWindow), zstd.WithEncoderCRC(false))
	for _, c := range []struct {
		name       string
		data       []byte
		lit, lz    bool
		worstRatio float64 // of our size to the LZ encoder's
	}{
		{"digits", digits(8<<20, 10), true, false, 1.02},
		{"text", text(8<<20, 11), false, true, 1.05},
		{"digits then text", append(digits(8<<20, 12), text(8<<20, 13)...), true, true, 1.05},
	} {
		t.Run(c.name, func(t *testing.T) {
			z := NewWriter(nil)
			enc := compress(t, z, c.data, 0)
			st := z.Stats()
			if (st.LiteralBlocks > 0) != c.lit || (st.LZBlocks > 0) != c.lz {
				t.Errorf("blocks: %d literals only, %d LZ; want literals %v, LZ %v", st.LiteralBlocks, st.LZBlocks, c.lit, c.lz)
			}
			if st.Probes == 0 || st.Probes > int64(len(c.data)/BlockSize/probeMin+2) {
				t.Errorf("%d probes for %d blocks", st.Probes, len(c.data)/BlockSize)
			}
			ref := lzOnly.EncodeAll(c.data, nil)
			ratio := float64(len(enc)) / float64(len(ref))
			t.Logf("%s: %d bytes -> %d (LZ encoder alone: %d, %.3f of it); %+v", c.name, len(c.data), len(enc), len(ref), ratio, st)
			if ratio > c.worstRatio {
				t.Errorf("output is %.3f of the LZ encoder's size, want at most %.2f", ratio, c.worstRatio)
			}
			if got := decodeGo(t, enc); !bytes.Equal(got, c.data) {
				t.Fatal("round trip differs")
			}
		})
	}
}

// TestWriterErrors: a failing destination stops the Writer with its error,
// and Reset makes it usable again.
func TestWriterErrors(t *testing.T) {
	z := NewWriter(failAfter{n: 10})
	_, err := z.Write(digits(3*BlockSize, 14))
	if err == nil {
		err = z.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("error %v, want the destination's", err)
	}
	if _, err := z.Write([]byte("x")); err == nil {
		t.Fatal("a Write after an error succeeded")
	}
	enc := compress(t, z, []byte("after reset"), 0)
	if got := decodeGo(t, enc); string(got) != "after reset" {
		t.Fatalf("after Reset: %q", got)
	}
	if _, err := z.Write([]byte("x")); err == nil {
		t.Fatal("a Write after Close succeeded")
	}
}

type failAfter struct{ n int }

func (f failAfter) Write(p []byte) (int, error) { return 0, fmt.Errorf("disk full") }

func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte("1\tabc\n"), uint8(0))
	f.Add(digits(3000, 15), uint8(3))
	z := NewWriter(nil)
	f.Fuzz(func(t *testing.T, data []byte, rep uint8) {
		// Repeat the input so that it spans blocks now and then.
		in := bytes.Repeat(data, 1+int(rep)%64)
		in = in[:min(len(in), 1<<20)]
		enc := compress(t, z, in, int(rep))
		if got := decodeGo(t, enc); !bytes.Equal(got, in) {
			t.Fatalf("round trip: %d bytes back, want %d", len(got), len(in))
		}
	})
}

func BenchmarkWriter(b *testing.B) {
	for _, c := range []struct {
		name string
		data []byte
	}{{"digits", digits(16<<20, 16)}, {"text", text(16<<20, 17)}} {
		b.Run(c.name+"/fastzstd", func(b *testing.B) {
			z := NewWriter(io.Discard)
			b.SetBytes(int64(len(c.data)))
			for b.Loop() {
				z.Reset(io.Discard)
				_, _ = z.Write(c.data)
				_ = z.Close()
			}
		})
		b.Run(c.name+"/klauspost-fastest", func(b *testing.B) {
			e, _ := zstd.NewWriter(io.Discard, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(LZWindow), zstd.WithEncoderCRC(false))
			b.SetBytes(int64(len(c.data)))
			for b.Loop() {
				e.Reset(io.Discard)
				_, _ = e.Write(c.data)
				_ = e.Close()
			}
		})
	}
}

func huff0Compress4X(b []byte, z *Writer) ([]byte, bool, error) {
	z.huff.Reuse = huff0.ReusePolicyNone
	return huff0.Compress4X(b, &z.huff)
}
