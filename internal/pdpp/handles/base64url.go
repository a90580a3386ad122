package handles

import (
	"encoding/base64"
	"errors"
)

// Why decodeBase64URL refused a value, in the order it checks.
var (
	errBase64TooLong  = errors.New("over the size bound")
	errBase64Alphabet = errors.New("a character outside base64url (no padding)")
	errBase64Corrupt  = errors.New("not valid base64url")
)

// decodeBase64URL decodes s, unpadded base64url (RFC 4648 section 5), the
// encoding of every opaque handle this package reads: cursors, field-window
// handles and encoded record references. Before anything is decoded, s is
// refused when over maxBytes bytes (errBase64TooLong) or when it holds a
// byte outside the alphabet (errBase64Alphabet), "=" padding included: the
// stdlib decoder alone would skip "\r" and "\n". With strict, bits left over
// after the last full byte must be zero (base64.Encoding.Strict), so only
// the canonical encoding of the bytes decodes; otherwise they are ignored.
// A value the decoder still refuses is errBase64Corrupt.
func decodeBase64URL(s string, maxBytes int, strict bool) ([]byte, error) {
	if len(s) > maxBytes {
		return nil, errBase64TooLong
	}
	if !isBase64URL(s) {
		return nil, errBase64Alphabet
	}
	enc := base64.RawURLEncoding
	if strict {
		enc = enc.Strict()
	}
	data, err := enc.DecodeString(s)
	if err != nil {
		return nil, errBase64Corrupt
	}
	return data, nil
}

// isBase64URL reports whether s holds only the base64url alphabet, without
// "=" padding. One pass over s, which callers have bounded.
func isBase64URL(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
