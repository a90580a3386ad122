package mcpkit

import (
	"regexp"
	"strings"
	"testing"
)

func TestFormatProblem(t *testing.T) {
	name := NewFormat("name", "letters", `^[A-Za-z0-9_][A-Za-z0-9_.-]*$`, 16, true)
	text := NewFormat("text", "text", "", 8, false)
	tests := []struct {
		name  string
		f     *Format
		value string
		want  string // "" accepts the value
	}{
		{"plain name", name, "transcripts", ""},
		{"inner dots", name, "a..b", ""},
		{"empty", name, "", "is empty"},
		{"dot", name, ".", "path traversal"},
		{"dot-dot", name, "..", "path traversal"},
		{"slash", name, "a/b", `contains "/"`},
		{"backslash", name, `a\b`, `contains "/" or "\"`},
		{"NUL", name, "a\x00", "control character"},
		{"DEL", name, "a\x7f", "control character"},
		{"over the limit", name, strings.Repeat("a", 17), "17 bytes, over the 16-byte limit"},
		{"encoded dot-dot", name, "%2e%2E", "once percent-decoded"},
		{"encoded slash", name, "a%2fb", "once percent-decoded"},
		{"pattern", name, "a b", "not in the allowed form"},
		{"leading dash", name, "-a", "not in the allowed form"},
		{"invalid UTF-8", name, "a\xff", "not valid UTF-8"},
		{"text may hold slashes", text, "a/b ..", ""},
		{"text NUL", text, "\x00", "control character"},
		{"text newline", text, "a\nb", "control character"},
		{"text C1 control", text, "a\u0085", "control character"},
		{"text limit counts bytes", text, "ééééé", "10 bytes, over the 8-byte limit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.f.Problem(tc.value)
			if tc.want == "" {
				if got != "" || !tc.f.Valid(tc.value) {
					t.Fatalf("Problem(%q) = %q, want accepted", tc.value, got)
				}
				return
			}
			if !strings.Contains(got, tc.want) || tc.f.Valid(tc.value) {
				t.Fatalf("Problem(%q) = %q, want it to contain %q", tc.value, got, tc.want)
			}
		})
	}
}

func TestCheckFormat(t *testing.T) {
	f := NewFormat("name", `letters and digits, e.g. "notes"`, `^[a-z0-9]+$`, 16, true)
	if err := CheckFormat("tool", "stream", "notes", f); err != nil {
		t.Fatalf("accepted value refused: %v", err)
	}
	err := CheckFormat("tool", "stream", strings.Repeat("é", 100), f)
	if err == nil {
		t.Fatal("long value accepted")
	}
	if err.Code != CodeInvalidFormat || err.Field != "stream" || err.Tool != "tool" {
		t.Fatalf("error = %+v", err)
	}
	for _, want := range []string{`stream "éé`, "…", "200 bytes, over the 16-byte limit", `allowed: letters and digits, e.g. "notes"`} {
		if !strings.Contains(err.Message, want) {
			t.Errorf("message %q lacks %q", err.Message, want)
		}
	}
}

// FuzzFormat checks that whatever a segment format accepts is safe as one
// URL path segment, also once percent-decoded, and within its limit.
func FuzzFormat(f *testing.F) {
	for _, seed := range []string{"tr-5", "..", "%2e%2e", "a/b", "a\x00", "é", " r", "r\u00a0", "%"} {
		f.Add(seed)
	}
	record := NewFormat("record_id", "a segment", `^[^\p{Z}](.*[^\p{Z}])?$`, 512, true)
	f.Fuzz(func(t *testing.T, s string) {
		p := record.Problem(s)
		if p == "" {
			if s == "." || s == ".." || strings.ContainsAny(s, "/\\\x00") || len(s) > 512 || s == "" {
				t.Fatalf("unsafe segment %q accepted", s)
			}
			return
		}
		if err := CheckFormat("t", "record_id", s, record); err == nil || err.Code != CodeInvalidFormat {
			t.Fatalf("Problem %q but CheckFormat = %v", p, err)
		}
	})
}

// fastPatterns are the catalogs' patterns and other shapes fastMatcher
// takes or must decline.
var fastPatterns = []string{
	`^[A-Za-z_][A-Za-z0-9_.-]*$`, `^[A-Za-z0-9_][A-Za-z0-9_.-]*$`, `^[A-Za-z0-9][A-Za-z0-9_.:-]*$`,
	noEdgeSeparatorPattern, `^a[b-d]*$`, `^[^a][a-z]*$`, `^[é][a]*$`, `^[a-z]+$`, `^(?i)[a-z][a-z]*$`, `[a-z][a-z]*`,
}

// TestFastMatcherTakesTheCatalogShapes: the patterns of the catalogs get
// a fast matcher; a shape it does not know keeps the regexp.
func TestFastMatcherTakesTheCatalogShapes(t *testing.T) {
	for i, p := range fastPatterns {
		if got := fastMatcher(p) != nil; got != (i < 5) {
			t.Errorf("fastMatcher(%q) taken = %t, want %t", p, got, i < 5)
		}
	}
}

// FuzzFastMatcher: every fast matcher answers as its regexp does.
func FuzzFastMatcher(f *testing.F) {
	for _, s := range []string{"", "a", "tr-5", " r", "r ", "r\u00a0", "\u3000x", "a\nb", "\n", "a\n", "é", "\xff", "x\xc2", "a.b:c", "_x", "-x", "A1"} {
		f.Add(s)
	}
	type pair struct {
		fast func(string) bool
		re   *regexp.Regexp
	}
	var pairs []pair
	for _, p := range fastPatterns {
		if m := fastMatcher(p); m != nil {
			pairs = append(pairs, pair{m, regexp.MustCompile(p)})
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, p := range pairs {
			if got, want := p.fast(s), p.re.MatchString(s); got != want {
				t.Errorf("%s on %q: fast %t, regexp %t", p.re, s, got, want)
			}
		}
	})
}
