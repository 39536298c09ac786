package slapdtest

import (
	"encoding/base64"
	"fmt"
	"strings"
)

// Entry is one directory entry to add: its DN and its attributes in the
// order they were given.
type Entry struct {
	DN    string
	Attrs []Attr
}

// Attr is one attribute of an Entry with its values.
type Attr struct {
	Name   string
	Values []string
}

// ParseLDIF parses the subset of LDIF (RFC 2849) that test data needs: entry
// records separated by blank lines, "name: value" and "name:: base64" lines,
// continuation lines starting with one space, and comments starting with
// "#". A "version:" line at the top is skipped. Change records, URLs
// ("name:< file") and options are rejected with the line number.
func ParseLDIF(text string) ([]Entry, error) {
	// Unfold continuation lines first, remembering where each logical line
	// started so errors point at the right place.
	type line struct {
		no   int
		text string
	}
	var lines []line
	for i, raw := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		if strings.HasPrefix(raw, " ") && len(lines) > 0 && lines[len(lines)-1].text != "" {
			lines[len(lines)-1].text += raw[1:]
			continue
		}
		lines = append(lines, line{no: i + 1, text: raw})
	}

	var entries []Entry
	var cur *Entry
	flush := func() {
		if cur != nil {
			entries = append(entries, *cur)
			cur = nil
		}
	}
	for _, l := range lines {
		if strings.TrimSpace(l.text) == "" {
			flush()
			continue
		}
		if strings.HasPrefix(l.text, "#") {
			continue
		}
		name, value, ok := strings.Cut(l.text, ":")
		if !ok || name == "" {
			return nil, fmt.Errorf("ldif line %d: want \"name: value\", got %q", l.no, l.text)
		}
		switch {
		case strings.HasPrefix(value, ":"):
			dec, err := base64.StdEncoding.DecodeString(strings.TrimSpace(value[1:]))
			if err != nil {
				return nil, fmt.Errorf("ldif line %d: bad base64 value of %s: %v", l.no, name, err)
			}
			value = string(dec)
		case strings.HasPrefix(value, "<"):
			return nil, fmt.Errorf("ldif line %d: URL values are not supported", l.no)
		default:
			value = strings.TrimLeft(value, " ")
		}
		if cur == nil {
			if strings.EqualFold(name, "version") && len(entries) == 0 {
				continue
			}
			if !strings.EqualFold(name, "dn") {
				return nil, fmt.Errorf("ldif line %d: an entry must start with dn:, got %q", l.no, name)
			}
			cur = &Entry{DN: value}
			continue
		}
		if strings.EqualFold(name, "changetype") {
			return nil, fmt.Errorf("ldif line %d: change records are not supported", l.no)
		}
		if i := indexAttr(cur.Attrs, name); i >= 0 {
			cur.Attrs[i].Values = append(cur.Attrs[i].Values, value)
		} else {
			cur.Attrs = append(cur.Attrs, Attr{Name: name, Values: []string{value}})
		}
	}
	flush()
	return entries, nil
}

func indexAttr(attrs []Attr, name string) int {
	for i, a := range attrs {
		if strings.EqualFold(a.Name, name) {
			return i
		}
	}
	return -1
}
