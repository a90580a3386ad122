package events

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pdpp-mcp/pdpp-mcp/gen/mcptools"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/evidence"
)

// The events tools render objects the RS provides (subscriptions, its
// advertisement, event ids), and an RS may make any of them arbitrarily
// large. Their compact results are held to the catalog's reply budgets
// with the read tools' mechanism (fitStructured, then compactResult as the
// last word): a long value becomes an evidence.Preview naming the call that
// shows it whole, a list keeps the whole items that fit and reports the
// rest, and the text shows RS strings clipped.

// compactDepth bounds how many levels of nested objects compactValue walks
// before it previews a large value whole.
const compactDepth = 3

// subscriptionBytes bounds one subscription in compact structured output:
// a larger one, even once its long values are previews (an RS may send
// thousands of small members), is shown by identity only.
const subscriptionBytes = 4096

// maxSecretBytes is the longest signing secret create passes on. The
// secret is shown once and cannot be cut, so a longer one (no real whsec_
// secret is) is refused as a bad RS answer; it also stays within what a
// truncation report keeps (SmallMemberBytes).
const maxSecretBytes = SmallMemberBytes

// maxEventIDBytes is the longest test-event id send_test_event passes on.
// The id is what the receiver sees as webhook-id and cannot be cut, so a
// longer one is refused as a bad RS answer.
const maxEventIDBytes = 256

// shownChars bounds one RS-provided string in content[] text.
const shownChars = 200

// clipShown bounds an RS-provided string for content[] text, marking a cut
// with an ellipsis; binary-like text is named by its size only.
func clipShown(s string) string {
	if evidence.IsBinaryLike(s) {
		return fmt.Sprintf("[binary-like text, %d characters]", evidence.CountChars(s))
	}
	c, cut := evidence.Cut(s, shownChars)
	if cut {
		return c + evidence.Ellipsis
	}
	return c
}

// previewValue is the evidence.Preview standing in for v: a text preview
// for a string (size and media type only for binary-like text), the start of its JSON encoding otherwise, with its size and
// next, the call that shows it whole.
func previewValue(v any, raw []byte, next evidence.Continuation) evidence.Preview {
	if s, ok := v.(string); ok {
		return evidence.StringPreview(s, evidence.FieldValueChars, next)
	}
	shown, _ := evidence.Cut(string(raw), evidence.FieldValueChars)
	return evidence.Preview{Truncated: true, Kind: "json", Preview: shown, Bytes: len(raw), Next: next}
}

// compactValue returns v when it encodes to at most
// evidence.InlineJSONBytes; else, for an object and depth > 0, the object
// with each member compacted one level deeper; else a Preview naming next.
// It also returns how many values it replaced. The walk visits each member
// once per level, at most depth levels.
func compactValue(v any, next evidence.Continuation, depth int) (any, int) {
	if d, ok := v.(describedValue); ok {
		return d.preview(next), 1 // left encoded when decoded: too large to show
	}
	raw, err := json.Marshal(v)
	if (err != nil || len(raw) <= evidence.InlineJSONBytes) && !holdsDescribed(v) {
		return v, 0
	}
	m, ok := v.(map[string]any)
	if !ok || depth <= 0 {
		return previewValue(v, raw, next), 1
	}
	out := make(map[string]any, len(m))
	cut := 0
	for k, val := range m {
		c, n := compactValue(val, next, depth-1)
		out[k] = c
		cut += n
	}
	return out, cut
}

// subscriptionFull is the call that shows subscription id whole:
// get_event_subscription at detail "full", or fallback when id is not one
// get_event_subscription accepts.
func subscriptionFull(id string, fallback evidence.Continuation) evidence.Continuation {
	args := mcptools.GetEventSubscriptionArgs{SubscriptionID: id, Detail: evidence.DetailFull}
	if args.Validate() != nil {
		return fallback
	}
	return subscriptionCall(mcptools.ToolGetEventSubscription, id, "detail", evidence.DetailFull)
}

// compactSubscription encodes one listed subscription for compact output,
// its long values as previews naming its full get (fallback when it has no
// usable id), and returns how many values it replaced. A subscription still
// over subscriptionBytes is replaced by its id, status, size and that call.
func compactSubscription(sub any, fallback evidence.Continuation) (json.RawMessage, int) {
	m, _ := sub.(map[string]any)
	id, _ := m["subscription_id"].(string)
	next := subscriptionFull(id, fallback)
	if whole, ok := m[wholeKey].(describedValue); ok && m["truncated"] == true {
		// Too large to decode (decodeBoundedObject): its stub.
		stub := map[string]any{"truncated": true, "bytes": whole.preview(next).Bytes, "next": next, "subscription_id": id, "status": m["status"]}
		raw, _ := json.Marshal(stub)
		return raw, 1
	}
	c, cut := compactValue(sub, next, compactDepth)
	raw, err := json.Marshal(c)
	if err == nil && len(raw) <= subscriptionBytes {
		return raw, cut
	}
	whole, _ := json.Marshal(sub)
	stub := map[string]any{"truncated": true, "bytes": len(whole), "next": next}
	for _, k := range []string{"subscription_id", "status"} {
		if v, ok := m[k]; ok {
			stub[k], _ = compactValue(v, next, 0)
		}
	}
	raw, _ = json.Marshal(stub)
	return raw, cut + 1
}

// subscriptionStep builds list_event_subscriptions' compact reply, text
// and structured output together within budget bytes, as one step along
// the list (see evidence.Step): the subscriptions from st.Pos whole (long
// values as previews) while they fit, each with its line in the text;
// subscription_ids, the ids of those and of the ones after them; and next.
// ids are the subscriptions' ids ("" for one without), in the RS's order.
// The loops are bounded by the number of subscriptions.
func subscriptionStep(subs []json.RawMessage, ids []string, st evidence.Step, budget int) (string, json.RawMessage, evidence.Truncation) {
	total := len(subs)
	pos := min(st.Pos, total)
	tr := evidence.Truncation{Total: total}
	type item struct {
		line, whole []byte
		cut         int
	}
	items := make([]item, total-pos)
	built := make([]bool, total-pos)
	at := func(i int) item {
		if !built[i] {
			whole, cut := compactSubscription(subscriptionAt(subs[pos+i]), st.Full)
			items[i], built[i] = item{line: []byte(subscriptionLine(subs[pos+i], st.Full)), whole: whole, cut: cut}, true
		}
		return items[i]
	}
	head := listHead(total)
	tail := ""
	if pos < total && ids[pos] != "" && subscriptionFull(ids[pos], st.Full).Tool == mcptools.ToolGetEventSubscription {
		tail = "read one whole: " + subscriptionCall(mcptools.ToolGetEventSubscription, ids[pos]).Call() + "\n"
	}
	idCost := make([]int, total-pos)
	for i := range idCost {
		idCost[i] = evidence.WireLen(mustMarshalJSON(ids[pos+i])) + 1
	}
	base := evidence.JSONStringLen(head+tail) + evidence.StepBase("subscriptions", "subscription_ids[]", st, total) +
		len(`{"subscriptions":[],"subscription_ids":[],"next":}`)
	k, listed := evidence.FitItems(budget, base, idCost, func(i int) int {
		it := at(i)
		return evidence.JSONStringLen(string(it.line)) - 2 + evidence.WireLen(it.whole) + 1 + idCost[i]
	})
	tr.Shown = k
	for i := 0; i < k; i++ {
		tr.ValuesCut += items[i].cut
	}
	next := evidence.StepNext(st, k, total, nil)
	tr.Truncated = pos+k < total || tr.ValuesCut > 0 || st.Restarted

	var text strings.Builder
	text.WriteString(head)
	shown := make([]json.RawMessage, 0, k)
	for i := 0; i < k; i++ {
		text.Write(items[i].line)
		shown = append(shown, items[i].whole)
	}
	text.WriteString(tail)
	text.WriteString(evidence.StepLines("subscriptions", "subscription_ids[]", st, k, total, listed, next, tr.ValuesCut))
	var b bytes.Buffer
	b.WriteString(`{"subscriptions":`)
	b.Write(mustMarshalJSON(shown))
	if tr.Truncated {
		b.WriteString(`,"subscription_ids":`)
		b.Write(mustMarshalJSON(ids[pos : pos+k+listed]))
	}
	if next != nil {
		b.WriteString(`,"next":`)
		b.Write(mustMarshalJSON(next))
	}
	report := evidence.StepReport(st, &tr)
	b.WriteByte(',')
	b.Write(report[1:])
	return text.String(), b.Bytes(), tr
}

// subscriptionResult is the compact result of a tool that shows one
// subscription (get, update, create): out with member "subscription" set to
// sub, its long values previews naming full, held to tool's reply budget.
// The text says what was previewed and how to read it whole.
func (a *Tools) subscriptionResult(tool, text string, sub map[string]any, out map[string]any, full evidence.Continuation) *mcp.CallToolResult {
	limit := a.host.ReplyBudget(tool, 0)
	text = a.host.CompactText(text, limit)
	c, cut := compactValue(sub, full, compactDepth)
	out["subscription"] = c
	if cut > 0 {
		out["truncated"], out["values_cut"], out["full"] = true, cut, full
		text += fmt.Sprintf("structured output is compact: %d values previewed; everything: %s\n", cut, full.Call())
	}
	raw := mustMarshalJSON(out)
	return a.host.CompactResult(limit, text, raw, len(raw), &full)
}

// mustMarshalJSON encodes v, which holds only decoded JSON and plain
// structs, so encoding cannot fail; null stands in should it ever.
func mustMarshalJSON(v any) json.RawMessage {
	raw, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage(`null`)
	}
	return raw
}

// capsFit builds discover_event_subscription_capabilities' compact
// structured output: every member of the full form with long values as
// previews, and the event_types and scope lists keeping the leading items
// that fit.
type capsFit struct {
	base        map[string]any // members other than the two lists, compacted
	baseCut     int
	types       []json.RawMessage
	scope       []json.RawMessage
	typesCut    []int
	scopeCut    []int
	full        evidence.Continuation
	shownTypes  int
	shownScope  int
	valuesShown int
}

// newCapsFit compacts the members of full-form structured output out once,
// for every build; each loop is bounded by the size of out's lists.
func newCapsFit(out map[string]any, full evidence.Continuation) *capsFit {
	f := &capsFit{base: map[string]any{}, full: full}
	items := func(v any) ([]json.RawMessage, []int) {
		var raws []json.RawMessage
		var cuts []int
		var list []any
		_ = json.Unmarshal(mustMarshalJSON(v), &list)
		for _, it := range list {
			c, n := compactValue(it, full, 1)
			raws, cuts = append(raws, mustMarshalJSON(c)), append(cuts, n)
		}
		return raws, cuts
	}
	for k, v := range out {
		switch k {
		case "event_types":
			f.types, f.typesCut = items(v)
		case "scope":
			f.scope, f.scopeCut = items(v)
		case "preflight":
			f.base[k] = v // the adapter's own fixed steps, nothing from the RS
		default:
			c, n := compactValue(v, full, compactDepth)
			f.base[k], f.baseCut = c, f.baseCut+n
		}
	}
	return f
}

// build keeps the base members, then event types, then scope streams, in
// order, while the output stays within budget bytes.
func (f *capsFit) build(budget int) (json.RawMessage, evidence.Truncation, error) {
	out := make(map[string]any, len(f.base)+8)
	for k, v := range f.base {
		out[k] = v
	}
	out["detail"] = evidence.DetailCompact
	// The base, the two lists' brackets and the truncation report.
	used := len(mustMarshalJSON(out)) + 300 + len(mustMarshalJSON(f.full))
	cut := f.baseCut
	take := func(raws []json.RawMessage, cuts []int) []json.RawMessage {
		kept := []json.RawMessage{}
		for i, raw := range raws {
			if used+len(raw)+1 > budget {
				break
			}
			used += len(raw) + 1
			kept = append(kept, raw)
			cut += cuts[i]
		}
		return kept
	}
	types := take(f.types, f.typesCut)
	scope := take(f.scope, f.scopeCut)
	out["event_types"], out["scope"] = types, scope
	f.shownTypes, f.shownScope, f.valuesShown = len(types), len(scope), cut
	t := evidence.Truncation{Shown: len(scope), Total: len(f.scope), ValuesCut: cut}
	t.Truncated = len(types) < len(f.types) || len(scope) < len(f.scope) || cut > 0
	if t.Truncated {
		t.Full = &f.full
		out["truncated"], out["values_cut"], out["full"] = true, cut, f.full
		out["event_types_total"], out["scope_total"] = len(f.types), len(f.scope)
	}
	return mustMarshalJSON(out), t, nil
}

// truncationLine is the content[] sentence that reports the last build's
// cut, or "" when it cut nothing.
func (f *capsFit) truncationLine(t evidence.Truncation) string {
	if !t.Truncated {
		return ""
	}
	return fmt.Sprintf("structured output is compact: %d of %d event types, %d of %d scope streams, %d values previewed; everything: %s\n",
		f.shownTypes, len(f.types), f.shownScope, len(f.scope), f.valuesShown, f.full.Call())
}
