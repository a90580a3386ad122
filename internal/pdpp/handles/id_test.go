package handles

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/mcpkit"
)

func canonicalURI(json string) string {
	return RecordURIPrefix + base64.RawURLEncoding.EncodeToString([]byte(json))
}

func TestParseIDValid(t *testing.T) {
	long128 := "a" + strings.Repeat("b", MaxNameBytes-1)
	long512 := strings.Repeat("r", MaxRecordIDBytes)
	tests := []struct {
		name string
		in   string
		want RecordRef
	}{
		{"self-contained", "cin_3325c9636dab3a5344743485/transcripts:tr-5", RecordRef{"cin_3325c9636dab3a5344743485", "transcripts", "tr-5"}},
		{"legacy", "transcripts:tr-5", RecordRef{"", "transcripts", "tr-5"}},
		{"colons stay in record_id", "s:urn:x:1", RecordRef{"", "s", "urn:x:1"}},
		{"colons with connection", "c/s:a:b", RecordRef{"c", "s", "a:b"}},
		{"inner space", "s:a b", RecordRef{"", "s", "a b"}},
		{"unicode record_id", "notes:caffè ☕", RecordRef{"", "notes", "caffè ☕"}},
		{"dots and dashes in names", "conn.a-b/str.e-am:x", RecordRef{"conn.a-b", "str.e-am", "x"}},
		{"digit and underscore first", "0c/_s:r", RecordRef{"0c", "_s", "r"}},
		{"dots inside record_id", "s:a..b", RecordRef{"", "s", "a..b"}},
		{"three dots", "s:...", RecordRef{"", "s", "..."}},
		{"percent that does not decode", "s:100%", RecordRef{"", "s", "100%"}},
		{"percent that decodes harmlessly", "s:a%20b", RecordRef{"", "s", "a%20b"}},
		{"query-like characters", "s:a?b#c&d", RecordRef{"", "s", "a?b#c&d"}},
		{"max lengths", long128 + "/" + long128 + ":" + long512, RecordRef{long128, long128, long512}},
		{"stream named pdpp", "pdpp:x", RecordRef{"", "pdpp", "x"}},
		{"escaped record URI", "pdpp://record/c%2Fs:r", RecordRef{"c", "s", "r"}},
		{"three-segment record URI", "pdpp://record/c/s/r", RecordRef{"c", "s", "r"}},
		{"two-segment record URI", "pdpp://record/s/r", RecordRef{"", "s", "r"}},
		{"canonical record URI", canonicalURI(`{"v":1,"kind":"record","connection_id":"c","stream":"s","record_id":"r"}`), RecordRef{"c", "s", "r"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseID(tc.in)
			if err != nil {
				t.Fatalf("ParseID(%q): %v", tc.in, err)
			}
			if got != tc.want {
				t.Fatalf("ParseID(%q) = %#v, want %#v", tc.in, got, tc.want)
			}
			back, err := ParseID(got.ID())
			if err != nil || back != got {
				t.Fatalf("ParseID(ID()) = %#v, %v; want %#v", back, err, got)
			}
		})
	}
}

func TestParseIDRejects(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string // must appear in the message
	}{
		{"empty", "", "id is empty"},
		{"no separator", "noseparator", `no ":"`},
		{"empty record_id", "orders:", `record_id "" is empty`},
		{"empty stream", ":o1", "stream is empty"},
		{"empty stream with connection", "c/:o1", "stream is empty"},
		{"empty connection", "/s:r", "empty connection_id"},
		{"extra slash", "a/b/s:r", `more than one "/"`},
		{"slash in record_id", "c/s:a/b", `contains "/"`},
		{"backslash in record_id", `s:a\b`, `contains "/" or "\"`},
		{"dot record_id", "s:.", "path traversal"},
		{"dotdot record_id", "s:..", "path traversal"},
		{"dotdot stream", "c/..:r", `stream ".." is not valid`},
		{"dotdot connection", "../s:r", `connection_id ".." is not valid`},
		{"encoded dotdot", "s:%2e%2e", "percent-decoded"},
		{"encoded dotdot upper", "s:%2E%2E", "percent-decoded"},
		{"encoded slash", "s:a%2Fb", "percent-decoded"},
		{"encoded backslash", "s:a%5cb", "percent-decoded"},
		{"encoded NUL", "s:a%00b", "percent-decoded"},
		{"NUL", "s:a\x00b", "control character"},
		{"newline", "s:a\nb", "control character"},
		{"DEL", "s:a\x7fb", "control character"},
		{"C1 control", "s:a\u0085b", "control character"},
		{"leading space in record_id", "s: r", "leading or trailing space"},
		{"trailing space in record_id", "s:r ", "leading or trailing space"},
		{"trailing no-break space", "s:r\u00a0", "leading or trailing space"},
		{"leading space in stream", " s:r", "is not valid"},
		{"invalid UTF-8", "s:\xff", "UTF-8"},
		{"record_id too long", "s:" + strings.Repeat("r", MaxRecordIDBytes+1), "over the 512-byte limit"},
		{"stream too long", strings.Repeat("s", MaxNameBytes+1) + ":r", "is not valid"},
		{"connection too long", strings.Repeat("c", MaxNameBytes+1) + "/s:r", "is not valid"},
		{"stream starts with dash", "-s:r", "is not valid"},
		{"stream with space", "my stream:r", "is not valid"},
		{"input too long", strings.Repeat("x", MaxInputBytes+1), "over the 4096-byte limit"},
		{"stream URI", "pdpp://stream/transcripts", "not a pdpp://record/ URI"},
		{"upper-case scheme", "PDPP://record/s:r", "not a pdpp://record/ URI"},
		{"REST url", "https://rs.example/v1/streams/s/records/r", `contains "/"`},
		{"bad record URI", "pdpp://record/s/r/x/y", "4 path segments"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ref, err := ParseID(tc.in)
			if err == nil {
				t.Fatalf("ParseID(%q) = %#v, want error", tc.in, ref)
			}
			he := wantArgError(t, err, CodeInvalidID, ParamID)
			if !strings.Contains(he.Message, tc.want) {
				t.Errorf("message %q does not contain %q", he.Message, tc.want)
			}
			if !strings.Contains(he.Message, `"transcripts:tr-5"`) {
				t.Errorf("message %q does not show an accepted example", he.Message)
			}
			if ref != (RecordRef{}) {
				t.Errorf("non-zero ref with error: %#v", ref)
			}
		})
	}
}

func TestRecordRefID(t *testing.T) {
	tests := []struct {
		ref  RecordRef
		want string
	}{
		{RecordRef{"c", "s", "r"}, "c/s:r"},
		{RecordRef{"", "s", "r"}, "s:r"},
		{RecordRef{"c", "s", "a:b"}, "c/s:a:b"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			if got := tc.ref.ID(); got != tc.want {
				t.Fatalf("ID() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestResolveConnection(t *testing.T) {
	withConn := RecordRef{"cin_a", "transcripts", "tr-5"}
	noConn := RecordRef{"", "transcripts", "tr-5"}
	tests := []struct {
		name     string
		ref      RecordRef
		arg      string
		want     RecordRef
		wantCode string
		wantMsg  []string
	}{
		{name: "neither", ref: noConn, arg: "", want: noConn},
		{name: "only id", ref: withConn, arg: "", want: withConn},
		{name: "only argument fills in", ref: noConn, arg: "cin_b", want: RecordRef{"cin_b", "transcripts", "tr-5"}},
		{name: "both equal", ref: withConn, arg: "cin_a", want: withConn},
		{name: "both differ", ref: withConn, arg: "cin_b", wantCode: CodeConflictingConnectionID,
			wantMsg: []string{`"cin_a"`, `"cin_b"`, `"cin_a/transcripts:tr-5"`, `"cin_b/transcripts:tr-5"`}},
		{name: "invalid argument", ref: noConn, arg: "../x", wantCode: CodeInvalidConnectionID, wantMsg: []string{`"../x"`, "cin_"}},
		{name: "invalid argument with id connection", ref: withConn, arg: "a b", wantCode: CodeInvalidConnectionID, wantMsg: []string{`"a b"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ResolveConnection(tc.ref, tc.arg)
			if tc.wantCode == "" {
				if err != nil || got != tc.want {
					t.Fatalf("ResolveConnection = %#v, %v; want %#v", got, err, tc.want)
				}
				return
			}
			var he *mcpkit.ArgError
			if !errors.As(err, &he) {
				t.Fatalf("ResolveConnection = %#v, %v; want *mcpkit.ArgError %s", got, err, tc.wantCode)
			}
			if he.Code != tc.wantCode || he.Field != ParamConnectionID {
				t.Errorf("code/param = %q/%q, want %q/%q", he.Code, he.Field, tc.wantCode, ParamConnectionID)
			}
			for _, w := range tc.wantMsg {
				if !strings.Contains(he.Message, w) {
					t.Errorf("message %q does not contain %q", he.Message, w)
				}
			}
		})
	}
}

func TestValidName(t *testing.T) {
	tests := []struct {
		in string
		ok bool
	}{
		{"a", true}, {"0", true}, {"_", true}, {"cin_3325c9636dab3a5344743485", true}, {"a.b-c", true},
		{strings.Repeat("a", MaxNameBytes), true},
		{"", false}, {".a", false}, {"-a", false}, {"a b", false}, {"a:b", false}, {"a/b", false},
		{"a%2e", false}, {"é", false}, {strings.Repeat("a", MaxNameBytes+1), false},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			if got := ValidName(tc.in); got != tc.ok {
				t.Fatalf("ValidName(%q) = %v, want %v", tc.in, got, tc.ok)
			}
		})
	}
}

// FuzzParseID: no input panics; every accepted id is valid and its
// canonical id and record URI both parse back to the same reference.
func FuzzParseID(f *testing.F) {
	for _, s := range []string{
		"cin_3325c9636dab3a5344743485/transcripts:tr-5", "transcripts:tr-5", "s:a:b", "c/s:a/b", "s:%2e%2e",
		"s:..", "/s:r", "a/b/s:r", "pdpp://record/c%2Fs:r", "pdpp://record/c/s/r", "pdpp://record/s/r",
		"s:a\x00", "s:\xff", "s: r", "pdpp://record/s:r?x", canonicalURI(`{"v":1,"kind":"record","stream":"s","record_id":"r"}`),
		"pdpp://record/c/s:r", referenceWindowURI(`{"v":1,"kind":"field-window","connection_id":"c","stream":"s","record_id":"r","field_path":"text","offset_chars":0,"limit_chars":4096}`),
		FieldWindowURI(WindowRef{Record: RecordRef{"c", "s", "r"}, Field: "text"}),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ref, err := ParseID(s)
		if err != nil {
			var he *mcpkit.ArgError
			if !errors.As(err, &he) || he.Code != CodeInvalidID || he.Message == "" {
				t.Fatalf("ParseID(%q): untyped error %v", s, err)
			}
			return
		}
		checkRoundTrip(t, s, ref)
	})
}

func checkRoundTrip(t *testing.T, in string, ref RecordRef) {
	t.Helper()
	if err := ref.Validate(); err != nil {
		t.Fatalf("%q parsed to invalid %#v: %v", in, ref, err)
	}
	if back, err := ParseID(ref.ID()); err != nil || back != ref {
		t.Fatalf("%q: ParseID(%q) = %#v, %v; want %#v", in, ref.ID(), back, err, ref)
	}
	uri := RecordURI(ref)
	if back, err := ParseRecordURI(uri); err != nil || back != ref {
		t.Fatalf("%q: ParseRecordURI(%q) = %#v, %v; want %#v", in, uri, back, err, ref)
	}
}

// wantArgError fails the test unless err is a *mcpkit.ArgError with code
// and param, and returns it.
func wantArgError(t *testing.T, err error, code, param string) *mcpkit.ArgError {
	t.Helper()
	var he *mcpkit.ArgError
	if !errors.As(err, &he) || he.Code != code || he.Field != param {
		t.Fatalf("error %v is not a %s *mcpkit.ArgError for param %s", err, code, param)
	}
	return he
}
