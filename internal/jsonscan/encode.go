package jsonscan

import (
	"strings"
	"unicode/utf8"
)

// AppendString appends s as a JSON string, byte for byte as encoding/json
// writes it (FuzzAppendString holds it to that). Like encoding/json it escapes
// <, > and & (so the output is safe to embed in HTML), U+2028 and U+2029, and
// replaces invalid UTF-8 with U+FFFD.
func AppendString[T string | []byte](dst []byte, s T) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c == '\b':
				dst = append(dst, '\\', 'b')
			case c == '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		var buf [utf8.UTFMax]byte
		n := copy(buf[:], s[i:])
		r, size := utf8.DecodeRune(buf[:n])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// HasLoneSurrogate reports whether the JSON text s, already checked by a
// Scanner, holds a \u escape of a UTF-16 surrogate that is not half of a pair.
// encoding/json reads it as U+FFFD; other decoders keep it, drop it or fail.
func HasLoneSurrogate(s string) bool {
	for i := strings.IndexByte(s, '\\'); i >= 0 && i < len(s); {
		if s[i] != '\\' {
			i++
			continue
		}
		if s[i+1] != 'u' {
			i += 2
			continue
		}
		r := hex4(s[i+2:])
		i += 6
		switch {
		case r < 0xd800 || r > 0xdfff:
		case r < 0xdc00 && i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' && isHex4(s[i+2:i+6]) && hex4(s[i+2:]) >= 0xdc00 && hex4(s[i+2:]) <= 0xdfff:
			i += 6
		default:
			return true
		}
	}
	return false
}
