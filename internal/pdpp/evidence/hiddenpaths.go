package evidence

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/jsonwalk"
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

// frame is one open object or array of the walk.
type frame struct {
	obj bool
	key []byte // the current member name as it stands in the JSON text (quoted)
	idx int    // the current element's index
}

// Find walks the valid JSON text b, whose value stands at the pointer
// prefix ("" for the root), and counts the strings that hold a hidden
// rune, raw or \u-escaped (unseen.HasJSON), listing the first paths.
// Each byte is read a bounded number of times; the frames kept are
// bounded by MaxHiddenDepth.
func (h *HiddenReport) Find(b []byte, prefix string) {
	if !unseen.HasJSON(b) {
		return
	}
	var stack []frame
	depth := 0 // nesting, which may pass len(stack) = MaxHiddenDepth
	for i := jsonwalk.SkipSpace(b, 0); i < len(b); i = jsonwalk.SkipSpace(b, i) {
		switch c := b[i]; c {
		case '{', '[':
			depth++
			if len(stack) < MaxHiddenDepth {
				stack = append(stack, frame{obj: c == '{'})
			}
			i++
		case '}', ']':
			if depth > 0 && depth == len(stack) {
				stack = stack[:len(stack)-1]
			}
			depth--
			i++
		case ',':
			if depth > 0 && depth == len(stack) && !stack[len(stack)-1].obj {
				stack[len(stack)-1].idx++
			}
			i++
		case ':':
			i++
		case '"':
			end := jsonwalk.SkipString(b, i)
			q := b[i:end]
			if depth > 0 && depth == len(stack) && stack[len(stack)-1].obj {
				if j := jsonwalk.SkipSpace(b, end); j < len(b) && b[j] == ':' {
					// A member name: one that holds the hidden rune is
					// listed by its member's path.
					stack[len(stack)-1].key = q
				}
			}
			if unseen.HasJSON(q) {
				h.Count++
				if len(h.Paths) < MaxHiddenPaths {
					h.Paths = append(h.Paths, pointer(prefix, stack, depth > len(stack)))
				}
			}
			i = end
		default:
			end := jsonwalk.SkipValue(b, i)
			if end <= i {
				end = i + 1
			}
			i = end
		}
	}
}

// pointer is the JSON Pointer of the current value of the walk: prefix,
// then each frame's member name or index ("/…" when the value lies
// deeper than the frames kept), cut at MaxHiddenPathBytes.
func pointer(prefix string, stack []frame, deeper bool) string {
	var b strings.Builder
	b.WriteString(prefix)
	for _, f := range stack {
		if b.Len() > MaxHiddenPathBytes {
			break
		}
		b.WriteByte('/')
		if !f.obj {
			b.WriteString(strconv.Itoa(f.idx))
			continue
		}
		key, err := jsonwalk.DecodeString(f.key)
		if err != nil {
			key = string(f.key)
		}
		b.WriteString(PointerEscaper.Replace(key))
	}
	if deeper {
		b.WriteString("/…")
	}
	p := b.String()
	if len(p) > MaxHiddenPathBytes {
		cut := MaxHiddenPathBytes
		for cut > 0 && !utf8.RuneStart(p[cut]) {
			cut--
		}
		p = p[:cut] + "…"
	}
	return p
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
