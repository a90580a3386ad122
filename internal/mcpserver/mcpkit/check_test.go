package mcpkit

import (
	"errors"
	"fmt"
	"testing"
)

func TestChecks(t *testing.T) {
	tests := []struct {
		name    string
		err     *ArgError
		code    string
		message string
	}{
		{"enum ok", CheckEnum("t", "mode", "lexical", []string{"lexical", "hybrid"}), "", ""},
		{"enum bad", CheckEnum("t", "mode", "fuzzy", []string{"lexical", "hybrid"}), CodeInvalidEnum, `mode must be one of lexical, hybrid; got "fuzzy"`},
		{"length ok at limit", CheckMaxLength("t", "q", "héllo", 5), "", ""},
		{"length counts characters", CheckMaxLength("t", "q", "héllo!", 5), CodeTooLong, "q must be at most 5 characters; got 6"},
		{"object ok", CheckObject("t", "filter", []byte(` {"a":1}`)), "", ""},
		{"object string", CheckObject("t", "filter", []byte(`"a=1"`)), CodeInvalidType, "filter must be a JSON object; got a string"},
		{"object array", CheckObject("t", "filter", []byte(`[]`)), CodeInvalidType, "filter must be a JSON object; got an array"},
		{"object number", CheckObject("t", "filter", []byte(`12`)), CodeInvalidType, "filter must be a JSON object; got a number"},
		{"object bool", CheckObject("t", "filter", []byte(`true`)), CodeInvalidType, "filter must be a JSON object; got a boolean"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.code == "" {
				if tc.err != nil {
					t.Fatalf("unexpected error %v", tc.err)
				}
				return
			}
			if tc.err == nil || tc.err.Code != tc.code || tc.err.Message != tc.message || tc.err.Tool != "t" {
				t.Fatalf("got %+v, want code %s message %q", tc.err, tc.code, tc.message)
			}
		})
	}
}

func TestAsArgError(t *testing.T) {
	own := &ArgError{Tool: "a", Field: "f", Code: CodeOutOfRange, Message: "m"}
	tests := []struct {
		name string
		err  error
		want *ArgError
	}{
		{"nil", nil, nil},
		{"own error kept", own, own},
		{"wrapped error unwrapped", fmt.Errorf("ctx: %w", own), own},
		{"tool filled in", &ArgError{Field: "f", Code: CodeTooLong, Message: "m"}, &ArgError{Tool: "search", Field: "f", Code: CodeTooLong, Message: "m"}},
		{"plain error", errors.New("bad"), &ArgError{Tool: "search", Code: CodeInvalidType, Message: "bad"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := AsArgError("search", tc.err)
			if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
				t.Fatalf("AsArgError = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestArgErrorText(t *testing.T) {
	tests := []struct {
		err  *ArgError
		want string
	}{
		{&ArgError{Tool: "search", Field: "q", Code: CodeMissingArgument, Message: "q is required"}, "search: missing_argument: q is required"},
		{&ArgError{Code: CodeInvalidJSON, Message: "bad"}, "invalid_json: bad"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			if got := tc.err.Error(); got != tc.want {
				t.Fatalf("Error() = %q, want %q", got, tc.want)
			}
		})
	}
}
