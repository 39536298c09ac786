package config

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/usherhq/usher/internal/clip"
)

// Severity says whether a diagnostic makes the configuration unusable.
type Severity int

const (
	// Error makes the configuration invalid.
	Error Severity = iota
	// Warning is legal but probably not what was meant.
	Warning
)

// Diagnostic is a problem found in a configuration file, with its position.
type Diagnostic struct {
	File     string
	Line     int // 1-based; 0 when unknown
	Col      int // 1-based; 0 when unknown
	Severity Severity
	Msg      string
	// Upgrade marks a warning about what this release still loads and a
	// later one refuses (docs/upgrade.md); with Strict it is an error.
	Upgrade bool
}

// String renders FILE:LINE:COL: message, with "warning: " before the
// message of a warning.
func (d Diagnostic) String() string {
	var b strings.Builder
	b.WriteString(d.File)
	if d.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", d.Line, max(d.Col, 1))
	}
	b.WriteString(": ")
	if d.Severity == Warning {
		b.WriteString("warning: ")
	}
	b.WriteString(d.Msg)
	return b.String()
}

// InvalidError lists every error of an invalid configuration.
type InvalidError struct {
	Diagnostics []Diagnostic // errors only, in file order
	// Warnings found before parsing stopped, for lint.
	Warnings []Diagnostic
}

func (e *InvalidError) Error() string {
	lines := make([]string, len(e.Diagnostics))
	for i, d := range e.Diagnostics {
		lines[i] = d.String()
	}
	return strings.Join(lines, "\n")
}

// maxDiagnostics is how many errors, and how many warnings, are listed;
// the rest are counted in a last line.
const maxDiagnostics = 100

// place names the file a document was read from.
type place struct {
	file string
	// lineOff and colOff place the document inside file (a ConfigMap
	// manifest's literal block); zero for a file of its own.
	lineOff, colOff int
}

// usherLine is added to the line of every node of a ConfigMap's
// usher.yaml key merged into the partitions document (mergeUsher), so
// that a diagnostic about it names that key.
const usherLine = 1 << 30

// docLine is the line of a node inside its own document.
func docLine(line int) int { return line % usherLine }

// diags collects diagnostics for the partitions document and the
// usher.yaml key merged into it.
type diags struct {
	place
	usher place
	list  []Diagnostic
	// kept and dropped count the diagnostics listed and left out, by
	// severity.
	kept, dropped [2]int
}

// add records a diagnostic at a position of the document.
func (d *diags) add(line, col int, sev Severity, msg string) {
	file, line, col := d.pos(line, col)
	d.push(Diagnostic{File: file, Line: line, Col: col, Severity: sev, Msg: msg})
}

// pos places a line and column of a document in its file.
func (d *diags) pos(line, col int) (string, int, int) {
	at := d.place
	if line >= usherLine {
		at, line = d.usher, line-usherLine
	}
	if line > 0 {
		line, col = line+at.lineOff, max(col, 1)+at.colOff
	}
	return at.file, line, col
}

// push records x unless maxDiagnostics of its severity are listed, its
// message cut to clip.Text bytes (it may quote a value of any length).
func (d *diags) push(x Diagnostic) {
	if d.kept[x.Severity] == maxDiagnostics {
		d.dropped[x.Severity]++
		return
	}
	d.kept[x.Severity]++
	x.Msg = clip.String(x.Msg, clip.Text)
	d.list = append(d.list, x)
}

// RefusingRelease is the release that refuses what Diagnostic.Upgrade
// warns about (docs/upgrade.md).
const RefusingRelease = "v0.3"

// upgrade reports what a later release refuses: an error with Strict,
// else a warning that says so.
func (p *parser) upgrade(n *yaml.Node, format string, args ...any) {
	if p.o.strict {
		p.errorf(n, format, args...)
		return
	}
	line, col := 0, 0
	if n != nil {
		line, col = n.Line, n.Column
	}
	file, line, col := p.pos(line, col)
	p.push(Diagnostic{File: file, Line: line, Col: col, Severity: Warning, Upgrade: true,
		Msg: fmt.Sprintf(format, args...) + "; usher " + RefusingRelease + " refuses this: see docs/upgrade.md"})
}

func (d *diags) at(n *yaml.Node, sev Severity, format string, args ...any) {
	line, col := 0, 0
	if n != nil {
		line, col = n.Line, n.Column
	}
	d.add(line, col, sev, fmt.Sprintf(format, args...))
}

func (d *diags) errorf(n *yaml.Node, format string, args ...any) { d.at(n, Error, format, args...) }
func (d *diags) warnf(n *yaml.Node, format string, args ...any)  { d.at(n, Warning, format, args...) }

// atOffset reports at a byte offset inside a scalar (offsetPos).
func (d *diags) atOffset(n *yaml.Node, offset int, sev Severity, msg string) {
	line, col := offsetPos(n, offset)
	d.add(line, col, sev, msg)
}

// offsetPos is the position of a byte offset inside scalar n: exact for
// plain and quoted scalars on one line, the start of the scalar otherwise.
func offsetPos(n *yaml.Node, offset int) (line, col int) {
	line, col = n.Line, n.Column
	switch n.Style {
	case 0:
		col += offset
	case yaml.DoubleQuotedStyle, yaml.SingleQuotedStyle:
		if !strings.ContainsAny(n.Value, "\n\\'") {
			col += offset + 1
		}
	}
	return line, col
}

// Sort orders list in place by file (in the order files first appear),
// then line and column, and returns it.
func Sort(list []Diagnostic) []Diagnostic {
	rank := map[string]int{}
	for _, x := range list {
		if _, ok := rank[x.File]; !ok {
			rank[x.File] = len(rank)
		}
	}
	slices.SortStableFunc(list, func(a, b Diagnostic) int {
		return cmp.Or(cmp.Compare(rank[a.File], rank[b.File]), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Col, b.Col))
	})
	return list
}

func (d *diags) errors() []Diagnostic { return d.of(Error, "errors") }

// errorCount is how many errors were found so far.
func (d *diags) errorCount() int { return d.kept[Error] + d.dropped[Error] }

func (d *diags) warnings() []Diagnostic { return d.of(Warning, "warnings") }

// of lists the diagnostics of severity sev in order, and how many more
// there are.
func (d *diags) of(sev Severity, what string) []Diagnostic {
	var out []Diagnostic
	for _, x := range Sort(d.list) {
		if x.Severity == sev {
			out = append(out, x)
		}
	}
	if n := d.dropped[sev]; n > 0 {
		out = append(out, Diagnostic{File: d.file, Severity: sev, Msg: fmt.Sprintf("and %d more %s", n, what)})
	}
	return out
}

// yamlError reports a YAML syntax error at its line; base is added to
// the line (usherLine for the usher.yaml key). yaml.v3 has no typed
// syntax error: it writes the line only into the text, "yaml: line N:
// problem", whose problem is the parser's words, never the document's.
func (d *diags) yamlError(err error, base int) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if n, problem, ok := strings.Cut(rest, ": "); ok {
			if l, err := strconv.Atoi(n); err == nil {
				line, msg = l, problem
			}
		}
	}
	d.add(base+line, 1, Error, "YAML: "+msg)
}
