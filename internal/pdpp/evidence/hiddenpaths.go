package evidence

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/unseen"
)

// Bounds of the report of where full data holds hidden characters.
const (
	// MaxHiddenPaths is how many paths the report lists; it counts them
	// all.
	MaxHiddenPaths = 16
	// MaxHiddenPathBytes bounds one listed path; a longer one is cut,
	// ending in "…".
	MaxHiddenPathBytes = 256
	// MaxHiddenDepth is the nesting a path names; a string deeper is
	// listed at that depth, ending in "/…".
	MaxHiddenDepth = 64
	// hiddenTextPaths is how many of the paths content[] names.
	hiddenTextPaths = 3
)

// HiddenReport says where a detail "full" reply's data holds a character
// a person cannot see (package unseen): structuredContent.hidden. Data
// stays exact (such characters are written as \u escapes), so a host
// that decodes it gets them raw; the report lets it warn. Count is how
// many strings (values or member names) hold one, Paths the JSON Pointers
// (RFC 6901, from the root of structuredContent) of the first
// MaxHiddenPaths of them.
type HiddenReport struct {
	Count int
	Paths []string
}

// Complete reports whether Paths lists every string counted.
func (h *HiddenReport) Complete() bool { return h.Count == len(h.Paths) }

// PointerEscaper escapes a member name as a JSON Pointer segment.
var PointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// frame is one open object or array of the walk: its level in the
// decoder's stack and, for an object, the current member name as it stands
// in the JSON text (quoted; decoded only for a path listed).
type frame struct {
	level int
	key   []byte
}

// Find walks the valid JSON text b, whose value stands at the pointer
// prefix ("" for the root), with a jsontext.Decoder, and counts the
// strings (member names and values) that hold a hidden rune, raw or
// \u-escaped (unseen.HasJSON), listing the first paths. Not the decoder's
// own StackPointer: it names members by their index once repeated names
// are allowed, and keeps every name when they are not. Each byte is read
// a bounded number of times; the frames kept are bounded by MaxHiddenDepth.
func (h *HiddenReport) Find(b []byte, prefix string) {
	if !unseen.HasJSON(b) {
		return
	}
	w := newWalk(b)
	defer w.done()
	dec := &w.dec
	var stack []frame
	for {
		depth := dec.StackDepth()
		kind, n := dec.StackIndex(depth)
		name := kind == '{' && n%2 == 0
		switch dec.PeekKind() {
		case 0:
			return // the end, or not JSON
		case '{', '[':
			if _, err := dec.ReadToken(); err != nil {
				return
			}
			if len(stack) < MaxHiddenDepth {
				stack = append(stack, frame{level: depth + 1})
			}
		case '}', ']':
			if _, err := dec.ReadToken(); err != nil {
				return
			}
			if len(stack) > 0 && stack[len(stack)-1].level == depth {
				stack = stack[:len(stack)-1]
			}
		case '"':
			q, err := dec.ReadValue()
			if err != nil {
				return
			}
			deeper := depth > len(stack)
			if name && !deeper && len(stack) > 0 {
				// One that holds the hidden rune is listed by its
				// member's path. q is a slice of b (newWalk reads in
				// place), kept until the next name.
				end := int(dec.InputOffset())
				stack[len(stack)-1].key = b[end-len(q) : end]
			}
			if unseen.HasJSON(q) {
				h.Count++
				if len(h.Paths) < MaxHiddenPaths {
					h.Paths = append(h.Paths, pointer(dec, prefix, stack, deeper))
				}
			}
		default:
			if err := dec.SkipValue(); err != nil {
				return
			}
		}
	}
}

// pointer is the JSON Pointer of the current value of the walk of dec:
// prefix, then each frame's member name or index ("/…" when the value lies
// deeper than the frames kept), cut at MaxHiddenPathBytes.
func pointer(dec *jsontext.Decoder, prefix string, stack []frame, deeper bool) string {
	var b strings.Builder
	b.WriteString(prefix)
	for _, f := range stack {
		if b.Len() > MaxHiddenPathBytes {
			break
		}
		b.WriteByte('/')
		if kind, n := dec.StackIndex(f.level); kind == '[' {
			b.WriteString(strconv.Itoa(int(n) - 1))
			continue
		}
		key, err := decodeString(f.key)
		if err != nil {
			key = string(f.key)
		}
		b.WriteString(PointerEscaper.Replace(key))
	}
	if deeper {
		b.WriteString("/…")
	}
	if p := b.String(); len(p) > MaxHiddenPathBytes {
		return cutBytes(p, MaxHiddenPathBytes) + Ellipsis
	}
	return b.String()
}

// AppendJSON appends the report as the member "hidden" of a JSON object
// (after a comma when more is true), its paths written by
// unseen.AppendJSONString: a path that holds a hidden rune holds it as a
// \u escape.
func (h *HiddenReport) AppendJSON(dst []byte, more bool) []byte {
	if more {
		dst = append(dst, ',')
	}
	dst = append(dst, `"hidden":{"count":`...)
	dst = strconv.AppendInt(dst, int64(h.Count), 10)
	dst = append(dst, `,"paths":[`...)
	for k, p := range h.Paths {
		if k > 0 {
			dst = append(dst, ',')
		}
		dst = unseen.AppendJSONString(dst, p)
	}
	dst = append(dst, `],"complete":`...)
	dst = strconv.AppendBool(dst, h.Complete())
	return append(dst, '}')
}

// Text is the line content[] gives the report.
func (h *HiddenReport) Text() string {
	shown := h.Paths[:min(len(h.Paths), hiddenTextPaths)]
	more := ""
	if h.Count > len(shown) {
		more = fmt.Sprintf(" and %d more", h.Count-len(shown))
	}
	return fmt.Sprintf("hidden characters in the full data (\\u-escaped there; a client that decodes it gets them raw): %d string(s), at %s%s (structuredContent.hidden)\n",
		h.Count, strings.Join(shown, ", "), more)
}
