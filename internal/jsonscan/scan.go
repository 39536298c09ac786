package jsonscan

import (
	"fmt"
	"math/bits"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth mirrors encoding/json's nesting limit.
const maxDepth = 10000

// Scanner reads one JSON text. Make one with New. Every method records
// the first error and does nothing once one is recorded, so a caller reads
// a sequence of values and checks Err once.
type Scanner struct {
	s     string
	i     int
	depth int
	err   error
}

// New returns a scanner positioned at the start of s.
func New(s string) Scanner { return Scanner{s: s} }

// Err returns the first error recorded, or nil.
func (d *Scanner) Err() error { return d.err }

// Input and Pos return the text being scanned and the byte offset reached.
func (d *Scanner) Input() string { return d.s }
func (d *Scanner) Pos() int      { return d.i }

// syntaxError describes malformed JSON with the byte offset where it was
// found.
type syntaxError struct {
	msg string
	off int
}

func (e *syntaxError) Error() string {
	return "invalid JSON at offset " + strconv.Itoa(e.off) + ": " + e.msg
}

// Fail records the first error, at the current offset.
func (d *Scanner) Fail(msg string) {
	if d.err == nil {
		d.err = &syntaxError{msg: msg, off: d.i}
	}
}

// failAt records msg, or "unexpected end of input" when c is the end.
func (d *Scanner) failAt(c byte, msg string) {
	if c == 0 && d.i >= len(d.s) {
		msg = "unexpected end of input"
	}
	d.Fail(msg)
}

// FailType records a type mismatch at the field named field+sub (built
// only on failure).
func (d *Scanner) FailType(field, sub, want string) {
	if d.err == nil {
		d.err = fmt.Errorf("%s%s: found %s, want %s", field, sub, d.describe(), want)
	}
}

// describe names the kind of value at the current position.
func (d *Scanner) describe() string {
	switch d.Peek() {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	case 0:
		if d.i >= len(d.s) {
			return "the end of input"
		}
		return "a NUL byte"
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return "a number"
	default:
		return "an invalid character"
	}
}

func (d *Scanner) ws() { d.i = skipSpace(d.s, d.i) }

// skipSpace returns the index of the first byte at or after i that is not
// JSON white space.
func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// Peek skips white space and returns the next byte, or 0 at the end.
func (d *Scanner) Peek() byte {
	if d.i < len(d.s) && d.s[d.i] > ' ' {
		return d.s[d.i] // compact JSON: no white space to skip
	}
	d.ws()
	if d.i < len(d.s) {
		return d.s[d.i]
	}
	return 0
}

// End checks that nothing but white space follows the top-level value.
func (d *Scanner) End() {
	if d.err != nil {
		return
	}
	if d.ws(); d.i < len(d.s) {
		d.Fail("unexpected data after the top-level value")
	}
}

// Null consumes a null literal if one is next and reports whether it did.
func (d *Scanner) Null() bool {
	if d.Peek() == 'n' {
		d.literal("null")
		return d.err == nil
	}
	return false
}

func (d *Scanner) literal(lit string) {
	if len(d.s)-d.i >= len(lit) && d.s[d.i:d.i+len(lit)] == lit {
		d.i += len(lit)
		return
	}
	d.Fail("invalid literal")
}

// Object consumes '{' and reports whether an object starts here. It does
// not consume null: callers that accept null check d.Null() first.
func (d *Scanner) Object(field string) bool { return d.open('{', field, "", "an object") }

// Array consumes '[' and reports whether an array starts here.
func (d *Scanner) Array(field string) bool { return d.open('[', field, "", "an array") }

// open consumes c, which opens a container of kind want, or records that
// the field named field+sub is not one.
func (d *Scanner) open(c byte, field, sub, want string) bool {
	if d.err != nil {
		return false
	}
	if d.Peek() != c {
		d.FailType(field, sub, want)
		return false
	}
	d.i++
	d.depth++
	if d.depth > maxDepth {
		d.Fail("exceeded max depth")
		return false
	}
	return true
}

// Next advances to the next member of an object opened by Object. It
// returns the member's key with the position just after the colon, or ok ==
// false at the closing brace or on an error.
func (d *Scanner) Next(first *bool) (key string, ok bool) { return d.member(first, false) }

// NextRaw is Next returning the key as written, escapes not decoded, so
// that a caller can refuse names written with escapes.
func (d *Scanner) NextRaw(first *bool) (raw string, ok bool) { return d.member(first, true) }

// member reads the separator and key of the next member, decoded or as
// written (raw).
func (d *Scanner) member(first *bool, raw bool) (key string, ok bool) {
	if d.err != nil {
		return "", false
	}
	c := d.Peek()
	if c == '}' {
		d.i++
		d.depth--
		return "", false
	}
	if !*first {
		if c != ',' {
			d.failAt(c, "expected ',' or '}' after object member")
			return "", false
		}
		d.i++
		c = d.Peek()
	}
	*first = false
	if c != '"' {
		d.failAt(c, "expected a string key")
		return "", false
	}
	if raw {
		start := d.i + 1
		if d.skipStr(); d.err != nil {
			return "", false
		}
		key = d.s[start : d.i-1]
	} else {
		key = d.str()
	}
	if d.Peek() != ':' {
		d.failAt(d.Peek(), "expected ':' after object key")
		return "", false
	}
	d.i++
	return key, d.err == nil
}

// Elem advances to the next element of an array opened by Array.
func (d *Scanner) Elem(first *bool) bool {
	if d.err != nil {
		return false
	}
	c := d.Peek()
	if c == ']' {
		d.i++
		d.depth--
		return false
	}
	if !*first {
		if c != ',' {
			d.failAt(c, "expected ',' or ']' after array element")
			return false
		}
		d.i++
	}
	*first = false
	return true
}

// StringField reads a string value; null yields "" as encoding/json leaves
// the field unset.
func (d *Scanner) StringField(field string) string { return d.StringAt(field, "") }

// StringAt is StringField for the field named field+sub.
func (d *Scanner) StringAt(field, sub string) string {
	if d.Null() || d.err != nil {
		return ""
	}
	if d.Peek() != '"' {
		d.FailType(field, sub, "a string")
		return ""
	}
	return d.str()
}

// BoolField reads a boolean value; null yields (false, false).
func (d *Scanner) BoolField(field string) (v, set bool) {
	switch d.Peek() {
	case 't':
		d.literal("true")
		return true, true
	case 'f':
		d.literal("false")
		return false, true
	case 'n':
		d.literal("null")
		return false, false
	}
	d.FailType(field, "", "a boolean")
	return false, false
}

// str reads a string starting at the opening quote and returns its
// unescaped value. Without escapes or invalid UTF-8 the result is a
// substring of the input.
func (d *Scanner) str() string {
	start := d.i + 1
	j := start
	plain := true
	var high byte // OR of the bytes of the plain runs: bit 7 set if any is not ASCII
	for {
		k := skipPlain(d.s, j)
		for _, c := range []byte(d.s[j:k]) {
			high |= c
		}
		j = k
		if j >= len(d.s) {
			d.i = j
			d.Fail("unterminated string")
			return ""
		}
		switch c := d.s[j]; {
		case c == '"':
			d.i = j + 1
			raw := d.s[start:j]
			if plain && (high < utf8.RuneSelf || utf8.ValidString(raw)) {
				return raw
			}
			return Unquote(raw)
		case c == '\\':
			plain = false
			if j = d.escape(j); j < 0 {
				return ""
			}
		default: // a control character
			d.i = j
			d.Fail("control character in string")
			return ""
		}
	}
}

// escape checks the escape sequence whose backslash is at j and returns the
// index after it, or -1 after recording an error.
func (d *Scanner) escape(j int) int {
	j++
	if j >= len(d.s) {
		d.i = j
		d.Fail("unterminated string")
		return -1
	}
	switch d.s[j] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return j + 1
	case 'u':
		if len(d.s)-j < 5 || !isHex4(d.s[j+1:j+5]) {
			d.i = j
			d.Fail("invalid \\u escape in string")
			return -1
		}
		return j + 5
	}
	d.i = j
	d.Fail("invalid escape in string")
	return -1
}

// SWAR constants: lsb has the low bit of every byte set, msb the high bit.
const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// load64 reads 8 bytes of s at j as a little-endian word (one load).
func load64(s string, j int) uint64 {
	s = s[j : j+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// skipPlain returns the index of the first byte at or after j that ends a
// plain run inside a string ('"', '\\' or a control character), or len(s).
// It tests eight bytes at a time: for each byte class, (x - lsb*n) &^ x &
// msb flags the bytes below n, and its lowest flag is exact.
func skipPlain(s string, j int) int {
	for j+8 <= len(s) {
		w := load64(s, j)
		q := w ^ (lsb * '"')
		b := w ^ (lsb * '\\')
		if m := ((w - lsb*0x20) &^ w) | ((q - lsb) &^ q) | ((b - lsb) &^ b); m&msb != 0 {
			return j + bits.TrailingZeros64(m&msb)>>3
		}
		j += 8
	}
	for ; j < len(s); j++ {
		if c := s[j]; c == '"' || c == '\\' || c < 0x20 {
			return j
		}
	}
	return j
}

func isHex4(s string) bool {
	for i := range 4 {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

func hex4(s string) rune {
	var r rune
	for i := range 4 {
		c := s[i]
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		default:
			c = c - 'A' + 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// unescaped is the byte each one-letter escape stands for.
var unescaped = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// Unquote decodes the body of a string already checked by str, exactly as
// encoding/json does: escapes decoded, surrogate pairs joined, lone
// surrogates and invalid UTF-8 replaced by U+FFFD.
func Unquote(s string) string {
	b := make([]byte, 0, len(s)+2*utf8.UTFMax)
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\':
			i++
			switch s[i] {
			default: // one of the escapes str checked
				b = append(b, unescaped[s[i]])
				i++
			case 'u':
				r := hex4(s[i+1:])
				i += 5
				if utf16.IsSurrogate(r) {
					if i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' && isHex4(s[i+2:i+6]) {
						if dec := utf16.DecodeRune(r, hex4(s[i+2:])); dec != unicode.ReplacementChar {
							b = utf8.AppendRune(b, dec)
							i += 6
							break
						}
					}
					r = unicode.ReplacementChar
				}
				b = utf8.AppendRune(b, r)
			}
		case c < utf8.RuneSelf:
			b = append(b, c)
			i++
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			i += size
			b = utf8.AppendRune(b, r)
		}
	}
	return string(b)
}

// Skip validates and skips one value of any type. It is iterative (a
// stack of open containers instead of recursion) because skipping the
// parts of an object the webhook does not read is most of its work.
func (d *Scanner) Skip() {
	if d.err != nil {
		return
	}
	s := d.s
	i := d.i
	var stackArr [64]byte
	stack := stackArr[:0] // '{' or '[' per open container
	var c byte
value:
	i = skipSpace(s, i)
	if i >= len(s) {
		d.i = i
		d.Fail("unexpected end of input")
		return
	}
	switch c = s[i]; c {
	case '{', '[':
		i++
		i = skipSpace(s, i)
		if i < len(s) && s[i] == c+2 { // '}' or ']'
			i++
			goto end
		}
		if d.depth+len(stack)+1 > maxDepth {
			d.i = i
			d.Fail("exceeded max depth")
			return
		}
		stack = append(stack, c)
		if c == '[' {
			goto value
		}
		goto key
	case '"':
		d.i = i
		if d.skipStr(); d.err != nil {
			return
		}
		i = d.i
		goto end
	case 't', 'f', 'n':
		d.i = i
		if d.literal(literalOf(c)); d.err != nil {
			return
		}
		i = d.i
		goto end
	default:
		d.i = i
		if c == '-' || '0' <= c && c <= '9' {
			if d.number(); d.err != nil {
				return
			}
			i = d.i
			goto end
		}
		d.Fail("invalid character " + strconv.QuoteRune(rune(c)) + " looking for a value")
		return
	}
key: // inside an object, before a member's key
	i = skipSpace(s, i)
	if i >= len(s) || s[i] != '"' {
		d.i = i
		d.failAt(d.Peek(), "expected a string key")
		return
	}
	d.i = i
	if d.skipStr(); d.err != nil {
		return
	}
	i = d.i
	i = skipSpace(s, i)
	if i >= len(s) || s[i] != ':' {
		d.i = i
		d.failAt(d.Peek(), "expected ':' after object key")
		return
	}
	i++
	goto value
end: // after a complete value
	if len(stack) == 0 {
		d.i = i
		return
	}
	i = skipSpace(s, i)
	if i < len(s) {
		top := stack[len(stack)-1]
		switch c = s[i]; {
		case c == ',':
			i++
			if top == '{' {
				goto key
			}
			goto value
		case c == '}' && top == '{', c == ']' && top == '[':
			i++
			stack = stack[:len(stack)-1]
			goto end
		}
	}
	d.i = i
	if stack[len(stack)-1] == '{' {
		d.failAt(d.Peek(), "expected ',' or '}' after object member")
	} else {
		d.failAt(d.Peek(), "expected ',' or ']' after array element")
	}
}

// skipStr validates a string without decoding it.
func (d *Scanner) skipStr() {
	j := d.i + 1
	for {
		j = skipPlain(d.s, j)
		if j >= len(d.s) {
			d.i = j
			d.Fail("unterminated string")
			return
		}
		switch c := d.s[j]; {
		case c == '"':
			d.i = j + 1
			return
		case c == '\\':
			if j = d.escape(j); j < 0 {
				return
			}
		default:
			d.i = j
			d.Fail("control character in string")
			return
		}
	}
}

// number validates a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (d *Scanner) number() {
	s, i := d.s, d.i
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && '1' <= s[i] && s[i] <= '9':
		i = digits(s, i)
	default:
		d.i = i
		d.Fail("invalid number")
		return
	}
	if i < len(s) && s[i] == '.' {
		n := i + 1
		if i = digits(s, n); i == n {
			d.i = i
			d.Fail("invalid number: no digits after decimal point")
			return
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		n := i
		if i = digits(s, n); i == n {
			d.i = i
			d.Fail("invalid number: no digits in exponent")
			return
		}
	}
	d.i = i
}

// digits returns the index of the first byte at or after i that is not a
// decimal digit.
func digits(s string, i int) int {
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	return i
}

// RawValue skips one value and returns its text (without surrounding white
// space) and the offsets of that text in the input.
func (d *Scanner) RawValue() (start, end int) {
	d.ws()
	start = d.i
	d.Skip()
	return start, d.i
}

// literalOf returns the JSON literal that starts with c ('t', 'f' or 'n').
func literalOf(c byte) string {
	switch c {
	case 't':
		return "true"
	case 'f':
		return "false"
	}
	return "null"
}
