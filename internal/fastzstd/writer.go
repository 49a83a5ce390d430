// Package fastzstd writes standard zstd streams (RFC 8878) for CPU-bound
// producers such as dump workers, where the compressor's cost decides the
// dump's speed.
//
// Table data is often mostly literals to an LZ matcher: random-looking
// strings, digits, hashes, UUIDs. On such data zstd's match finder spends
// most of the time and saves little; entropy coding of the literals alone
// (Huffman, as zstd codes literals) gives nearly the whole ratio at about
// twice the speed. On repetitive data (text, JSON, repeated values) the
// matches matter. The Writer decides by measuring: every few blocks it
// compresses one block both ways and keeps the LZ encoder only while it
// saves at least a fifth over the literals-only encoding; in literals-only
// mode a block that codes differently from the probed one (the data
// changed) is followed by a probe at once.
//
// The output is a sequence of ordinary zstd frames, readable by any zstd
// decoder (the zstd and mariadb-backup tools, klauspost/compress, libzstd):
//   - literals-only frames: a 128 KiB window, blocks of up to 128 KiB, each a
//     compressed block whose literals section is Huffman-coded and whose
//     sequence section is empty (or a raw or RLE block when that is smaller),
//     the frame ended by an empty last block;
//   - LZ frames from klauspost/compress's encoder (SpeedFastest, one
//     goroutine, LZWindow bytes of window), for the runs of blocks where
//     matching pays.
//
// Frames carry no checksum: callers checksum whole files themselves.
package fastzstd

import (
	"encoding/binary"
	"errors"
	"io"

	"github.com/klauspost/compress/huff0"
	"github.com/klauspost/compress/zstd"
)

const (
	// BlockSize is the largest block (and the window) of a literals-only
	// frame: zstd's Block_Maximum_Size.
	BlockSize = 128 << 10
	// LZWindow is the LZ frames' window: memory per Writer stays bounded.
	LZWindow = 1 << 20

	// lzGain: the LZ encoder is used while its output for a probed block
	// is at most this fraction of the literals-only output.
	lzGain = 0.8
	// Probing interval, in blocks: starts at probeMin, doubles after each
	// probe that confirms the mode, up to probeMax; back to probeMin when
	// the mode changes.
	probeMin = 8
	probeMax = 64
	// litDrift: in literals-only mode, a block whose coded size differs
	// by more than this fraction from the probed block's is followed by a
	// probe.
	litDrift = 0.1

	magic           = 0xFD2FB528
	blockTypeRaw    = 0
	blockTypeRLE    = 1
	blockTypeComp   = 2
	litTypeCompress = 2
)

// Stats counts what a Writer did since it was created.
type Stats struct {
	LiteralBlocks int64 // blocks written in literals-only frames
	LZBlocks      int64 // blocks' worth of data written through the LZ encoder
	Probes        int64 // blocks compressed both ways to choose
}

// Writer compresses what is written to it onto an io.Writer. It is not
// safe for concurrent use. Close ends the stream; Reset starts another,
// reusing the buffers and encoders (one Writer per worker, reset per file).
type Writer struct {
	out io.Writer
	err error

	block []byte // pending input, up to BlockSize
	frame []byte // output being assembled (one block, or a frame header plus one block)

	huff huff0.Scratch
	fast huffEncoder
	lz   *zstd.Encoder // streaming, while in LZ mode
	lzOn bool          // an LZ frame is open on out
	lit  bool          // a literals-only frame is open on out
	use  bool          // current mode: LZ (true) or literals only (false)

	probe      *zstd.Encoder // EncodeAll of probed blocks
	probeBuf   []byte
	probeLit   []byte  // the probed block's literals-only encoding
	probed     bool    // probeLit is the current block's
	litRatio   float64 // literals-only size / input size at the last probe
	untilProbe int     // blocks before the next probe
	interval   int

	stats Stats
}

// NewWriter returns a Writer that writes to w (which may be nil until Reset).
func NewWriter(w io.Writer) *Writer {
	opts := []zstd.EOption{zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1),
		zstd.WithWindowSize(LZWindow), zstd.WithEncoderCRC(false)}
	lz, err := zstd.NewWriter(nil, opts...)
	if err != nil {
		panic("fastzstd: " + err.Error()) // only for invalid options, which these are not
	}
	probe, err := zstd.NewWriter(nil, opts...)
	if err != nil {
		panic("fastzstd: " + err.Error())
	}
	z := &Writer{lz: lz, probe: probe, block: make([]byte, 0, BlockSize)}
	z.Reset(w)
	return z
}

// Reset discards the Writer's state and starts a new stream on w. The
// first block of every stream is probed.
func (z *Writer) Reset(w io.Writer) {
	z.out = w
	z.err = nil
	z.block = z.block[:0]
	z.lzOn, z.lit, z.use = false, false, false
	z.untilProbe, z.interval = 0, probeMin
}

// Stats returns the counts since NewWriter.
func (z *Writer) Stats() Stats { return z.stats }

// Write buffers p and compresses every full block.
func (z *Writer) Write(p []byte) (int, error) {
	if z.err != nil {
		return 0, z.err
	}
	n := len(p)
	for len(p) > 0 {
		if len(z.block) == 0 && len(p) >= BlockSize {
			// A whole block straight from the caller's buffer.
			if err := z.writeBlock(p[:BlockSize]); err != nil {
				return n - len(p), err
			}
			p = p[BlockSize:]
			continue
		}
		m := copy(z.block[len(z.block):BlockSize], p)
		z.block = z.block[:len(z.block)+m]
		p = p[m:]
		if len(z.block) == BlockSize {
			if err := z.writeBlock(z.block); err != nil {
				return n - len(p), err
			}
			z.block = z.block[:0]
		}
	}
	return n, nil
}

// Close compresses what is buffered and ends the open frame. It does not
// close the underlying writer. An empty stream is written as one empty
// frame, as other zstd encoders do.
func (z *Writer) Close() error {
	if z.err != nil {
		return z.err
	}
	if len(z.block) > 0 {
		if err := z.writeBlock(z.block); err != nil {
			return err
		}
		z.block = z.block[:0]
	}
	if !z.lzOn && !z.lit {
		z.startLiteralFrame()
	}
	if err := z.endFrames(); err != nil {
		return err
	}
	z.err = errClosed
	return nil
}

var errClosed = errors.New("fastzstd: write after Close")

// writeBlock compresses one block of at most BlockSize bytes in the
// current mode, probing first when it is time.
func (z *Writer) writeBlock(b []byte) error {
	z.probed = false
	if z.untilProbe == 0 {
		z.choose(b)
	} else {
		z.untilProbe--
	}
	if z.use {
		z.stats.LZBlocks++
		if z.lit {
			if err := z.endFrames(); err != nil {
				return err
			}
		}
		if !z.lzOn {
			z.lz.Reset(z.out)
			z.lzOn = true
		}
		if _, err := z.lz.Write(b); err != nil {
			z.err = err
			return err
		}
		return nil
	}
	z.stats.LiteralBlocks++
	if z.lzOn {
		if err := z.endFrames(); err != nil {
			return err
		}
	}
	z.frame = z.frame[:0]
	if !z.lit {
		z.startLiteralFrame()
	}
	if z.probed {
		z.frame = append(z.frame, z.probeLit...)
	} else {
		st := len(z.frame)
		z.frame = z.appendLiteralBlock(z.frame, b, false)
		// Data that codes differently from the probed block: probe the
		// next block at once (matches may pay now).
		if r := float64(len(z.frame)-st) / float64(len(b)); r < z.litRatio*(1-litDrift) || r > z.litRatio*(1+litDrift) {
			z.untilProbe, z.interval = 0, probeMin
		}
	}
	return z.flush()
}

// choose compresses b both ways and sets the mode for the next blocks.
func (z *Writer) choose(b []byte) {
	z.stats.Probes++
	z.probeLit = z.appendLiteralBlock(z.probeLit[:0], b, false)
	z.probed = true
	lit := len(z.probeLit)
	z.litRatio = float64(lit) / float64(len(b))
	z.probeBuf = z.probe.EncodeAll(b, z.probeBuf[:0])
	lz := len(z.probeBuf)
	use := float64(lz) <= lzGain*float64(lit)
	if use == z.use {
		z.interval = min(z.interval*2, probeMax)
	} else {
		z.interval = probeMin
	}
	z.use = use
	z.untilProbe = z.interval - 1
}

// startLiteralFrame appends a literals-only frame's header to z.frame:
// no dictionary, no content size, no checksum, a 128 KiB window.
func (z *Writer) startLiteralFrame() {
	z.frame = binary.LittleEndian.AppendUint32(z.frame, magic)
	z.frame = append(z.frame,
		0x00, // Frame_Header_Descriptor: not single segment, no checksum, no dictionary, no size
		7<<3, // Window_Descriptor: exponent 7, mantissa 0: 2^(10+7) = 128 KiB
	)
	z.lit = true
}

// endFrames ends the open frame: the LZ encoder's, or a literals-only
// one with an empty last block.
func (z *Writer) endFrames() error {
	if z.lzOn {
		z.lzOn = false
		if err := z.lz.Close(); err != nil {
			z.err = err
			return err
		}
	}
	if z.lit {
		z.lit = false
		z.frame = appendBlockHeader(z.frame, true, blockTypeRaw, 0)
		return z.flush()
	}
	return nil
}

func (z *Writer) flush() error {
	if len(z.frame) == 0 {
		return nil
	}
	_, err := z.out.Write(z.frame)
	z.frame = z.frame[:0]
	if err != nil {
		z.err = err
	}
	return err
}

// appendLiteralBlock appends b as one block: compressed (Huffman-coded
// literals, no sequences), RLE or raw, whichever is smallest.
func (z *Writer) appendLiteralBlock(dst, b []byte, last bool) []byte {
	if len(b) >= 1024 {
		// The fast encoder, coding in place after room for the block
		// header and the literals header (4 bytes under 16 KiB, else 5:
		// the compressed size is below the regenerated one, or the block
		// is stored raw).
		hl := 5
		if len(b) < 1<<14 {
			hl = 4
		}
		st := len(dst)
		out, ok := z.fast.encode(append(dst, make([]byte, 3+hl)...), b)
		if ok {
			comp := len(out) - st - 3 - hl
			size := hl + comp + 1
			if size < len(b) && literalsHeaderLen(len(b), comp, false) == hl {
				hdr := appendBlockHeader(out[st:st], last, blockTypeComp, size)
				appendLiteralsHeader(hdr, len(b), comp, false)
				return append(out, 0) // Number_of_Sequences = 0
			}
			dst = appendBlockHeader(out[:st], last, blockTypeRaw, len(b))
			return append(dst, b...)
		}
		dst = out[:st]
	}
	z.huff.Reuse = huff0.ReusePolicyNone
	var (
		enc []byte
		err error
	)
	switch {
	case len(b) >= 1024:
		enc, _, err = huff0.Compress4X(b, &z.huff)
	case len(b) > 16:
		enc, _, err = huff0.Compress1X(b, &z.huff)
	default:
		err = huff0.ErrIncompressible
	}
	switch {
	case errors.Is(err, huff0.ErrUseRLE):
		dst = appendBlockHeader(dst, last, blockTypeRLE, len(b))
		return append(dst, b[0])
	case err != nil:
		// Incompressible, or too small to bother.
		dst = appendBlockHeader(dst, last, blockTypeRaw, len(b))
		return append(dst, b...)
	}
	single := len(b) < 1024
	size := literalsHeaderLen(len(b), len(enc), single) + len(enc) + 1 // + the sequences section: Number_of_Sequences = 0
	if size >= len(b) {
		dst = appendBlockHeader(dst, last, blockTypeRaw, len(b))
		return append(dst, b...)
	}
	dst = appendBlockHeader(dst, last, blockTypeComp, size)
	dst = appendLiteralsHeader(dst, len(b), len(enc), single)
	dst = append(dst, enc...)
	return append(dst, 0)
}

// appendBlockHeader appends a Block_Header: Last_Block, Block_Type and
// Block_Size (the regenerated size of an RLE block) in 3 little-endian bytes.
func appendBlockHeader(dst []byte, last bool, typ, size int) []byte {
	h := uint32(size)<<3 | uint32(typ)<<1
	if last {
		h |= 1
	}
	return append(dst, byte(h), byte(h>>8), byte(h>>16))
}

// literalsHeaderLen is the size of the Literals_Section_Header that
// appendLiteralsHeader writes.
func literalsHeaderLen(regen, comp int, single bool) int {
	switch {
	case single, regen < 1<<10 && comp < 1<<10:
		return 3
	case regen < 1<<14 && comp < 1<<14:
		return 4
	}
	return 5
}

// appendLiteralsHeader appends the Literals_Section_Header of a
// Compressed_Literals_Block of regen bytes coded in comp bytes (the
// Huffman tree description included): one stream with 10-bit sizes
// (single, for blocks under 1 KiB), else four streams with 10-, 14- or
// 18-bit sizes.
func appendLiteralsHeader(dst []byte, regen, comp int, single bool) []byte {
	var h uint64
	switch n := literalsHeaderLen(regen, comp, single); {
	case single:
		h = litTypeCompress | uint64(regen)<<4 | uint64(comp)<<14 // Size_Format 00
	case n == 3:
		h = litTypeCompress | 1<<2 | uint64(regen)<<4 | uint64(comp)<<14
	case n == 4:
		h = litTypeCompress | 2<<2 | uint64(regen)<<4 | uint64(comp)<<18
	default:
		h = litTypeCompress | 3<<2 | uint64(regen)<<4 | uint64(comp)<<22
	}
	for i := range literalsHeaderLen(regen, comp, single) {
		dst = append(dst, byte(h>>(8*i)))
	}
	return dst
}
