package jsonwalk

import "encoding/binary"

// Ones and Tops are the byte-parallel constants: every byte 0x01, and every
// byte's top bit. Eight bytes packed in a word are tested at once with them.
const (
	Ones = 0x0101010101010101
	Tops = 0x8080808080808080
)

// ZeroBytes marks, in their top bits, the zero bytes of v: nonzero exactly
// when v has one (a byte above a zero byte may be marked too).
func ZeroBytes(v uint64) uint64 { return (v - Ones) &^ v & Tops }

// BytesBelow marks, in their top bits, the bytes of x below n (n at most
// 0x80): nonzero exactly when x has one.
func BytesBelow(x uint64, n byte) uint64 { return (x - uint64(n)*Ones) &^ x & Tops }

// stopsIn reports whether any of the eight bytes packed in x is one a
// string scan must stop at: a quote, a backslash or a control byte.
func stopsIn(x uint64) bool {
	return ZeroBytes(x^('"'*Ones))|ZeroBytes(x^('\\'*Ones))|BytesBelow(x, 0x20) != 0
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
