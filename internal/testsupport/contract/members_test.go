package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// memberExtension says why our spec declares a response member that upstream's published
// schema does not name: sample is a captured reply (testdata/pdpp-samples, by its
// _index.json name) of the same operation and status that holds the member, and the test
// checks it does; an extension no sample shows says where it comes from instead.
type memberExtension struct {
	sample, why string
}

// Reasons shared by several extensions.
const (
	whyEnvelope        = "the RS adds links and meta to every reply it sends; upstream leaves them out of its schemas"
	whySharedSearch    = "one SearchResultList serves the three search modes; upstream names this member for lexical search only"
	whySharedRecord    = "one Record serves getRecord and listRecords; upstream names this member on the single record only"
	whySharedError     = "one ErrorObject serves every status; upstream's 409 body omits what its other error bodies name"
	whySharedMeta      = "one ResponseMeta serves every reply; the RS sends this member on search replies (sample search-lexical)"
	whyRecordConnector = "the record's connector id, which the adapter reads beside connector_key when the RS sends it; the sampled RS does not"
	whyHitURI          = "a hit's pdpp://record URI, which the adapter turns into the self-contained result id (seed: a parseable record_uri is normalised before display); the sampled RS does not send it"
	whyHitConnectorKey = "the hit's connector registry key, shown with the hit when the RS sends it; the sampled RS does not"
	whySharedFlag      = "one CapabilityFlag serves every capability of a field; upstream names operators on range_filter only"
	whyOlderFilter     = "a field's filter operators as an RS older than exact_filter and range_filter names them, which the compact projection of a full schema document keeps (TestSchemaCompactFallback); the sampled RS does not send it"
)

// memberExtensions are the response members our spec declares that upstream's published
// schema for the same operation and status does not name, or names with another type. The
// key is "operationId status member-path" ("[]" for array items, "{}" for the values of a
// map); an entry also covers the
// members below it. Each entry is checked to still be needed, so a stale one fails the test
// as well. The field-window endpoint is not here: upstream does not publish it at all
// (localOperations), so its members come from the samples alone (TestSamplesMatchSpec).
var memberExtensions = map[string]memberExtension{
	"getSchema 200 links":                      {sample: "schema", why: whyEnvelope},
	"getSchema 200 meta":                       {sample: "schema", why: whyEnvelope},
	"getSchema 200 connector_count":            {sample: "schema-stream-transcripts", why: "totals the RS sends with stream="},
	"getSchema 200 stream_count":               {sample: "schema-stream-transcripts", why: "totals the RS sends with stream="},
	"getSchema 200 connectors[].connector_key": {sample: "schema", why: "the connector's registry key; upstream's connector names connector_id only"},
	"getSchema 200 connectors[].source.id":     {sample: "schema", why: "upstream's source is a free-form object"},
	"getSchema 200 connectors[].source.kind":   {sample: "schema", why: "upstream's source is a free-form object"},
	"getSchema 200 connectors[].granted_connections": {sample: "multi-conn-schema-compact",
		why: "the connections a grant covers, read by the connection_id disambiguation"},
	"getSchema 200 connectors[].streams[].field_capabilities{}.exact_filter.operators":    {why: whySharedFlag},
	"getSchema 200 connectors[].streams[].field_capabilities{}.lexical_search.operators":  {why: whySharedFlag},
	"getSchema 200 connectors[].streams[].field_capabilities{}.semantic_search.operators": {why: whySharedFlag},
	"getSchema 200 connectors[].streams[].field_capabilities{}.filter":                    {why: whyOlderFilter},
	"listStreams 200 links":       {sample: "streams-list", why: whyEnvelope},
	"listStreams 200 meta":        {sample: "streams-list", why: whyEnvelope},
	"listStreams 200 has_more":    {sample: "streams-list", why: "the list envelope the RS sends on every list"},
	"listStreams 200 next_cursor": {why: "the list envelope (DESIGN §3); the sampled stream lists fit one page and send none"},
	"getStreamMetadata 200 links": {sample: "stream-transcripts", why: whyEnvelope},
	"getStreamMetadata 200 meta":  {sample: "stream-transcripts", why: whyEnvelope},
	"getStreamMetadata 200 field_capabilities{}.exact_filter.operators":    {why: whySharedFlag},
	"getStreamMetadata 200 field_capabilities{}.lexical_search.operators":  {why: whySharedFlag},
	"getStreamMetadata 200 field_capabilities{}.semantic_search.operators": {why: whySharedFlag},
	"getStreamMetadata 200 field_capabilities{}.filter":                    {why: whyOlderFilter},
	"getStreamMetadata 200 instance_ids":                                   {sample: "stream-transcripts", why: "the connections holding the stream, as the RS sends them"},
	"listRecords 200 links":                                                {sample: "records-transcripts-limit2", why: whyEnvelope},
	"listRecords 200 meta.count_accuracy":                                  {why: whySharedMeta},
	"listRecords 200 meta.recall":                                          {why: whySharedMeta},
	"listRecords 200 data[].connector_key":                                 {why: whySharedRecord},
	"listRecords 200 data[].connector_id":                                  {why: whyRecordConnector},
	"getRecord 200 connector_id":                                           {why: whyRecordConnector},
	"searchRecordsLexical 200 data[].record_uri":                           {why: whyHitURI},
	"searchRecordsSemantic 200 data[].record_uri":                          {why: whyHitURI},
	"searchRecordsHybrid 200 data[].record_uri":                            {why: whyHitURI},
	"searchRecordsLexical 200 data[].connector_key":                        {why: whyHitConnectorKey},
	"searchRecordsSemantic 200 data[].connector_key":                       {why: whyHitConnectorKey},
	"searchRecordsHybrid 200 data[].connector_key":                         {why: whyHitConnectorKey},
	"listRecords 200 data[].links":                                         {why: whySharedRecord},
	"listRecords 200 data[].meta":                                          {why: whySharedRecord},
	"getRecord 200 links":                                                  {sample: "record-transcripts-tr-5", why: whyEnvelope},
	"getRecord 200 meta":                                                   {sample: "record-transcripts-tr-5", why: whyEnvelope},
	"getRecord 200 connector_key":                                          {sample: "record-transcripts-tr-5", why: "the connector's registry key, as the RS sends it"},
	"getRecord 409 error.next_step":                                        {why: whySharedError},
	"getRecord 409 error.resource_metadata":                                {why: whySharedError},
	"getRecord 409 error.available_connections[].connector_id":             {why: whySharedError},
	"getRecord 409 error.available_connections[].connector_key":            {why: whySharedError},
	"getBlob 409 error.next_step":                                          {why: whySharedError},
	"getBlob 409 error.resource_metadata":                                  {why: whySharedError},
	"getBlob 409 error.available_connections[].connector_id":               {why: whySharedError},
	"getBlob 409 error.available_connections[].connector_key":              {why: whySharedError},
	"aggregateStream 200 links":                                            {sample: "aggregate-count", why: whyEnvelope},
	"aggregateStream 200 meta":                                             {sample: "aggregate-count", why: whyEnvelope},
	"aggregateStream 200 groups[].value":                                   {why: "a group's metric value for sum/min/max (DESIGN §3); the sampled groups count and send none"},
	"searchRecordsLexical 200 links":                                       {sample: "search-lexical", why: whyEnvelope},
	"searchRecordsLexical 200 meta":                                        {sample: "search-lexical", why: whyEnvelope},
	"searchRecordsLexical 200 data[].authored_at":                          {sample: "search-lexical", why: "the hit's authored time, as the RS sends it"},
	"searchRecordsLexical 200 data[].evidence_excerpts": {sample: "search-lexical",
		why: "proven match evidence (DESIGN §3); upstream names the older match_windows"},
	"searchRecordsLexical 200 data[].retrieval_mode":     {why: whySharedSearch},
	"searchRecordsSemantic 200 links":                    {sample: "search-semantic-stub", why: whyEnvelope},
	"searchRecordsSemantic 200 meta":                     {sample: "search-semantic-stub", why: whyEnvelope},
	"searchRecordsSemantic 200 data[].authored_at":       {sample: "search-semantic-stub", why: whySharedSearch},
	"searchRecordsSemantic 200 data[].evidence_excerpts": {why: whySharedSearch},
	"searchRecordsHybrid 200 links":                      {why: whyEnvelope},
	"searchRecordsHybrid 200 meta":                       {why: whyEnvelope},
	"searchRecordsHybrid 200 next_cursor":                {why: "the list envelope (DESIGN §3); upstream's hybrid reply does not page"},
	"searchRecordsHybrid 200 data[].authored_at":         {why: whySharedSearch},
	"searchRecordsHybrid 200 data[].evidence_excerpts":   {why: whySharedSearch},
	"searchRecordsHybrid 200 data[].score":               {why: "one SearchResult serves the three modes; upstream's hybrid hit has scores instead"},
	"listEventSubscriptions 200 object":                  {why: "the list envelope's kind; upstream's subscription list names data only"},
}

// maxSchemaDepth bounds the walk through nested schemas: the deepest response member of
// either document is a few levels down, and a schema that refers to itself would
// otherwise never end.
const maxSchemaDepth = 24

// upSchema is the part of an upstream JSON Schema the member comparison reads.
type upSchema struct {
	Ref        string               `json:"$ref"`
	Type       json.RawMessage      `json:"type"`
	Nullable   bool                 `json:"nullable"`
	Properties map[string]*upSchema `json:"properties"`
	Items      *upSchema            `json:"items"`
	// AdditionalProperties is true, false or the schema of a map's values.
	AdditionalProperties json.RawMessage `json:"additionalProperties"`
	AllOf                []*upSchema     `json:"allOf"`
	AnyOf                []*upSchema     `json:"anyOf"`
	OneOf                []*upSchema     `json:"oneOf"`
}

type upMedia struct {
	Schema *upSchema `json:"schema"`
}

// upComponents resolves upstream's local schema references (#/components/schemas/Name).
type upComponents struct {
	Components struct {
		Schemas map[string]*upSchema `json:"schemas"`
	} `json:"components"`
}

func loadUpstreamComponents(t *testing.T) upComponents {
	t.Helper()
	raw, err := os.ReadFile(upstreamSpec)
	if err != nil {
		t.Fatal(err)
	}
	var c upComponents
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatalf("parse upstream components: %v", err)
	}
	return c
}

func (c upComponents) resolve(s *upSchema) (*upSchema, error) {
	for range maxSchemaDepth {
		if s == nil || s.Ref == "" {
			return s, nil
		}
		name, ok := strings.CutPrefix(s.Ref, "#/components/schemas/")
		if !ok {
			return nil, fmt.Errorf("upstream $ref %s is not a local schema", s.Ref)
		}
		next, ok := c.Components.Schemas[name]
		if !ok {
			return nil, fmt.Errorf("upstream $ref %s names no schema", s.Ref)
		}
		s = next
	}
	return nil, fmt.Errorf("upstream $ref chain longer than %d", maxSchemaDepth)
}

// shape is one schema seen as members: its property schemas by name (from every allOf,
// anyOf and oneOf branch), its item schemas, the schemas of its map values
// (additionalProperties), and its type names without "null".
type shape[S any] struct {
	props    map[string][]S
	items    []S
	values   []S
	types    map[string]bool
	nullable bool
}

func ourShape(s *openapi3.Schema) shape[*openapi3.Schema] {
	sh := shape[*openapi3.Schema]{props: map[string][]*openapi3.Schema{}, types: map[string]bool{}}
	var walk func(s *openapi3.Schema, depth int)
	walk = func(s *openapi3.Schema, depth int) {
		if s == nil || depth > maxSchemaDepth {
			return
		}
		if s.Type != nil {
			for _, typ := range s.Type.Slice() {
				if typ == openapi3.TypeNull {
					sh.nullable = true
				} else {
					sh.types[typ] = true
				}
			}
		}
		if s.Nullable {
			sh.nullable = true
		}
		for name, ref := range s.Properties {
			sh.props[name] = append(sh.props[name], ref.Value)
		}
		if s.Items != nil {
			sh.items = append(sh.items, s.Items.Value)
		}
		if ap := s.AdditionalProperties.Schema; ap != nil && ap.Value != nil {
			sh.values = append(sh.values, ap.Value)
		}
		for _, group := range []openapi3.SchemaRefs{s.AllOf, s.AnyOf, s.OneOf} {
			for _, ref := range group {
				walk(ref.Value, depth+1)
			}
		}
	}
	walk(s, 0)
	return sh
}

func (c upComponents) shape(s *upSchema) (shape[*upSchema], error) {
	sh := shape[*upSchema]{props: map[string][]*upSchema{}, types: map[string]bool{}}
	var walk func(s *upSchema, depth int) error
	walk = func(s *upSchema, depth int) error {
		s, err := c.resolve(s)
		if err != nil || s == nil || depth > maxSchemaDepth {
			return err
		}
		if len(s.Type) > 0 {
			var names []string
			if s.Type[0] == '"' {
				names = make([]string, 1)
				err = json.Unmarshal(s.Type, &names[0])
			} else {
				err = json.Unmarshal(s.Type, &names)
			}
			if err != nil {
				return fmt.Errorf("upstream type %s: %v", s.Type, err)
			}
			for _, typ := range names {
				if typ == "null" {
					sh.nullable = true
				} else {
					sh.types[typ] = true
				}
			}
		}
		if s.Nullable {
			sh.nullable = true
		}
		for name, p := range s.Properties {
			sh.props[name] = append(sh.props[name], p)
		}
		if s.Items != nil {
			sh.items = append(sh.items, s.Items)
		}
		if ap := bytes.TrimSpace(s.AdditionalProperties); len(ap) > 0 && ap[0] == '{' {
			var values upSchema
			if err := json.Unmarshal(ap, &values); err != nil {
				return fmt.Errorf("upstream additionalProperties: %v", err)
			}
			sh.values = append(sh.values, &values)
		}
		for _, group := range [][]*upSchema{s.AllOf, s.AnyOf, s.OneOf} {
			for _, b := range group {
				if err := walk(b, depth+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return sh, walk(s, 0)
}

// typesAgree reports whether a member of our types may hold what upstream's types allow:
// no types on either side means any value; an integer is a number.
func typesAgree(ours, up map[string]bool) bool {
	if len(ours) == 0 || len(up) == 0 {
		return true
	}
	for typ := range ours {
		if up[typ] || (typ == "integer" && up["number"]) || (typ == "number" && up["integer"]) {
			return true
		}
	}
	return false
}

func typeNames(types map[string]bool, nullable bool) []string {
	names := make([]string, 0, len(types)+1)
	for typ := range types {
		names = append(names, typ)
	}
	sort.Strings(names)
	if nullable {
		names = append(names, "null")
	}
	return names
}

// memberDiff is one member our spec declares that upstream does not agree with.
type memberDiff struct {
	path, problem string
}

// compareMembers walks our schema and upstream's side by side, by member name, through
// objects (properties of every allOf/anyOf/oneOf branch) and arrays ("[]" in the path),
// and returns each member of ours that upstream lacks or types differently.
func (c upComponents) compareMembers(path string, ours []*openapi3.Schema, up []*upSchema, depth int) ([]memberDiff, error) {
	if depth > maxSchemaDepth {
		return nil, fmt.Errorf("%s: schemas nested deeper than %d", path, maxSchemaDepth)
	}
	o := shape[*openapi3.Schema]{props: map[string][]*openapi3.Schema{}, types: map[string]bool{}}
	for _, s := range ours {
		sh := ourShape(s)
		merge(&o, sh)
	}
	u := shape[*upSchema]{props: map[string][]*upSchema{}, types: map[string]bool{}}
	for _, s := range up {
		sh, err := c.shape(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		merge(&u, sh)
	}
	var diffs []memberDiff
	if path != "" && !typesAgree(o.types, u.types) {
		return []memberDiff{{path, fmt.Sprintf("type %v, upstream %v", typeNames(o.types, o.nullable), typeNames(u.types, u.nullable))}}, nil
	}
	if path != "" && u.nullable && !o.nullable && len(o.types) > 0 {
		diffs = append(diffs, memberDiff{path, fmt.Sprintf("type %v refuses null, upstream %v", typeNames(o.types, false), typeNames(u.types, true))})
	}
	names := make([]string, 0, len(o.props))
	for name := range o.props {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		child := joinMember(path, name)
		upChild, ok := u.props[name]
		if !ok {
			diffs = append(diffs, memberDiff{child, "not in upstream's schema"})
			continue
		}
		d, err := c.compareMembers(child, o.props[name], upChild, depth+1)
		if err != nil {
			return nil, err
		}
		diffs = append(diffs, d...)
	}
	if len(o.items) > 0 && len(u.items) > 0 {
		d, err := c.compareMembers(path+"[]", o.items, u.items, depth+1)
		if err != nil {
			return nil, err
		}
		diffs = append(diffs, d...)
	}
	if len(o.values) > 0 && len(u.values) > 0 {
		d, err := c.compareMembers(path+"{}", o.values, u.values, depth+1)
		if err != nil {
			return nil, err
		}
		diffs = append(diffs, d...)
	}
	return diffs, nil
}

func merge[S any](into *shape[S], sh shape[S]) {
	for name, ss := range sh.props {
		into.props[name] = append(into.props[name], ss...)
	}
	into.items = append(into.items, sh.items...)
	into.values = append(into.values, sh.values...)
	for typ := range sh.types {
		into.types[typ] = true
	}
	into.nullable = into.nullable || sh.nullable
}

func joinMember(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// extensionFor returns the memberExtensions key that covers a member, if any: the member
// itself or one of the members above it.
func extensionFor(opID, status, path string) (string, bool) {
	for p := path; p != ""; {
		key := opID + " " + status + " " + p
		if _, ok := memberExtensions[key]; ok {
			return key, true
		}
		i := strings.LastIndexAny(p, ".[{")
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return "", false
}

// TestResponseMembersAgreeWithUpstream compares, for every operation and status both
// documents describe, each member of our JSON response schema with upstream's schema by
// name: a member upstream does not name, or names with a type that cannot hold ours, fails
// with the operation, the status and the member path, unless memberExtensions lists it.
func TestResponseMembersAgreeWithUpstream(t *testing.T) {
	upstream := loadUpstream(t)
	comps := loadUpstreamComponents(t)
	doc := loadSpec(t)
	used := map[string]bool{}

	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			key := method + " " + path
			if _, local := localOperations[key]; local {
				continue
			}
			up, ok := upstream[key]
			if !ok {
				continue // TestSpecAgreesWithUpstream reports it
			}
			for status, ref := range op.Responses.Map() {
				// Bodies that are not JSON (blob bytes), the default response and
				// statuses upstream does not document (TestSpecAgreesWithUpstream
				// reports those) have no upstream members to compare with.
				media := ref.Value.Content.Get("application/json")
				upResp, ok := up.Responses[status]
				if media == nil || media.Schema == nil || !ok {
					continue
				}
				t.Run(op.OperationID+"/"+status, func(t *testing.T) {
					var upMedia upMedia
					if raw, ok := upResp.Content["application/json"]; !ok {
						t.Fatalf("upstream %s %s has no application/json body", op.OperationID, status)
					} else if err := json.Unmarshal(raw, &upMedia); err != nil {
						t.Fatalf("upstream %s %s: %v", op.OperationID, status, err)
					}
					diffs, err := comps.compareMembers("", []*openapi3.Schema{media.Schema.Value}, []*upSchema{upMedia.Schema}, 0)
					if err != nil {
						t.Fatalf("%s %s: %v", op.OperationID, status, err)
					}
					for _, d := range diffs {
						if ext, ok := extensionFor(op.OperationID, status, d.path); ok {
							used[ext] = true
							continue
						}
						t.Errorf("%s %s: member %s: %s", op.OperationID, status, d.path, d.problem)
					}
				})
			}
		}
	}
	keys := make([]string, 0, len(memberExtensions))
	for k := range memberExtensions {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !used[k] {
			t.Errorf("memberExtensions lists %q, which now agrees with upstream or is not declared", k)
		}
	}
	t.Run("samples", func(t *testing.T) { checkExtensionSamples(t, doc, keys) })
}

// checkExtensionSamples makes each extension's sample prove it: the sample answers the
// same operation with the same status, and its body holds the member.
func checkExtensionSamples(t *testing.T, doc *openapi3.T, keys []string) {
	idx := loadIndex(t)
	router := newRouter(t, doc)
	for _, k := range keys {
		ext := memberExtensions[k]
		if ext.why == "" {
			t.Errorf("memberExtensions[%q] gives no reason", k)
		}
		if ext.sample == "" {
			continue
		}
		opID, rest, _ := strings.Cut(k, " ")
		status, path, _ := strings.Cut(rest, " ")
		entry, ok := idx[ext.sample]
		if !ok {
			t.Errorf("memberExtensions[%q]: sample %q is not in _index.json", k, ext.sample)
			continue
		}
		route, _, err := router.FindRoute(sampleRequest(t, entry.Request))
		if err != nil {
			t.Errorf("memberExtensions[%q]: sample %q: %v", k, ext.sample, err)
			continue
		}
		if route.Operation.OperationID != opID || strconv.Itoa(entry.Status) != status {
			t.Errorf("memberExtensions[%q]: sample %q answers %s %d", k, ext.sample, route.Operation.OperationID, entry.Status)
			continue
		}
		body, err := os.ReadFile(filepath.Join(samplesDir, ext.sample+".json"))
		if err != nil {
			t.Fatal(err)
		}
		steps := strings.NewReplacer("[]", ".[]", "{}", ".{}").Replace(path)
		if !holdsMember(json.RawMessage(body), strings.Split(steps, "."), 0) {
			t.Errorf("memberExtensions[%q]: sample %q has no %s", k, ext.sample, path)
		}
	}
}

// holdsMember reports whether a JSON value has a member at the path ("[]" steps into any
// element of an array, "{}" into any member of an object). Each level is read as raw
// members, never decoded whole.
func holdsMember(v json.RawMessage, path []string, depth int) bool {
	if len(path) == 0 {
		return true
	}
	if depth > maxSchemaDepth {
		return false
	}
	if path[0] == "[]" {
		var elems []json.RawMessage
		if json.Unmarshal(v, &elems) != nil {
			return false
		}
		return slices.ContainsFunc(elems, func(e json.RawMessage) bool { return holdsMember(e, path[1:], depth+1) })
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(v, &members) != nil {
		return false
	}
	if path[0] == "{}" {
		for _, m := range members {
			if holdsMember(m, path[1:], depth+1) {
				return true
			}
		}
		return false
	}
	m, ok := members[path[0]]
	return ok && holdsMember(m, path[1:], depth+1)
}

// TestCompareMembersFindsDifferences shows the member comparison can fail, and how it
// reads both documents: $ref on either side, allOf/anyOf/oneOf branches, arrays, 3.1 type
// arrays with "null" and 3.0 nullable.
func TestCompareMembersFindsDifferences(t *testing.T) {
	cases := []struct {
		name, ours, upstream string
		want                 []string
	}{
		{"same members", `{type: object, properties: {a: {type: integer}, b: {type: string}}}`,
			`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}}}`, nil},
		{"renamed member", `{type: object, properties: {record_json_bytez: {type: integer}}}`,
			`{"type":"object","properties":{"record_json_bytes":{"type":"integer"}}}`,
			[]string{"record_json_bytez: not in upstream's schema"}},
		{"other type", `{type: object, properties: {n: {type: string}}}`,
			`{"type":"object","properties":{"n":{"type":"integer"}}}`,
			[]string{"n: type [string], upstream [integer]"}},
		{"integer is a number", `{type: object, properties: {n: {type: integer}}}`,
			`{"type":"object","properties":{"n":{"type":"number"}}}`, nil},
		{"inside array items", `{type: object, properties: {data: {type: array, items: {$ref: '#/components/schemas/Hit'}}}}`,
			`{"type":"object","properties":{"data":{"type":"array","items":{"type":"object","properties":{"key":{"type":"string"}}}}}}`,
			[]string{"data[].record_key: not in upstream's schema"}},
		{"upstream $ref and allOf", `{allOf: [{$ref: '#/components/schemas/Hit'}, {type: object, properties: {extra: {type: string}}}]}`,
			`{"$ref":"#/components/schemas/UpHit"}`, []string{"extra: not in upstream's schema"}},
		{"upstream oneOf branches", `{type: object, properties: {a: {type: string}, b: {type: integer}}}`,
			`{"oneOf":[{"type":"object","properties":{"a":{"type":"string"}}},{"type":"object","properties":{"b":{"type":"integer"}}}]}`, nil},
		{"upstream sends null we refuse", `{type: object, properties: {next: {type: string}}}`,
			`{"type":"object","properties":{"next":{"type":["string","null"]}}}`,
			[]string{"next: type [string] refuses null, upstream [string null]"}},
		{"inside map values", `{type: object, properties: {caps: {type: object, additionalProperties: {type: object, properties: {ops: {type: array}}}}}}`,
			`{"type":"object","properties":{"caps":{"type":"object","additionalProperties":{"type":"object","properties":{"usable":{"type":"boolean"}}}}}}`,
			[]string{"caps{}.ops: not in upstream's schema"}},
		{"3.1 type array takes null", `{type: object, properties: {next: {type: [string, 'null']}}}`,
			`{"type":"object","properties":{"next":{"type":"string","nullable":true}}}`, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			yaml := "openapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths: {}\ncomponents:\n  schemas:\n" +
				"    Hit: {type: object, properties: {record_key: {type: string}}}\n    Body: " + tc.ours + "\n"
			doc, err := openapi3.NewLoader().LoadFromData([]byte(yaml))
			if err != nil {
				t.Fatal(err)
			}
			var comps upComponents
			upDoc := `{"components":{"schemas":{"UpHit":{"type":"object","properties":{"record_key":{"type":"string"}}}}}}`
			if err := json.Unmarshal([]byte(upDoc), &comps); err != nil {
				t.Fatal(err)
			}
			var up upSchema
			if err := json.Unmarshal([]byte(tc.upstream), &up); err != nil {
				t.Fatal(err)
			}
			diffs, err := comps.compareMembers("", []*openapi3.Schema{doc.Components.Schemas["Body"].Value}, []*upSchema{&up}, 0)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range diffs {
				got = append(got, d.path+": "+d.problem)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("differences %q, want %q", got, tc.want)
			}
		})
	}
}

func TestHoldsMember(t *testing.T) {
	body := json.RawMessage(`{"data":[{"a":1},{"b":{"c":null}}],"meta":{},"caps":{"x":{},"y":{"ops":[]}}}`)
	cases := []struct {
		path string
		want bool
	}{
		{"meta", true}, {"data.[].a", true}, {"data.[].b.c", true},
		{"data.[].c", false}, {"links", false}, {"meta.count", false}, {"data.a", false},
		{"caps.{}.ops", true}, {"caps.{}.usable", false}, {"data.{}.a", false},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			if got := holdsMember(body, strings.Split(tc.path, "."), 0); got != tc.want {
				t.Errorf("holdsMember(%s) = %v, want %v", tc.path, got, tc.want)
			}
		})
	}
}
