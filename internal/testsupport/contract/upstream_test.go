package contract

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/testkit"
)

// upstreamSpec is the upstream project's published OpenAPI document (3.1, JSON).
var upstreamSpec = testkit.Testdata("upstream", "pdpp-reference-public.openapi.json")

// Intended differences from upstream. Each entry is checked to still be needed, so a stale
// exception fails the test as well.
var (
	// Operations we declare that upstream does not publish.
	localOperations = map[string]string{
		"GET /v1/streams/{stream}/records/{id}/field-window": "described from the RS samples and DESIGN §3",
	}
	// Parameters we declare that upstream does not list for the operation.
	localParameters = map[string][]string{
		"getSchema":   {"connection_id"}, // schema scoped to a connection for the expand gate (seed 004)
		"listRecords": {"sort", "count"}, // DESIGN §3
		"getRecord":   {"fields"},        // projection on one record; the RS honours it (samples)
	}
	// Upstream parameters we leave out on purpose, for every operation.
	omittedEverywhere = []string{
		"connector_id",          // owner-token source hint; this adapter never uses owner tokens
		"connector_instance_id", // deprecated alias of connection_id
		"subject_id",            // owner/control-plane scoping
	}
	// Upstream parameters we leave out for one operation.
	omittedFor = map[string][]string{
		"listRecords": {"window"}, // time-window summary mode, not used by the adapter
	}
)

type upstreamDoc struct {
	Paths map[string]map[string]json.RawMessage `json:"paths"`
}

type upstreamOperation struct {
	OperationID string                      `json:"operationId"`
	Parameters  []upstreamParameter         `json:"parameters"`
	Responses   map[string]upstreamResponse `json:"responses"`
}

type upstreamParameter struct {
	Ref      string         `json:"$ref"`
	Name     string         `json:"name"`
	In       string         `json:"in"`
	Required bool           `json:"required"`
	Schema   upstreamSchema `json:"schema"`
}

type upstreamSchema struct {
	Type    json.RawMessage `json:"type"`
	Enum    []any           `json:"enum"`
	Minimum *float64        `json:"minimum"`
	Maximum *float64        `json:"maximum"`
}

type upstreamResponse struct {
	Content map[string]json.RawMessage `json:"content"`
}

// singleType returns the schema's type when it is one plain type name.
func (s upstreamSchema) singleType() (string, bool) {
	var name string
	if len(s.Type) == 0 || json.Unmarshal(s.Type, &name) != nil {
		return "", false
	}
	return name, true
}

var httpMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

func loadUpstream(t *testing.T) map[string]upstreamOperation {
	t.Helper()
	raw, err := os.ReadFile(upstreamSpec)
	if err != nil {
		t.Fatal(err)
	}
	var doc upstreamDoc
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("parse upstream OpenAPI: %v", err)
	}
	ops := map[string]upstreamOperation{}
	for path, item := range doc.Paths {
		for key, rawOp := range item {
			if !slices.Contains(httpMethods, key) {
				continue
			}
			var op upstreamOperation
			if err := json.Unmarshal(rawOp, &op); err != nil {
				t.Fatalf("upstream %s %s: %v", key, path, err)
			}
			for _, p := range op.Parameters {
				if p.Ref != "" {
					t.Fatalf("upstream %s %s uses parameter $ref %s; resolve it before comparing", key, path, p.Ref)
				}
			}
			ops[strings.ToUpper(key)+" "+path] = op
		}
	}
	return ops
}

// TestSpecAgreesWithUpstream compares every operation we declare with the upstream
// document: same operationId, parameters that exist upstream with the same location,
// requiredness, type, bounds and enum values, and status codes upstream also documents.
func TestSpecAgreesWithUpstream(t *testing.T) {
	upstream := loadUpstream(t)
	doc := loadSpec(t)
	usedLocalParams := map[string]bool{}
	usedOmissions := map[string]bool{}
	seenLocalOps := map[string]bool{}

	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			key := method + " " + path
			t.Run(op.OperationID, func(t *testing.T) {
				up, ok := upstream[key]
				if _, local := localOperations[key]; local {
					seenLocalOps[key] = true
					if ok {
						t.Errorf("%s is listed as local-only but upstream now publishes it as %q", key, up.OperationID)
					}
					return
				}
				if !ok {
					t.Fatalf("%s is not in the upstream OpenAPI", key)
				}
				if up.OperationID != op.OperationID {
					t.Errorf("operationId = %q, upstream %q", op.OperationID, up.OperationID)
				}
				compareParameters(t, op, up, usedLocalParams, usedOmissions)
				compareResponses(t, op, up)
			})
		}
	}

	for key := range localOperations {
		if !seenLocalOps[key] {
			t.Errorf("localOperations lists %s, which the spec does not declare", key)
		}
	}
	for opID, names := range localParameters {
		for _, name := range names {
			if !usedLocalParams[opID+"/"+name] {
				t.Errorf("localParameters lists %s/%s, which is not needed (declared upstream or not declared by us)", opID, name)
			}
		}
	}
	for _, name := range omittedEverywhere {
		if !usedOmissions["*/"+name] {
			t.Errorf("omittedEverywhere lists %s, which no upstream operation we cover has", name)
		}
	}
	for opID, names := range omittedFor {
		for _, name := range names {
			if !usedOmissions[opID+"/"+name] {
				t.Errorf("omittedFor lists %s/%s, which upstream does not have or we declare", opID, name)
			}
		}
	}
}

func compareParameters(t *testing.T, op *openapi3.Operation, up upstreamOperation, usedLocal, usedOmissions map[string]bool) {
	t.Helper()
	upByName := map[string]upstreamParameter{}
	for _, p := range up.Parameters {
		upByName[p.In+" "+p.Name] = p
	}
	ours := map[string]bool{}
	for _, ref := range op.Parameters {
		p := ref.Value
		ours[p.In+" "+p.Name] = true
		u, ok := upByName[p.In+" "+p.Name]
		if slices.Contains(localParameters[op.OperationID], p.Name) {
			usedLocal[op.OperationID+"/"+p.Name] = !ok
			if ok {
				t.Errorf("%s is listed as local-only but upstream declares it", p.Name)
			}
			continue
		}
		if !ok {
			t.Errorf("%s parameter %q is not declared upstream for %s", p.In, p.Name, op.OperationID)
			continue
		}
		if p.Required != u.Required {
			t.Errorf("%s: required = %v, upstream %v", p.Name, p.Required, u.Required)
		}
		s := p.Schema.Value
		if typ, ok := u.Schema.singleType(); ok && !s.Type.Is(typ) {
			t.Errorf("%s: type %v, upstream %s", p.Name, s.Type.Slice(), typ)
		}
		if len(u.Schema.Enum) > 0 {
			for _, v := range s.Enum {
				if !slices.Contains(u.Schema.Enum, v) {
					t.Errorf("%s: enum value %v is not in upstream enum %v", p.Name, v, u.Schema.Enum)
				}
			}
		}
		if msg := sameBound("maximum", s.Max, u.Schema.Maximum); msg != "" {
			t.Errorf("%s: %s", p.Name, msg)
		}
		if msg := sameBound("minimum", s.Min, u.Schema.Minimum); msg != "" {
			t.Errorf("%s: %s", p.Name, msg)
		}
	}
	var missing []string
	for key, u := range upByName {
		if ours[key] {
			continue
		}
		switch {
		case slices.Contains(omittedEverywhere, u.Name):
			usedOmissions["*/"+u.Name] = true
		case slices.Contains(omittedFor[op.OperationID], u.Name):
			usedOmissions[op.OperationID+"/"+u.Name] = true
		default:
			missing = append(missing, key)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("upstream parameters neither declared nor listed as omitted: %v", missing)
	}
}

func sameBound(name string, ours, upstream *float64) string {
	switch {
	case upstream == nil:
		return ""
	case ours == nil:
		return fmt.Sprintf("no %s, upstream %v", name, *upstream)
	case *ours != *upstream:
		return fmt.Sprintf("%s %v, upstream %v", name, *ours, *upstream)
	}
	return ""
}

func compareResponses(t *testing.T, op *openapi3.Operation, up upstreamOperation) {
	t.Helper()
	for code, ref := range op.Responses.Map() {
		if code == "default" {
			continue
		}
		if _, err := strconv.Atoi(code); err != nil {
			t.Errorf("response key %q is not a status code", code)
			continue
		}
		u, ok := up.Responses[code]
		if !ok {
			t.Errorf("status %s is not documented upstream for %s", code, op.OperationID)
			continue
		}
		var oursTypes, upTypes []string
		for ct := range ref.Value.Content {
			oursTypes = append(oursTypes, ct)
		}
		for ct := range u.Content {
			upTypes = append(upTypes, ct)
		}
		sort.Strings(oursTypes)
		sort.Strings(upTypes)
		if !slices.Equal(oursTypes, upTypes) {
			t.Errorf("status %s content types %v, upstream %v", code, oursTypes, upTypes)
		}
	}
}
