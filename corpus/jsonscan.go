package corpus

import (
	"fmt"
)

// maxJSONDepth bounds nesting, as encoding/json does, so that hostile input
// cannot exhaust the stack.
const maxJSONDepth = 10000

// scanObject validates that b is exactly one JSON value (RFC 8259, with
// optional surrounding whitespace) and, when that value is an object,
// returns the raw values of its top-level members key1 and key2 (nil when
// absent; of repeated keys the last counts, as in encoding/json). isObject
// is false for a valid value that is not an object; err describes the
// first syntax error and its byte offset. It does one pass over b and does
// not allocate unless it fails. UTF-8 validity is the caller's check.
func scanObject(b []byte, key1, key2 string) (v1, v2 []byte, isObject bool, err error) {
	s := jsonScanner{b: b, key1: key1, key2: key2}
	i := s.space(0)
	isObject = i < len(b) && b[i] == '{'
	i, err = s.value(i, 0)
	if err != nil {
		return nil, nil, false, err
	}
	if i = s.space(i); i != len(b) {
		return nil, nil, false, s.fail(i, "after top-level value")
	}
	return s.v1, s.v2, isObject, nil
}

type jsonScanner struct {
	b          []byte
	key1, key2 string
	v1, v2     []byte
}

func (s *jsonScanner) fail(i int, what string) error {
	if i >= len(s.b) {
		return fmt.Errorf("unexpected end of JSON input at byte %d of the line", i)
	}
	return fmt.Errorf("invalid character %q %s at byte %d of the line", s.b[i], what, i)
}

func (s *jsonScanner) space(i int) int {
	for i < len(s.b) {
		switch s.b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// value checks the value at b[i] and returns the index after it.
func (s *jsonScanner) value(i, depth int) (int, error) {
	b := s.b
	if i >= len(b) {
		return i, s.fail(i, "")
	}
	switch c := b[i]; {
	case (c == '{' || c == '[') && depth >= maxJSONDepth:
		return i, fmt.Errorf("JSON nested deeper than %d levels at byte %d of the line", maxJSONDepth, i)
	case c == '"':
		return s.str(i)
	case c == '{':
		return s.object(i, depth+1)
	case c == '[':
		return s.array(i, depth+1)
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number(i)
	case c == 't':
		return s.literal(i, "true")
	case c == 'f':
		return s.literal(i, "false")
	case c == 'n':
		return s.literal(i, "null")
	}
	return i, s.fail(i, "looking for beginning of value")
}

func (s *jsonScanner) literal(i int, lit string) (int, error) {
	for k := 0; k < len(lit); k++ {
		if i+k >= len(s.b) || s.b[i+k] != lit[k] {
			return i + k, s.fail(i+k, "in literal "+lit)
		}
	}
	return i + len(lit), nil
}

// str checks the string starting at b[i] ('"') and returns the index after
// its closing quote.
func (s *jsonScanner) str(i int) (int, error) {
	b := s.b
	for i++; i < len(b); i++ {
		c := b[i]
		switch {
		case c == '"':
			return i + 1, nil
		case c == '\\':
			i++
			if i >= len(b) {
				return i, s.fail(i, "in string escape")
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				for k := 1; k <= 4; k++ {
					if i+k >= len(b) || !isHex(b[i+k]) {
						return i + k, s.fail(i+k, "in \\u hexadecimal character escape")
					}
				}
				i += 4
			default:
				return i, s.fail(i, "in string escape code")
			}
		case c < 0x20:
			return i, s.fail(i, "in string literal")
		}
	}
	return i, s.fail(i, "")
}

func (s *jsonScanner) number(i int) (int, error) {
	b := s.b
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i++; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		}
	default:
		return i, s.fail(i, "in numeric literal")
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return i, s.fail(i, "after decimal point in numeric literal")
		}
		for i++; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return i, s.fail(i, "in exponent of numeric literal")
		}
		for i++; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		}
	}
	return i, nil
}

func (s *jsonScanner) object(i, depth int) (int, error) {
	b := s.b
	i = s.space(i + 1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return i, s.fail(i, "looking for beginning of object key string")
		}
		kStart := i
		var err error
		if i, err = s.str(i); err != nil {
			return i, err
		}
		key := b[kStart:i]
		i = s.space(i)
		if i >= len(b) || b[i] != ':' {
			return i, s.fail(i, "after object key")
		}
		i = s.space(i + 1)
		vStart := i
		if i, err = s.value(i, depth); err != nil {
			return i, err
		}
		if depth == 1 {
			if matchKey(key, s.key1) {
				s.v1 = b[vStart:i]
			}
			if matchKey(key, s.key2) {
				s.v2 = b[vStart:i]
			}
		}
		i = s.space(i)
		if i >= len(b) {
			return i, s.fail(i, "")
		}
		switch b[i] {
		case ',':
			i = s.space(i + 1)
		case '}':
			return i + 1, nil
		default:
			return i, s.fail(i, "after object key:value pair")
		}
	}
}

func (s *jsonScanner) array(i, depth int) (int, error) {
	b := s.b
	i = s.space(i + 1)
	if i < len(b) && b[i] == ']' {
		return i + 1, nil
	}
	for {
		var err error
		if i, err = s.value(i, depth); err != nil {
			return i, err
		}
		i = s.space(i)
		if i >= len(b) {
			return i, s.fail(i, "")
		}
		switch b[i] {
		case ',':
			i = s.space(i + 1)
		case ']':
			return i + 1, nil
		default:
			return i, s.fail(i, "after array element")
		}
	}
}
