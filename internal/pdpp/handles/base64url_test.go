package handles

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/mcpkit"
)

// sloppyTail returns the unpadded base64url of data with its last
// character's leftover bits set: the same bytes, not in canonical form.
// data's length must not be a multiple of 3 (else no bits are left over).
func sloppyTail(t *testing.T, data []byte) string {
	t.Helper()
	s := base64.RawURLEncoding.EncodeToString(data)
	if len(data)%3 == 0 {
		t.Fatalf("%d bytes leave no spare bits", len(data))
	}
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	last := strings.IndexByte(alphabet, s[len(s)-1])
	return s[:len(s)-1] + string(alphabet[last+1])
}

func TestDecodeBase64URL(t *testing.T) {
	sloppy := sloppyTail(t, []byte("hi")) // "aGk" with a spare bit set: "aGl"
	tests := []struct {
		name    string
		in      string
		max     int
		strict  bool
		want    string
		wantErr error
	}{
		{"empty", "", 8, true, "", nil},
		{"canonical", "aGk", 8, true, "hi", nil},
		{"canonical, not strict", "aGk", 8, false, "hi", nil},
		{"spare bits set, strict", sloppy, 8, true, "", errBase64Corrupt},
		{"spare bits set, not strict", sloppy, 8, false, "hi", nil},
		{"at the bound", "aGk", 3, true, "hi", nil},
		{"over the bound", "aGk", 2, true, "", errBase64TooLong},
		{"over the bound before the alphabet", "a=k", 2, false, "", errBase64TooLong},
		{"padding", "aGk=", 8, false, "", errBase64Alphabet},
		{"standard alphabet", "ab+/", 8, false, "", errBase64Alphabet},
		{"newline", "aG\nk", 8, false, "", errBase64Alphabet},
		{"carriage return", "aGk\r", 8, false, "", errBase64Alphabet},
		{"one character short of a byte", "aGkx0", 8, false, "", errBase64Corrupt},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeBase64URL(tc.in, tc.max, tc.strict)
			if !errors.Is(err, tc.wantErr) || string(got) != tc.want {
				t.Fatalf("decodeBase64URL(%q, %d, %v) = %q, %v; want %q, %v", tc.in, tc.max, tc.strict, got, err, tc.want, tc.wantErr)
			}
		})
	}
}

// TestHandleBase64Strictness pins which handles insist on the canonical
// encoding: our cursors do; the reference adapter's field-window handle
// and encoded record references ignore spare bits, as they always have.
func TestHandleBase64Strictness(t *testing.T) {
	cursorJSON := `{"s":"s","r":"r","f":"f"}` // 25 bytes
	windowJSON := `{"v":1,"kind":"field-window","stream":"s","record_id":"r","field_path":"ff"}`
	recordJSON := `{"v":1,"kind":"record","connection_id":"c","stream":"s","record_id":"rr"}`
	for _, js := range []string{windowJSON, recordJSON} {
		if len(js)%3 == 0 {
			t.Fatalf("%s leaves no spare bits; change the fixture", js)
		}
	}
	t.Run("cursor", func(t *testing.T) {
		_, err := DecodeCursor(CursorPrefix + sloppyTail(t, []byte(cursorJSON)))
		var he *mcpkit.ArgError
		if !errors.As(err, &he) || he.Code != CodeInvalidCursor || !strings.HasPrefix(he.Message, "cursor is not valid base64url;") {
			t.Fatalf("DecodeCursor of a non-canonical cursor = %v; want invalid_cursor, not valid base64url", err)
		}
	})
	t.Run("reference field-window handle", func(t *testing.T) {
		w, err := ParseFieldWindowURI(FieldWindowURIPrefix + sloppyTail(t, []byte(windowJSON)))
		if err != nil || w.Record != (RecordRef{Stream: "s", RecordID: "r"}) || w.Field != "ff" {
			t.Fatalf("ParseFieldWindowURI = %#v, %v", w, err)
		}
	})
	t.Run("encoded record reference", func(t *testing.T) {
		ref, err := ParseRecordURI(RecordURIPrefix + sloppyTail(t, []byte(recordJSON)))
		if err != nil || ref != (RecordRef{"c", "s", "rr"}) {
			t.Fatalf("ParseRecordURI = %#v, %v", ref, err)
		}
	})
}

// FuzzDecodeBase64URL: every refusal is one of the three typed reasons;
// a strict decode is the canonical encoding of what it returns; a lenient
// decode accepts exactly what a strict one does plus values whose only
// fault is spare bits, with the same bytes.
func FuzzDecodeBase64URL(f *testing.F) {
	for _, s := range []string{"", "aGk", "aGl", "aGk=", "ab+/", "aG\nk", "aGkx0", strings.Repeat("A", 70)} {
		f.Add(s)
	}
	const max = 64
	f.Fuzz(func(t *testing.T, s string) {
		strict, serr := decodeBase64URL(s, max, true)
		lenient, lerr := decodeBase64URL(s, max, false)
		for _, err := range []error{serr, lerr} {
			if err != nil && err != errBase64TooLong && err != errBase64Alphabet && err != errBase64Corrupt {
				t.Fatalf("decodeBase64URL(%q): untyped error %v", s, err)
			}
		}
		if serr == nil && base64.RawURLEncoding.EncodeToString(strict) != s {
			t.Fatalf("strict decode of %q is not canonical: %q", s, strict)
		}
		switch {
		case serr == nil && (lerr != nil || !bytes.Equal(strict, lenient)):
			t.Fatalf("%q: strict %q, lenient %q, %v", s, strict, lenient, lerr)
		case serr != nil && serr != errBase64Corrupt && lerr != serr:
			t.Fatalf("%q: strict refused with %v, lenient with %v", s, serr, lerr)
		case lerr == nil && (len(s) > max || len(base64.RawURLEncoding.EncodeToString(lenient)) != len(s)):
			t.Fatalf("lenient decode of %q accepted %q", s, lenient)
		}
	})
}
