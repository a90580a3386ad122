package evidence

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestIDOnlyItem: an item shown by id alone keeps its whole id when that
// fits the room, and otherwise a prefix of it ending in an ellipsis, with
// id_bytes, within the room, whatever the id's characters cost encoded.
func TestIDOnlyItem(t *testing.T) {
	const handle = "cin_a/notes:"
	for _, tc := range []struct {
		name      string
		id        string
		room      int
		shortened bool
	}{
		{"short id", handle + "n1", 1000, false},
		{"long id that fits", handle + strings.Repeat("x", 3900), 16000, false},
		{"long id shortened", handle + strings.Repeat("x", 9000), 16000, true},
		{"escaped characters shortened", handle + strings.Repeat("<&\"\u2028", 1000), 4000, true},
		{"multi-byte characters shortened", handle + strings.Repeat("é", 3000), 2000, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			it := idOnlyItem(7, tc.id, tc.room)
			card, entry, idEntry := it.card, it.entry, it.identity
			if cost := it.cost(); cost > tc.room {
				t.Errorf("costs %d bytes, room %d", cost, tc.room)
			}
			var e struct {
				ID        string `json:"id"`
				Truncated bool   `json:"truncated"`
				IDBytes   int    `json:"id_bytes"`
			}
			var listed struct{ ID string }
			if json.Unmarshal(entry, &e) != nil || json.Unmarshal(idEntry, &listed) != nil || !e.Truncated {
				t.Fatalf("entries %s %s", entry, idEntry)
			}
			if listed.ID != e.ID || !strings.HasPrefix(string(card), "[7] id="+e.ID+"\n") {
				t.Errorf("the three forms name different ids: %.80q %.80q %.80q", card, e.ID, listed.ID)
			}
			prefix, cut := strings.CutSuffix(e.ID, Ellipsis)
			switch {
			case !tc.shortened && (e.ID != tc.id || e.IDBytes != 0):
				t.Errorf("id shortened to %d bytes (id_bytes %d) though it fits", len(e.ID), e.IDBytes)
			case tc.shortened && (!cut || !strings.HasPrefix(tc.id, prefix) || e.IDBytes != len(tc.id) || len(prefix) < len(handle)):
				t.Errorf("shortened id %.60q… (id_bytes %d) is not a prefix of the id of %d bytes ending in an ellipsis", e.ID, e.IDBytes, len(tc.id))
			}
		})
	}
}
