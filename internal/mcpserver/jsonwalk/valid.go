package jsonwalk

// MaxDepth is encoding/json's nesting limit: json.Valid refuses values
// nested deeper.
const MaxDepth = 10000

// Valid reports whether b is one valid JSON value, exactly as json.Valid
// does, in one pass with no per-byte state machine: strings are stepped
// through eight bytes at a time up to the next byte that needs a look
// (quote, backslash, control byte; skipPlain). Like json.Valid it does not check UTF-8. Bounded by
// len(b); recursion by MaxDepth.
func Valid(b []byte) bool {
	i, ok := validValue(b, SkipSpace(b, 0), 0)
	return ok && SkipSpace(b, i) == len(b)
}

// stringStop marks the bytes a JSON string scan must stop at.
var stringStop = func() (t [256]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// validValue checks the value starting at b[i] and returns the index just
// past it.
func validValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; {
	case c == '{':
		if depth++; depth > MaxDepth {
			return i, false
		}
		i = SkipSpace(b, i+1)
		if i < len(b) && b[i] == '}' {
			return i + 1, true
		}
		for {
			if i >= len(b) || b[i] != '"' {
				return i, false
			}
			var ok bool
			if i, ok = validString(b, i); !ok {
				return i, false
			}
			i = SkipSpace(b, i)
			if i >= len(b) || b[i] != ':' {
				return i, false
			}
			if i, ok = validValue(b, SkipSpace(b, i+1), depth); !ok {
				return i, false
			}
			var done bool
			if i, done, ok = AfterItem(b, i, '}'); !ok || done {
				return i, ok
			}
		}
	case c == '[':
		if depth++; depth > MaxDepth {
			return i, false
		}
		i = SkipSpace(b, i+1)
		if i < len(b) && b[i] == ']' {
			return i + 1, true
		}
		for {
			var ok bool
			if i, ok = validValue(b, i, depth); !ok {
				return i, false
			}
			var done bool
			if i, done, ok = AfterItem(b, i, ']'); !ok || done {
				return i, ok
			}
		}
	case c == '"':
		return validString(b, i)
	case c == '-' || ('0' <= c && c <= '9'):
		return validNumber(b, i)
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	}
	return i, false
}

func literal(b []byte, i int, word string) (int, bool) {
	if len(b)-i < len(word) || string(b[i:i+len(word)]) != word {
		return i, false
	}
	return i + len(word), true
}

// validString checks the string starting at b[i] ('"').
func validString(b []byte, i int) (int, bool) {
	for i++; i < len(b); {
		if i = skipPlain(b, i); i >= len(b) {
			break
		}
		c := b[i]
		switch {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return i, false
		}
		// A backslash.
		if i+1 >= len(b) {
			return i, false
		}
		switch b[i+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i += 2
		case 'u':
			if Hex4(b[i+2:]) < 0 {
				return i, false
			}
			i += 6
		default:
			return i, false
		}
	}
	return i, false
}

// validNumber checks the number starting at b[i].
func validNumber(b []byte, i int) (int, bool) {
	digits := func(i int) int {
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		return i
	}
	if b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return i, false
	case b[i] == '0':
		i++
	case '1' <= b[i] && b[i] <= '9':
		i = digits(i + 1)
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(i + 1)
		if j == i+1 {
			return j, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(i)
		if j == i {
			return j, false
		}
		i = j
	}
	return i, true
}
