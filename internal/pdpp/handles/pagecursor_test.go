package handles

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/mcpkit"
)

// rawPageCursor wraps hand-written header JSON and an RS cursor the way
// EncodePageCursor would.
func rawPageCursor(header, rs string) string {
	return PageCursorPrefix + base64.RawURLEncoding.EncodeToString([]byte(header)) + "~" + rs
}

func TestPageCursorRoundTrip(t *testing.T) {
	seen, call := Digest("a", "b"), Digest(`{"q":"x"}`, "")
	tests := []struct {
		name string
		c    PageCursor
	}{
		{"first page", PageCursor{Pos: 1, Seen: seen, Call: call}},
		{"base64 RS cursor with padding", PageCursor{RS: "eyJvZmYiOjJ9==", Pos: 37, Seen: seen, Call: call}},
		{"prefixed RS cursor", PageCursor{RS: "sem1.eyJvZmYiOjJ9", Pos: 99, Seen: seen, Call: call}},
		{"RS cursor holding the separator", PageCursor{RS: "a~b~", Pos: 2, Seen: seen, Call: call}},
		{"largest position", PageCursor{Pos: MaxPagePosition, Seen: seen, Call: call}},
		{"longest RS cursor", PageCursor{RS: strings.Repeat("c", MaxWrappedRSCursorBytes), Pos: MaxPagePosition, Seen: seen, Call: call}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, ok := EncodePageCursor(tc.c)
			if !ok {
				t.Fatalf("EncodePageCursor(%+v) refused", tc.c)
			}
			if !IsPageCursor(s) || len(s) > MaxPageCursorBytes {
				t.Fatalf("cursor %q: page cursor %t, %d bytes", s, IsPageCursor(s), len(s))
			}
			got, err := DecodePageCursor(s)
			if err != nil || got != tc.c {
				t.Fatalf("DecodePageCursor = %+v, %v; want %+v", got, err, tc.c)
			}
		})
	}
}

func TestPageCursorRefusals(t *testing.T) {
	seen, call := Digest("a"), Digest("b")
	ok, _ := EncodePageCursor(PageCursor{RS: "rs", Pos: 3, Seen: seen, Call: call})
	tests := []struct {
		name, in, msg string
	}{
		{"RS cursor", "eyJvZmYiOjJ9", "not a page cursor"},
		{"other version", strings.Replace(ok, "pc1~", "pc2~", 1), "not a page cursor"},
		{"no header", PageCursorPrefix + "~rs", "no header"},
		{"no separator", PageCursorPrefix + "eyJwIjozfQ", "no header"},
		{"header not base64url", PageCursorPrefix + "ey+p~rs", "base64url"},
		{"header over its bound", PageCursorPrefix + strings.Repeat("A", 200) + "~", "base64url"},
		{"header not JSON", rawPageCursor(`nope`, ""), "page position"},
		{"unknown member", rawPageCursor(`{"p":3,"s":"`+seen+`","a":"`+call+`","x":1}`, ""), "page position"},
		{"two objects", rawPageCursor(`{"p":3,"s":"`+seen+`","a":"`+call+`"}{}`, ""), "page position"},
		{"position 0", rawPageCursor(`{"p":0,"s":"`+seen+`","a":"`+call+`"}`, ""), "outside"},
		{"negative position", rawPageCursor(`{"p":-1,"s":"`+seen+`","a":"`+call+`"}`, ""), "outside"},
		{"position too far", rawPageCursor(`{"p":10001,"s":"`+seen+`","a":"`+call+`"}`, ""), "outside"},
		{"short digest", rawPageCursor(`{"p":3,"s":"abc","a":"`+call+`"}`, ""), "digest"},
		{"digest outside base64url", rawPageCursor(`{"p":3,"s":"`+seen+`","a":"`+strings.Repeat("+", len(call))+`"}`, ""), "digest"},
		{"reordered members", rawPageCursor(`{"s":"`+seen+`","p":3,"a":"`+call+`"}`, "rs"), "canonical"},
		{"spaces", rawPageCursor(`{"p": 3,"s":"`+seen+`","a":"`+call+`"}`, "rs"), "canonical"},
		{"control character in the RS cursor", ok + "\x00", "RS cursor"},
		{"over the byte bound", ok + strings.Repeat("c", MaxPageCursorBytes), "over the"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodePageCursor(tc.in)
			var ae *mcpkit.ArgError
			if !errors.As(err, &ae) || ae.Code != CodeInvalidCursor || ae.Field != ParamCursor {
				t.Fatalf("DecodePageCursor(%q) = %+v, %v; want invalid_cursor for cursor", tc.in, got, err)
			}
			if !strings.Contains(ae.Message, tc.msg) || !strings.Contains(ae.Message, "next.arguments") {
				t.Errorf("message %q lacks %q and the way to continue", ae.Message, tc.msg)
			}
		})
	}
	t.Run("encode refuses what decode would", func(t *testing.T) {
		for _, c := range []PageCursor{
			{Pos: 0, Seen: seen, Call: call},
			{Pos: 1, Seen: "x", Call: call},
			{Pos: 1, Seen: seen, Call: call, RS: strings.Repeat("c", MaxWrappedRSCursorBytes+1)},
			{Pos: 1, Seen: seen, Call: call, RS: "a\nb"},
		} {
			if s, ok := EncodePageCursor(c); ok {
				t.Errorf("EncodePageCursor(%+v) = %q", c, s)
			}
		}
	})
}

func TestDigestSeparatesParts(t *testing.T) {
	pairs := [][2][]string{
		{{"ab", "c"}, {"a", "bc"}},
		{{"a"}, {"a", ""}},
		{{}, {""}},
	}
	for _, p := range pairs {
		if Digest(p[0]...) == Digest(p[1]...) {
			t.Errorf("Digest(%q) == Digest(%q)", p[0], p[1])
		}
	}
	if d := Digest("x"); len(d) != digestChars || !isBase64URL(d) || d != Digest("x") {
		t.Errorf("Digest is %q", d)
	}
}

// FuzzDecodePageCursor: no input panics; a refusal is a typed
// invalid_cursor naming cursor; an accepted cursor is canonical (it
// re-encodes to itself) and stays within its bound.
func FuzzDecodePageCursor(f *testing.F) {
	seen, call := Digest("a"), Digest("b")
	for _, c := range []PageCursor{
		{Pos: 1, Seen: seen, Call: call},
		{RS: "eyJvZmYiOjJ9==", Pos: 94, Seen: seen, Call: call},
		{RS: "sem1.x~y", Pos: 10000, Seen: seen, Call: call},
	} {
		s, _ := EncodePageCursor(c)
		f.Add(s)
	}
	f.Add(rawPageCursor(`{"p":3,"s":"`+seen+`","a":"`+call+`","x":1}`, ""))
	f.Add(rawPageCursor(`{"s":"`+seen+`","p":3,"a":"`+call+`"}`, "rs"))
	f.Add(PageCursorPrefix + "~")
	f.Add(PageCursorPrefix)
	f.Add("eyJvZmYiOjJ9")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := DecodePageCursor(s)
		if err != nil {
			var ae *mcpkit.ArgError
			if !errors.As(err, &ae) || ae.Code != CodeInvalidCursor || ae.Field != ParamCursor || ae.Message == "" {
				t.Fatalf("DecodePageCursor(%q): untyped error %v", s, err)
			}
			return
		}
		enc, ok := EncodePageCursor(c)
		if !ok || enc != s {
			t.Fatalf("accepted cursor %q re-encodes to %q (%t)", s, enc, ok)
		}
		if len(s) > MaxPageCursorBytes || c.Pos < 1 || c.Pos > MaxPagePosition {
			t.Fatalf("accepted cursor %q out of bounds: %+v", s, c)
		}
	})
}
