package handles

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/mcpkit"
	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/testkit"
)

func TestRecordURI(t *testing.T) {
	tests := []struct {
		ref  RecordRef
		want string
	}{
		{RecordRef{"cin_a", "transcripts", "tr-5"}, "pdpp://record/cin_a%2Ftranscripts:tr-5"},
		{RecordRef{"", "transcripts", "tr-5"}, "pdpp://record/transcripts:tr-5"},
		{RecordRef{"c", "s", "a b?c#d%e"}, "pdpp://record/c%2Fs:a%20b%3Fc%23d%25e"},
		{RecordRef{"c", "s", "urn:x;y,z"}, "pdpp://record/c%2Fs:urn:x%3By%2Cz"},
		{RecordRef{"", "notes", "caffè"}, "pdpp://record/notes:caff%C3%A8"},
		// A hidden character is spelled, then percent-encoded: the URI
		// decoded shows it; a literal ⟦ is spelled too, so it reads back.
		{RecordRef{"c", "s", "n\u200b1"}, "pdpp://record/c%2Fs:n%E2%9F%A6U+200B%E2%9F%A71"},
		{RecordRef{"c", "s", "⟦U+200B⟧"}, "pdpp://record/c%2Fs:%E2%9F%A6U+27E6%E2%9F%A7U+200B%E2%9F%A7"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			got := RecordURI(tc.ref)
			if got != tc.want {
				t.Fatalf("RecordURI(%#v) = %q, want %q", tc.ref, got, tc.want)
			}
			if strings.Count(strings.TrimPrefix(got, RecordURIPrefix), "/") != 0 {
				t.Fatalf("RecordURI %q is not one path segment", got)
			}
			back, err := ParseRecordURI(got)
			if err != nil || back != tc.ref {
				t.Fatalf("ParseRecordURI(%q) = %#v, %v; want %#v", got, back, err, tc.ref)
			}
		})
	}
}

func TestParseRecordURIValid(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want RecordRef
	}{
		{"legacy handle", "pdpp://record/s:r", RecordRef{"", "s", "r"}},
		{"escaped handle", "pdpp://record/c%2Fs:r", RecordRef{"c", "s", "r"}},
		{"lower-case escape", "pdpp://record/c%2fs:r", RecordRef{"c", "s", "r"}},
		{"handle with colon id", "pdpp://record/c%2Fs:a:b", RecordRef{"c", "s", "a:b"}},
		{"three segments", "pdpp://record/c/s/r", RecordRef{"c", "s", "r"}},
		{"three segments, escaped id", "pdpp://record/c/s/r%3Ax%20y", RecordRef{"c", "s", "r:x y"}},
		{"two segments", "pdpp://record/s/r", RecordRef{"", "s", "r"}},
		{"handle of a stream named pdpp", "pdpp://record/pdpp:x", RecordRef{"", "pdpp", "x"}},
		{"two segments, escaped colon id", "pdpp://record/messages/msg%3A123", RecordRef{"", "messages", "msg:123"}},
		{"pasted result id", "pdpp://record/cin_3325c9636dab3a5344743485/transcripts:tr-5", RecordRef{"cin_3325c9636dab3a5344743485", "transcripts", "tr-5"}},
		{"pasted result id, colon id", "pdpp://record/c/s:urn:x%20y", RecordRef{"c", "s", "urn:x y"}},
		{"spelled pasted id", "pdpp://record/c/s:n⟦U+200B⟧1", RecordRef{"c", "s", "n\u200b1"}},
		{"percent-encoded hidden character", "pdpp://record/c/s:n%E2%80%8B1", RecordRef{"c", "s", "n\u200b1"}},
		{"canonical", canonicalURI(`{"v":1,"kind":"record","connection_id":"c","stream":"s","record_id":"r"}`), RecordRef{"c", "s", "r"}},
		{"canonical, null connection", canonicalURI(`{"v":1,"kind":"record","connection_id":null,"stream":"s","record_id":"r"}`), RecordRef{"", "s", "r"}},
		{"canonical, no connection", canonicalURI(`{"v":1,"kind":"record","stream":"s","record_id":"r"}`), RecordRef{"", "s", "r"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseRecordURI(tc.in)
			if err != nil {
				t.Fatalf("ParseRecordURI(%q): %v", tc.in, err)
			}
			if got != tc.want {
				t.Fatalf("ParseRecordURI(%q) = %#v, want %#v", tc.in, got, tc.want)
			}
		})
	}
}

func TestParseRecordURIRejects(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"no path", "pdpp://record/", "empty path segment"},
		{"query string", "pdpp://record/s:r?x=1", "query string or fragment"},
		{"fragment", "pdpp://record/s:r#frag", "query string or fragment"},
		{"four segments", "pdpp://record/c/s/r/x", "4 path segments"},
		{"empty middle segment", "pdpp://record/c//r", "empty path segment"},
		{"trailing slash", "pdpp://record/s/r/", "empty path segment"},
		{"dotdot id", "pdpp://record/s/..", "path traversal"},
		{"encoded dotdot id", "pdpp://record/s/%2e%2e", "path traversal"},
		{"encoded dotdot id, three segments", "pdpp://record/c/s/%2E%2E", "path traversal"},
		{"double-encoded dotdot", "pdpp://record/s/%252e%252e", "percent-decoded"},
		{"encoded slash in id", "pdpp://record/s/a%2Fb", `contains "/"`},
		{"encoded dotdot connection in handle", "pdpp://record/%2e%2e%2fs:r", `connection_id ".." is not valid`},
		{"dotdot connection", "pdpp://record/../s/r", `connection_id ".." is not valid`},
		{"bad escape", "pdpp://record/s/%zz", "malformed percent-encoding"},
		{"encoded NUL", "pdpp://record/s/a%00", "control character"},
		{"nested URI", "pdpp://record/pdpp%3A%2F%2Frecord%2Fs:r", "wraps another URI"},
		{"other host", "pdpp://records/s:r", "not a pdpp://record/ URI"},
		{"stream URI", "pdpp://stream/s", "not a pdpp://record/ URI"},
		{"other scheme", "http://record/s:r", "not a pdpp://record/ URI"},
		{"opaque form", "pdpp:record/s:r", "not a pdpp://record/ URI"},
		{"empty host", "pdpp:///record/s:r", "not a pdpp://record/ URI"},
		{"bare word", "pdpp://record/abc", "neither a result id"},
		{"canonical v2", canonicalURI(`{"v":2,"kind":"record","stream":"s","record_id":"r"}`), "neither a result id"},
		{"canonical other kind", canonicalURI(`{"v":1,"kind":"stream","stream":"s","record_id":"r"}`), "neither a result id"},
		{"canonical unknown key", canonicalURI(`{"v":1,"kind":"record","stream":"s","record_id":"r","x":1}`), "neither a result id"},
		{"canonical traversal", canonicalURI(`{"v":1,"kind":"record","stream":"s","record_id":".."}`), "neither a result id"},
		{"canonical bad stream", canonicalURI(`{"v":1,"kind":"record","stream":"a b","record_id":"r"}`), "neither a result id"},
		{"too long", RecordURIPrefix + strings.Repeat("a", MaxInputBytes), "over the 4096-byte limit"},
		{"pasted id, bad stream", "pdpp://record/c/a%20b:r", `stream "a b" is not valid`},
		{"pasted id, dotdot connection", "pdpp://record/../s:r", `connection_id ".." is not valid`},
		{"pasted id, empty record_id", "pdpp://record/c/s:", `record_id "" is empty`},
		{"pasted id, bad escape", "pdpp://record/c/s:%zz", "malformed percent-encoding"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ref, err := ParseRecordURI(tc.in)
			if err == nil {
				t.Fatalf("ParseRecordURI(%q) = %#v, want error", tc.in, ref)
			}
			he := wantArgError(t, err, CodeInvalidID, ParamID)
			if !strings.Contains(he.Message, tc.want) {
				t.Errorf("message %q does not contain %q", he.Message, tc.want)
			}
		})
	}
}

func TestStreamURI(t *testing.T) {
	valid := []struct {
		in   string
		want string
	}{
		{"pdpp://stream/transcripts", "transcripts"},
		{"pdpp://stream/a.b-c_d", "a.b-c_d"},
		{"pdpp://stream/a%5Fb", "a_b"},
	}
	for _, tc := range valid {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseStreamURI(tc.in)
			if err != nil || got != tc.want {
				t.Fatalf("ParseStreamURI(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
			if back, err := ParseStreamURI(StreamURI(got)); err != nil || back != got {
				t.Fatalf("StreamURI round trip of %q = %q, %v", got, back, err)
			}
		})
	}
	if got := StreamURI("transcripts"); got != "pdpp://stream/transcripts" {
		t.Errorf("StreamURI = %q", got)
	}
	invalid := []string{
		"pdpp://stream/", "pdpp://stream/a/b", "pdpp://stream/a?x=1", "pdpp://stream/a#f",
		"pdpp://stream/..", "pdpp://stream/%2e%2e", "pdpp://stream/a%2Fb", "pdpp://stream/a%zz",
		"pdpp://stream/a b", "pdpp://record/s:r", "stream/transcripts", "transcripts",
		"pdpp://stream/" + strings.Repeat("a", MaxNameBytes+1),
	}
	for _, in := range invalid {
		t.Run("reject "+in, func(t *testing.T) {
			got, err := ParseStreamURI(in)
			var he *mcpkit.ArgError
			if !errors.As(err, &he) || he.Code != CodeInvalidURI || he.Field != ParamURI {
				t.Fatalf("ParseStreamURI(%q) = %q, %v; want invalid_uri", in, got, err)
			}
			if !strings.Contains(he.Message, "pdpp://stream/transcripts") {
				t.Errorf("message %q has no example", he.Message)
			}
		})
	}
}

// TestHandlesFromRealSearchHits builds ids, URIs and field-window cursors
// from the identities in captured search responses and checks that each
// parses back to the same record and window.
func TestHandlesFromRealSearchHits(t *testing.T) {
	dir := testkit.SamplesDir()
	for _, name := range []string{"search-lexical.json", "search-lexical-page1.json", "multi-conn-search.json", "search-semantic-stub.json"} {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			var page struct {
				Data []struct {
					RecordKey    string `json:"record_key"`
					RecordURL    string `json:"record_url"`
					Stream       string `json:"stream"`
					ConnectionID string `json:"connection_id"`
					Excerpts     []struct {
						Read struct {
							Field        string `json:"field"`
							RecordID     string `json:"record_id"`
							Stream       string `json:"stream"`
							ConnectionID string `json:"connection_id"`
						} `json:"read"`
					} `json:"evidence_excerpts"`
				} `json:"data"`
			}
			if err := json.Unmarshal(data, &page); err != nil {
				t.Fatalf("parse %s: %v", name, err)
			}
			if len(page.Data) == 0 {
				t.Fatalf("%s has no hits", name)
			}
			for _, hit := range page.Data {
				ref := RecordRef{ConnectionID: hit.ConnectionID, Stream: hit.Stream, RecordID: hit.RecordKey}
				if !strings.HasSuffix(hit.RecordURL, "/"+hit.Stream+"/records/"+hit.RecordKey) {
					t.Errorf("record_url %q does not match %s/%s", hit.RecordURL, hit.Stream, hit.RecordKey)
				}
				checkRoundTrip(t, ref.ID(), ref)
				for _, ex := range hit.Excerpts {
					w := WindowRef{
						Record: RecordRef{ConnectionID: ex.Read.ConnectionID, Stream: ex.Read.Stream, RecordID: ex.Read.RecordID},
						Field:  ex.Read.Field, Limit: 4096,
					}
					if w.Record != ref {
						t.Errorf("excerpt read names %#v, hit names %#v", w.Record, ref)
					}
					got, err := ParseFieldWindowURI(FieldWindowURI(w))
					if err != nil || got != w {
						t.Errorf("field-window round trip of %#v = %#v, %v", w, got, err)
					}
				}
			}
		})
	}
}

// FuzzParseRecordURI: no input panics; every accepted URI names a valid
// record whose id and canonical URI parse back to the same reference.
func FuzzParseRecordURI(f *testing.F) {
	for _, s := range []string{
		"pdpp://record/s:r", "pdpp://record/c%2Fs:r", "pdpp://record/c/s/r", "pdpp://record/s/r",
		"pdpp://record/s/%2e%2e", "pdpp://record/s:r?x", "pdpp://record/", "pdpp://record/a/b/c/d",
		"pdpp://record/%zz", "pdpp://record/s/a%2Fb", "pdpp://record/s%3Ar%252e",
		"pdpp://record/cin_a/transcripts:tr-5", "pdpp://record/c/s:a:b", "pdpp://record/c/s:%2e%2e",
		canonicalURI(`{"v":1,"kind":"record","connection_id":"c","stream":"s","record_id":"r"}`),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ref, err := ParseRecordURI(s)
		if err != nil {
			var he *mcpkit.ArgError
			if !errors.As(err, &he) || he.Code != CodeInvalidID || he.Message == "" {
				t.Fatalf("ParseRecordURI(%q): untyped error %v", s, err)
			}
			return
		}
		checkRoundTrip(t, s, ref)
	})
}
