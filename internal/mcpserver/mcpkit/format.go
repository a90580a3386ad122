package mcpkit

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// CodeInvalidFormat is the code of a string argument that breaks its
// declared format.
const CodeInvalidFormat = "invalid_format"

// Format is a named string format declared in a tool catalog: every value
// must be valid UTF-8 without control characters, at most MaxBytes bytes,
// and match Pattern when one is set. A Segment format is also safe as one
// URL path segment: it is not "." or "..", holds no "/" or "\", and does
// not turn into any of those by percent-decoding. Generated code builds
// one Format per catalog entry with NewFormat; packages that parse the
// same values from ids or URIs reuse that value, so there is one rule.
type Format struct {
	Name        string // catalog name, e.g. "name"
	Description string // what is allowed, in words, for messages
	MaxBytes    int    // > 0
	Segment     bool
	pattern     *regexp.Regexp // nil: any text
	// match is pattern.MatchString, or the same answer computed without
	// the regexp for the shapes fastMatcher knows.
	match func(string) bool
}

// NewFormat compiles a catalog format; pattern may be empty. It panics on
// a bad pattern, which the generator has already refused.
func NewFormat(name, description, pattern string, maxBytes int, segment bool) *Format {
	f := &Format{Name: name, Description: description, MaxBytes: maxBytes, Segment: segment}
	if pattern != "" {
		f.pattern = regexp.MustCompile(pattern)
		f.match = fastMatcher(pattern)
		if f.match == nil {
			f.match = f.pattern.MatchString
		}
	}
	return f
}

// Valid reports whether s is in the format.
func (f *Format) Valid(s string) bool { return f.Problem(s) == "" }

// Problem describes why s is not in the format, as a phrase to follow the
// value's name ("is empty", "contains a control character", ...), or
// returns "" when it is. The checks run cheapest first and each is bounded
// by MaxBytes, so a long value costs one length test.
func (f *Format) Problem(s string) string {
	switch {
	case s == "":
		return "is empty"
	case len(s) > f.MaxBytes:
		return fmt.Sprintf("is %d bytes, over the %d-byte limit", len(s), f.MaxBytes)
	case !utf8.ValidString(s):
		return "is not valid UTF-8"
	}
	if p := unsafeText(s, f.Segment); p != "" {
		return p
	}
	if f.Segment && strings.Contains(s, "%") {
		if dec, err := url.PathUnescape(s); err == nil {
			if p := unsafeText(dec, true); p != "" {
				return "once percent-decoded, " + p
			}
		}
	}
	if f.pattern != nil && !f.match(s) {
		return "is not in the allowed form"
	}
	return ""
}

// unsafeText describes a control character, or with segment a path
// separator or a dot segment, in s ("" if none).
func unsafeText(s string, segment bool) string {
	if segment {
		if s == "." || s == ".." {
			return `is "." or ".." (path traversal)`
		}
		if strings.ContainsAny(s, `/\`) {
			return `contains "/" or "\"`
		}
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return "contains a control character"
		}
	}
	return ""
}

// CheckFormat reports invalid_format when value is not in format f; the
// message names the argument, what is wrong and what is allowed. Callers
// skip the check for an absent optional value.
func CheckFormat(tool, field, value string, f *Format) *ArgError {
	p := f.Problem(value)
	if p == "" {
		return nil
	}
	return Errorf(tool, field, CodeInvalidFormat, "%s %s %s; allowed: %s", field, quoteValue(value), p, f.Description)
}

// quoteValue renders an untrusted value for a message, shortened when long.
func quoteValue(s string) string {
	const max = 64
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return fmt.Sprintf("%q…", s[:cut])
	}
	return fmt.Sprintf("%q", s)
}
