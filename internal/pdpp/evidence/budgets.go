package evidence

// Budgets bound every model-visible rendering. They are counted in characters
// (Unicode code points) unless the name says bytes.
const (
	// SearchCardsShown is how many search hits get a card in content[] text.
	SearchCardsShown = 10
	// PreviewChars bounds one evidence preview (search excerpt or field preview).
	PreviewChars = 360
	// RecordsPreviewed is how many records query_records previews in text.
	RecordsPreviewed = 5
	// FieldValueChars bounds one scalar field value inside a record preview.
	FieldValueChars = 200
	// FieldsPerRecordShown bounds how many fields one record preview lists.
	FieldsPerRecordShown = 12
	// FetchTextChars bounds the text of a fetched document shown in content[].
	FetchTextChars = 2000
	// StructuredTextChars bounds the document text carried in structuredContent
	// by fetch; longer fields are cut there too, with a descriptor and continuation.
	StructuredTextChars = 32768
	// DefaultWindowChars is the field-window size when the caller names none.
	DefaultWindowChars = 4096
	// MaxWindowChars is the largest field window one call may serve.
	MaxWindowChars = 16384
	// MaxOffsetChars is the largest offset_chars read_record_field takes
	// (its maximum in spec/tools.yaml, which the generated Validate
	// enforces; a test keeps the two equal): far past any text field an
	// RS holds. A window the RS places beyond it is refused, so no
	// continuation ever names an offset the tool would refuse.
	MaxOffsetChars = 1_000_000_000
	// MatchBeforeChars and MatchAfterChars are the context a q window keeps
	// around the match when the caller names none.
	MatchBeforeChars = 400
	MatchAfterChars  = 1200
	// InlineJSONBytes is the largest JSON value shown inline in a preview.
	InlineJSONBytes = 600
	// BinaryLikeMinChars is the length from which a string of base64 alphabet only
	// is treated as binary and never inlined.
	BinaryLikeMinChars = 200
	// AggregateGroupsShown bounds the buckets listed in aggregate text.
	AggregateGroupsShown = 20
	// MaxTextBytes is a hard cap on one content[] text block, whatever the input.
	MaxTextBytes = 24 * 1024
)
