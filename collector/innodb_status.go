package collector

import (
	"math"
	"strconv"
	"strings"
)

// InnoDBValue is a number read from SHOW ENGINE INNODB STATUS; OK is false
// when the text did not have it.
type InnoDBValue struct {
	V  uint64
	OK bool
}

func innoSet(v uint64) InnoDBValue { return InnoDBValue{V: v, OK: true} }

// InnoDBStatus is what dbpilot reads from the Status text of SHOW ENGINE
// INNODB STATUS: the innodb collector and `dbpilot top` read it alike.
type InnoDBStatus struct {
	LSN             InnoDBValue // Log sequence number
	LSNFlushed      InnoDBValue // Log flushed up to
	PagesFlushedLSN InnoDBValue // Pages flushed up to
	CheckpointLSN   InnoDBValue // Last checkpoint at
	HistoryLength   InnoDBValue // History list length
	PendingReads    InnoDBValue // see ParseInnoDBStatus
	PendingWrites   InnoDBValue
	PendingFsyncs   InnoDBValue
}

// ParseInnoDBStatus reads the Status text of SHOW ENGINE INNODB STATUS (see
// InnoDBStatusText), in the shapes MariaDB 10.5+ and MySQL 5.6 to 8.4 print.
// Lines it does not know are skipped, malformed numbers leave their value
// unset; it never fails and never panics (fuzzed).
//
// LOG section, both flavors (MySQL aligns the numbers in columns; very old
// servers print an LSN as two 32-bit halves "high low"):
//
//	Log sequence number 5208958
//	Log flushed up to   5208877
//	Pages flushed up to 44404
//	Last checkpoint at  44404
//
// TRANSACTIONS: "History list length 4".
//
// Pending I/O. MySQL's FILE I/O section has
//
//	Pending normal aio reads: [0, 0, 0, 0] , aio writes: [0, 0, 0, 0] ,   (8.0; 5.7 puts the total first: "0 [0, 0, 0, 0]")
//	Pending flushes (fsync) log: 0; buffer pool: 0
//
// MariaDB 10.5+ dropped the aio line and prints "Pending flushes (fsync): 0";
// both print in BUFFER POOL AND MEMORY
//
//	Pending reads 0
//	Pending writes: LRU 0, flush list 0[, single page 0]
//
// PendingReads and PendingWrites are the aio line's reads and writes (summed
// over the I/O threads) where the text has it, else the buffer pool's
// pending page reads and writes (LRU + flush list + single page).
// PendingFsyncs is the sum of the "Pending flushes (fsync)" numbers.
func ParseInnoDBStatus(text string) InnoDBStatus {
	var (
		s                  InnoDBStatus
		bpReads, bpWrites  InnoDBValue
		aioReads, aioWrite InnoDBValue
	)
	for line := range strings.SplitSeq(text, "\n") {
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, "Log sequence number"); ok {
			s.LSN = innoLSN(rest)
		} else if rest, ok := strings.CutPrefix(line, "Log flushed up to"); ok {
			s.LSNFlushed = innoLSN(rest)
		} else if rest, ok := strings.CutPrefix(line, "Pages flushed up to"); ok {
			s.PagesFlushedLSN = innoLSN(rest)
		} else if rest, ok := strings.CutPrefix(line, "Last checkpoint at"); ok {
			s.CheckpointLSN = innoLSN(rest)
		} else if rest, ok := strings.CutPrefix(line, "History list length"); ok {
			s.HistoryLength = innoLSN(rest)
		} else if rest, ok := strings.CutPrefix(line, "Pending normal aio reads:"); ok {
			reads, writes, _ := strings.Cut(rest, "aio writes:")
			aioReads, aioWrite = innoAioCount(reads), innoAioCount(writes)
		} else if rest, ok := strings.CutPrefix(line, "Pending flushes (fsync)"); ok {
			s.PendingFsyncs = innoSumInts(rest)
		} else if rest, ok := strings.CutPrefix(line, "Pending reads"); ok {
			bpReads = innoSumInts(rest)
		} else if rest, ok := strings.CutPrefix(line, "Pending writes:"); ok {
			bpWrites = innoSumInts(rest)
		}
	}
	s.PendingReads, s.PendingWrites = bpReads, bpWrites
	if aioReads.OK {
		s.PendingReads = aioReads
	}
	if aioWrite.OK {
		s.PendingWrites = aioWrite
	}
	return s
}

// CheckpointAge returns the checkpoint age in bytes of redo: Log sequence
// number - Last checkpoint at, 0 when the checkpoint reads ahead of the LSN
// (the two lines are not printed at the same instant). ok is false when the
// text lacks either line.
func (s InnoDBStatus) CheckpointAge() (age uint64, ok bool) {
	if !s.LSN.OK || !s.CheckpointLSN.OK {
		return 0, false
	}
	if s.LSN.V > s.CheckpointLSN.V {
		return s.LSN.V - s.CheckpointLSN.V, true
	}
	return 0, true
}

// innoLSN reads "5208958", or the two halves "248 2222568315" that servers
// before 5.5 print.
func innoLSN(rest string) InnoDBValue {
	f := strings.Fields(rest)
	switch len(f) {
	case 1:
		if n, err := strconv.ParseUint(f[0], 10, 64); err == nil {
			return innoSet(n)
		}
	case 2:
		hi, err1 := strconv.ParseUint(f[0], 10, 32)
		lo, err2 := strconv.ParseUint(f[1], 10, 32)
		if err1 == nil && err2 == nil {
			return innoSet(hi<<32 | lo)
		}
	}
	return InnoDBValue{}
}

// innoAioCount reads one side of the aio line: " [0, 1, 0, 0] , " (8.0: the
// per-thread counts, summed), " 1 [0, 1, 0, 0] , " (5.6/5.7: the total
// first) or " 1," (5.5).
func innoAioCount(part string) InnoDBValue {
	part = strings.TrimSpace(part)
	if part == "" {
		return InnoDBValue{}
	}
	if part[0] == '[' {
		inner, _, ok := strings.Cut(part[1:], "]")
		if !ok {
			return InnoDBValue{}
		}
		return innoSumInts(inner)
	}
	end := 0
	for end < len(part) && part[end] >= '0' && part[end] <= '9' {
		end++
	}
	if end == 0 {
		return InnoDBValue{}
	}
	n, err := strconv.ParseUint(part[:end], 10, 64)
	if err != nil {
		return InnoDBValue{}
	}
	return innoSet(n)
}

// innoSumInts sums every run of digits in s (saturating); ok when there is
// at least one.
func innoSumInts(s string) InnoDBValue {
	var (
		sum   uint64
		found bool
	)
	for i := 0; i < len(s); {
		if s[i] < '0' || s[i] > '9' {
			i++
			continue
		}
		j := i
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		n, err := strconv.ParseUint(s[i:j], 10, 64)
		if err != nil {
			n = math.MaxUint64
		}
		found = true
		if sum > math.MaxUint64-n {
			sum = math.MaxUint64
		} else {
			sum += n
		}
		i = j
	}
	return InnoDBValue{V: sum, OK: found}
}
