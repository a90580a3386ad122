package evidence

import (
	"cmp"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/handles"
)

// Step says where a compact reply of a list starts in its RS page and how
// it continues; the tool handler fills it in. A step keeps the identity of
// every item of the page not yet shown, in the RS's order; shows whole
// items with previews from Pos while they fit the reply budget; and names
// next, the call that resumes right after the last item shown (a page
// cursor, made by Resume) or, once the page is exhausted, the RS's own
// next page. Walking next visits the items detail "full" returns, in the
// same order, each step within the budget.
type Step struct {
	// Pos is the index in the page of the first item to show (0 without
	// a page cursor).
	Pos int
	// Restarted says the page no longer holds what it held before the
	// page cursor's position ResumedAt: the reply shows it again from its
	// first item (Pos is 0).
	Restarted bool
	ResumedAt int
	// Resume returns the call that resumes the page at index end, or
	// false when no such call can be made (the reply then says how to read
	// the rest with detail "full").
	Resume func(end int) (Continuation, bool)
	// List names what the items are part of in the text: "page" (an RS
	// page, the default) or "list" (a list the RS returns whole).
	List string
	// Full is the same request at detail "full", and FullBytes about how
	// many bytes its reply takes, asked only when the reply names Full.
	Full      Continuation
	FullBytes func() int
}

// list is st.List, "page" when not set.
func (st Step) list() string { return cmp.Or(st.List, "page") }

// fullBytes asks st.FullBytes, 0 when it is not set.
func (st Step) fullBytes() int {
	if st.FullBytes == nil {
		return 0
	}
	return st.FullBytes()
}

// fullBytesWidth stands in for the not yet known size of the full reply
// while a step is measured: ten digits.
const fullBytesWidth = 1 << 30

// resumeSlack covers the few bytes a page cursor's position may add to the
// estimate the fit makes with the call that resumes one item later.
const resumeSlack = 16

// idsShare bounds the identity list of one reply to this fraction of its
// budget, so a page of very many or very long ids still leaves room for
// items with previews; the ids left out are reached by next.
const idsShare = 2

// FitItems returns how many items k a compact reply shows whole, and how
// many ids of the items after those it lists. shown(i) is what item i adds
// shown whole with its preview, ids[i] what it adds as an id alone; base
// is everything else. k is the largest with base + shown(0..k-1) + the ids
// listed within budget, at least 1 while there is an item (every step
// moves on); the ids listed are the leading ones after item k-1 within
// budget/idsShare and within what the items shown leave. shown is asked
// lazily, in order, not past the first item that does not fit. The loop
// runs at most len(ids) times, each with a binary search over prefix sums.
func FitItems(budget, base int, ids []int, shown func(i int) int) (k, idsListed int) {
	n := len(ids)
	if n == 0 {
		return 0, 0
	}
	prefix := make([]int, n+1)
	for i, c := range ids {
		prefix[i+1] = prefix[i] + c
	}
	// listed returns how many ids from index from fit room, and their bytes.
	listed := func(from, room int) (int, int) {
		m := sort.Search(n-from, func(m int) bool { return prefix[from+m+1]-prefix[from] > room })
		return m, prefix[from+m] - prefix[from]
	}
	used := base
	for k < n {
		next := used + shown(k)
		_, rest := listed(k+1, budget/idsShare)
		if k > 0 && next+rest > budget {
			break
		}
		used = next
		k++
	}
	idsListed, _ = listed(k, min(budget/idsShare, budget-used))
	return k, idsListed
}

// textCost is what the string s adds to a result's text, JSON-encoded
// within the text member's quotes.
func textCost(s string) int { return JSONStringLen(s) - 2 }

// stepLines are the content[] lines of a compact step after its items:
// the restart notice, next, and what was shown with previews and how to
// see the rest. what names the items ("hits", "records", "subscriptions"),
// where the structured list of the others' ids; next is nil at the page's
// end; cut counts the values previewed; fullBytes is the full reply's size.
func stepLines(what, where string, st Step, shown, total, idsListed int, next *Continuation, cut, fullBytes int) string {
	var b strings.Builder
	if st.Restarted {
		fmt.Fprintf(&b, "the %s changed since that cursor was made (its first %d %s differ now), so it is shown again from its start\n", st.list(), st.ResumedAt, what)
	}
	rest := total - st.Pos - shown
	if next != nil && rest > 0 {
		fmt.Fprintf(&b, "next: %s\n", next.Call())
	}
	switch {
	case rest > 0:
		in := "on this page"
		if st.list() != "page" {
			in = "in the " + st.list()
		}
		fmt.Fprintf(&b, "%s %d-%d of %d %s shown with previews; ", what, st.Pos+1, st.Pos+shown, total, in)
		if idsListed == rest {
			fmt.Fprintf(&b, "ids of the other %d in structured %s; ", rest, where)
		} else {
			fmt.Fprintf(&b, "ids of the next %d of the other %d in structured %s; ", idsListed, rest, where)
		}
		if next == nil {
			fmt.Fprintf(&b, "the rest only with the whole %s at once (%d bytes): %s\n", st.list(), fullBytes, st.Full.Call())
		} else {
			fmt.Fprintf(&b, "or the whole %s at once (%d bytes): %s\n", st.list(), fullBytes, st.Full.Call())
		}
	case cut > 0:
		fmt.Fprintf(&b, "%d %s previewed in structured output, each naming its own read; the whole %s at once (%d bytes): %s\n", cut, noun(cut, "value", "values"), st.list(), fullBytes, st.Full.Call())
	}
	return b.String()
}

// StepLines is stepLines with the size of the full reply asked of st when
// the lines name it. It, StepBase, StepNext and StepReport serve a list
// rendered outside this package (the event subscriptions) too.
func StepLines(what, where string, st Step, shown, total, idsListed int, next *Continuation, cut int) string {
	fb := 0
	if st.Pos+shown < total || cut > 0 || st.Restarted {
		fb = st.fullBytes()
	}
	return stepLines(what, where, st, shown, total, idsListed, next, cut, fb)
}

// StepBase is what StepLines and StepReport take at most besides the
// items of a step of total items from st.Pos, the resume call estimated
// one item in.
func StepBase(what, where string, st Step, total int) int {
	var resume Continuation
	if st.Resume != nil && total-st.Pos > 1 {
		resume, _ = st.Resume(st.Pos + 1)
	}
	return textCost(stepLines(what, where, st, 1, total, total-st.Pos, &resume, 1, fullBytesWidth)) + resumeSlack +
		WireLen(resume.encoded()) + WireLen(st.Full.encoded()) + 320
}

// StepNext is the call after a step that showed shown items from st.Pos
// of total: the resume call while items are left, else nextPage (nil at
// the end of the RS's pages).
func StepNext(st Step, shown, total int, nextPage *Continuation) *Continuation {
	if st.Pos+shown < total {
		if st.Resume != nil {
			if c, ok := st.Resume(st.Pos + shown); ok {
				return &c
			}
		}
		return nil
	}
	return nextPage
}

// StepReport is the JSON object of writeStep's members, for a caller to
// merge into its structured output; tr.Full is set when the step cut.
func StepReport(st Step, tr *Truncation) json.RawMessage {
	var w objectWriter
	fb := 0
	if tr.Truncated {
		fb = st.fullBytes()
		tr.Full = &st.Full
	}
	writeStep(&w, st, *tr, st.Full.encoded(), fb)
	return w.bytes()
}

// stepItem is one item encoded for a compact step: its content[] card,
// its entry among the items shown and its identity entry; cut counts the
// values it cut.
type stepItem struct {
	card, entry, identity []byte
	cut                   int
}

// cost is what the item adds to a step.
func (it stepItem) cost() int {
	return textCost(string(it.card)) + WireLen(it.entry) + WireLen(it.identity) + 2
}

// pageStep is search's and query_records' compact step over an RS page
// from pos of total: id(i) is item pos+i's id, what and where are
// stepLines', nextPage is the RS's next page.
type pageStep struct {
	st          Step
	pos, total  int
	id          func(i int) string
	what, where string
	nextPage    *Continuation
}

// fit returns the items FitItems shows and how many ids it lists after
// them. build(i, alone, room) encodes item pos+i, at most once: alone is
// the room of one item beside the others' ids, room all the step has for
// its items. The loop is bounded by the page.
func (p pageStep) fit(budget, base int, ids []int, build func(i, alone, room int) stepItem) ([]stepItem, int) {
	items := make([]stepItem, len(ids))
	built := make([]bool, len(ids))
	alone, room := max(1, budget-base-budget/idsShare), budget-base
	k, listed := FitItems(budget, base, ids, func(i int) int {
		if !built[i] {
			items[i], built[i] = build(i, alone, room), true
		}
		return items[i].cost()
	})
	return items[:k], listed
}

// lay lays a fitted step out: its text (head, the cards, summary, the
// step's lines and, at the page's end, its next page), the entries and
// identity entries as JSON arrays, next, the report (cut counts values
// cut besides the items') and the full reply's size when truncated.
func (p pageStep) lay(items []stepItem, listed int, head, summary string, cut int) (text string, entries, identities []byte, next *Continuation, tr Truncation, fullBytes int) {
	k := len(items)
	tr = Truncation{Total: p.total, Shown: k, ValuesCut: cut}
	var b strings.Builder
	b.WriteString(head)
	shown := make([][]byte, 0, k)
	ids := make([][]byte, 0, k+listed)
	for _, it := range items {
		tr.ValuesCut += it.cut
		b.Write(it.card)
		shown = append(shown, it.entry)
		ids = append(ids, it.identity)
	}
	for i := k; i < k+listed; i++ {
		ids = append(ids, appendIDEntry(nil, p.id(i)))
	}
	next = StepNext(p.st, k, p.total, p.nextPage)
	tr.Truncated = p.pos+k < p.total || tr.ValuesCut > 0 || p.st.Restarted
	b.WriteString(summary)
	if tr.Truncated {
		fullBytes = p.st.fullBytes()
	}
	b.WriteString(stepLines(p.what, p.where, p.st, k, p.total, listed, next, tr.ValuesCut, fullBytes))
	if p.pos+k == p.total && p.nextPage != nil {
		fmt.Fprintf(&b, "next page: %s\n", p.nextPage.Call())
	}
	return b.String(), joinArray(shown), joinArray(ids), next, tr, fullBytes
}

// idOnlyItem is item n (from 1), whose id with a fetch call does not fit
// beside the step's other parts, shown by id alone within room bytes, in
// its card, its shown entry and its identity entry: the step still moves
// on by one item. An id too long even for that is shortened, saying so
// and how long it is.
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

// idOnlyEntry is the shown entry of idOnlyItem.
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
