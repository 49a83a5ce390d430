package fastzstd

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestHuffmanEncoder round-trips blocks made for the fast encoder's edge
// cases through the Writer (klauspost's decoder and the zstd tool),
// checking that the fast encoder took them, and what it leaves to huff0.
func TestHuffmanEncoder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	fib := func(n int) []byte {
		// Counts 1, 1, 2, 3, 5, 8, ...: the optimal code is as deep as
		// there are symbols; past 11 bits the lengths must be limited.
		var b []byte
		a, c := 1, 1
		for s := 0; len(b) < n; s++ {
			b = append(b, bytes.Repeat([]byte{byte('A' + s%40)}, a)...)
			a, c = c, a+c
		}
		b = b[:n]
		r.Shuffle(len(b), func(i, j int) { b[i], b[j] = b[j], b[i] })
		return b
	}
	alphabet := func(n int, syms ...byte) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = syms[r.IntN(len(syms))]
		}
		return b
	}
	span := func(from, to int) []byte {
		var s []byte
		for c := from; c <= to; c++ {
			s = append(s, byte(c))
		}
		return s
	}
	cases := []struct {
		name string
		data []byte
	}{
		{"two symbols", alphabet(5000, 'a', 'b')},
		{"two symbols, one rare", append(bytes.Repeat([]byte{'a'}, 8000), 'b')},
		{"symbol 0 and 128", alphabet(3000, 0, 128)},
		{"64 symbols up to 128", alphabet(BlockSize, span(65, 128)...)},
		{"odd number of weights", alphabet(2048, 'a', 'b', 'c')},
		{"skewed: lengths limited", fib(BlockSize)},
		{"1024 bytes", digits(1024, 3)},
		{"1025 bytes", digits(1025, 4)},
		{"1026 bytes", digits(1026, 4)},
		{"1027 bytes", digits(1027, 4)},
		{"16383 bytes", digits(1<<14-1, 5)},
		{"16384 bytes", digits(1<<14, 6)},
		{"a full block", digits(BlockSize, 7)},
	}
	var h huffEncoder
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, ok := h.encode(nil, c.data); !ok {
				t.Fatal("the fast encoder refused it")
			}
			z := NewWriter(nil)
			enc := compress(t, z, c.data, 0)
			if got := decodeGo(t, enc); !bytes.Equal(got, c.data) {
				t.Fatalf("klauspost decoder: %d bytes back, want %d", len(got), len(c.data))
			}
			if got := decodeCLI(t, enc); !bytes.Equal(got, c.data) {
				t.Fatalf("zstd -d: %d bytes back, want %d", len(got), len(c.data))
			}
		})
	}
	for name, b := range map[string][]byte{
		"short":           digits(1023, 8),
		"a byte over 128": append(digits(2000, 9), 129),
		"one symbol":      bytes.Repeat([]byte{'x'}, 2000),
		"65 symbols":      alphabet(4000, span(40, 104)...),
	} {
		if out, ok := h.encode([]byte("keep"), b); ok || string(out) != "keep" {
			t.Errorf("%s: taken (%v) or dst changed (%q)", name, ok, out[:min(len(out), 8)])
		}
	}
	// Length limiting keeps every code within 11 bits and the code complete.
	var lengths [256]uint8
	counts := make([]uint32, 40)
	a, c := uint32(1), uint32(1)
	for i := range counts {
		counts[i] = a
		a, c = c, a+c
	}
	maxBits := h.lengths(counts, lengths[:40])
	kraft := 0
	for _, l := range lengths[:40] {
		if l == 0 || int(l) > maxCodeBits {
			t.Fatalf("length %d", l)
		}
		kraft += 1 << (maxBits - int(l))
	}
	if maxBits > maxCodeBits || kraft != 1<<maxBits {
		t.Fatalf("max %d bits, Kraft sum %d, want %d", maxBits, kraft, 1<<maxBits)
	}
}

// TestHuffmanCanonical checks the code assignment against RFC 8878's
// example: weights 4 3 2 0 1 1 give 1, 01, 001, -, 0000, 0001.
func TestHuffmanCanonical(t *testing.T) {
	var h huffEncoder
	h.assign([]uint8{1, 2, 3, 0, 4, 4}, 4)
	for s, want := range []string{"1", "01", "001", "", "0000", "0001"} {
		e := h.code[s]
		got := ""
		for i := int(e>>16) - 1; i >= 0; i-- {
			got += string(rune('0' + e>>i&1))
		}
		if got != want {
			t.Errorf("symbol %d: code %q, want %q", s, got, want)
		}
	}
}

func BenchmarkHuffman(b *testing.B) {
	data := digits(BlockSize, 20)
	var h huffEncoder
	out := make([]byte, 0, 2*BlockSize)
	b.Run("fast", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			out, _ = h.encode(out[:0], data)
		}
	})
	b.Run("huff0", func(b *testing.B) {
		z := NewWriter(nil)
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			_, _, _ = huff0Compress4X(data, z)
		}
	})
}
