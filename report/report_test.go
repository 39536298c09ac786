package report_test

import (
	"bytes"
	"context"
	"log/slog"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/engine"
	"github.com/usherhq/usher/impact"
	"github.com/usherhq/usher/policy"
	"github.com/usherhq/usher/report"
	"github.com/usherhq/usher/serving"
)

func load(t *testing.T, path string) *config.Config {
	t.Helper()
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func describe(w *report.WhoCan) []string {
	var out []string
	for _, g := range w.Grants {
		out = append(out, g.Describe()+" "+strings.Join(g.Members, ","))
	}
	return out
}

// Who lists the queue's entries, then its parents', then the partition's
// adminacl, each group with the members the users-to-groups file lists.
func TestWho(t *testing.T) {
	cfg := load(t, "testdata/queues.yaml")
	for _, tt := range []struct {
		queue  string
		action policy.Action
		want   []string
	}{
		{"root.teams.ml", policy.Submit, []string{
			"group ml in submitacl of root.teams.ml alice,bob",
			"user alice in submitacl of root.teams ",
			"group leads in adminacl of root.teams bob",
			"group platform in the partition adminacl carol",
		}},
		{"ROOT.teams.ml", policy.Admin, []string{"group leads in adminacl of root.teams bob", "group platform in the partition adminacl carol"}},
		{"root.sandbox", policy.Submit, []string{`everyone ("*") in submitacl of root.sandbox `, "group platform in the partition adminacl carol"}},
	} {
		w, err := report.Who(cfg, "", tt.queue, tt.action)
		if err != nil {
			t.Fatal(err)
		}
		if got := describe(w); strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
			t.Errorf("%s %s:\n%s\nwant\n%s", tt.action, tt.queue, strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
		}
		if !strings.Contains(w.Members, "file resolver") {
			t.Errorf("members note %q", w.Members)
		}
	}
	w, err := report.Who(load(t, "testdata/old.yaml"), "default", "root.teams", policy.Submit)
	if err != nil || w.Members != "not enumerated: the none resolver cannot list a group's members" || w.Grants[1].Members != nil {
		t.Errorf("%+v %v", w, err)
	}
	if _, err := report.Who(cfg, "", "root.nope", policy.Submit); err == nil {
		t.Error("unknown queue: no error")
	}
}

// graphs are the three pictures of the test configuration.
func graphs(t *testing.T) map[string]*report.Graph {
	cfg := load(t, "testdata/queues.yaml")
	st, err := serving.Build(cfg, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	acc, err := st.Access(context.Background(), "", "bob", nil)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := st.Place(context.Background(), engine.PlaceRequest{User: "dave", Tags: map[string]string{"namespace": "web"}, Explain: true})
	if err != nil {
		t.Fatal(err)
	}
	d := impact.DiffConfigs(load(t, "testdata/old.yaml"), cfg, impact.Options{})
	// A label with every character either language must escape.
	odd := &report.Graph{Title: `"quoted" \ <b>#1`, Nodes: []report.Node{{Label: "a \"b\" \\ <c>\n#d"}, {Label: "e"}}, Edges: []report.Edge{{From: 0, To: 1, Label: `x"y`}}}
	return map[string]*report.Graph{"access": report.Access(acc), "diff": report.Diff(d), "place": report.Place(&pl), "odd": odd}
}

var (
	dotNode = regexp.MustCompile(`^  n(\d+) \[label="(?:[^"\\]|\\.)*", color="#[0-9a-f]{6}", fontcolor="#[0-9a-f]{6}"\];$`)
	dotEdge = regexp.MustCompile(`^  n(\d+) -> n(\d+) \[label="(?:[^"\\]|\\.)*", color="#[0-9a-f]{6}"\];$`)
)

// The DOT is a digraph of declared nodes and edges between them, and
// Graphviz's dot draws it (where dot is installed: .ci/run installs it).
func TestDOT(t *testing.T) {
	dot, _ := exec.LookPath("dot")
	for name, g := range graphs(t) {
		var b bytes.Buffer
		if err := g.Write(&b, "dot"); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
		if lines[0] != "digraph usher {" || lines[len(lines)-1] != "}" {
			t.Fatalf("%s:\n%s", name, b.String())
		}
		nodes, edges := 0, 0
		for _, l := range lines[5 : len(lines)-1] {
			if m := dotNode.FindStringSubmatch(l); m != nil && m[1] == strconv.Itoa(nodes) {
				nodes++
			} else if m := dotEdge.FindStringSubmatch(l); m != nil && atoi(m[1]) < nodes && atoi(m[2]) < nodes {
				edges++
			} else {
				t.Errorf("%s: line %q", name, l)
			}
		}
		if nodes != len(g.Nodes) || edges != len(g.Edges) || nodes < 2 {
			t.Errorf("%s: %d nodes, %d edges:\n%s", name, nodes, edges, b.String())
		}
		if dot == "" {
			continue
		}
		cmd := exec.Command(dot, "-Tsvg")
		cmd.Stdin = &b
		out, err := cmd.CombinedOutput()
		if err != nil || !bytes.Contains(out, []byte("</svg>")) || bytes.Contains(out, []byte("Warning")) {
			t.Errorf("%s: dot -Tsvg: %v\n%s", name, err, out)
		}
	}
	if dot == "" {
		t.Skip("no dot on PATH (Debian's graphviz package): structure checked, drawing not")
	}
}

var (
	mmNode  = regexp.MustCompile(`^  n(\d+)\["[^"]*"\]$`)
	mmEdge  = regexp.MustCompile(`^  n(\d+) -->(\|"[^"]*"\|)? n(\d+)$`)
	mmStyle = regexp.MustCompile(`^  (class n\d+ (yes|no)|linkStyle \d+ stroke:#[0-9a-f]{6}|classDef (yes|no) stroke:#[0-9a-f]{6},color:#[0-9a-f]{6})$`)
)

// The Mermaid is a flowchart whose labels hold no quote or angle bracket
// unescaped.
func TestMermaid(t *testing.T) {
	for name, g := range graphs(t) {
		var b bytes.Buffer
		if err := g.Write(&b, "mermaid"); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
		if lines[0] != "---" || !strings.HasPrefix(lines[1], "title: \"") || lines[2] != "---" || lines[3] != "flowchart LR" {
			t.Fatalf("%s:\n%s", name, b.String())
		}
		nodes, edges := 0, 0
		for _, l := range lines[4:] {
			switch m, e := mmNode.FindStringSubmatch(l), mmEdge.FindStringSubmatch(l); {
			case m != nil && m[1] == strconv.Itoa(nodes):
				nodes++
			case e != nil && atoi(e[1]) < nodes && atoi(e[3]) < nodes:
				edges++
			case mmStyle.MatchString(l):
			default:
				t.Errorf("%s: line %q", name, l)
			}
		}
		if nodes != len(g.Nodes) || edges != len(g.Edges) {
			t.Errorf("%s: %d nodes, %d edges:\n%s", name, nodes, edges, b.String())
		}
		if name == "odd" && !strings.Contains(b.String(), `n0["a #quot;b#quot; \ #lt;c#gt;<br/>#35;d"]`) {
			t.Errorf("escaping:\n%s", b.String())
		}
	}
}

// The page holds the tree, the diff and the placement, escapes what it
// prints, and loads nothing.
func TestPage(t *testing.T) {
	cfg := load(t, "testdata/queues.yaml")
	st, err := serving.Build(cfg, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	pl, err := st.Place(context.Background(), engine.PlaceRequest{User: "alice", Tags: map[string]string{"namespace": "ml"}, Explain: true})
	if err != nil {
		t.Fatal(err)
	}
	named := *cfg
	named.File = "<b>queues.yaml"
	d := impact.DiffConfigs(load(t, "testdata/old.yaml"), cfg, impact.Options{})
	p := report.Page{Config: &named, Diff: d, Place: &pl}
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{
		"<title>usher report: &lt;b&gt;queues.yaml</title>",
		`<tr data-queue="root.teams.ml"><td style="padding-left:3em"><code>ml</code></td><td data-action=submit><span class="g" title="group ml in submitacl of root.teams.ml">group ml <span class=m>(alice, bob)</span></span><span class="g inh" title="user alice in submitacl of root.teams">user alice</span>`,
		"<span class=\"\">  root.teams\n</span><span class=\"loss\">-   submit  user bob        and all 2 queues below\n</span>",
		"<span class=\"\">  root.teams.ml\n</span><span class=\"gain\">+   submit  group ml\n</span>",
		"<pre id=place>root.teams.ml\nrule 2: tag &#34;namespace&#34;",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s:\n%s", want, page)
		}
	}
	for _, banned := range []string{"<script", "src=", "href=", "url(", "@import"} {
		if strings.Contains(page, banned) {
			t.Errorf("page holds %q", banned)
		}
	}
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }
