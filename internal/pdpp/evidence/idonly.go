package evidence

import (
	"fmt"
	"strconv"

	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/handles"
)

// An item of a compact step whose id is so long that even its id with a
// fetch call does not fit beside the step's other parts is shown by id
// alone: the id written once in its card, once in its shown entry and once
// in the identity list, so the step still moves on by one item and walking
// next still visits it in its place. An id too long for even that within
// the room the step has left is shortened, saying so and how long it is.

// idOnlyItem is item n (counted from 1) shown by its id alone within room
// bytes: its card in content[] text, its shown entry and its identity
// entry, each as a step writes it.
func idOnlyItem(n int, id string, room int) stepItem {
	build := func(shown string) stepItem {
		note := "too large to show beside this reply's other parts; read it with fetch and this id, narrowing with fields"
		if !takesBack(id) {
			note = "too large to show beside this reply's other parts; its id is not one fetch takes"
		}
		e := idOnlyEntry{ID: shown, Truncated: true}
		if shown != id {
			note = fmt.Sprintf("id of %d bytes, shortened to fit the reply", len(id))
			e.IDBytes = len(id)
		}
		card := "[" + strconv.Itoa(n) + "] id=" + shown + "\n    (" + note + ")\n"
		return stepItem{card: []byte(card), entry: appendJSON(nil, e), identity: appendIDEntry(nil, shown)}
	}
	if it := build(id); it.cost() <= room {
		return it
	}
	// Each of the three places gets a third of what the parts leave; the
	// shortened id ends with an ellipsis.
	per := (room-build("").cost())/3 - len(Ellipsis) - 24
	return build(cutEncoded(id, max(per, 0)) + Ellipsis)
}

// idOnlyEntry is the shown entry of an item shown by its id alone, with
// the length of the id when it is shortened.
type idOnlyEntry struct {
	ID        string `json:"id"`
	Truncated bool   `json:"truncated"`
	IDBytes   int    `json:"id_bytes,omitzero"`
}

// takesBack reports whether id is one fetch takes back.
func takesBack(id string) bool {
	_, err := handles.ParseID(id)
	return err == nil
}
