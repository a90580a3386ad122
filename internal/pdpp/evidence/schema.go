package evidence

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/pdpp-mcp/pdpp-mcp/gen/rsclient"
)

// Schema rendering budgets.
const (
	schemaStreamsShown = 40
	schemaFieldsShown  = 30
)

// MaxSchemaItems bounds the connectors, streams, connections and expand
// relations of one schema document decoded (each costs a struct of about
// a hundred bytes, whatever its size): far past any grant's.
const MaxSchemaItems = 100_000

// checkSchemaItems refuses a schema document whose lists (connectors, and
// each connector's and stream's streams, granted_connections and
// expand_capabilities) hold more than MaxSchemaItems items together,
// before any is decoded. The walk reads body's lists once, counting.
func checkSchemaItems(body []byte) error {
	if !validJSON(body) {
		return nil // encoding/json reports it
	}
	n := 0
	var count func(raw []byte, depth int) error
	count = func(raw []byte, depth int) error {
		if firstByte(raw) != '{' || depth > 2 {
			return nil
		}
		return eachMember(raw, func(key string, v []byte) error {
			switch key { // the names the decoding reads, matched exactly as it does
			case "connectors", "streams", "granted_connections", "expand_capabilities":
			default:
				return nil
			}
			if firstByte(v) != '[' {
				return nil
			}
			c, _ := countItems(bytes.TrimSpace(v), MaxSchemaItems+1)
			if n += c; n > MaxSchemaItems {
				return errStop
			}
			return eachElement(v, func(item []byte) error { return count(item, depth+1) })
		})
	}
	if count(body, 0) == errStop {
		return fmt.Errorf("the schema document lists more than %d connectors, streams, connections and relations, more than this server reads", MaxSchemaItems)
	}
	return nil
}

// schemaLists refuses an item of a schema document's lists (connectors,
// their streams and granted connections, each stream's granted
// connections) that is not an object, while they are read, where the
// default decoding would read null as a nameless stream. checkSchemaItems
// has bounded the lists before.
var schemaLists = json.JoinUnmarshalers(rawInPlace,
	objectItems[rsclient.SchemaConnector]("schema's connectors list", "connectors", 0),
	objectItems[rsclient.SchemaStream]("schema's streams list", "streams", 0),
	objectItems[rsclient.GrantedConnection]("schema's granted_connections list", "connections", 0))

// RenderSchema renders a schema document (compact or full) as a bounded map of
// connectors, connections, streams, fields and expand relations.
func RenderSchema(body []byte) (string, error) {
	if err := checkSchemaItems(body); err != nil {
		return "", err
	}
	var doc rsclient.SchemaDocument
	if err := decodeBody(body, "schema", "a schema document", &doc, schemaLists); err != nil {
		return "", err
	}
	var b strings.Builder
	streams := 0
	for _, c := range doc.Connectors {
		streams += len(c.Streams)
	}
	fmt.Fprintf(&b, "schema: %d %s, %d %s", len(doc.Connectors), noun(len(doc.Connectors), "connector", "connectors"), streams, noun(streams, "stream", "streams"))
	if doc.Bearer.TokenKind != "" {
		fmt.Fprintf(&b, " (token: %s)", doc.Bearer.TokenKind)
	}
	b.WriteString("\n")
	shown := 0
	var firstStream, firstConn string
	for _, c := range doc.Connectors {
		fmt.Fprintf(&b, "connector %s", cmp.Or(c.ConnectorId, c.ConnectorKey))
		if len(c.GrantedConnections) > 0 {
			b.WriteString("; connections:")
			for _, g := range c.GrantedConnections {
				fmt.Fprintf(&b, " %s", g.ConnectionId)
				if g.DisplayName != "" {
					fmt.Fprintf(&b, " (%s)", g.DisplayName)
				}
			}
		}
		b.WriteString("\n")
		for _, s := range c.Streams {
			if shown == schemaStreamsShown {
				fmt.Fprintf(&b, "(%d more %s in structured data)\n", streams-shown, noun(streams-shown, "stream", "streams"))
				break
			}
			shown++
			if firstStream == "" {
				firstStream = s.Name
			}
			if firstConn == "" {
				firstConn = firstConnection(s.GrantedConnections, c.GrantedConnections)
			}
			fmt.Fprintf(&b, "  stream %s", s.Name)
			if len(c.GrantedConnections) == 0 && len(s.GrantedConnections) > 0 {
				// A full (per-stream) document names the connections on
				// the stream, not the connector.
				b.WriteString(" (connections:")
				for _, g := range s.GrantedConnections {
					fmt.Fprintf(&b, " %s", g.ConnectionId)
				}
				b.WriteString(")")
			}
			fmt.Fprintf(&b, ": %s", fieldSummary(s.FieldCapabilities))
			fmt.Fprintf(&b, "; expand: %s\n", expandSummary(s.ExpandCapabilities))
		}
	}
	switch {
	case firstStream == "":
	case isFullSchema(&doc):
		// This already is the full document: suggest reading the data.
		if firstConn != "" {
			fmt.Fprintf(&b, "next: query_records {\"stream\":%q,\"connection_id\":%q,\"limit\":5}, or search with your own words as q\n", firstStream, firstConn)
		} else {
			fmt.Fprintf(&b, "next: query_records {\"stream\":%q,\"limit\":5}, or search with your own words as q\n", firstStream)
		}
	default:
		fmt.Fprintf(&b, "next: query_records {\"stream\":%q,\"limit\":5}, schema {\"stream\":%q,\"detail\":\"full\"}, or search with your own words as q\n", firstStream, firstStream)
	}
	return capBytes(b.String()), nil
}

// firstConnection is the first connection id of a stream, or else of its
// connector ("" when neither names one).
func firstConnection(stream, connector []rsclient.GrantedConnection) string {
	for _, list := range [][]rsclient.GrantedConnection{stream, connector} {
		for _, g := range list {
			if g.ConnectionId != "" {
				return g.ConnectionId
			}
		}
	}
	return ""
}

// isFullSchema reports whether doc is a full schema document: its field
// capabilities are objects, where a compact document has strings.
func isFullSchema(doc *rsclient.SchemaDocument) bool {
	for _, c := range doc.Connectors {
		for _, s := range c.Streams {
			for _, raw := range s.FieldCapabilities {
				return raw.Kind() == '{'
			}
		}
	}
	return false
}

func fieldSummary(caps rsclient.FieldCapabilities) string {
	names := slices.Sorted(maps.Keys(caps))
	parts := make([]string, 0, len(names))
	for i, n := range names {
		if i == schemaFieldsShown {
			parts = append(parts, fmt.Sprintf("+%d more", len(names)-i))
			break
		}
		if c := capabilityString(caps[n]); c != "" {
			parts = append(parts, n+"["+c+"]")
		} else {
			parts = append(parts, n)
		}
	}
	return "fields " + strings.Join(parts, ", ")
}

// capabilityString summarises one field capability: compact documents already
// hold a string; full documents hold an object of declared/usable flags.
func capabilityString(raw jsontext.Value) string {
	var s string
	if raw.Kind() == '"' {
		if json.Unmarshal(raw, &s, rsDecodeOptions) != nil {
			return ""
		}
		return s
	}
	var c rsclient.FieldCapability
	if decodeRS(raw, &c, nil) != nil {
		return ""
	}
	var tags []string
	if c.Role != "" {
		tags = append(tags, "role:"+c.Role)
	}
	if c.LexicalSearch != nil && c.LexicalSearch.Usable {
		tags = append(tags, "search")
	}
	if c.SemanticSearch != nil && c.SemanticSearch.Usable {
		tags = append(tags, "semantic")
	}
	if c.Filter != nil && len(c.Filter.Operators) > 0 {
		tags = append(tags, "filter:"+strings.Join(c.Filter.Operators, "|"))
	}
	var aggs []string
	for k, v := range c.Aggregation {
		if v.Usable {
			aggs = append(aggs, k)
		}
	}
	sort.Strings(aggs)
	if len(aggs) > 0 {
		tags = append(tags, "agg:"+strings.Join(aggs, "|"))
	}
	if c.Granted != nil && !*c.Granted {
		tags = append(tags, "not granted")
	}
	return strings.Join(tags, " ")
}

func expandSummary(caps []rsclient.ExpandCapability) string {
	if len(caps) == 0 {
		return "none"
	}
	names := make([]string, 0, len(caps))
	for _, c := range caps {
		relation := ""
		if c.Relation != nil {
			relation = *c.Relation
		}
		names = append(names, cmp.Or(c.Name, relation, "?"))
	}
	return strings.Join(names, ", ")
}

// ExpandCapabilities returns the expand_capabilities the schema document lists
// for stream, and whether the stream appears in the document at all.
func ExpandCapabilities(body []byte, stream string) (caps []rsclient.ExpandCapability, found bool) {
	streams, _ := schemaStreams(body)
	for _, s := range streams {
		if s.Name == stream {
			found = true
			caps = append(caps, s.ExpandCapabilities...)
		}
	}
	return caps, found
}

// schemaStreams returns the streams of every connector of the schema
// document body, and whether it is one.
func schemaStreams(body []byte) (streams []*rsclient.SchemaStream, ok bool) {
	var doc rsclient.SchemaDocument
	if checkSchemaItems(body) != nil || decodeRS(body, &doc, nil) != nil {
		return nil, false
	}
	for _, c := range doc.Connectors {
		for i := range c.Streams {
			streams = append(streams, &c.Streams[i])
		}
	}
	return streams, true
}

// AllRoles returns the display roles a schema document declares for the
// fields of every stream (field_capabilities.<field>.role); streams without
// declared roles are absent. Nothing is inferred.
func AllRoles(body []byte) map[string]Roles {
	streams, ok := schemaStreams(body)
	if !ok {
		return nil
	}
	all := map[string]Roles{}
	for _, s := range streams {
		roles := all[s.Name]
		if roles == nil {
			roles = Roles{}
		}
		for f, raw := range s.FieldCapabilities {
			var full rsclient.FieldCapability
			var compact string
			switch {
			case raw.Kind() == '{' && decodeRS(raw, &full, nil) == nil && full.Role != "":
				roles[f] = full.Role
			case raw.Kind() == '"' && json.Unmarshal(raw, &compact, rsDecodeOptions) == nil:
				// Compact capability strings carry "role=<role>" as one flag.
				for _, flag := range strings.Split(compact, ",") {
					if r, ok := strings.CutPrefix(strings.TrimSpace(flag), "role="); ok && r != "" {
						roles[f] = r
					}
				}
			}
		}
		if len(roles) > 0 {
			all[s.Name] = roles
		}
	}
	return all
}

// CompactSchema projects a full schema document to the compact shape (one
// capability string per field), for an RS that does not serve view=compact.
// The body is decoded once; what the projection does not change stays as
// the RS wrote it. A body that is not a schema document is returned as is.
func CompactSchema(body []byte) []byte {
	var doc compactDocument
	if checkSchemaItems(body) != nil || decodeRS(body, &doc, compactLists) != nil {
		return body
	}
	for _, c := range doc.Connectors {
		for _, s := range c.Streams {
			for f, raw := range s.FieldCapabilities {
				s.FieldCapabilities[f], _ = jsontext.AppendQuote(nil, capabilityString(raw))
			}
		}
	}
	doc.Detail = DetailCompact
	// Written with the options it was read with (a stranger's repeated
	// names and bad bytes kept as read), field names sorted.
	if out, err := json.Marshal(&doc, rsDecodeOptions, json.Deterministic(true)); err == nil {
		return out
	}
	return body
}

// compactDocument, compactConnector and compactStream are a schema document
// as CompactSchema reads and writes it: a stream keeps what the compact
// shape shows, in the order encoding/json wrote it; every other member is
// kept raw (Rest), in the RS's order.
type compactDocument struct {
	Connectors []compactConnector `json:"connectors,omitzero"`
	Detail     string             `json:"detail"`
	Rest       jsontext.Value     `json:",unknown"`
}

type compactConnector struct {
	Streams []compactStream `json:"streams,omitzero"`
	Rest    jsontext.Value  `json:",unknown"`
}

type compactStream struct {
	ExpandCapabilities jsontext.Value             `json:"expand_capabilities"`
	FieldCapabilities  rsclient.FieldCapabilities `json:"field_capabilities"`
	Name               jsontext.Value             `json:"name"`
	PrimaryKey         jsontext.Value             `json:"primary_key,omitzero"`
}

// compactLists refuses, as schemaLists does, a connector or stream that is
// not an object: the document is then rendered, and refused, as it came.
var compactLists = json.JoinUnmarshalers(rawInPlace,
	objectItems[compactConnector]("schema's connectors list", "connectors", 0),
	objectItems[compactStream]("schema's streams list", "streams", 0))
