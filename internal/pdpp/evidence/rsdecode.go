package evidence

import (
	"errors"
	"fmt"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// An RS body is decoded once, by the json v2 API, into the generated model
// of its envelope (gen/rsclient): the members the adapter reads are Go
// fields, so a member renamed in the RS spec fails the build where it is
// read. Record data and expanded stay raw (jsontext.Value), walked with a
// jsontext.Decoder where a preview, a window or a summary needs them; no
// value of a stranger is decoded whole into map[string]any.
//
// The decode is strict where encoding/json is lax: a repeated member name
// is refused (which of two record_key values is the record?), and names
// match exactly (encoding/json also fills record_key from "Record_Key").
// Invalid UTF-8 inside strings is kept as U+FFFD, as encoding/json does,
// so a stranger's bad byte costs one character, not the page.

// rsDecodeOptions are the options of every decode of an RS body.
var rsDecodeOptions = jsontext.AllowInvalidUTF8(true)

// decodeRS decodes the RS body into v, a pointer to a generated model.
// Lists of items (records, hits) are bounded while they are read: see
// listItems.
func decodeRS(body []byte, v any, bound *json.Unmarshalers) error {
	if bound == nil {
		return json.Unmarshal(body, v, rsDecodeOptions)
	}
	return json.Unmarshal(body, v, rsDecodeOptions, json.WithUnmarshalers(bound))
}

// pageError is an error of a page's item list found while it is decoded:
// it is returned as it is, not as a decoding error.
type pageError struct{ err error }

func (e *pageError) Error() string { return e.err.Error() }

// asPageError returns the pageError in err's chain, or nil.
func asPageError(err error) error {
	var pe *pageError
	if errors.As(err, &pe) {
		return pe.err
	}
	return nil
}

// listItems returns the unmarshaler of a page's item list ([]T, the data
// member of a records or search page): it reads the list element by
// element and stops at the first that is not a JSON object (named by what,
// e.g. "search page") or at item MaxPageItems+1 (items names them, e.g.
// "hits"), so a page of 2.6 million empty objects costs MaxPageItems
// decoded items, not a gigabyte. null leaves the list nil; anything else
// than an array is left to the default decoding (an error).
func listItems[T any](what, items string) *json.Unmarshalers {
	return json.UnmarshalFromFunc(func(dec *jsontext.Decoder, list *[]T) error {
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
			if i == MaxPageItems {
				return &pageError{fmt.Errorf("the RS page lists more than %d %s, more than any page this server asks for (limit at most 100)", MaxPageItems, items)}
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
				return err
			}
			*list = append(*list, item)
		}
		_, err := dec.ReadToken()
		return err
	})
}

// kindName names a JSON kind as the errors about RS items write it.
func kindName(k jsontext.Kind) string {
	switch k {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	case '0':
		return "a number"
	}
	return "empty"
}
