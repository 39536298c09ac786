package config

// This file reads the block-style subset of YAML that configurations are
// written in, without go.yaml.in/yaml/v3's scanner, and builds the very
// *yaml.Node tree yaml.Unmarshal builds for it (Kind, Tag, Value, Style,
// Line, Column of every node). It exists for speed alone: on the 2 MB
// configuration of 10,000 queues (BenchmarkLoad10kQueues) yaml.v3's
// scanner took about 60 % of the load; with this reader the load takes a
// third of the time, 50 ms against 151 ms, and 96k allocations against
// 358k (docs/benchmarks.md "Loading and memory").
//
// It is a fast path, never a second YAML implementation: it returns nil
// for anything outside the subset it is sure of, and the caller then uses
// yaml.v3, so behaviour can only differ by speed, and every YAML error is
// still yaml.v3's, with its message. The subset:
//
//   - block mappings and block sequences, nested by indentation with
//     spaces; a sequence may sit at its key's indentation (key:\n- a), and
//     an item may hold a mapping on its own line (- key: v);
//   - keys and values that are plain, single- or double-quoted scalars on
//     one line (double-quoted ones without any escape); a plain key or
//     value is tagged as yaml.v3 resolves it (!!str, !!null, !!bool, and
//     numbers and timestamps by asking yaml.v3 itself);
//   - comments, blank lines, one "---" on the first line;
//   - printable ASCII, and UTF-8 letters yaml.v3 prints, inside scalars.
//
// Anything else — tabs, carriage returns, anchors, aliases, tags, flow
// collections, block scalars, multi-line scalars, escapes, "<<", explicit
// keys, directives, several documents, a byte order mark, a plain scalar
// starting with an indicator ("-1" too), "key : v", a key longer than
// yaml.v3 allows, nesting deeper than 1,000, an empty document, a scalar
// document — is not the fast path's. Comments are not kept
// (HeadComment, LineComment and FootComment stay empty): nothing in this
// package reads them. TestFastYAMLAgrees and FuzzFastYAML compare every
// tree the fast path builds with yaml.v3's; TestFastPathSameOutcome
// loads configurations with and without it.

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// maxFastKey is below yaml.v3's limit of 1024 characters for a key
// written without "?".
const maxFastKey = 1000

// maxFastDepth keeps the fast path far from yaml.v3's limit on nesting.
const maxFastDepth = 1000

// fastLine is one line holding content (not blank, not only a comment).
type fastLine struct {
	num    int // 1-based line number
	start  int // offset of the line's first byte in src
	end    int // offset of the line's end (its '\n', or len(src))
	indent int // leading spaces
	ascii  bool
}

type fastParser struct {
	src   string
	lines []fastLine
	// entries counts the lines starting with "- ".
	entries int
	i       int // current line in lines
	nodes   []yaml.Node
	kids    []*yaml.Node // children of the collections being read
	slab    []*yaml.Node // Content slices are cut from it
	tags    map[string]string
	depth   int // collections being read
}

// fastDocument returns the document node yaml.Unmarshal would give for
// data, or nil when data is not in the subset this file reads.
func fastDocument(data []byte) *yaml.Node {
	p := fastParser{src: string(data)}
	if !p.split() || len(p.lines) == 0 {
		return nil
	}
	first := p.lines[0]
	doc := &yaml.Node{Kind: yaml.DocumentNode, Line: first.num, Column: first.indent + 1}
	if first.indent == 0 && p.trimmed(first) == "---" {
		p.i++
		if len(p.lines) == 1 {
			return nil
		}
	}
	// A line holds two nodes (a key and its value) and an entry one more
	// (the mapping it starts), but for the few mappings and sequences not
	// started by an entry: the slack holds those, and when more are
	// written, more space is taken as needed.
	est := 2*len(p.lines) + p.entries + 16
	p.nodes = make([]yaml.Node, 0, est)
	p.slab = make([]*yaml.Node, est)
	l := p.lines[p.i]
	root := p.block(l.start + l.indent)
	if root == nil || p.i != len(p.lines)-1 {
		return nil
	}
	doc.Content = []*yaml.Node{root}
	return doc
}

// split finds the lines holding content and rejects bytes outside the
// subset: tabs, carriage returns and other control characters, a
// document marker after the first line, and UTF-8 that is invalid or
// that yaml.v3 does not take as printable.
func (p *fastParser) split() bool {
	s := p.src
	num := 0
	p.lines = make([]fastLine, 0, strings.Count(s, "\n")+1)
	for start := 0; start < len(s); {
		num++
		end, ascii := start, true
		for end < len(s) && s[end] != '\n' {
			c := s[end]
			if c >= 0x80 {
				r, w := utf8.DecodeRuneInString(s[end:])
				if !fastPrintable(r, w) {
					return false
				}
				ascii = false
				end += w
				continue
			}
			if c < 0x20 || c == 0x7f {
				return false
			}
			end++
		}
		indent := start
		for indent < end && s[indent] == ' ' {
			indent++
		}
		if indent < end && s[indent] != '#' {
			l := fastLine{num: num, start: start, end: end, indent: indent - start, ascii: ascii}
			if l.indent == 0 && end-start >= 3 && (s[start:start+3] == "---" || s[start:start+3] == "...") &&
				(end-start == 3 || s[start+3] == ' ') && len(p.lines) > 0 {
				return false
			}
			p.lines = append(p.lines, l)
			if s[indent] == '-' && indent+1 < end && s[indent+1] == ' ' {
				p.entries++
			}
		}
		start = end + 1
	}
	return true
}

// fastPrintable reports whether yaml.v3 reads rune r (w bytes) as a
// printable character that breaks no line: #xA0-#xD7FF and
// #xE000-#xFFFD, without the byte order mark and the line and paragraph
// separators.
func fastPrintable(r rune, w int) bool {
	if r == utf8.RuneError && w <= 1 {
		return false
	}
	switch {
	case r == 0x2028 || r == 0x2029 || r == 0xfeff:
		return false
	case r >= 0xa0 && r <= 0xd7ff, r >= 0xe000 && r <= 0xfffd:
		return true
	}
	return false
}

// trimmed is l's content without its indentation and trailing spaces.
func (p *fastParser) trimmed(l fastLine) string {
	e := l.end
	for e > l.start && p.src[e-1] == ' ' {
		e--
	}
	return p.src[l.start+l.indent : e]
}

// col is the 1-based column of offset off in line l, in characters as
// yaml.v3 counts them.
func (p *fastParser) col(l fastLine, off int) int {
	if l.ascii {
		return off - l.start + 1
	}
	return utf8.RuneCountInString(p.src[l.start:off]) + 1
}

func (p *fastParser) node(kind yaml.Kind, tag, value string, style yaml.Style, line, col int) *yaml.Node {
	if len(p.nodes) == cap(p.nodes) {
		p.nodes = make([]yaml.Node, 0, 256)
	}
	p.nodes = append(p.nodes, yaml.Node{Kind: kind, Tag: tag, Value: value, Style: style, Line: line, Column: col})
	return &p.nodes[len(p.nodes)-1]
}

// content moves the children pushed since mark into n.Content.
func (p *fastParser) content(n *yaml.Node, mark int) {
	k := len(p.kids) - mark
	if len(p.slab) < k {
		p.slab = make([]*yaml.Node, max(k, 256))
	}
	n.Content = p.slab[:k:k]
	copy(n.Content, p.kids[mark:])
	p.slab = p.slab[k:]
	p.kids = p.kids[:mark]
	p.depth--
}

// next is the line after the current one, ok false at the end.
func (p *fastParser) next() (fastLine, bool) {
	if p.i+1 >= len(p.lines) {
		return fastLine{}, false
	}
	return p.lines[p.i+1], true
}

// isEntry reports whether a block sequence entry ("-" and a space)
// starts at off.
func (p *fastParser) isEntry(off, end int) bool {
	return p.src[off] == '-' && off+1 < end && p.src[off+1] == ' '
}

// block reads the collection starting at offset off of the current line:
// a sequence when off is at the line's indentation, or a mapping.
func (p *fastParser) block(off int) *yaml.Node {
	l := p.lines[p.i]
	if p.isEntry(off, l.end) {
		if off != l.start+l.indent {
			return nil // "- - a"
		}
		return p.sequence(l.indent)
	}
	return p.mapping(off)
}

// sequence reads the block sequence whose entries are at indentation
// ind, from the current line.
func (p *fastParser) sequence(ind int) *yaml.Node {
	if p.depth++; p.depth > maxFastDepth {
		return nil
	}
	l := p.lines[p.i]
	n := p.node(yaml.SequenceNode, "!!seq", "", 0, l.num, ind+1)
	mark := len(p.kids)
	for {
		l = p.lines[p.i]
		off := l.start + ind + 1
		for off < l.end && p.src[off] == ' ' {
			off++
		}
		if off == l.end || p.src[off] == '#' || p.isEntry(off, l.end) {
			return nil // an entry on the next lines, empty, or "- - a"
		}
		colon, ok := p.keyColon(l, off)
		if !ok {
			return nil
		}
		var item *yaml.Node
		if colon >= 0 {
			item = p.mapping(off)
		} else {
			item = p.value(l, off)
			if item != nil {
				item = p.endScalar(item, ind)
			}
		}
		if item == nil {
			return nil
		}
		p.kids = append(p.kids, item)
		nl, ok := p.next()
		if !ok || nl.indent < ind {
			break
		}
		if nl.indent > ind {
			return nil
		}
		if !p.isEntry(nl.start+nl.indent, nl.end) {
			break // the next key of the mapping this sequence is the value of
		}
		p.i++
	}
	p.content(n, mark)
	return n
}

// endScalar checks that no line continues the scalar just read, which
// sits in a collection at indentation ind.
func (p *fastParser) endScalar(n *yaml.Node, ind int) *yaml.Node {
	if nl, ok := p.next(); ok && nl.indent > ind {
		return nil
	}
	return n
}

// mapping reads the block mapping whose first key starts at offset off
// of the current line.
func (p *fastParser) mapping(off int) *yaml.Node {
	l := p.lines[p.i]
	ind := off - l.start
	if !l.ascii {
		// Keys after the first are found by their indentation in bytes;
		// a mapping started after a multi-byte character is not read.
		if p.col(l, off) != ind+1 {
			return nil
		}
	}
	if p.depth++; p.depth > maxFastDepth {
		return nil
	}
	n := p.node(yaml.MappingNode, "!!map", "", 0, l.num, ind+1)
	mark := len(p.kids)
	for {
		l = p.lines[p.i]
		colon, ok := p.keyColon(l, off)
		if !ok || colon < 0 {
			return nil
		}
		k := p.key(l, off, colon)
		if k == nil {
			return nil
		}
		p.kids = append(p.kids, k)
		v := colon + 1
		for v < l.end && p.src[v] == ' ' {
			v++
		}
		var val *yaml.Node
		if v == l.end || p.src[v] == '#' {
			nl, ok := p.next()
			switch {
			case ok && nl.indent > ind:
				p.i++
				val = p.block(nl.start + nl.indent)
			case ok && nl.indent == ind && p.isEntry(nl.start+nl.indent, nl.end):
				p.i++
				val = p.sequence(ind)
			default:
				val = p.node(yaml.ScalarNode, "!!null", "", 0, l.num, p.col(l, colon)+1)
			}
		} else {
			val = p.value(l, v)
			if val != nil {
				val = p.endScalar(val, ind)
			}
		}
		if val == nil {
			return nil
		}
		p.kids = append(p.kids, val)
		nl, ok := p.next()
		if !ok || nl.indent < ind {
			break
		}
		if nl.indent > ind {
			return nil
		}
		if p.isEntry(nl.start+nl.indent, nl.end) {
			break // an entry of the sequence this mapping is an item of
		}
		p.i++
		off = nl.start + nl.indent
	}
	p.content(n, mark)
	return n
}

// keyColon finds the ':' after the key at offset off of line l: -1 when
// the scalar at off is not followed by ": " or by ":" ending the line (it
// is no key), ok false when the text at off is outside the subset.
func (p *fastParser) keyColon(l fastLine, off int) (colon int, ok bool) {
	s := p.src
	switch s[off] {
	case '\'', '"':
		end, ok := p.quotedEnd(l, off)
		if !ok {
			return -1, false
		}
		if end < l.end && s[end] == ':' && (end+1 == l.end || s[end+1] == ' ') {
			return end, end-off <= maxFastKey
		}
		return -1, true
	}
	if !plainStart(s[off]) {
		return -1, false
	}
	for i := off; i < l.end; i++ {
		switch s[i] {
		case ':':
			if i+1 == l.end || s[i+1] == ' ' {
				// "a : b" is left to yaml.v3, and so are long keys.
				return i, s[i-1] != ' ' && i-off <= maxFastKey
			}
		case '#':
			if s[i-1] == ' ' {
				return -1, true
			}
		}
	}
	return -1, true
}

// key is the node of the key at offset off of line l, ending at colon.
func (p *fastParser) key(l fastLine, off, colon int) *yaml.Node {
	if s := p.src[off]; s == '\'' || s == '"' {
		n, _, _ := p.quoted(l, off)
		return n
	}
	return p.plain(p.src[off:colon], l, off)
}

// value reads the scalar starting at offset off of line l, which must
// end the line (a comment may follow).
func (p *fastParser) value(l fastLine, off int) *yaml.Node {
	s := p.src
	switch s[off] {
	case '\'', '"':
		n, end, ok := p.quoted(l, off)
		if !ok {
			return nil
		}
		sp := end
		for end < l.end && s[end] == ' ' {
			end++
		}
		if end == l.end || (s[end] == '#' && end > sp) {
			return n
		}
		return nil
	}
	if !plainStart(s[off]) {
		return nil
	}
	end := l.end
	for i := off; i < l.end; i++ {
		if s[i] == ':' && (i+1 == l.end || s[i+1] == ' ') {
			return nil // a mapping where none may start
		}
		if s[i] == '#' && s[i-1] == ' ' {
			end = i
			break
		}
	}
	for s[end-1] == ' ' {
		end--
	}
	return p.plain(s[off:end], l, off)
}

// plainStart reports whether a plain scalar of the subset may start with
// c: not with an indicator (a "-" too, to keep "-1" and "- a" apart from
// the subset).
func plainStart(c byte) bool {
	switch c {
	case '-', '?', ':', ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`', ' ':
		return false
	}
	return true
}

// quotedEnd is the offset after the closing quote of the quoted scalar
// at offset off of line l; ok false when it is not closed on the line or
// holds an escape.
func (p *fastParser) quotedEnd(l fastLine, off int) (int, bool) {
	s, q := p.src, p.src[off]
	for i := off + 1; i < l.end; i++ {
		switch {
		case q == '"' && s[i] == '\\':
			return 0, false
		case s[i] != q:
		case q == '\'' && i+1 < l.end && s[i+1] == '\'':
			i++
		default:
			return i + 1, true
		}
	}
	return 0, false
}

// quoted reads a single- or double-quoted scalar closed on line l, and
// returns the offset after its closing quote.
func (p *fastParser) quoted(l fastLine, off int) (*yaml.Node, int, bool) {
	s := p.src
	q := s[off]
	style := yaml.DoubleQuotedStyle
	if q == '\'' {
		style = yaml.SingleQuotedStyle
	}
	var buf []byte
	from := off + 1
	for i := off + 1; i < l.end; i++ {
		switch {
		case q == '"' && s[i] == '\\':
			return nil, 0, false
		case s[i] != q:
			continue
		case q == '\'' && i+1 < l.end && s[i+1] == '\'':
			buf = append(buf, s[from:i+1]...)
			i++
			from = i + 1
			continue
		}
		v := s[off+1 : i]
		if buf != nil {
			v = string(append(buf, s[from:i]...))
		}
		return p.node(yaml.ScalarNode, "!!str", v, style, l.num, p.col(l, off)), i + 1, true
	}
	return nil, 0, false
}

// plain is the node of plain scalar v at offset off of line l, tagged as
// yaml.v3 resolves it; nil when v is outside the subset.
func (p *fastParser) plain(v string, l fastLine, off int) *yaml.Node {
	tag, ok := p.resolve(v)
	if !ok {
		return nil
	}
	return p.node(yaml.ScalarNode, tag, v, 0, l.num, p.col(l, off))
}

// resolve tags plain scalar v as yaml.v3's resolve does. A value that
// may be a number or a timestamp is given to yaml.v3 itself, once per
// distinct value.
func (p *fastParser) resolve(v string) (string, bool) {
	switch v[0] {
	case 'y', 'Y', 'n', 'N', 't', 'T', 'f', 'F', 'o', 'O', '~':
		switch v {
		case "true", "True", "TRUE", "false", "False", "FALSE":
			return "!!bool", true
		case "~", "null", "Null", "NULL":
			return "!!null", true
		}
		return "!!str", true
	case '<':
		if v == "<<" {
			return "", false
		}
		return "!!str", true
	case '.':
		switch v {
		case ".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF":
			return "!!float", true
		}
		if _, err := strconv.ParseFloat(v, 64); err == nil {
			return "!!float", true
		}
		return "!!str", true
	case '+', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		if tag, ok := p.tags[v]; ok {
			return tag, tag != ""
		}
		var doc yaml.Node
		tag := ""
		if yaml.Unmarshal([]byte(v), &doc) == nil && len(doc.Content) == 1 {
			if n := doc.Content[0]; n.Kind == yaml.ScalarNode && n.Style == 0 && n.Value == v {
				tag = n.Tag
			}
		}
		if p.tags == nil {
			p.tags = map[string]string{}
		}
		p.tags[v] = tag
		return tag, tag != ""
	}
	return "!!str", true
}
