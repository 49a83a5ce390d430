package fastzstd

import (
	"encoding/binary"
	"slices"
)

// A Huffman literals encoder for the common case of table data (numbers,
// dates, ASCII text: blocks of 1 KiB or more whose byte values are all
// below 129 and that have at most pairMaxSyms distinct values), about a
// fifth faster than huff0's, which the Writer uses otherwise. It codes two
// bytes per table lookup: a table indexed by byte pairs holds both codes
// already joined, filled for the pairs of the block's symbols only. The
// output is zstd's four-stream Huffman literals (RFC 8878 §4.2.1) with the
// tree description in the direct representation (4-bit weights), which
// needs no FSE coding of the weights.

const (
	maxCodeBits  = 11  // zstd's Max_Number_of_Bits
	maxDirectSym = 128 // the direct representation has weights for symbols 0..127 (the last one's is implied)
	pairMaxSyms  = 64  // at most 4096 pair entries to fill per block
)

type huffEncoder struct {
	counts [4][256]uint32
	code   [256]uint32 // value | bits<<16; 0 for absent symbols
	pair   []uint32    // [a | b<<8]: code(b) | code(a)<<bits(b), bits in the top 10 bits; stale for absent pairs
	order  []uint16    // scratch for building
	nodes  []hnode
	depth  []uint8
	work   []uint64
}

type hnode struct {
	count  uint64
	parent int32
}

// encode appends src's Huffman-coded literals (the tree description, the
// jump table and four streams: what a Compressed_Literals_Block holds
// after its header) to dst. ok is false, and dst unchanged, when src is
// not for this encoder.
func (h *huffEncoder) encode(dst, src []byte) (out []byte, ok bool) {
	if len(src) < 1024 || len(src) > BlockSize {
		return dst, false
	}
	var total [256]uint32
	h.count(src, &total)
	maxSym, distinct := -1, 0
	var syms [256]byte
	for s := range 256 {
		if total[s] != 0 {
			maxSym = s
			syms[distinct] = byte(s)
			distinct++
		}
	}
	if maxSym > maxDirectSym || distinct < 2 || distinct > pairMaxSyms {
		return dst, false
	}
	var lengths [256]uint8
	maxBits := h.lengths(total[:maxSym+1], lengths[:maxSym+1])
	h.assign(lengths[:maxSym+1], maxBits)
	if h.pair == nil {
		h.pair = make([]uint32, 1<<16)
	}
	for _, a := range syms[:distinct] {
		ca := h.code[a]
		for _, b := range syms[:distinct] {
			cb := h.code[b]
			lb := cb >> 16
			h.pair[int(a)|int(b)<<8] = (cb&0xffff | (ca&0xffff)<<lb) | (lb+ca>>16)<<22
		}
	}

	// Tree description, direct representation: a header byte of 127 plus
	// the number of weights, then the weights of symbols 0..maxSym-1,
	// 4 bits each, high nibble first. Weight = maxBits + 1 - length.
	start := len(dst)
	weight := func(s int) byte {
		if lengths[s] == 0 {
			return 0
		}
		return byte(maxBits + 1 - int(lengths[s]))
	}
	dst = append(dst, byte(127+maxSym))
	for s := 0; s < maxSym; s += 2 {
		b := weight(s) << 4
		if s+1 < maxSym {
			b |= weight(s + 1)
		}
		dst = append(dst, b)
	}

	// Jump table (the sizes of the first three streams), then the streams:
	// the first three of (len+3)/4 bytes, the last one the rest.
	jump := len(dst)
	dst = append(dst, 0, 0, 0, 0, 0, 0)
	seg := (len(src) + 3) / 4
	for i := range 4 {
		from := len(dst)
		dst = h.stream(dst, src[i*seg:min((i+1)*seg, len(src))])
		if i < 3 {
			n := len(dst) - from
			if n > 0xffff {
				return dst[:start], false // cannot be: 32 KiB of input codes to at most 44 KiB
			}
			binary.LittleEndian.PutUint16(dst[jump+2*i:], uint16(n))
		}
	}
	return dst, true
}

// count fills total with the byte histogram of src, in four interleaved
// tables (no store-to-load stall on runs of one value).
func (h *huffEncoder) count(src []byte, total *[256]uint32) {
	c0, c1, c2, c3 := &h.counts[0], &h.counts[1], &h.counts[2], &h.counts[3]
	*c0, *c1, *c2, *c3 = [256]uint32{}, [256]uint32{}, [256]uint32{}, [256]uint32{}
	i := 0
	for ; i+4 <= len(src); i += 4 {
		c0[src[i]]++
		c1[src[i+1]]++
		c2[src[i+2]]++
		c3[src[i+3]]++
	}
	for ; i < len(src); i++ {
		c0[src[i]]++
	}
	for s := range total {
		total[s] = c0[s] + c1[s] + c2[s] + c3[s]
	}
}

// lengths sets the Huffman code length of every symbol with a count (0
// for the others), at most maxCodeBits, and returns the longest. When the
// optimal code is deeper, the counts are halved (kept above zero) until
// it fits: a slightly worse code, only for very skewed blocks.
func (h *huffEncoder) lengths(counts []uint32, lengths []uint8) int {
	h.work = h.work[:0]
	for _, c := range counts {
		h.work = append(h.work, uint64(c))
	}
	for {
		if m := h.build(h.work, lengths); m <= maxCodeBits {
			return m
		}
		for s := range h.work {
			if h.work[s] != 0 {
				h.work[s] = h.work[s]>>1 | 1
			}
		}
	}
}

// build computes optimal code lengths with the two-queue method over the
// symbols sorted by count, and returns the longest.
func (h *huffEncoder) build(counts []uint64, lengths []uint8) int {
	h.order = h.order[:0]
	for s, c := range counts {
		lengths[s] = 0
		if c != 0 {
			h.order = append(h.order, uint16(s))
		}
	}
	slices.SortFunc(h.order, func(a, b uint16) int {
		switch {
		case counts[a] < counts[b]:
			return -1
		case counts[a] > counts[b]:
			return 1
		}
		return int(a) - int(b)
	})
	// Nodes 0..n-1 are the leaves in order; n.. the internal nodes, made
	// in order of increasing count.
	n := len(h.order)
	h.nodes = h.nodes[:0]
	for _, s := range h.order {
		h.nodes = append(h.nodes, hnode{count: counts[s], parent: -1})
	}
	leaf, inner := 0, n
	pick := func() int {
		if leaf < n && (inner >= len(h.nodes) || h.nodes[leaf].count <= h.nodes[inner].count) {
			leaf++
			return leaf - 1
		}
		inner++
		return inner - 1
	}
	for range n - 1 {
		a, b := pick(), pick()
		h.nodes = append(h.nodes, hnode{count: h.nodes[a].count + h.nodes[b].count, parent: -1})
		p := int32(len(h.nodes) - 1)
		h.nodes[a].parent, h.nodes[b].parent = p, p
	}
	// Depths from the root (the last node) down: a parent always comes
	// after its children.
	h.depth = append(h.depth[:0], make([]uint8, len(h.nodes))...)
	maxLen := 0
	for i := len(h.nodes) - 2; i >= 0; i-- {
		h.depth[i] = h.depth[h.nodes[i].parent] + 1
		if i < n {
			lengths[h.order[i]] = h.depth[i]
			maxLen = max(maxLen, int(h.depth[i]))
		}
	}
	return maxLen
}

// assign gives the codes in zstd's canonical order: from the longest
// codes to the shortest, the symbols of one length in increasing order,
// values counting up from 0 (RFC 8878 §4.2.1.1).
func (h *huffEncoder) assign(lengths []uint8, maxBits int) {
	var perLen [maxCodeBits + 2]uint32
	for _, l := range lengths {
		perLen[l]++
	}
	var next [maxCodeBits + 2]uint32
	for l := maxBits - 1; l >= 1; l-- {
		next[l] = (next[l+1] + perLen[l+1]) >> 1
	}
	h.code = [256]uint32{}
	for s, l := range lengths {
		if l != 0 {
			h.code[s] = next[l] | uint32(l)<<16
			next[l]++
		}
	}
}

// stream appends src coded as one Huffman stream: its symbols from the
// last to the first (the decoder reads a stream backwards), then a 1 bit
// that marks where the stream starts, padded to a byte. Four symbols (two
// pair lookups, at most 44 bits) go into the 64-bit container per 8-byte
// write.
func (h *huffEncoder) stream(dst, src []byte) []byte {
	pos := len(dst)
	dst = slices.Grow(dst, len(src)*maxCodeBits/8+16)
	buf := dst[:cap(dst)]
	code, pair := &h.code, h.pair[:1<<16]
	var c uint64
	var n uint
	// The last len%4 symbols one by one (at most 33 bits), so that the
	// rest is whole groups of four.
	i := len(src)
	for range len(src) & 3 {
		i--
		e := code[src[i]]
		c |= uint64(e&0xffff) << n
		n += uint(e >> 16)
	}
	for i -= 4; i >= 0; i -= 4 {
		binary.LittleEndian.PutUint64(buf[pos:], c)
		pos += int(n >> 3)
		c >>= n >> 3 << 3
		n &= 7
		w := binary.LittleEndian.Uint32(src[i:])
		e := pair[uint16(w>>16)] // src[i+3], then src[i+2]
		c |= uint64(e&0x3fffff) << n
		n += uint(e >> 22)
		e = pair[uint16(w)] // src[i+1], then src[i]
		c |= uint64(e&0x3fffff) << n
		n += uint(e >> 22)
	}
	c |= 1 << n
	n++
	binary.LittleEndian.PutUint64(buf[pos:], c)
	pos += int(n+7) >> 3
	return dst[:pos]
}
