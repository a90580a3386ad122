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
	if firstByte(raw) == '{' {
		return nil
	}
	return NotAnObject(what, i, kindName(jsontext.Value(raw).Kind()))
}
