package store

import "slices"

// Field is one top-level field of a stream as its manifest declares it.
type Field struct {
	Name string
	// JSONType is the JSON Schema type: string, integer, number, boolean, object or array.
	JSONType string
	// Format is the JSON Schema format (date-time for timestamps), if any.
	Format string
	// PDPPType is the manifest's x_pdpp_type presentation type (for example "blob"), if any.
	PDPPType string
	// Role is the x_pdpp_role (primary-title, secondary, event-time, media), if any.
	Role string
	// Nullable marks fields whose value may be JSON null.
	Nullable bool
	// Lexical and Semantic say whether the field is declared for lexical / semantic search.
	Lexical, Semantic bool
	// RangeOps lists the declared range filter operators (gte, gt, lte, lt), if any.
	RangeOps []string
	// Aggregations lists its declared aggregate roles (sum, min, max, group_by,
	// group_by_time, count_distinct).
	Aggregations []string
}

// Scalar reports whether exact filters can apply to the field (one scalar JSON type).
func (f Field) Scalar() bool {
	return slices.Contains([]string{"string", "integer", "number", "boolean"}, f.JSONType)
}

// HasAggregation reports whether the field is declared for the aggregate role.
func (f Field) HasAggregation(role string) bool { return slices.Contains(f.Aggregations, role) }

// JSONSchema is the field's declared JSON Schema, x_pdpp_type / x_pdpp_role included.
func (f Field) JSONSchema() map[string]any {
	s := map[string]any{}
	if f.Nullable {
		s["type"] = []string{f.JSONType, "null"}
	} else {
		s["type"] = f.JSONType
	}
	if f.Format != "" {
		s["format"] = f.Format
	}
	if f.PDPPType != "" {
		s["x_pdpp_type"] = f.PDPPType
	}
	if f.Role != "" {
		s["x_pdpp_role"] = f.Role
	}
	if f.PDPPType == "blob" {
		s["properties"] = map[string]any{
			"blob_id":    map[string]any{"type": "string"},
			"media_type": map[string]any{"type": "string"},
			"size_bytes": map[string]any{"type": "integer"},
			"filename":   map[string]any{"type": "string"},
			"sha256":     map[string]any{"type": "string"},
		}
	}
	return s
}

// Relationship is a declared one-hop relation from a stream to another stream of the same
// connector, joined on parent.ForeignKey = target.References. Every declared relation is
// expandable: the manifest lists it in query.expand.
type Relationship struct {
	Name        string
	Target      string
	Cardinality string // has_one or has_many
	ForeignKey  string // field on the declaring (parent) stream
	References  string // field on the target stream
}

// Stream is one stream of a connector manifest.
type Stream struct {
	Name          string
	Fields        []Field
	PrimaryKey    []string
	CursorField   string
	Relationships []Relationship
}

// Field returns the declared field with the given name.
func (s *Stream) Field(name string) (Field, bool) {
	return lookup(s.Fields, func(f Field) bool { return f.Name == name })
}

// Relationship returns the declared relationship with the given name.
func (s *Stream) Relationship(name string) (Relationship, bool) {
	return lookup(s.Relationships, func(r Relationship) bool { return r.Name == name })
}

// lookup returns the first element of xs that match accepts, or the zero T.
func lookup[T any](xs []T, match func(T) bool) (T, bool) {
	if i := slices.IndexFunc(xs, match); i >= 0 {
		return xs[i], true
	}
	var zero T
	return zero, false
}

// Connector is one connector manifest.
type Connector struct {
	// ID is the connector id and short connector key (for example "loom").
	ID string
	// SourceID is the registry URL that identifies the connector source.
	SourceID string
	Streams  []Stream
}

// Stream returns the named stream of the connector.
func (c *Connector) Stream(name string) (*Stream, bool) {
	return at(c.Streams, slices.IndexFunc(c.Streams, func(s Stream) bool { return s.Name == name }))
}

// at returns &xs[i], or false when i is -1.
func at[T any](xs []T, i int) (*T, bool) {
	if i < 0 {
		return nil, false
	}
	return &xs[i], true
}

// Connection is one connected account (connector instance) of a connector.
type Connection struct {
	ID          string
	ConnectorID string
	DisplayName string
}

// Catalog is every connector manifest and connection of the demo.
type Catalog struct {
	Connectors  []Connector
	Connections []Connection
}

// Connector returns the connector with the given id.
func (c *Catalog) Connector(id string) (*Connector, bool) {
	return at(c.Connectors, slices.IndexFunc(c.Connectors, func(ctr Connector) bool { return ctr.ID == id }))
}

// Connection returns the connection with the given id.
func (c *Catalog) Connection(id string) (Connection, bool) {
	return lookup(c.Connections, func(conn Connection) bool { return conn.ID == id })
}

// StreamOf returns the stream declared by the connector of a connection.
func (c *Catalog) StreamOf(connectionID, stream string) (*Stream, bool) {
	conn, _ := c.Connection(connectionID)
	if ctr, ok := c.Connector(conn.ConnectorID); ok {
		return ctr.Stream(stream)
	}
	return nil, false
}

// Demo connector, connection and stream names.
const (
	ConnectorLoom  = "loom"
	ConnectorNotes = "notes"

	ConnLoomMain = "cin_demo_loom_main"
	ConnLoomPeer = "cin_demo_loom_peer"
	ConnNotes    = "cin_demo_notes"

	StreamVideos      = "videos"
	StreamTranscripts = "transcripts"
	StreamNotes       = "notes"
)

var allRange = []string{"gte", "gt", "lte", "lt"}

// DemoCatalog returns the manifests and connections the seeded database holds.
func DemoCatalog() *Catalog {
	createdAt := Field{Name: "created_at", JSONType: "string", Format: "date-time", Role: "event-time",
		RangeOps: allRange, Aggregations: []string{"min", "max", "group_by_time"}}
	id := Field{Name: "id", JSONType: "string"}
	return &Catalog{
		Connectors: []Connector{
			{
				ID:       ConnectorLoom,
				SourceID: "https://registry.pdpp.dev/connectors/loom",
				Streams: []Stream{
					{
						Name:        StreamVideos,
						PrimaryKey:  []string{"id"},
						CursorField: "created_at",
						Fields: []Field{
							id,
							{Name: "title", JSONType: "string", Role: "primary-title", Lexical: true, Semantic: true},
							{Name: "description", JSONType: "string", Role: "secondary", Lexical: true, Semantic: true},
							{Name: "duration_seconds", JSONType: "integer", RangeOps: allRange,
								Aggregations: []string{"sum", "min", "max"}},
							createdAt,
							{Name: "metadata", JSONType: "object"},
						},
					},
					{
						Name:        StreamTranscripts,
						PrimaryKey:  []string{"id"},
						CursorField: "created_at",
						Fields: []Field{
							id,
							{Name: "video_id", JSONType: "string", Aggregations: []string{"count_distinct"}},
							{Name: "language", JSONType: "string",
								Aggregations: []string{"group_by", "count_distinct"}},
							{Name: "text", JSONType: "string", Role: "secondary", Lexical: true, Semantic: true},
							createdAt,
						},
						Relationships: []Relationship{
							{Name: "video", Target: StreamVideos, Cardinality: "has_one",
								ForeignKey: "video_id", References: "id"},
						},
					},
				},
			},
			{
				ID:       ConnectorNotes,
				SourceID: "https://registry.pdpp.dev/connectors/notes",
				Streams: []Stream{
					{
						Name:        StreamNotes,
						PrimaryKey:  []string{"id"},
						CursorField: "created_at",
						Fields: []Field{
							id,
							{Name: "title", JSONType: "string", Role: "primary-title", Lexical: true, Semantic: true},
							{Name: "body", JSONType: "string", Role: "secondary", Lexical: true, Semantic: true},
							{Name: "folder", JSONType: "string", Aggregations: []string{"group_by", "count_distinct"}},
							createdAt,
							{Name: "attachment", JSONType: "object", PDPPType: "blob", Role: "media", Nullable: true},
						},
					},
				},
			},
		},
		Connections: []Connection{
			{ID: ConnLoomMain, ConnectorID: ConnectorLoom, DisplayName: "Loom (work)"},
			{ID: ConnLoomPeer, ConnectorID: ConnectorLoom, DisplayName: "Loom (personal)"},
			{ID: ConnNotes, ConnectorID: ConnectorNotes, DisplayName: "Notes"},
		},
	}
}
