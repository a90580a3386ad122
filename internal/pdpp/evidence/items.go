package evidence

import (
	"fmt"

	"github.com/go-json-experiment/json/jsontext"
)

// An RS list (records, search hits, event subscriptions) is an array of
// objects. An item that is anything else (null, a number, a string, an
// array) is not rendered as an empty or nameless item, nor skipped: the
// whole page is refused as a bad answer, whichever tool reads it.

// NotAnObject is the error of item i (from 0) of an RS list, named by what,
// whose JSON kind is kind ("null", "number", …).
func NotAnObject(what string, i int, kind string) error {
	return fmt.Errorf("item %d of the %s is %s, not a JSON object: every item of an RS list must be one", i+1, what, kind)
}

// ItemNotObject returns the error of item i (from 0) of an RS list named by
// what when its encoding raw is not a JSON object, nil when it is.
func ItemNotObject(what string, i int, raw []byte) error {
	if isObject(raw) {
		return nil
	}
	return NotAnObject(what, i, rawKind(raw))
}

// rawKind names the JSON kind of the encoded value raw as kindName does.
func rawKind(raw []byte) string { return kindName(jsontext.Value(raw).Kind()) }

// isObject reports whether the encoded value raw is a JSON object.
func isObject(raw []byte) bool { return firstByte(raw) == '{' }

// firstNonObject returns the error of the first element of the JSON array
// list (valid JSON) that is not an object, nil when there is none or list
// is not an array. The walk is bounded by the size of list.
func firstNonObject(list []byte, what string) error {
	if firstByte(list) != '[' {
		return nil
	}
	i := 0
	var bad error
	_ = eachElement(list, func(v []byte) error {
		if !isObject(v) {
			bad = NotAnObject(what, i, rawKind(v))
			return errStop
		}
		i++
		return nil
	})
	return bad
}

// schemaNonObject returns the error of the first item of a schema
// document's lists (connectors, their streams and granted connections,
// each stream's granted connections) that is not an object; nil when there
// is none. body is valid JSON; the walk is bounded by its size.
func schemaNonObject(body []byte) error {
	conns, _ := Member(body, "connectors")
	if err := firstNonObject(conns, "schema's connectors list"); err != nil {
		return err
	}
	var bad error
	_ = eachElement(conns, func(c []byte) error {
		streams, _ := Member(c, "streams")
		granted, _ := Member(c, "granted_connections")
		if bad = firstNonObject(streams, "schema's streams list"); bad == nil {
			bad = firstNonObject(granted, "schema's granted_connections list")
		}
		if bad == nil {
			_ = eachElement(streams, func(s []byte) error {
				granted, _ := Member(s, "granted_connections")
				bad = firstNonObject(granted, "schema's granted_connections list")
				if bad != nil {
					return errStop
				}
				return nil
			})
		}
		if bad != nil {
			return errStop
		}
		return nil
	})
	return bad
}
