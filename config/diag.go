package config

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/usherhq/usher/internal/clip"
	"github.com/usherhq/usher/internal/yamlnode"
)

// Severity says whether a diagnostic makes the configuration unusable.
type Severity int

const (
	Error   Severity = iota // makes the configuration invalid
	Warning                 // legal but probably not what was meant
	Note                    // informs, never fails: what only the webhook enforces (Config.WebhookOnly)
)

// String renders "error", "warning" or "note".
func (s Severity) String() string { return [...]string{"error", "warning", "note"}[s] }

func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// The codes of errors (Diagnostic.Code); the others are in Codes.
const (
	CodeYAML       = "yaml-syntax"
	CodeUnknownKey = "unknown-key"
	CodeInvalid    = "invalid"
	CodeUpgrade    = "upgrade"
	CodeTruncated  = "truncated"
)

// Codes describes each Diagnostic.Code; the codes are stable.
var Codes = map[string]string{
	CodeYAML:              "YAML syntax error",
	CodeUnknownKey:        "a key the schema does not have",
	CodeInvalid:           "a value or structure usher refuses",
	CodeUpgrade:           "accepted by this release, refused by a later one (docs/upgrade.md)",
	CodeTruncated:         "more diagnostics than are listed",
	"partition-name":      "a partition without a name: YuniKorn names it default",
	"root-inserted":       "top-level queues other than one root: YuniKorn inserts root above them",
	"acl-entry":           "an ACL entry that is legal but likely wrong: \"*\" mixed with names, a duplicate",
	"acl-leading-space":   "a group-only ACL whose leading space YAML dropped: its groups read as users",
	"acl-name-case":       "names differing only in case",
	"yunikorn-acl-name":   "an ACL name YuniKorn's ACL parser drops",
	"nobody-can-submit":   "a leaf queue or parent-only subtree nobody can submit to",
	"placement":           "a placement rule that does not do what it says, or that can never place",
	"resolver":            "a usergroupresolver setting that is likely wrong (cache, ldap, skip, namemapping)",
	"resolver-unread":     "a users-to-groups file entry never read, or a file not checked at admission",
	"unknownuser-default": "unknownuser left at its default (deny) where a directory is configured",
	"admission-setting":   "an admission setting that weakens identity checks, or a pattern not anchored",
	"policy-group":        "service.policyGroup names a key the ConfigMap lacks",
	"webhook-only":        "a note: what a setting asks only usher's webhook does, not the native floor (docs/native.md)",
}

// Diagnostic is a problem found in a configuration file, with its
// position; its JSON form is usher lint -o json's (docs/lint.md).
type Diagnostic struct {
	File       string   `json:"file"`
	Line       int      `json:"line"`   // 1-based; 0 when unknown
	Col        int      `json:"column"` // 1-based; 0 when unknown
	Severity   Severity `json:"severity"`
	Code       string   `json:"code"` // one of Codes
	Msg        string   `json:"message"`
	Suggestion string   `json:"suggestion,omitempty"` // what to write instead, when known
	// Upgrade marks a warning about what this release still loads and a
	// later one refuses (docs/upgrade.md); with Strict it is an error.
	Upgrade bool `json:"-"`
}

// String renders FILE:LINE:COL: message, "warning: " before a warning's message.
func (d Diagnostic) String() string {
	var b strings.Builder
	b.WriteString(d.File)
	if d.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", d.Line, max(d.Col, 1))
	}
	b.WriteString(": ")
	if d.Severity != Error {
		b.WriteString(d.Severity.String() + ": ")
	}
	b.WriteString(d.Msg)
	return b.String()
}

// InvalidError lists every error of an invalid configuration.
type InvalidError struct {
	Diagnostics []Diagnostic // errors only, in file order
	Warnings    []Diagnostic // found before parsing stopped, for lint
}

func (e *InvalidError) Error() string {
	lines := make([]string, len(e.Diagnostics))
	for i, d := range e.Diagnostics {
		lines[i] = d.String()
	}
	return strings.Join(lines, "\n")
}

// maxDiagnostics is how many errors, and warnings, are listed; the rest are counted.
const maxDiagnostics = 100

// place names the file a document was read from, and where in it the
// document starts (source.lineOff).
type place struct {
	file            string
	lineOff, colOff int
}

// usherLine is added to the line of every node of a merged usher.yaml key
// (mergeUsher), so that a diagnostic about it names that key.
const usherLine = 1 << 30

// docLine is the line of a node inside its own document.
func docLine(line int) int { return line % usherLine }

// diags collects diagnostics of the partitions document and its merged usher.yaml.
type diags struct {
	place
	usher place
	list  []Diagnostic
	// kept and dropped count, by severity, the diagnostics listed and left out.
	kept, dropped [2]int
}

// add records a diagnostic at a position of the document.
func (d *diags) add(line, col int, sev Severity, code, msg string) {
	file, line, col := d.pos(line, col)
	d.push(Diagnostic{File: file, Line: line, Col: col, Severity: sev, Code: code, Msg: msg})
}

// report records x at n (nil: the document).
func (d *diags) report(n *yaml.Node, x Diagnostic) {
	line, col := 0, 0
	if n != nil {
		line, col = n.Line, n.Column
	}
	x.File, x.Line, x.Col = d.pos(line, col)
	d.push(x)
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
	if x.Code == "" && x.Severity == Error {
		x.Code = CodeInvalid
	}
	if d.kept[x.Severity] == maxDiagnostics {
		d.dropped[x.Severity]++
		return
	}
	d.kept[x.Severity]++
	x.Msg = clip.String(x.Msg, clip.Text)
	d.list = append(d.list, x)
}

// RefusingRelease is the release that refuses what Diagnostic.Upgrade warns about.
const RefusingRelease = "v0.3"

// upgrade reports what a later release refuses: an error with Strict, else a warning.
func (p *parser) upgrade(n *yaml.Node, format string, args ...any) {
	if p.o.strict {
		p.report(n, Diagnostic{Severity: Error, Code: CodeUpgrade, Msg: fmt.Sprintf(format, args...)})
		return
	}
	p.report(n, Diagnostic{Severity: Warning, Upgrade: true, Code: CodeUpgrade,
		Msg: fmt.Sprintf(format, args...) + "; usher " + RefusingRelease + " refuses this: see docs/upgrade.md"})
}

func (d *diags) at(n *yaml.Node, sev Severity, code, format string, args ...any) {
	d.report(n, Diagnostic{Severity: sev, Code: code, Msg: fmt.Sprintf(format, args...)})
}

func (d *diags) errorf(n *yaml.Node, format string, args ...any) { d.at(n, Error, "", format, args...) }
func (d *diags) warnf(n *yaml.Node, code, format string, args ...any) {
	d.at(n, Warning, code, format, args...)
}

// atOffset reports at a byte offset inside a scalar (offsetPos).
func (d *diags) atOffset(n *yaml.Node, offset int, sev Severity, code, msg string) {
	line, col := offsetPos(n, offset)
	d.add(line, col, sev, code, msg)
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

func (d *diags) errorCount() int { return d.kept[Error] + d.dropped[Error] }

// of lists the diagnostics of severity sev in order, then how many more.
func (d *diags) of(sev Severity) []Diagnostic {
	var out []Diagnostic
	for _, x := range Sort(d.list) {
		if x.Severity == sev {
			out = append(out, x)
		}
	}
	if n := d.dropped[sev]; n > 0 {
		out = append(out, Diagnostic{File: d.file, Severity: sev, Code: CodeTruncated, Msg: fmt.Sprintf("and %d more %ss", n, sev)})
	}
	return out
}

// yamlError reports a YAML syntax error at its line plus base (usherLine
// for usher.yaml); the problem is the parser's words, never the document's.
func (d *diags) yamlError(err error, base int) {
	line, msg := yamlnode.SyntaxLine(err)
	d.add(base+line, 1, Error, CodeYAML, "YAML: "+msg)
}
