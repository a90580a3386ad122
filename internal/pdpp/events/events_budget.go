package events

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pdpp-mcp/pdpp-mcp/gen/mcptools"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/evidence"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/redact"
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

// compactValue returns raw when it encodes to at most
// evidence.InlineJSONBytes; else, for an object and depth > 0, the object
// with each member compacted one level deeper (object.compact); else a
// Preview naming next: a text preview for a string (size and media type
// only for binary-like text), a description otherwise (evidence.DescribeValue:
// kind, size, items, the start of its encoding). It also returns how many
// values it replaced. The walk reads each member once per level, at most
// depth levels; only a value it shows is looked into.
func compactValue(raw jsontext.Value, next evidence.Continuation, depth int) (any, int) {
	if evidence.WireLen(raw) <= evidence.InlineJSONBytes {
		return raw, 0
	}
	switch raw.Kind() {
	case '"':
		return evidence.StringPreview(unquote(raw), evidence.FieldValueChars, next), 1
	case '{':
		if o, ok := decodeObject(raw); ok && depth > 0 && !o.stub {
			return o.compact(next, depth)
		}
	}
	return describe(raw, next), 1
}

// describe is the Preview of raw naming next: evidence.DescribeValue's.
func describe(raw jsontext.Value, next evidence.Continuation) evidence.Preview {
	var d evidence.ValueDescription
	_ = json.Unmarshal(evidence.DescribeValue(raw, evidence.FieldValueChars), &d)
	return evidence.Preview{Truncated: true, Kind: d.Kind, Preview: d.Preview, Bytes: d.Bytes, Items: d.Items, ItemsCapped: d.ItemsCapped, Next: next}
}

// compact is o for compact output: each member compacted one level
// deeper (compactValue at depth-1), so a small object stays as it is; and
// how many values it replaced. A stub shows its members, truncated and the
// description of the whole under wholeKey.
func (o object) compact(next evidence.Continuation, depth int) (map[string]any, int) {
	out := make(map[string]any, len(o.members)+2)
	cut := 0
	if o.stub {
		out["truncated"], out[wholeKey], cut = true, describe(redact.JSON(o.raw), next), 1
	}
	for k, v := range o.members {
		c, n := compactValue(v, next, depth-1)
		out[k] = c
		cut += n
	}
	return out, cut
}

// MarshalJSON encodes o's members as encoding/json writes a map: by name.
func (o object) MarshalJSON() ([]byte, error) { return json.Marshal(o.members) }

// subscriptionFull is the call that shows subscription id whole:
// get_event_subscription at detail "full", or fallback when id is not one
// get_event_subscription accepts.
func subscriptionFull(id string, fallback evidence.Continuation) evidence.Continuation {
	args := mcptools.GetEventSubscriptionArgs{SubscriptionID: id, Detail: evidence.DetailFull}
	if args.Validate() != nil {
		return fallback
	}
	return evidence.Continuation{Tool: mcptools.ToolGetEventSubscription, Arguments: map[string]any{"subscription_id": id, "detail": evidence.DetailFull}}
}

// compactSubscription encodes one listed subscription for compact output,
// its long values as previews naming its full get (fallback when it has no
// usable id), and returns how many values it replaced. A subscription over
// subscriptionBytes even so, or too large to decode (a stub), is replaced
// by its id, status, size and that call.
func compactSubscription(sub object, fallback evidence.Continuation) (json.RawMessage, int) {
	id := sub.str("subscription_id")
	next := subscriptionFull(id, fallback)
	cut := 0
	if !sub.stub {
		c, n := sub.compact(next, compactDepth)
		if raw := mustMarshalJSON(c); len(raw) <= subscriptionBytes {
			return raw, n
		}
		cut = n
	}
	stub := map[string]any{"truncated": true, "bytes": len(redact.JSON(sub.raw)), "next": next}
	for _, k := range []string{"subscription_id", "status"} {
		if v, ok := sub.members[k]; ok {
			stub[k], _ = compactValue(v, next, 0)
		}
	}
	return mustMarshalJSON(stub), cut + 1
}

// subscriptionStep builds list_event_subscriptions' compact reply, text
// and structured output together within budget bytes, as one step along
// the list (see evidence.Step): the subscriptions from st.Pos whole (long
// values as previews) while they fit, each with its line in the text;
// subscription_ids, the ids of those and of the ones after them; and next.
// ids are the subscriptions' ids ("" for one without), in the RS's order.
// The loops are bounded by the number of subscriptions.
func subscriptionStep(subs []object, ids []string, st evidence.Step, budget int) (string, json.RawMessage, evidence.Truncation) {
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
			sub := subs[pos+i]
			if sub.partial {
				sub, _ = decodeObject(sub.raw) // read again whole, bounded by decodeObject
			}
			whole, cut := compactSubscription(sub.withoutSecrets(), st.Full)
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
	var text strings.Builder
	text.WriteString(head)
	shown := make([]json.RawMessage, 0, k)
	for _, it := range items[:k] {
		tr.ValuesCut += it.cut
		text.Write(it.line)
		shown = append(shown, it.whole)
	}
	next := evidence.StepNext(st, k, total, nil)
	tr.Truncated = pos+k < total || tr.ValuesCut > 0 || st.Restarted
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
func (a *Tools) subscriptionResult(tool, text string, sub object, out map[string]any, full evidence.Continuation) *mcp.CallToolResult {
	limit := a.host.ReplyBudget(tool, 0)
	text = a.host.CompactText(text, limit)
	c, cut := sub.compact(full, compactDepth)
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
		var list []jsontext.Value
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
			var c any
			var n int
			if o, ok := v.(object); ok { // the advertisement: compacted without encoding it whole
				c, n = o.compact(full, compactDepth)
			} else {
				c, n = compactValue(jsontext.Value(mustMarshalJSON(v)), full, compactDepth)
			}
			f.base[k], f.baseCut = c, f.baseCut+n
		}
	}
	return f
}

// build keeps the base members, then event types, then scope streams, in
// order, while the output stays within budget bytes.
func (f *capsFit) build(budget int) (json.RawMessage, evidence.Truncation, error) {
	out := make(map[string]any, len(f.base)+8)
	maps.Copy(out, f.base)
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
