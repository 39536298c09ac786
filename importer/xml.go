package importer

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"slices"
	"strings"
)

// maxDepth bounds element nesting, so that hostile input cannot exhaust
// the stack of the recursive walks.
const maxDepth = 256

// element is an XML element with the positions the importers report.
type element struct {
	name  string
	attrs []xml.Attr
	at    pos // the '<' of the start tag
	// text is the character data directly inside the element, textAt
	// where it starts (the end of the start tag when there is none).
	text    string
	textAt  pos
	hasText bool
	kids    []*element
}

func (e *element) attr(name string) (string, bool) {
	if i := slices.IndexFunc(e.attrs, func(a xml.Attr) bool { return a.Name == xml.Name{Local: name} }); i >= 0 {
		return e.attrs[i].Value, true
	}
	return "", false
}

// parseXML reads src, a kind of file whose top element is top, into a tree
// of elements. A syntax error is reported at the position where the
// decoder found it, or a wrong top element, and parseXML returns nil.
func parseXML(src Source, d *diags, kind, top string) *element {
	dec := xml.NewDecoder(bytes.NewReader(src.Data))
	var root *element
	var stack []*element
	for {
		line, col := dec.InputPos()
		start := pos{src.Name, line, col}
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			// Report at the start of the token the decoder choked on, or
			// where it stopped when that is on the line it names.
			endLine, endCol := dec.InputPos()
			msg := err.Error()
			var se *xml.SyntaxError
			if errors.As(err, &se) {
				msg = se.Msg
				switch se.Line {
				case line:
				case endLine:
					line, col = endLine, endCol
				default:
					line, col = se.Line, 1
				}
			}
			if errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(msg, "unexpected EOF") {
				msg = "unexpected end of file: an element is not closed"
				if len(stack) > 0 {
					msg = "unexpected end of file: <" + stack[len(stack)-1].name + "> is not closed"
				}
			}
			d.errorf(pos{src.Name, line, max(col, 1)}, "malformed XML: %s", msg)
			return nil
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if len(stack) >= maxDepth {
				d.errorf(start, "elements nested more than %d deep", maxDepth)
				return nil
			}
			l, c := dec.InputPos()
			e := &element{name: t.Name.Local, attrs: t.Attr, at: start, textAt: pos{src.Name, l, c}}
			if len(stack) == 0 {
				if root != nil {
					d.errorf(start, "malformed XML: a second top-level element <%s>", e.name)
					return nil
				}
				root = e
			} else {
				p := stack[len(stack)-1]
				p.kids = append(p.kids, e)
			}
			stack = append(stack, e)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) == 0 {
				if len(bytes.TrimSpace(t)) > 0 {
					d.errorf(start, "malformed XML: text outside the top-level element")
					return nil
				}
				continue
			}
			e := stack[len(stack)-1]
			if !e.hasText {
				e.textAt = start
			}
			e.text += string(t)
			e.hasText = true
		}
	}
	switch {
	case root == nil:
		d.errorf(pos{src.Name, 0, 0}, "no XML element found: the file is empty")
	case root.name != top:
		d.errorf(root.at, "the top element of a %s is <%s>, not <%s>%s", kind, top, root.name, topHints[root.name])
		return nil
	}
	return root
}

// property is one property of a Hadoop configuration file.
type property struct {
	name, value string
	at          pos // the property element
	valueAt     pos // the start of the value text
}

// items calls fn with each non-empty item of the list, trimmed, and where it starts.
func (p *property) items(fn func(item string, at pos)) {
	off := 0
	for _, raw := range strings.Split(p.value, ",") {
		at := p.valueAt.advance(p.value, off+len(raw)-len(strings.TrimLeft(raw, " \t\r\n")))
		off += len(raw) + 1
		if item := strings.TrimSpace(raw); item != "" {
			fn(item, at)
		}
	}
}

// isTrue reports whether p is set to true, as Hadoop's getBoolean reads it.
func (p *property) isTrue() bool {
	return p != nil && strings.EqualFold(strings.TrimSpace(p.value), "true")
}

// properties is a Hadoop configuration file: the value in force for each
// name (the last one, as Hadoop reads them) and the names in file order.
type properties struct {
	byName map[string]*property
	order  []*property
}

func (p *properties) get(name string) *property { return p.byName[name] }

// topHints say what a file whose top element is the key looks like.
var topHints = map[string]string{
	"configuration": ": this looks like a Hadoop configuration file (capacity-scheduler.xml or yarn-site.xml)",
	"allocations":   ": this looks like a fair-scheduler.xml",
}

// readConfiguration reads a Hadoop configuration file: <configuration>
// holding <property> elements with <name> and <value> children (or name
// and value attributes). Names are trimmed, values are not, as Hadoop's
// Configuration does. It returns nil when the file cannot be read.
func readConfiguration(src Source, d *diags, kind string) *properties {
	root := parseXML(src, d, kind, "configuration")
	if root == nil {
		return nil
	}
	props := &properties{byName: map[string]*property{}}
	for _, e := range root.kids {
		if e.name == "include" {
			d.warnf(e.at, "<%s:include> is not followed: import the included file's properties by adding them to this file", e.name)
		}
		if e.name != "property" {
			continue
		}
		name, _ := e.attr("name")
		value, hasValue := e.attr("value")
		p := &property{name: strings.TrimSpace(name), value: value, at: e.at, valueAt: e.at}
		for _, f := range e.kids {
			switch f.name {
			case "name":
				p.name = strings.TrimSpace(f.text)
			case "value":
				p.value, p.valueAt, hasValue = f.text, f.textAt, true
			}
		}
		switch {
		case p.name == "":
			d.warnf(e.at, "a property without a name is ignored")
			continue
		case !hasValue:
			d.warnf(e.at, "property %s has no value and is ignored, as Hadoop does", p.name)
			continue
		}
		if prev, dup := props.byName[p.name]; dup && prev.value != p.value {
			d.warnf(p.at, "property %s is set twice (first at line %d); the later value %q is used, as Hadoop does", p.name, prev.at.line, p.value)
		}
		if strings.Contains(p.value, "${") {
			d.warnf(p.valueAt, "property %s: %q holds a ${...} variable, which Hadoop expands and the import does not", p.name, p.value)
		}
		props.byName[p.name] = p
		props.order = append(props.order, p)
	}
	return props
}
