package jsonwalk

import "encoding/binary"

// Byte-parallel constants: every byte 0x01, and every byte's top bit.
const (
	ones = 0x0101010101010101
	tops = 0x8080808080808080
)

// stopsIn reports whether any of the eight bytes packed in x is one a
// string scan must stop at: a quote, a backslash or a control byte
// (below 0x20). Each test is the classic exact one: a byte of v is zero
// iff (v-ones)&^v has its top bit, and a byte of x is below 0x20 iff
// (x-0x20*ones)&^x has its top bit (bytes of 0x80 and above never do).
func stopsIn(x uint64) bool {
	q := x ^ ('"' * ones)
	s := x ^ ('\\' * ones)
	return ((q-ones)&^q|(s-ones)&^s|(x-0x20*ones)&^x)&tops != 0
}

// skipPlain returns the index of the first byte of b at or after i that a
// string scan must stop at (stringStop), or len(b): eight bytes at a time
// while none of them is one, then byte by byte. Bounded by len(b).
func skipPlain(b []byte, i int) int {
	for ; i+8 <= len(b); i += 8 {
		if stopsIn(binary.LittleEndian.Uint64(b[i:])) {
			break
		}
	}
	for ; i < len(b) && !stringStop[b[i]]; i++ {
	}
	return i
}
