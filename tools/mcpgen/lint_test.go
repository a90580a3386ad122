package main

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

const (
	testOpenAPI      = "testdata/openapi.yaml"
	testInstructions = "testdata/instructions.md"
)

// TestLintRules provokes each rule with a catalog in testdata/lint that
// breaks only that rule, and checks generation fails with one clear problem.
func TestLintRules(t *testing.T) {
	tests := []struct {
		file string
		want string
	}{
		{"description_budget.yaml", `tool "list_items": description is 205 bytes, budget 200`},
		{"field_description_budget.yaml", `arg "limit": description is`},
		{"tools_list_budget.yaml", "tools/list is"},
		{"tool_budget.yaml", `tool "list_items" entry is`},
		{"instructions_phrase.yaml", `"zebra" does not appear within the first 512 characters`},
		{"instructions_late_phrase.yaml", `"cursor" does not appear within the first 40 characters`},
		{"repeated_sentence_tools.yaml", `long sentence repeated in tool "list_items" description and tool "list_more" description`},
		{"repeated_sentence_params.yaml", `long sentence repeated in tool "list_items" arg "stream" and tool "list_items" arg "other"`},
		{"duplicate_tool.yaml", `tool "list_items": duplicate tool name`},
		{"missing_title.yaml", `tool "list_items": title is missing`},
		{"missing_description.yaml", `tool "list_items": description is missing`},
		{"missing_hint.yaml", "annotation openWorldHint must be set explicitly"},
		{"missing_param_description.yaml", `arg "order": description is missing`},
		{"unknown_param.yaml", `operation listRecords has no parameter "page_size"`},
		{"unknown_operation.yaml", `operation "listThings" is not in the OpenAPI document`},
		{"enum_on_integer.yaml", "enum is only allowed on string and string_array arguments"},
		{"default_outside_enum.yaml", `default "sideways" is not in the enum`},
		{"missing_output.yaml", "output must declare at least one structuredContent property"},
		{"bad_uri_template.yaml", "is not a valid URI template"},
		{"resource_uri_budget.yaml", `resource "item": its fixed part alone reaches max_resource_uri_bytes (16)`},
		{"toolset_budget.yaml", `tools/list of toolset "health" alone is`},
		{"toolset_budget_unknown.yaml", `max_toolset_list_bytes: toolset "admin" has no tools`},
		{"tools_list_budget_newest.yaml", "tools/list at 2026-07-28 is 952 bytes, budget 900"},
		{"toolset_budget_newest.yaml", `tools/list of toolset "health" alone at 2026-07-28 is`},
		{"newest_without_identity.yaml", "budgets at the newest revision need max_server_name_bytes and max_server_version_bytes"},
		{"guidance_elsewhere.yaml", `guidance "zebra crossing" belongs to list_items but appears in tool "ping" description`},
		{"guidance_in_instructions.yaml", `guidance "page with limit" belongs to list_items but appears in the instructions`},
		{"guidance_not_at_home.yaml", `guidance "zebra crossing" does not appear at its home list_items`},
		{"format_unknown.yaml", `tool "list_items" arg "stream": format "slug" is not declared in formats`},
		{"format_unknown_declared.yaml", `tool "list_items" arg "other": format "stream_name" is not declared in formats (declared: slug)`},
		{"format_on_integer.yaml", `arg "size": format is only allowed on string and string_array arguments`},
		{"format_unused.yaml", `format "slug": no argument or resource variable uses it`},
		{"format_bad_pattern.yaml", `format "slug": pattern does not compile`},
		{"format_unanchored.yaml", `format "slug": pattern must be anchored with ^ and $`},
		{"format_no_limit.yaml", `format "slug": max_bytes must be between 1 and 4096`},
		{"format_no_description.yaml", `format "slug": description is missing`},
		{"result_budget_missing.yaml", `tool "list_items": toolset "read" requires a result_budget`},
		{"result_budget_both.yaml", `result_budget takes bytes or rs_body_ratio, not both`},
		{"result_budget_ratio_floor.yaml", `rs_body_ratio must be at least 1 and come with min_bytes`},
		{"guidance_unknown_home.yaml", `guidance "zebra crossing": home "nowhere" is neither "instructions" nor a tool of the catalog`},
		{"nullable_output.yaml", `output "next_cursor" is nullable; omit the key instead of sending null`},
		{"view_budget.yaml", `view "sample": the document is`},
		{"view_unknown.yaml", `tool "list_items": view "other" is not declared under views`},
		{"view_source.yaml", `view "sample": source must hold /*@unseen-tables@*/ and @csp@ once each`},
	}
	for _, tc := range tests {
		t.Run(strings.TrimSuffix(tc.file, ".yaml"), func(t *testing.T) {
			_, _, err := generate(options{
				catalog:      filepath.Join("testdata", "lint", tc.file),
				openapi:      testOpenAPI,
				instructions: testInstructions,
			})
			var lint *lintError
			if !errors.As(err, &lint) {
				t.Fatalf("generate error = %v, want a lint error", err)
			}
			if len(lint.problems) != 1 {
				t.Fatalf("want exactly one problem, got %d:\n%v", len(lint.problems), err)
			}
			if !strings.Contains(lint.problems[0], tc.want) {
				t.Fatalf("problem %q does not contain %q", lint.problems[0], tc.want)
			}
		})
	}
}

// TestInputErrors covers failures that are not catalog lint: unknown keys,
// missing instructions and a catalog that needs an OpenAPI document.
func TestInputErrors(t *testing.T) {
	tests := []struct {
		name string
		opt  options
		want string
	}{
		{"unknown catalog key", options{catalog: "testdata/lint/unknown_key.yaml", openapi: testOpenAPI, instructions: testInstructions},
			"field descripton not found"},
		{"empty instructions", options{catalog: "testdata/catalog.yaml", openapi: testOpenAPI, instructions: "testdata/empty_instructions.md"},
			"instructions are missing"},
		{"no instructions flag", options{catalog: "testdata/catalog.yaml", openapi: testOpenAPI},
			"instructions are missing"},
		{"operation without openapi", options{catalog: "testdata/catalog.yaml", instructions: testInstructions},
			`tool "list_items" references OpenAPI operations or parameters but no -openapi document was given`},
		{"missing catalog", options{catalog: "testdata/nope.yaml", instructions: testInstructions},
			"nope.yaml"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := generate(tc.opt)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("generate error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestRunExitCodes checks the command line: lint failures exit 1 with the
// problem on stderr and nothing written; usage errors exit 2.
func TestRunExitCodes(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"lint failure", []string{"-catalog", "testdata/lint/duplicate_tool.yaml", "-openapi", testOpenAPI,
			"-instructions", testInstructions}, 1, "duplicate tool name"},
		{"missing catalog flag", []string{"-instructions", testInstructions}, 2, "usage: mcpgen"},
		{"unknown flag", []string{"-bogus"}, 2, "flag provided but not defined"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			var stderr bytes.Buffer
			code := run(append(tc.args, "-out", out), &stderr)
			if code != tc.wantCode {
				t.Fatalf("exit code = %d, want %d; stderr:\n%s", code, tc.wantCode, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.wantErr) {
				t.Fatalf("stderr %q does not contain %q", stderr.String(), tc.wantErr)
			}
			if entries, _ := filepath.Glob(filepath.Join(out, "*")); len(entries) != 0 {
				t.Fatalf("failed run wrote files: %v", entries)
			}
		})
	}
}

func TestSentences(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"plain", "One. Two! Three?", []string{"One.", "Two!", "Three?"}},
		{"wrapped line joins", "A sentence that\nwraps. Next", []string{"A sentence that wraps.", "Next"}},
		{"list items split", "Intro:\n1. first\n- second", []string{"Intro:", "1. first", "- second"}},
		{"paragraphs split", "One\n\nTwo", []string{"One", "Two"}},
		{"dots inside tokens stay", "Use a.b.c or v1.2 here.", []string{"Use a.b.c or v1.2 here."}},
		{"semicolon ends", "Do this; then that.", []string{"Do this;", "then that."}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := sentences(tc.in)
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("sentences(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestCamel(t *testing.T) {
	tests := map[string]string{
		"query_records":     "QueryRecords",
		"connection_id":     "ConnectionID",
		"read_record_field": "ReadRecordField",
		"q":                 "Q",
		"field-window":      "FieldWindow",
		"record_url":        "RecordURL",
	}
	for in, want := range tests {
		t.Run(in, func(t *testing.T) {
			if got := camel(in); got != want {
				t.Fatalf("camel(%q) = %q, want %q", in, got, want)
			}
		})
	}
}

// TestPortableSchemaRefusesTypeArrays checks the published-schema lint: a
// type spelled as an array is refused wherever it appears, one type name
// is accepted.
func TestPortableSchemaRefusesTypeArrays(t *testing.T) {
	tests := []struct {
		name, schema string
		ok           bool
	}{
		{"plain types", `{"type":"object","properties":{"a":{"type":"string"},"b":{"anyOf":[{"type":"string"},{"type":"null"}]}}}`, true},
		{"nullable pair in a property", `{"type":"object","properties":{"a":{"type":["string","null"]}}}`, false},
		{"type array in items", `{"type":"object","properties":{"a":{"type":"array","items":{"type":["integer","null"]}}}}`, false},
		{"type array at the top", `{"type":["object","null"]}`, false},
		{"a property named type", `{"type":"object","properties":{"type":{"type":"string"}}}`, true},
		{"a property without a type", `{"type":"object","properties":{"a":{"description":"may be null"}}}`, false},
		{"a nested property without a type", `{"type":"object","properties":{"a":{"type":"object","properties":{"b":{}}}}}`, false},
		{"an enum without a type", `{"type":"object","properties":{"a":{"enum":["x","y"]}}}`, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := checkPortableSchema([]byte(tc.schema))
			if (err == nil) != tc.ok {
				t.Fatalf("checkPortableSchema(%s) = %v, want ok=%v", tc.schema, err, tc.ok)
			}
		})
	}
}
