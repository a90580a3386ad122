package evidence

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Bounds of rendering one JSON object or array value of RS data.
const (
	// HugeJSONBytes is the largest value rendered as encoding/json would
	// re-encode it (keys sorted, numbers and strings normalised); a larger
	// one is described instead: its kind, size, member or element count
	// and a preview of its first bytes as the RS wrote them. Below it the
	// walk holds at most the value's keys and the bytes it shows.
	HugeJSONBytes = 64 << 10
	// MaxCountedItems bounds the members or elements counted of a huge
	// value; past it the description says "more than".
	MaxCountedItems = 1_000_000
	// MaxMeanDepth bounds the mean nesting of a value's bytes for it to be
	// re-encoded: the walk reads a byte once per enclosing container, so a
	// value nested deeper (thousands of levels) is described as a huge one
	// is, and no value costs more than MaxMeanDepth reads a byte.
	MaxMeanDepth = 32
)

// jsonSummary is what rendering needs of one JSON object or array: its
// compact form up to a limit, read in one walk that never decodes the
// value, allocating at most the bytes it keeps plus, below HugeJSONBytes,
// the value's keys.
type jsonSummary struct {
	// compact is the value as MarshalNoEscape of its decoded form writes
	// it (raw as it stands when that decoding fails), whole when
	// complete, else at least limit+1 bytes of it; for a huge value, its
	// first bytes as the RS wrote them, white space left out.
	compact  []byte
	complete bool
	limit    int
	// huge: the value is over HugeJSONBytes; count is its members or
	// elements, up to MaxCountedItems (more: countCapped).
	huge        bool
	count       int
	countCapped bool
}

// summarizeJSON reads the object or array raw (valid JSON) keeping at most
// limit+1 bytes of its compact form. The walk is bounded by len(raw).
func summarizeJSON(raw []byte, limit int) jsonSummary {
	raw = bytes.TrimSpace(raw)
	sum := jsonSummary{limit: limit}
	if len(raw) > HugeJSONBytes {
		return describeHuge(raw, sum)
	}
	fits, depthSum := scanJSON(raw)
	if depthSum > MaxMeanDepth*len(raw) {
		return describeHuge(raw, sum)
	}
	if fits {
		c := compactor{limit: limit, raw: raw[:len(raw):len(raw)]}
		out, err := c.value(make([]byte, 0, min(len(raw), limit+1)), c.raw)
		if err == nil {
			sum.compact, sum.complete = out, !c.stopped
			return sum
		}
	}
	// encoding/json refuses a number past float64's range: shown as it
	// stands.
	sum.compact, sum.complete = raw[:min(len(raw), limit+1)], len(raw) <= limit
	return sum
}

// describeHuge fills sum for a value described rather than re-encoded:
// its count and its first limit+1 bytes as the RS wrote them.
func describeHuge(raw []byte, sum jsonSummary) jsonSummary {
	sum.huge = true
	sum.count, sum.countCapped = countItems(raw, MaxCountedItems)
	sum.compact = appendSpaceless(make([]byte, 0, min(len(raw), sum.limit+1)), raw, sum.limit+1)
	return sum
}

// previewLimit is the bytes of compact form a rendering within max
// characters needs: the inline check (InlineJSONBytes) and a preview of
// max/2 characters (at most four bytes each) and one more, so a cut shows.
func previewLimit(max int) int {
	return InlineJSONBytes + 4*(max/2+1)
}

// describe is the phrase naming the value, whose first byte is open:
// "array", or for a huge value "array, 2600000 elements" ("more than
// 1000000 elements" past the bound).
func (s jsonSummary) describe(open byte) string {
	kind, noun, more := "array", "elements", ""
	if open == '{' {
		kind, noun = "object", "members"
	}
	if !s.huge {
		return kind
	}
	if s.countCapped {
		more = "more than "
	}
	return kind + ", " + more + strconv.Itoa(s.count) + " " + noun
}

// preview is the compact form cut to n characters, with an ellipsis when
// cut; invalid UTF-8 a huge value's RS bytes hold is shown as U+FFFD.
func (s jsonSummary) preview(n int) string {
	p := Clip(string(s.compact), n)
	if s.huge {
		p = strings.ToValidUTF8(p, "\uFFFD")
	}
	return p
}

// countItems counts the members or elements of the object or array raw
// (valid JSON), up to max (capped: there are more), from the commas at its
// top level: one pass over the bytes, strings skipped whole, nothing
// decoded or kept.
func countItems(raw []byte, max int) (n int, capped bool) {
	depth, commas, empty := 0, 0, true
	for i := 0; i < len(raw); i++ {
		switch raw[i] {
		case ' ', '\t', '\n', '\r':
		case '"':
			empty = false
			i = skipString(raw, i) - 1
		case '{', '[':
			if depth > 0 {
				empty = false
			}
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				i = len(raw)
			}
		case ',':
			if depth == 1 {
				if commas++; commas >= max {
					return max, true
				}
			}
		default:
			empty = false
		}
	}
	if empty {
		return 0, false
	}
	return commas + 1, false
}

// countItems, appendSpaceless and scanJSON read a value too large to
// re-encode (over HugeJSONBytes, or nested too deep), already checked as
// JSON by the body's decode, byte by byte where it lies, each byte once,
// strings skipped by bytes.IndexByte: a jsontext walk would validate and
// unescape each name again, and they stop at a count or a length a walk
// reaches only at the value's end.

// skipString returns the index just past the JSON string starting at b[i]
// ('"'): the first quote after it preceded by an even run of backslashes,
// or len(b).
func skipString(b []byte, i int) int {
	for j := i + 1; j < len(b); {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return len(b)
		}
		q := j + k
		n := 0
		for p := q - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return q + 1
		}
		j = q + 1
	}
	return len(b)
}

// appendSpaceless appends the first bytes of the JSON text raw to dst as
// they stand, white space between tokens left out, until dst holds n bytes.
func appendSpaceless(dst, raw []byte, n int) []byte {
	for i := 0; i < len(raw) && len(dst) < n; {
		switch c := raw[i]; c {
		case ' ', '\t', '\n', '\r':
			i++
		case '"':
			e := skipString(raw, i)
			dst = append(dst, raw[i:min(e, i+n-len(dst))]...)
			i = e
		default:
			dst = append(dst, c)
			i++
		}
	}
	return dst
}

// scanJSON reads the JSON text raw once: whether every number in it parses
// as a float64, and the sum over its bytes of how many containers enclose
// each (what a walk that re-reads each container's members costs). Strings
// are skipped whole; nothing is kept.
func scanJSON(raw []byte) (numbersFit bool, depthSum int) {
	numbersFit, depth := true, 0
	for i := 0; i < len(raw); {
		switch c := raw[i]; {
		case c == '"':
			e := skipString(raw, i)
			depthSum += depth * (e - i)
			i = e
			continue
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
		case c == '-' || ('0' <= c && c <= '9'):
			j := i + 1
			for j < len(raw) && isNumberByte(raw[j]) {
				j++
			}
			if _, err := strconv.ParseFloat(string(raw[i:j]), 64); err != nil {
				numbersFit = false
			}
			depthSum += depth * (j - i)
			i = j
			continue
		}
		depthSum += depth
		i++
	}
	return numbersFit, depthSum
}

func isNumberByte(c byte) bool {
	return '0' <= c && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'
}

// compactor writes a JSON value as MarshalNoEscape writes its decoded form
// (objects' members sorted by key, the last of a repeated key kept,
// numbers as float64, strings re-encoded), stopping once its output passes
// limit bytes. Keys are held as offsets into raw, or into keys when they
// need decoding, so an object's members cost 16 bytes each to sort.
type compactor struct {
	limit   int
	stopped bool
	raw     []byte // the whole value the offsets point into
	keys    []byte // decoded keys that differ from their encoding
}

// compactMember is one member of an object being sorted: its key at
// raw[key:key+keyLen] (or keys[-key-1:...] when key is negative) and its
// value at raw[val:val+valLen]. Offsets fit: the value is at most
// HugeJSONBytes.
type compactMember struct{ key, keyLen, val, valLen int32 }

func (c *compactor) key(m compactMember) []byte {
	if m.key < 0 {
		return c.keys[-m.key-1 : -m.key-1+m.keyLen]
	}
	return c.raw[m.key : m.key+m.keyLen]
}

func (c *compactor) full(dst []byte) bool {
	if len(dst) > c.limit {
		c.stopped = true
	}
	return c.stopped
}

// offset is the index of sub, a slice of c.raw, in c.raw (whose capacity
// is its length).
func (c *compactor) offset(sub []byte) int32 {
	return int32(cap(c.raw) - cap(sub))
}

// value appends the value raw (a slice of c.raw, white space around
// allowed). Recursion follows the nesting: at most 10,000 deep (the JSON
// decoders' limit), and at most limit, as each level writes a byte.
func (c *compactor) value(dst, raw []byte) ([]byte, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return dst, errNotJSON
	}
	switch raw[0] {
	case '{':
		count, _ := countItems(raw, len(raw)) // sized once: no regrowth
		members := make([]compactMember, 0, count)
		err := eachRawMember(raw, func(k, v []byte) error {
			m := compactMember{key: c.offset(k) + 1, keyLen: int32(len(k) - 2), val: c.offset(v), valLen: int32(len(v))}
			if inner := k[1 : len(k)-1]; bytes.IndexByte(inner, '\\') >= 0 || !utf8.Valid(inner) {
				d, err := decodeString(k)
				if err != nil {
					return err
				}
				m.key, m.keyLen = -int32(len(c.keys))-1, int32(len(d))
				c.keys = append(c.keys, d...)
			}
			members = append(members, m)
			return nil
		})
		if err != nil {
			return dst, err
		}
		// Stable, so of a repeated key the last member is the last of
		// its run, the one encoding/json keeps.
		slices.SortStableFunc(members, func(a, b compactMember) int { return bytes.Compare(c.key(a), c.key(b)) })
		dst = append(dst, '{')
		n := 0
		for i, m := range members {
			if i+1 < len(members) && bytes.Equal(c.key(m), c.key(members[i+1])) {
				continue
			}
			if c.full(dst) {
				return dst, nil
			}
			if n > 0 {
				dst = append(dst, ',')
			}
			n++
			dst = appendString(dst, string(c.key(m)))
			dst = append(dst, ':')
			if dst, err = c.value(dst, c.raw[m.val:m.val+m.valLen]); err != nil || c.stopped {
				return dst, err
			}
		}
		dst = append(dst, '}')
	case '[':
		dst = append(dst, '[')
		n := 0
		err := eachElement(raw, func(v []byte) error {
			if c.full(dst) {
				return errStop
			}
			if n > 0 {
				dst = append(dst, ',')
			}
			n++
			var err error
			if dst, err = c.value(dst, v); err == nil && c.stopped {
				err = errStop
			}
			return err
		})
		if err == errStop {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
		dst = append(dst, ']')
	case '"':
		s, err := decodeString(raw)
		if err != nil {
			return dst, err
		}
		dst = appendString(dst, s)
	case 't', 'f', 'n':
		dst = append(dst, raw...)
	default:
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			return dst, err
		}
		dst = appendFloat(dst, f)
	}
	c.full(dst)
	return dst, nil
}

// appendFloat appends f as encoding/json writes a float64: the shortest
// decimal that reads back as f, in exponent form below 1e-6 or from 1e21,
// with a one-digit negative exponent not zero-padded.
func appendFloat(b []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// ValueDescription stands in for a JSON value too large to decode: its
// kind (text, binary or json), its size, for an object or array its
// member or element count (up to MaxCountedItems; ItemsCapped: more),
// and a preview of its first characters (never of binary-like text).
type ValueDescription struct {
	Truncated   bool   `json:"truncated"`
	Kind        string `json:"kind"`
	Bytes       int    `json:"bytes"`
	Items       int    `json:"items,omitempty"`
	ItemsCapped bool   `json:"items_capped,omitempty"`
	Preview     string `json:"preview,omitempty"`
}

// DescribeValue is the ValueDescription of the valid JSON value raw, as
// JSON, with a preview of at most maxChars characters, for a caller that
// decodes what it renders to put in place of a value over its bound. It
// walks raw once and keeps only the preview.
func DescribeValue(raw []byte, maxChars int) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	d := ValueDescription{Truncated: true, Kind: "json", Bytes: len(raw)}
	switch {
	case len(raw) == 0:
	case raw[0] == '"':
		sum := summarizeString(raw, maxChars)
		if sum.binaryLike {
			d.Kind = "binary"
		} else {
			d.Kind, d.Preview = "text", Clip(sum.prefix, maxChars)
			if sum.cut && !strings.HasSuffix(d.Preview, Ellipsis) {
				d.Preview += Ellipsis
			}
		}
	case raw[0] == '{' || raw[0] == '[':
		d.Items, d.ItemsCapped = countItems(raw, MaxCountedItems)
		sum := jsonSummary{huge: true, compact: appendSpaceless(nil, raw, 4*maxChars+1)}
		d.Preview = sum.preview(maxChars)
	default:
		d.Preview = strings.ToValidUTF8(clipBytes(string(raw[:min(len(raw), maxChars+utf8.UTFMax)]), maxChars), "\uFFFD")
	}
	return mustMarshal(d)
}

// MaxPageItems bounds the items of one RS page (records, search hits)
// rendered: ten times the largest limit a tool asks for (100). A page
// holding more is refused at its item MaxPageItems+1 while it is decoded
// (objectItems): each item costs a few hundred bytes whatever its size.
const MaxPageItems = 1000
