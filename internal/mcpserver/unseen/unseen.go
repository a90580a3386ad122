package unseen

import (
	"encoding/binary"
	"math/bits"
	"strconv"
	"unicode"
	"unicode/utf8"
	"unsafe"
)

const (
	ones  = 0x0101010101010101
	tops  = 0x8080808080808080
	dels  = 0x7f7f7f7f7f7f7f7f
	zwj   = 0x200D
	vs15  = 0xFE0E
	vs16  = 0xFE0F
	tag0  = 0xE0000
	tagN  = 0xE007F
	space = 0x20
)

// below reports, per byte of x, whether it is below n (high bit set).
func below(x uint64, n byte) uint64 { return (x - uint64(n)*ones) &^ x & tops }

// base reports whether r is hidden wherever it stands (see the package
// documentation); U+FE0E, U+FE0F and U+200D are hidden here and kept by
// hiddenAt in their context.
func base(r rune) bool {
	if r < utf8.RuneSelf {
		return r < space && r != '\t' && r != '\n' && r != '\r' || r == 0x7F
	}
	return inTable(r)
}

// inTable looks r up in the generated table (table.go): one index and one
// bitmap read.
func inTable(r rune) bool {
	if uint32(r) > unicode.MaxRune {
		return false
	}
	b := &hiddenBlocks[hiddenIndex[uint32(r)>>8]]
	return b[r>>6&3]&(1<<(r&63)) != 0
}

// Hidden reports whether r is hidden wherever it stands: the table this
// package reads, for a caller that needs one rune's class (a table of its
// own, say). U+FE0E, U+FE0F and U+200D are hidden here too; a text keeps
// them in the context the package documentation names (see Has).
func Hidden(r rune) bool { return r >= 0 && base(r) }

// emojiBefore reports whether r may lead a zero-width joiner of an emoji
// sequence.
func emojiBefore(r rune) bool {
	return r == vs16 || (r >= 0x1F3FB && r <= 0x1F3FF) || unicode.Is(unicode.So, r)
}

// hiddenAt reports whether r, between prev and next (-1: none), is hidden.
func hiddenAt(prev, r, next rune) bool {
	if !base(r) {
		return false
	}
	switch r {
	case vs15, vs16:
		// After a quotation mark too: in JSON text it opens a string, in
		// which the selector stands first, with nothing to shape.
		return prev < 0 || prev == '"' || base(prev)
	case zwj:
		return prev < 0 || next < 0 || !emojiBefore(prev) || !unicode.Is(unicode.So, next)
	}
	return true
}

// Has reports whether s holds a hidden rune.
func Has(s string) bool { return first(s, 0) >= 0 }

// HasBytes is Has for a byte slice (read in place).
func HasBytes(b []byte) bool { return Has(view(b)) }

// view reads b as a string without copying; the string is used only while b
// is unchanged.
func view(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// first returns the byte offset of the first hidden rune of s at or after
// from, or -1. The walk is bounded by len(s).
func first(s string, from int) int {
	prev := rune(-1)
	if from > 0 {
		prev, _ = utf8.DecodeLastRuneInString(s[:from])
	}
	raw := unsafe.Slice(unsafe.StringData(s), len(s)) // read only
	i := from
	for i < len(s) {
		if i+8 <= len(s) {
			x := binary.LittleEndian.Uint64(raw[i:])
			if x&tops == 0 && below(x^dels, 1) == 0 {
				// ASCII without DEL: only a control other than a tab or a
				// line break is hidden. The mask may also flag a byte
				// above a flagged one (a borrow), so each is checked.
				for m := below(x, space); m != 0; m &= m - 1 {
					k := bits.TrailingZeros64(m) / 8
					if c := s[i+k]; c < space && c != '\t' && c != '\n' && c != '\r' {
						return i + k
					}
				}
				i += 8
				prev = rune(s[i-1])
				continue
			}
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c < space && c != '\t' && c != '\n' && c != '\r' || c == 0x7F {
				return i
			}
			prev = rune(c)
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			prev = r
			i++
			continue
		}
		if base(r) {
			next := rune(-1)
			if i+n < len(s) {
				next, _ = utf8.DecodeRuneInString(s[i+n:])
			}
			if hiddenAt(prev, r, next) {
				return i
			}
		}
		prev = r
		i += n
	}
	return -1
}

// hiddenHere reports whether the rune at s[i] is hidden, in its context.
func hiddenHere(s string, i int) bool {
	c := s[i]
	if c < utf8.RuneSelf {
		return c < space && c != '\t' && c != '\n' && c != '\r' || c == 0x7F
	}
	r, n := utf8.DecodeRuneInString(s[i:])
	if !base(r) || r == utf8.RuneError && n == 1 {
		return false
	}
	prev, next := rune(-1), rune(-1)
	if i > 0 {
		prev, _ = utf8.DecodeLastRuneInString(s[:i])
	}
	if i+n < len(s) {
		next, _ = utf8.DecodeRuneInString(s[i+n:])
	}
	return hiddenAt(prev, r, next)
}

// Marker bounds: a marker names at most maxListed code points and spells
// at most maxTagBytes of tag text, so a run of any length is shown in at
// most about 300 bytes.
const (
	maxListed   = 6
	maxTagBytes = 160
)

// MarkerOpen and MarkerClose enclose every marker, e.g.
// ⟦hidden U+200B⟧ or ⟦hidden U+E0069 U+E0067 … 28 in all: “ignore previous instructions”⟧
// (the text in quotes is what a run of tag characters spells).
const (
	MarkerOpen  = "⟦hidden "
	MarkerClose = "⟧"
)

// Show returns s with each run of hidden runes replaced by a marker (see
// MarkerOpen), and s itself when it holds none.
func Show(s string) string {
	if !Has(s) {
		return s
	}
	b, _ := AppendShow(make([]byte, 0, len(s)+64), s)
	return string(b)
}

// AppendShow appends s to dst with each run of hidden runes replaced by a
// marker, and returns how many hidden runes it replaced. The walk is
// bounded by len(s), and each marker by its constants.
func AppendShow(dst []byte, s string) ([]byte, int) {
	total := 0
	i := first(s, 0)
	done := 0
	for i >= 0 {
		dst = append(dst, s[done:i]...)
		// The run: hidden runes one after another.
		end := i
		var listed [maxListed]rune
		nList, count := 0, 0
		var tags []byte
		tagsCut := false
		for end < len(s) && hiddenHere(s, end) {
			r, n := utf8.DecodeRuneInString(s[end:])
			if nList < maxListed {
				listed[nList] = r
				nList++
			}
			count++
			if r >= tag0 && r <= tagN {
				if a := r - tag0; a >= space && a < 0x7F {
					if len(tags) < maxTagBytes {
						tags = append(tags, byte(a))
					} else {
						tagsCut = true
					}
				}
			}
			end += n
		}
		dst = appendMarker(dst, listed[:nList], count, tags, tagsCut)
		total += count
		done = end
		i = first(s, end)
	}
	return append(dst, s[done:]...), total
}

func appendMarker(dst []byte, listed []rune, count int, tags []byte, cut bool) []byte {
	dst = append(dst, MarkerOpen...)
	for k, r := range listed {
		if k > 0 {
			dst = append(dst, ' ')
		}
		dst = appendCodePoint(dst, r)
	}
	if count > len(listed) {
		dst = append(dst, " … "...)
		dst = strconv.AppendInt(dst, int64(count), 10)
		dst = append(dst, " in all"...)
	}
	if len(tags) > 0 {
		// Curly quotes, and " and \ escaped: a marker inside a JSON string
		// leaves it valid JSON.
		q := strconv.Quote(string(tags))
		dst = append(append(dst, ": “"...), q[1:len(q)-1]...)
		if cut {
			dst = append(dst, "…"...)
		}
		dst = append(dst, "”"...)
	}
	return append(dst, MarkerClose...)
}

// appendCodePoint appends U+XXXX (at least four hex digits, upper case).
func appendCodePoint(dst []byte, r rune) []byte {
	const hex = "0123456789ABCDEF"
	dst = append(dst, 'U', '+')
	digits := 4
	for v := r >> 16; v > 0; v >>= 4 {
		digits++
	}
	for k := digits - 1; k >= 0; k-- {
		dst = append(dst, hex[(r>>(4*k))&0xF])
	}
	return dst
}
