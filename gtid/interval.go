package gtid

import (
	"math"
	"slices"
	"strconv"
	"strings"
)

// interval is the closed range lo..hi of transaction numbers, lo <= hi.
type interval struct{ lo, hi uint64 }

// ivs is a normalized interval list: sorted, with no two intervals
// overlapping or adjacent. A nil or empty ivs is the empty set.
// Values of type ivs are never modified once built.
type ivs []interval

// normalize returns the normalized form of the intervals in, without
// modifying in.
func normalize(in []interval) ivs {
	if len(in) == 0 {
		return nil
	}
	s := slices.Clone(in)
	slices.SortFunc(s, func(a, b interval) int {
		if a.lo != b.lo {
			if a.lo < b.lo {
				return -1
			}
			return 1
		}
		if a.hi < b.hi {
			return -1
		}
		if a.hi > b.hi {
			return 1
		}
		return 0
	})
	out := s[:1]
	for _, x := range s[1:] {
		last := &out[len(out)-1]
		if last.hi == math.MaxUint64 || last.hi+1 >= x.lo {
			last.hi = max(last.hi, x.hi)
			continue
		}
		out = append(out, x)
	}
	return slices.Clip(out)
}

func (a ivs) union(b ivs) ivs {
	if len(b) == 0 {
		return a
	}
	if len(a) == 0 {
		return b
	}
	all := make([]interval, 0, len(a)+len(b))
	all = append(all, a...)
	all = append(all, b...)
	return normalize(all)
}

// subtract returns a − b.
func (a ivs) subtract(b ivs) ivs {
	if len(a) == 0 || len(b) == 0 {
		return a
	}
	var out ivs
	j := 0
	for _, x := range a {
		for j < len(b) && b[j].hi < x.lo {
			j++
		}
		cur, covered := x.lo, false
		for k := j; k < len(b) && b[k].lo <= x.hi; k++ {
			if b[k].lo > cur {
				out = append(out, interval{cur, b[k].lo - 1})
			}
			if b[k].hi >= x.hi {
				covered = true
				break
			}
			cur = b[k].hi + 1 // b[k].hi < x.hi, so no overflow
		}
		if !covered {
			out = append(out, interval{cur, x.hi})
		}
	}
	return out
}

// intersect returns a ∩ b.
func (a ivs) intersect(b ivs) ivs {
	var out ivs
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		lo, hi := max(a[i].lo, b[j].lo), min(a[i].hi, b[j].hi)
		if lo <= hi {
			out = append(out, interval{lo, hi})
		}
		if a[i].hi < b[j].hi {
			i++
		} else {
			j++
		}
	}
	return out
}

// contains reports whether b ⊆ a.
func (a ivs) contains(b ivs) bool {
	i := 0
	for _, y := range b {
		for i < len(a) && a[i].hi < y.lo {
			i++
		}
		// a is normalized, so y must lie inside a single interval of a.
		if i == len(a) || a[i].lo > y.lo || a[i].hi < y.hi {
			return false
		}
	}
	return true
}

// count returns the number of values in a, saturating at math.MaxUint64.
func (a ivs) count() uint64 {
	var n uint64
	for _, x := range a {
		c := x.hi - x.lo
		if c == math.MaxUint64 || n > math.MaxUint64-c-1 {
			return math.MaxUint64
		}
		n += c + 1
	}
	return n
}

// last returns the highest value in a, or 0 when a is empty.
func (a ivs) last() uint64 {
	if len(a) == 0 {
		return 0
	}
	return a[len(a)-1].hi
}

// appendTo writes the intervals as ":lo-hi:n..." (each preceded by ':').
func (a ivs) appendTo(b *strings.Builder) {
	for _, x := range a {
		b.WriteByte(':')
		b.WriteString(strconv.FormatUint(x.lo, 10))
		if x.hi != x.lo {
			b.WriteByte('-')
			b.WriteString(strconv.FormatUint(x.hi, 10))
		}
	}
}

// ivMap maps a source key (MySQL uuid and tag, MariaDB domain and server) to
// its non-empty normalized intervals. A key with no transactions is absent.
type ivMap[K comparable] map[K]ivs

func (a ivMap[K]) union(b ivMap[K]) ivMap[K] {
	out := make(ivMap[K], max(len(a), len(b)))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = out[k].union(v)
	}
	return out
}

func (a ivMap[K]) subtract(b ivMap[K]) ivMap[K] {
	out := make(ivMap[K], len(a))
	for k, v := range a {
		if r := v.subtract(b[k]); len(r) > 0 {
			out[k] = r
		}
	}
	return out
}

func (a ivMap[K]) intersect(b ivMap[K]) ivMap[K] {
	out := make(ivMap[K])
	for k, v := range a {
		if r := v.intersect(b[k]); len(r) > 0 {
			out[k] = r
		}
	}
	return out
}

func (a ivMap[K]) contains(b ivMap[K]) bool {
	for k, v := range b {
		if !a[k].contains(v) {
			return false
		}
	}
	return true
}

func (a ivMap[K]) equal(b ivMap[K]) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

func (a ivMap[K]) count() uint64 {
	var n uint64
	for _, v := range a {
		c := v.count()
		if n > math.MaxUint64-c {
			return math.MaxUint64
		}
		n += c
	}
	return n
}

// build normalizes raw per-key intervals, dropping empty keys.
func build[K comparable](raw map[K][]interval) ivMap[K] {
	out := make(ivMap[K], len(raw))
	for k, v := range raw {
		if n := normalize(v); len(n) > 0 {
			out[k] = n
		}
	}
	return out
}
