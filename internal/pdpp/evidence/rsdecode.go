package evidence

import (
	"cmp"
	"errors"
	"fmt"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// An RS body is decoded once, by the json v2 API, into the generated model
// of its envelope (gen/rsclient), so a member renamed in the RS spec fails
// the build where it is read. A record's data is split into its fields
// while it is read (recordData); the other raw members (expanded,
// meta.count, a warning's detail) stay jsontext.Value. Both are slices of
// the body, walked with a jsontext.Decoder where a preview, a window or a
// summary needs them; no value of a stranger is decoded whole into
// map[string]any.
//
// Names match exactly (encoding/json also fills record_key from
// "Record_Key"). A repeated name is taken as encoding/json takes it, the
// last one winning: refusing it would have the decoder keep the names of
// every object of a stranger's value (a data object of 100,000 members
// cost 40 bytes per body byte, measured by TestHostileValuesAreDescribedNotDecoded).
// Invalid UTF-8 inside strings is kept as U+FFFD, as encoding/json does,
// so a stranger's bad byte costs one character, not the page.

// rsDecodeOptions are the options of every decode of an RS body.
var rsDecodeOptions = json.JoinOptions(jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))

// decodeRS decodes the RS body into v, a pointer to a generated model.
// Lists of items (records, hits) are bounded while they are read (bound,
// from objectItems; nil for a body without one). The unmarshalers are made
// once, not per call: json v2 caches its per-type choice in them. A model
// that holds no raw member and no list (a field window) is decoded
// without unmarshalers, where json v2 looks no type up (a tenth of a
// window's rendering).
func decodeRS(body []byte, v any, bound *json.Unmarshalers) error {
	if bound == nil {
		bound = rawInPlace
	}
	return json.Unmarshal(body, v, rsDecodeOptions, json.WithUnmarshalers(bound))
}

// rawInPlace keeps a raw member (a jsontext.Value) as the slice of the
// body it was read from, not a copy: a record's data can be most of a
// large body, and a copy cost one more byte per body byte, over the bound
// of TestHostileValuesAreDescribedNotDecoded on query_records.
// json.Unmarshal decodes a []byte in place (never refilling or rewriting
// it), so ReadValue returns a slice of the body; TestRawMembersAliasBody
// holds that, should a later version of the library copy.
var rawInPlace = json.UnmarshalFromFunc(func(dec *jsontext.Decoder, v *jsontext.Value) error {
	raw, err := dec.ReadValue()
	*v = raw[:len(raw):len(raw)]
	return err
})

// decodeBody refuses an RS body that is not a JSON object (requireObject,
// naming it by what) and decodes it with decodeRS, returning an error of a
// page's item list as it is, any other saying the body is not shape.
func decodeBody(body []byte, what, shape string, v any, bound *json.Unmarshalers) error {
	if err := requireObject(body, what); err != nil {
		return err
	}
	if err := decodeRS(body, v, bound); err != nil {
		if pe, ok := errors.AsType[*pageError](err); ok {
			return pe.err
		}
		return fmt.Errorf("%s response is not %s: %w", what, shape, err)
	}
	return nil
}

// pageError is an error of a page's item list found while it is decoded:
// it is returned as it is, not as a decoding error.
type pageError struct{ err error }

func (e *pageError) Error() string { return e.err.Error() }

// objectItems returns the unmarshaler of a list of objects ([]T), read by
// readItems: it stops at the first item that is not a JSON object (the
// list named by what, e.g. "search page") or, when max > 0, at item max+1
// (items names them, e.g. "hits"). null leaves the list nil; anything else
// than an array is left to the default decoding (an error). A page's list
// (records, hits) is bounded at MaxPageItems, so a page of 2.6 million
// empty objects costs MaxPageItems decoded items, not a gigabyte.
func objectItems[T any](what, items string, max int) *json.Unmarshalers {
	return json.UnmarshalFromFunc(func(dec *jsontext.Decoder, list *[]T) error {
		return readItems(dec, list, what, items, max)
	})
}

func readItems[T any](dec *jsontext.Decoder, list *[]T, what, items string, max int) error {
	switch dec.PeekKind() {
	case 'n':
		_, err := dec.ReadToken()
		*list = nil
		return err
	case '[':
	default:
		return json.SkipFunc
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	*list = make([]T, 0, 8)
	for i := 0; dec.PeekKind() != ']'; i++ {
		if max > 0 && i == max {
			return &pageError{fmt.Errorf("the RS page lists more than %d %s, more than any page this server asks for (limit at most 100)", max, items)}
		}
		if k := dec.PeekKind(); k != '{' {
			if k == 0 {
				_, err := dec.ReadToken() // the syntax error
				return err
			}
			return &pageError{NotAnObject(what, i, kindName(k))}
		}
		var item T
		if err := json.UnmarshalDecode(dec, &item); err != nil {
			if _, ok := errors.AsType[*jsontext.SyntacticError](err); ok {
				return err
			}
			return &itemError{i, err}
		}
		*list = append(*list, item)
	}
	_, err := dec.ReadToken()
	return err
}

// itemError is the error of item i of a list that is an object but not
// one of the list's items (a member of the wrong type).
type itemError struct {
	i   int
	err error
}

func (e *itemError) Error() string { return e.err.Error() }
func (e *itemError) Unwrap() error { return e.err }

// kindName names a JSON kind as the errors about RS items write it.
func kindName(k jsontext.Kind) string {
	return cmp.Or(kindNames[k], "empty")
}

var kindNames = map[jsontext.Kind]string{
	'{': "an object", '[': "an array", '"': "a string", 'n': "null", 't': "a boolean", 'f': "a boolean", '0': "a number",
}

// NotAnObject is the error of item i (from 0) of an RS list, named by what,
// whose JSON kind is kind ("null", "number", …). An RS list (records,
// search hits, event subscriptions) is an array of objects; an item that
// is anything else is not rendered as an empty or nameless item, nor
// skipped: the whole page is refused as a bad answer.
func NotAnObject(what string, i int, kind string) error {
	return fmt.Errorf("item %d of the %s is %s, not a JSON object: every item of an RS list must be one", i+1, what, kind)
}

// ItemNotObject returns the error of item i (from 0) of an RS list named by
// what when its encoding raw is not a JSON object, nil when it is.
func ItemNotObject(what string, i int, raw []byte) error {
	if firstByte(raw) == '{' {
		return nil
	}
	return NotAnObject(what, i, kindName(jsontext.Value(raw).Kind()))
}
