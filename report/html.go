package report

import (
	"fmt"
	"html"
	"io"
	"strings"

	"github.com/usherhq/usher/answer"
	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/engine"
	"github.com/usherhq/usher/impact"
	"github.com/usherhq/usher/policy"
)

// Page is what usher report shows. Every string is escaped with
// html.EscapeString (html/template's reflection would keep every method
// of the binary's types, tens of megabytes).
type Page struct {
	Config    *config.Config
	Partition string
	Diff      *impact.Result      // nil: no diff
	Place     *engine.PlaceResult // nil: no placement
}

var esc = html.EscapeString

const style = `body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#1f2328}
table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border-bottom:1px solid #d0d7de;padding:3px 10px;text-align:left;vertical-align:top}
.g{display:inline-block;margin:1px 4px 1px 0;padding:0 5px;border-radius:4px;background:#ddf4ff}.g.inh{background:#f6f8fa;color:#57606a}
.m{color:#57606a;font-size:12px}.gain{background:#dafbe1}.loss{background:#ffebe9}pre span{display:block}code,pre{font-size:13px}`

// Write writes the page: HTML, its style inline, no script or outside resource.
func (p *Page) Write(w io.Writer) error {
	cp, err := p.Config.Snapshot.Partition(p.Partition)
	if err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>usher report: %s</title><style>%s</style></head><body>\n", esc(p.Config.File), style)
	fmt.Fprintf(&b, "<h1>usher report</h1>\n<p>configuration <code>%s</code>, partition <code>%s</code></p>\n", esc(p.Config.File), esc(cp.Name()))
	b.WriteString("<h2>Who may submit and administer each queue</h2>\n<p class=m>Grey entries are inherited from a parent queue or the partition's adminacl.</p>\n")
	b.WriteString("<table id=tree><tr><th>queue</th><th>submit</th><th>administer</th></tr>\n")
	var note string
	for _, q := range cp.Tree() {
		fmt.Fprintf(&b, "<tr data-queue=\"%s\"><td style=\"padding-left:%dem\"><code>%s</code></td>", esc(q.Path), 1+strings.Count(q.Path, "."), esc(q.Path[strings.LastIndexByte(q.Path, '.')+1:]))
		for _, a := range []policy.Action{policy.Submit, policy.Admin} {
			who, err := Who(p.Config, cp.Name(), q.Path, a)
			if err != nil {
				return err
			}
			note = who.Members
			fmt.Fprintf(&b, "<td data-action=%s>", a)
			for _, g := range who.Grants {
				inh := map[bool]string{true: " inh"}[g.Queue != q.Path]
				fmt.Fprintf(&b, "<span class=\"g%s\" title=\"%s\">%s", inh, esc(g.Describe()), esc(strings.TrimPrefix(g.Kind+" "+g.Name, "wildcard ")))
				if len(g.Members) > 0 {
					fmt.Fprintf(&b, " <span class=m>(%s)</span>", esc(strings.Join(g.Members, ", ")))
				}
				b.WriteString("</span>")
			}
			if len(who.Grants) == 0 {
				b.WriteString("<span class=m>nobody</span>")
			}
			b.WriteString("</td>")
		}
		b.WriteString("</tr>\n")
	}
	fmt.Fprintf(&b, "</table>\n<p class=m>Group members: %s.</p>\n", esc(note))
	if p.Diff != nil {
		fmt.Fprintf(&b, "<h2>Rights gained and lost</h2>\n<pre id=diff>")
		var text strings.Builder
		impact.WriteText(&text, p.Diff)
		for l := range strings.Lines(text.String()) {
			cls := map[bool]string{true: "gain"}[strings.HasPrefix(l, "+ ")] + map[bool]string{true: "loss"}[strings.HasPrefix(l, "- ")]
			fmt.Fprintf(&b, "<span class=%q>%s</span>", cls, esc(l))
		}
		b.WriteString("</pre>\n")
	}
	if p.Place != nil {
		var text strings.Builder
		answer.Place(&text, p.Place)
		fmt.Fprintf(&b, "<h2>Where an application of %s goes</h2>\n<pre id=place>%s</pre>\n", esc(p.Place.Identity.User), esc(text.String()))
	}
	b.WriteString("</body></html>\n")
	_, err = io.WriteString(w, b.String())
	return err
}
