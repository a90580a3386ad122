package contract

import (
	"context"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/pdpp-mcp/pdpp-mcp/spec"
)

// maxParamDescription is the longest parameter description the spec may carry: the tool
// generator copies these texts into MCP tool schemas, which have a byte budget.
const maxParamDescription = 120

// loadSpec parses and validates the embedded RS OpenAPI document.
func loadSpec(t testing.TB) *openapi3.T {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(spec.OpenAPI)
	if err != nil {
		t.Fatalf("load spec/pdpp-rs.openapi.yaml: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("validate spec/pdpp-rs.openapi.yaml: %v", err)
	}
	return doc
}

func TestSpecIsValidOpenAPI31(t *testing.T) {
	doc := loadSpec(t)
	if !doc.IsOpenAPI31OrLater() {
		t.Errorf("openapi = %q, want 3.1.x (docs/architecture.md)", doc.OpenAPI)
	}
	if len(doc.Servers) != 0 {
		t.Errorf("spec declares servers %v; the RS base URL is configuration", doc.Servers)
	}
}

// TestOperationTable pins the operation ids and path parameter names of
// docs/architecture.md: handlers, the tool catalog and the demo RS refer to them by name.
func TestOperationTable(t *testing.T) {
	doc := loadSpec(t)
	want := []struct {
		method, path, operationID string
	}{
		{"GET", "/v1/schema", "getSchema"},
		{"GET", "/v1/streams", "listStreams"},
		{"GET", "/v1/streams/{stream}", "getStreamMetadata"},
		{"GET", "/v1/streams/{stream}/records", "listRecords"},
		{"GET", "/v1/streams/{stream}/records/{id}", "getRecord"},
		{"GET", "/v1/streams/{stream}/records/{id}/field-window", "getFieldWindow"},
		{"GET", "/v1/streams/{stream}/aggregate", "aggregateStream"},
		{"GET", "/v1/search", "searchRecordsLexical"},
		{"GET", "/v1/search/semantic", "searchRecordsSemantic"},
		{"GET", "/v1/search/hybrid", "searchRecordsHybrid"},
		{"GET", "/v1/blobs/{blob_id}", "getBlob"},
		{"GET", "/v1/event-subscriptions", "listEventSubscriptions"},
		{"POST", "/v1/event-subscriptions", "createEventSubscription"},
		{"GET", "/v1/event-subscriptions/{subscription_id}", "getEventSubscription"},
		{"PATCH", "/v1/event-subscriptions/{subscription_id}", "updateEventSubscription"},
		{"DELETE", "/v1/event-subscriptions/{subscription_id}", "deleteEventSubscription"},
		{"POST", "/v1/event-subscriptions/{subscription_id}/test-event", "sendTestEvent"},
	}
	declared := map[string]string{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			declared[method+" "+path] = op.OperationID
		}
	}
	for _, w := range want {
		t.Run(w.operationID, func(t *testing.T) {
			key := w.method + " " + w.path
			got, ok := declared[key]
			if !ok {
				t.Fatalf("%s is not declared", key)
			}
			if got != w.operationID {
				t.Errorf("%s operationId = %q, want %q", key, got, w.operationID)
			}
			delete(declared, key)
			op := doc.Paths.Find(w.path).GetOperation(w.method)
			var pathParams []string
			for _, p := range op.Parameters {
				if p.Value.In == openapi3.ParameterInPath {
					pathParams = append(pathParams, "{"+p.Value.Name+"}")
					if !p.Value.Required {
						t.Errorf("path parameter %s is not required", p.Value.Name)
					}
				}
			}
			for _, seg := range strings.Split(w.path, "/") {
				if strings.HasPrefix(seg, "{") && !slices.Contains(pathParams, seg) {
					t.Errorf("path segment %s has no path parameter (declared %v)", seg, pathParams)
				}
			}
			if len(pathParams) != strings.Count(w.path, "{") {
				t.Errorf("path parameters %v do not match %s", pathParams, w.path)
			}
		})
	}
	extra := make([]string, 0, len(declared))
	for k := range declared {
		extra = append(extra, k)
	}
	sort.Strings(extra)
	if len(extra) > 0 {
		t.Errorf("operations not in the architecture table: %v", extra)
	}
}

// TestParameterDescriptions checks what the tool generator relies on: every parameter has
// a short description, and every declared bound is consistent.
func TestParameterDescriptions(t *testing.T) {
	doc := loadSpec(t)
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			for _, ref := range op.Parameters {
				p := ref.Value
				t.Run(op.OperationID+"/"+p.Name, func(t *testing.T) {
					if p.Description == "" {
						t.Errorf("%s %s: parameter %s has no description", method, path, p.Name)
					}
					if n := len([]rune(p.Description)); n > maxParamDescription {
						t.Errorf("%s %s: description of %s is %d chars, max %d", method, path, p.Name, n, maxParamDescription)
					}
					s := p.Schema.Value
					if s.Min != nil && s.Max != nil && *s.Min > *s.Max {
						t.Errorf("%s: minimum %v > maximum %v", p.Name, *s.Min, *s.Max)
					}
					if s.Default != nil {
						if err := s.VisitJSON(s.Default); err != nil {
							t.Errorf("%s: default %v does not satisfy its schema: %v", p.Name, s.Default, err)
						}
					}
				})
			}
		}
	}
}
