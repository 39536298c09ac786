package importer

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/usherhq/usher/acl"
	"github.com/usherhq/usher/config"
)

// entry is one key and value of a Java properties file, with the
// positions of both.
type entry struct {
	key, value     string
	keyAt, valueAt pos
}

// segment maps an offset of a logical line back to its physical line.
type segment struct {
	off int // offset in the logical line
	at  pos
}

// readProperties reads a Java properties file (spark-defaults.conf) as
// java.util.Properties.load does: comments start with # or !, a key ends at
// the first unescaped '=', ':' or whitespace, a line ending in an odd
// number of backslashes continues on the next, \uXXXX and \t, \n, \r, \f
// escapes are decoded. Values are trimmed, as Spark trims them. Malformed
// input (invalid UTF-8, a malformed \u escape) is reported with its
// position and the entry skipped.
func readProperties(src Source, d *diags) []entry {
	var out []entry
	lines := strings.SplitAfter(strings.TrimPrefix(string(src.Data), "\uFEFF"), "\n")
	for i := 0; i < len(lines); i++ {
		lineNo := i + 1
		raw := strings.TrimRight(lines[i], "\r\n")
		if !utf8.ValidString(raw) {
			for j, r := range raw {
				if r == utf8.RuneError && !strings.HasPrefix(raw[j:], "\uFFFD") {
					d.errorf(pos{src.Name, lineNo, j + 1}, "the file is not valid UTF-8")
					break
				}
			}
			continue
		}
		body := strings.TrimLeft(raw, " \t\f")
		if body == "" || body[0] == '#' || body[0] == '!' {
			continue
		}
		// Join continuation lines into one logical line.
		segs := []segment{{0, pos{src.Name, lineNo, len(raw) - len(body) + 1}}}
		logical := ""
		for {
			// An odd number of trailing backslashes continues the line.
			cont := (len(body)-len(strings.TrimRight(body, `\`)))%2 == 1
			if cont {
				body = body[:len(body)-1]
			}
			logical += body
			if !cont || i+1 >= len(lines) {
				break
			}
			i++
			next := strings.TrimRight(lines[i], "\r\n")
			body = strings.TrimLeft(next, " \t\f")
			segs = append(segs, segment{len(logical), pos{src.Name, i + 1, len(next) - len(body) + 1}})
		}
		at := func(off int) pos {
			s := segs[0]
			for _, x := range segs {
				if x.off <= off {
					s = x
				}
			}
			return s.at.advance(logical[s.off:], off-s.off)
		}
		keyEnd, valueStart, sep, backslash := len(logical), len(logical), false, false
		for j := 0; j < len(logical); j++ {
			c := logical[j]
			if !backslash && (c == '=' || c == ':') {
				keyEnd, valueStart, sep = j, j+1, true
				break
			}
			if !backslash && (c == ' ' || c == '\t' || c == '\f') {
				keyEnd, valueStart = j, j+1
				break
			}
			backslash = c == '\\' && !backslash
		}
		for ; valueStart < len(logical); valueStart++ {
			if c := logical[valueStart]; !sep && (c == '=' || c == ':') {
				sep = true
			} else if c != ' ' && c != '\t' && c != '\f' {
				break
			}
		}
		key, err := unescape(logical[:keyEnd])
		if err != nil {
			d.errorf(at(err.off), "%s", err.msg)
			continue
		}
		value, err := unescape(logical[valueStart:])
		if err != nil {
			d.errorf(at(valueStart+err.off), "property %s: %s", key, err.msg)
			continue
		}
		trimmed := strings.TrimLeft(value, " \t\r\n\f\v")
		out = append(out, entry{
			key: key, value: strings.TrimSpace(value),
			keyAt: at(0), valueAt: at(valueStart + len(value) - len(trimmed)),
		})
	}
	return out
}

type escapeError struct {
	off int
	msg string
}

// unescape decodes the escapes of a properties key or value.
func unescape(s string) (string, *escapeError) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			if c != '\\' {
				b.WriteByte(c)
			}
			continue
		}
		i++
		switch s[i] {
		case 't', 'n', 'r', 'f':
			b.WriteByte("\t\n\r\f"[strings.IndexByte("tnrf", s[i])])
		case 'u':
			if i+5 > len(s) {
				return "", &escapeError{i - 1, `malformed \uXXXX escape: want four hex digits`}
			}
			r, err := strconv.ParseUint(s[i+1:i+5], 16, 32) // no sign or 0x prefix in base 16
			if err != nil {
				return "", &escapeError{i - 1, fmt.Sprintf(`malformed \uXXXX escape %q: want four hex digits`, s[i-1:i+5])}
			}
			b.WriteRune(rune(r))
			i += 4
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), nil
}

// Spark property names.
const (
	sparkEnable       = "spark.acls.enable"
	sparkEnableLegacy = "spark.ui.acls.enable"
)

// Spark imports the application ACLs of a spark-defaults.conf as
// applicationacls; spark.acls.enable not true (Spark's default) checks no
// ACL, imported as admin "*" with a warning. The error is a
// *config.InvalidError.
func Spark(src Source) (ApplicationACLs, []config.Diagnostic, error) {
	var d diags
	var apps ApplicationACLs
	props := map[string]entry{}
	for _, e := range readProperties(src, &d) {
		if prev, dup := props[e.key]; dup && prev.value != e.value {
			d.warnf(e.keyAt, "%s is set twice (first at line %d); the later value %q is used, as Spark does", e.key, prev.keyAt.line, e.value)
		}
		props[e.key] = e
		if strings.HasPrefix(e.key, "spark.history.ui.") && strings.Contains(e.key, "acls") {
			d.warnf(e.keyAt, "%s is not imported: it configures the Spark history server, not applications", e.key)
		}
	}
	enable, ok := props[sparkEnable]
	if legacy, ok2 := props[sparkEnableLegacy]; ok2 {
		if !ok {
			enable, ok = legacy, true
		}
		d.warnf(legacy.keyAt, "%s is the deprecated name of %s", sparkEnableLegacy, sparkEnable)
	}
	v := strings.ToLower(enable.value)
	disabled := !ok || v == "false"
	if !disabled && v != "true" {
		d.errorf(enable.valueAt, "%s %q: want true or false (Spark refuses other values)", enable.key, enable.value)
	}
	for _, s := range []struct {
		users string // the groups are users+".groups"
		dst   **Setting
	}{{"spark.admin.acls", &apps.Admin}, {"spark.ui.view.acls", &apps.View}, {"spark.modify.acls", &apps.Modify}} {
		users, hasUsers := props[s.users]
		groups, hasGroups := props[s.users+".groups"]
		if !hasUsers && !hasGroups {
			continue
		}
		a, warns, err := acl.ParseSpark(users.value, groups.value)
		at := func(list string, off int) (entry, pos) {
			if list == "groups" {
				return groups, groups.valueAt.advance(groups.value, off)
			}
			return users, users.valueAt.advance(users.value, off)
		}
		if err != nil {
			if se, ok := err.(*acl.SyntaxError); ok {
				e, p := at(se.List, se.Offset)
				d.errorf(p, "%s %q: %s", e.key, e.value, se.Msg)
			} else {
				d.errorf(users.keyAt, "%s: %v", s.users, err)
			}
			continue
		}
		for _, w := range warns {
			e, p := at(w.List, w.Offset)
			d.warnf(p, "%s %q: %s", e.key, e.value, w.Msg)
		}
		var from []string
		for _, e := range []entry{users, groups} {
			if e.key != "" {
				from = append(from, fmt.Sprintf("%s (%s)", e.key, e.keyAt))
			}
		}
		*s.dst = &Setting{ACL: a, From: strings.Join(from, ", ")}
	}
	if disabled {
		why, at := sparkEnable+" is not set: Spark's default is false", pos{file: src.Name}
		if ok {
			why, at = enable.key+" is false", enable.valueAt
		}
		d.warnf(at, `%s, so Spark checks no ACL and everyone may view, modify and kill every application; imported as applicationacls admin "*" (set %s=true to enforce the imported ACLs)`, why, sparkEnable)
		apps.Admin = &Setting{ACL: acl.MustParse("*"), From: why}
	}
	if err := d.err(); err != nil {
		return ApplicationACLs{}, d.of(config.Warning), err
	}
	return apps, d.of(config.Warning), nil
}

// AddSpark imports a spark-defaults.conf into c's application ACLs.
func (c *Config) AddSpark(src Source) error {
	apps, warns, err := Spark(src)
	c.Warnings = append(c.Warnings, warns...)
	if err != nil {
		return err
	}
	c.Sources = append(c.Sources, src.Name)
	c.Applications = apps
	return nil
}
