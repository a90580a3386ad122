package evidence

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/pdpp-mcp/pdpp-mcp/gen/rsclient"
)

// Record is an RS `record` object as the adapter reads it: the generated
// model, with data split into its fields while it is decoded (recordData)
// instead of kept raw and walked again.
type Record struct {
	rsclient.Record
	Data recordData `json:"data"`
	// summaries keeps its fields' summaries for its other renderings.
	summaries fieldSummaries
}

// MaxRecordFields bounds the fields of one record rendered: each costs a
// map entry, a line and a view whatever its size, so a record whose data
// holds hundreds of thousands of small members is rendered by its first
// fields and the count of the others.
const MaxRecordFields = 2000

// DecodeRecord decodes one RS record (a body or an item of a page) once:
// data is split into its fields while it is read (recordData), each field
// value a slice of raw until it is rendered.
func DecodeRecord(raw []byte) (Record, error) {
	rec := Record{summaries: fieldSummaries{}}
	if err := decodeRS(raw, &rec, nil); err != nil {
		return Record{}, fmt.Errorf("not a record: %w", err)
	}
	return rec, nil
}

// The data member above stands for the model's: renamed in the spec, this
// line stops the build.
var _ jsontext.Value = rsclient.Record{}.Data

// recordData is a record's data: each field's raw value (a slice of the
// body: ReadValue reads in place, as for rawInPlace) by name, and the
// names in the RS's order, for at most MaxRecordFields fields; more counts
// the fields past them, which are not rendered.
type recordData struct {
	fields map[string]json.RawMessage
	order  []string
	more   int
	// start and end are where the object lies in the JSON the record was
	// decoded from (both 0 when it has none).
	start, end int
}

// errDataNotObject is the error of a record whose data is not an object.
var errDataNotObject = errors.New("data is not an object")

// UnmarshalJSONFrom reads data member by member; null leaves it empty. A
// repeated name keeps its first place and its last value, as
// encoding/json into a map does.
func (d *recordData) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	*d = recordData{fields: map[string]json.RawMessage{}} // a repeated data: the last one
	switch dec.PeekKind() {
	case 'n':
		_, err := dec.ReadToken()
		return err
	case '{':
	default:
		return errDataNotObject
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	d.start = int(dec.InputOffset()) - 1 // the brace just read
	for dec.PeekKind() != '}' {
		q, err := dec.ReadValue()
		if err != nil {
			return err
		}
		key := rawName(q)
		val, err := dec.ReadValue()
		if err != nil {
			return err
		}
		val = val[:len(val):len(val)]
		switch _, dup := d.fields[string(key)]; {
		case dup:
			d.fields[string(key)] = json.RawMessage(val)
		case len(d.order) == MaxRecordFields:
			d.more++ // counted, not kept
		default:
			name := string(key)
			d.order = append(d.order, name)
			d.fields[name] = json.RawMessage(val)
		}
	}
	_, err := dec.ReadToken()
	d.end = int(dec.InputOffset())
	return err
}

// Roles maps a field name to its display role as declared by the schema
// (field_capabilities.<field>.role, from the manifest's x_pdpp_role, e.g.
// "primary-title", "secondary", "event-time", "media"). Only declared roles are
// ever used; nothing is inferred from field or connector names.
type Roles map[string]string

// titleRoles are the declared roles that name a record's title.
var titleRoles = map[string]bool{"primary-title": true, "title": true}

// titleField returns the first field by name declared with a title role,
// if any.
func (roles Roles) titleField() (title string) {
	found := false
	for f, r := range roles {
		if titleRoles[r] && (!found || f < title) {
			title, found = f, true
		}
	}
	return title
}

// FieldView describes one field in visible output.
type FieldView struct {
	Name string `json:"-"`
	// Kind is text, json, number, boolean, null, blob or binary.
	Kind string `json:"kind"`
	// Value is the (possibly cut) inline value; absent for blob and binary.
	Value any `json:"value,omitempty"`
	// Chars is the full length of a text field; Bytes the size of JSON or binary.
	Chars     int           `json:"chars,omitempty"`
	Bytes     int           `json:"bytes,omitempty"`
	MediaType string        `json:"media_type,omitempty"`
	BlobID    string        `json:"blob_id,omitempty"`
	Complete  bool          `json:"complete"`
	Next      *Continuation `json:"next,omitempty"`
	// BlobRead names the grant-scoped blob route and resource for a blob.
	BlobRead *BlobRead `json:"blob_read,omitempty"`
	// Line is the one-line visible rendering.
	Line string `json:"-"`
}

// BlobRead is the explicit continuation for stored blob bytes.
type BlobRead struct {
	Route    string `json:"route"`
	Resource string `json:"resource"`
}

// describeField classifies one field value and renders it within max
// chars. id is the record's self-contained id for continuations: a
// read_record_field window for text, a full-detail fetch of the field for
// large JSON. cache is the record's field summaries, kept across
// renderings of the same record (nil: none kept).
func describeField(id, name string, raw json.RawMessage, max int, cache fieldSummaries) FieldView {
	fv := FieldView{Name: name}
	// raw is sliced, never copied whole: a field can be most of the body.
	tb := bytes.TrimSpace(raw)
	switch {
	case len(tb) == 0 || string(tb) == "null":
		fv.Kind, fv.Complete = "null", true
		fv.Line = "null"
	case tb[0] == '"':
		// Only the first max characters are decoded and kept.
		sum := cache.text(name, tb, max)
		fv.Chars = sum.chars
		if sum.binaryLike {
			fv.Kind = "binary"
			fv.Bytes = sum.bytes
			fv.MediaType = sum.mediaType
			c := ReadFieldCall(id, name, 0, 0, "")
			fv.Next = &c
			fv.Line = fmt.Sprintf("[binary-like text, %d chars, not shown; read in bounded chunks: %s]", fv.Chars, c.Call())
			return fv
		}
		fv.setText(id, sum.prefix, sum.cut, max)
	case tb[0] == '{' || tb[0] == '[':
		fv.Bytes = len(tb)
		if blob, ok := blobRef(raw); ok {
			fv.Kind = "blob"
			fv.BlobID, fv.MediaType = blob.ID, blob.MediaType
			if blob.Size > 0 {
				fv.Bytes = blob.Size
			}
			fv.BlobRead = &BlobRead{Route: "GET /v1/blobs/" + blob.ID, Resource: "pdpp://blob/" + blob.ID}
			fv.Complete = true
			size := "size unknown"
			if blob.Size > 0 {
				size = fmt.Sprintf("%d bytes", blob.Size)
			}
			fv.Line = fmt.Sprintf("[blob %s, %s; bytes not inlined; read via resources/read %s (RS %s)]",
				cmp.Or(blob.MediaType, "media type unknown"), size, fv.BlobRead.Resource, fv.BlobRead.Route)
			return fv
		}
		fv.Kind = "json"
		// Walked, never decoded: the summary keeps only what is shown.
		sum := cache.get(name, tb, previewLimit(max))
		if sum.complete && len(sum.compact) <= InlineJSONBytes && CountChars(string(sum.compact)) <= max*3 {
			compact := string(sum.compact)
			fv.Value = json.RawMessage(compact)
			fv.Complete = true
			fv.Line = compact
			return fv
		}
		c := fetchFieldFullCall(id, name)
		fv.Next = &c
		fv.Line = fmt.Sprintf("[JSON %s, %d bytes, not shown in full: %s; read it: %s]",
			sum.describe(tb[0]), fv.Bytes, sum.preview(max/2), c.Call())
	default:
		trimmed := string(tb)
		fv.Complete = true
		fv.Value = json.RawMessage(trimmed)
		fv.Line = trimmed
		switch trimmed {
		case "true", "false":
			fv.Kind = "boolean"
		default:
			fv.Kind = "number"
		}
	}
	return fv
}

// setText fills a text field's view from shown, the value's first
// characters; cut says the field continues past it, at character offset
// end, where the read-on continuation starts. The line shows the part as
// ShowValue does (a whole value exactly), a cut one marked as a preview
// with its size and the read that continues it.
func (fv *FieldView) setText(id, shown string, cut bool, end int) {
	fv.Kind = "text"
	fv.Value = shown
	fv.Complete = !cut
	fv.Next = nil
	if !cut {
		fv.Line = ShowValue(shown)
		return
	}
	c := ReadFieldCall(id, fv.Name, end, 0, "")
	fv.Next = &c
	fv.Line = fmt.Sprintf("%s%s [%d chars in all; read on: %s]", ShowValue(shown), Ellipsis, fv.Chars, c.Call())
}

// within returns the view of the same field bounded to max characters,
// reusing the decoded text of a text field instead of decoding raw again;
// cache is the record's field summaries (nil: none kept).
func (fv FieldView) within(id string, raw json.RawMessage, max int, cache fieldSummaries) FieldView {
	if fv.Kind != "text" {
		return describeField(id, fv.Name, raw, max, cache)
	}
	s, _ := fv.Value.(string)
	shown, cut := Cut(s, max)
	out := fv
	out.setText(id, shown, cut || !fv.Complete, max)
	return out
}

// fieldSummaries keeps the summaries of one record's fields by name
// (bounded by its fields), so rendering it again (fetch's budget passes,
// the brief view, a page's compact form after its card) walks each value
// once.
type fieldSummaries map[string]keptSummary

// keptSummary is a field's kept summary: of a JSON value, or of a string
// for its first textMax characters (0: none kept).
type keptSummary struct {
	jsonSummary
	text    stringSummary
	textMax int
}

// get returns the summary of field name (raw, trimmed) keeping at least
// limit bytes, from the cache when a kept one suffices.
func (fs fieldSummaries) get(name string, raw []byte, limit int) jsonSummary {
	if s, ok := fs[name]; ok && (s.complete || s.limit >= limit) {
		return s.jsonSummary
	}
	s := summarizeJSON(raw, limit)
	if fs != nil {
		fs[name] = keptSummary{jsonSummary: s}
	}
	return s
}

// text returns the summary of the string field name (q, its JSON text)
// for its first max characters, from the cache when one kept at least as
// many (only its prefix depends on max). Only a value over FieldValueChars
// bytes is kept; a shorter one costs little to read again.
func (fs fieldSummaries) text(name string, q []byte, max int) stringSummary {
	s, ok := fs[name]
	if !ok || s.textMax < max {
		s = keptSummary{text: summarizeString(q, max), textMax: max}
		if fs != nil && len(q) > FieldValueChars {
			fs[name] = s
		}
	}
	t := s.text
	t.prefix, _ = Cut(t.prefix, max)
	t.cut = t.chars > max
	return t
}

type blobInfo struct {
	ID        string
	MediaType string
	Size      int
}

// blobKeys are the members blobRef reads: blob_id, the media type's
// names, then the size's, each in the order blobRef prefers them.
var blobKeys = [...]string{"blob_id", "media_type", "content_type", "mime_type", "size_bytes", "size", "byte_size", "bytes"}

// blobRef recognises a blob reference object: an object carrying `blob_id`.
// It reads what json.Unmarshal into map[string]any would (the last of a
// repeated key; nothing when a number is past float64's range) in one walk
// of the top-level members, decoding only the few it names.
func blobRef(raw json.RawMessage) (blobInfo, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return blobInfo{}, false
	}
	// The last value of each key blobRef reads, in blobKeys' order.
	var vals [len(blobKeys)][]byte
	err := eachRawMember(raw, func(q, v []byte) error {
		key := rawName(q)
		for i, name := range blobKeys {
			if string(key) == name {
				vals[i] = v
			}
		}
		return nil
	})
	if err != nil || len(vals[0]) == 0 || vals[0][0] != '"' {
		return blobInfo{}, false
	}
	if fits, _ := scanJSON(raw); !fits {
		return blobInfo{}, false
	}
	str := func(v []byte) string {
		if len(v) > 0 && v[0] == '"' {
			s, _ := decodeString(v)
			return s
		}
		return ""
	}
	info := blobInfo{ID: str(vals[0])}
	if info.ID == "" {
		return blobInfo{}, false
	}
	for _, v := range vals[1:4] { // the media type's names
		if s := str(v); s != "" {
			info.MediaType = s
			break
		}
	}
	for _, v := range vals[4:] { // the size's names
		if len(v) == 0 || (v[0] != '-' && (v[0] < '0' || v[0] > '9')) {
			continue
		}
		if f, err := strconv.ParseFloat(string(v), 64); err == nil && f > 0 {
			info.Size = int(f)
			break
		}
	}
	return info, true
}

// IsBinaryLike reports whether s looks like encoded binary: a data: URI, or a
// long run of base64 alphabet with no spaces. Such text is shown as metadata
// only, never inlined.
func IsBinaryLike(s string) bool {
	if strings.HasPrefix(s, "data:") && strings.Contains(s[:min(len(s), 100)], ";base64,") {
		return true
	}
	if len(s) < BinaryLikeMinChars {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !base64Like(s[i]) {
			return false
		}
	}
	return true
}

func dataURIMediaType(s string) string {
	if !strings.HasPrefix(s, "data:") {
		return ""
	}
	end := strings.IndexAny(s, ";,")
	if end < 5 {
		return ""
	}
	return s[5:end]
}
