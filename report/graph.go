package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/usherhq/usher/engine"
	"github.com/usherhq/usher/impact"
	"github.com/usherhq/usher/placement"
)

// Class colours a node or an edge: yes (allowed, gained, placed), no
// (denied, lost, rejected), or "" (neither).
type Class string

const (
	Yes Class = "yes"
	No  Class = "no"
)

var colours = map[Class]string{Yes: "#1a7f37", No: "#cf222e", "": "#57606a"}

// Node is a box of a picture; Label may hold several lines.
type Node struct {
	Label string
	Class Class
}

// Edge joins two nodes by index.
type Edge struct {
	From, To int
	Label    string
	Class    Class
}

// Graph is a picture, drawn as DOT or Mermaid.
type Graph struct {
	Title string
	Nodes []Node
	Edges []Edge
}

func (g *Graph) node(label string, c Class) int {
	g.Nodes = append(g.Nodes, Node{label, c})
	return len(g.Nodes) - 1
}

// DOT writes the graph in Graphviz's language.
func (g *Graph) DOT(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "digraph usher {\n  label=%s;\n  labelloc=t;\n  rankdir=LR;\n  node [shape=box, style=rounded, fontname=Helvetica];\n", strconv.Quote(g.Title))
	for i, n := range g.Nodes {
		fmt.Fprintf(&b, "  n%d [label=%s, color=%q, fontcolor=%q];\n", i, strconv.Quote(n.Label), colours[n.Class], colours[n.Class])
	}
	for _, e := range g.Edges {
		fmt.Fprintf(&b, "  n%d -> n%d [label=%s, color=%q];\n", e.From, e.To, strconv.Quote(e.Label), colours[e.Class])
	}
	b.WriteString("}\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// mermaidText escapes s for a quoted Mermaid label.
var mermaidText = strings.NewReplacer(`"`, "#quot;", "<", "#lt;", ">", "#gt;", "#", "#35;", "\n", "<br/>")

// Mermaid writes the graph as a Mermaid flowchart.
func (g *Graph) Mermaid(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "---\ntitle: %s\n---\nflowchart LR\n", strconv.Quote(g.Title))
	for _, c := range []Class{Yes, No} {
		fmt.Fprintf(&b, "  classDef %s stroke:%s,color:%s\n", c, colours[c], colours[c])
	}
	for i, n := range g.Nodes {
		fmt.Fprintf(&b, "  n%d[\"%s\"]\n", i, mermaidText.Replace(n.Label))
		if n.Class != "" {
			fmt.Fprintf(&b, "  class n%d %s\n", i, n.Class)
		}
	}
	for i, e := range g.Edges {
		label := ""
		if e.Label != "" {
			label = `|"` + mermaidText.Replace(e.Label) + `"|`
		}
		fmt.Fprintf(&b, "  n%d -->%s n%d\n", e.From, label, e.To)
		if e.Class != "" {
			fmt.Fprintf(&b, "  linkStyle %d stroke:%s\n", i, colours[e.Class])
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Write writes g as format, dot or mermaid.
func (g *Graph) Write(w io.Writer, format string) error {
	if format == "mermaid" {
		return g.Mermaid(w)
	}
	return g.DOT(w)
}

func class(ok bool) Class {
	if ok {
		return Yes
	}
	return No
}

// Access is the queue tree of usher access: each queue with the user's
// rights, green where the user may submit.
func Access(res engine.AccessResult) *Graph {
	g := &Graph{Title: fmt.Sprintf("rights of %s in partition %s", res.Identity.User, res.Partition)}
	at := map[string]int{}
	for _, q := range res.Queues {
		rights := []string{}
		for _, d := range [2]struct {
			ok   bool
			what string
		}{{q.Submit.Allowed, "submit"}, {q.Admin.Allowed, "admin"}} {
			if d.ok {
				rights = append(rights, d.what)
			}
		}
		if len(rights) == 0 {
			rights = append(rights, "no rights")
		}
		at[q.Queue] = g.node(q.Queue+"\n"+strings.Join(rights, ", "), class(q.Submit.Allowed))
		if i := strings.LastIndexByte(q.Queue, '.'); i > 0 {
			g.Edges = append(g.Edges, Edge{From: at[q.Queue[:i]], To: at[q.Queue]})
		}
	}
	return g
}

// Diff is the rights diff of usher diff: who gains (green) and loses
// (red) which right where, and who is placed elsewhere.
func Diff(res *impact.Result) *Graph {
	g := &Graph{Title: fmt.Sprintf("rights from %s to %s", res.Old, res.New)}
	at := map[string]int{}
	node := func(label string) int {
		if i, ok := at[label]; ok {
			return i
		}
		at[label] = g.node(label, "")
		return at[label]
	}
	for _, p := range res.Partitions {
		for _, q := range p.Queues {
			for _, c := range q.Changes {
				label := map[bool]string{true: "+", false: "-"}[c.Gained] + c.Right
				if c.Queues > 1 {
					label += fmt.Sprintf(" (%d queues)", c.Queues)
				}
				g.Edges = append(g.Edges, Edge{node(c.Subject()), node(p.Name + ": " + q.Queue), label, class(c.Gained)})
			}
		}
		for _, c := range p.Placement {
			from := node(c.Subject())
			g.Edges = append(g.Edges, Edge{from, node(p.Name + ": " + c.Old.String()), "placed before", No},
				Edge{from, node(p.Name + ": " + c.New.String()), "placed now", Yes})
		}
	}
	return g
}

// Place is the placement path of usher place: the request, each rule
// tried in order, and where it ends.
func Place(res *engine.PlaceResult) *Graph {
	g := &Graph{Title: "placement of an application of " + res.Identity.User}
	prev := g.node(fmt.Sprintf("user %s\ngroups %s", res.Identity.User, strings.Join(res.Identity.Groups, ", ")), "")
	for _, s := range res.Trail {
		n := g.node(stepLabel(res.Rules, s)+"\n"+s.Outcome.String()+": "+s.Reason(), stepClass[s.Outcome])
		g.Edges = append(g.Edges, Edge{From: prev, To: n})
		prev = n
	}
	end := "rejected"
	if res.Placed {
		end = res.Queue
	}
	g.Edges = append(g.Edges, Edge{From: prev, To: g.node(end, class(res.Placed)), Class: class(res.Placed)})
	return g
}

// stepClass colours the outcome of a placement rule.
var stepClass = map[placement.Outcome]Class{placement.Placed: Yes, placement.Denied: No, placement.Failed: No}

// stepLabel names the rule of a placement step: rule 2: tag namespace.
func stepLabel(rules *placement.Rules, s placement.Step) string {
	if s.Rule < 0 {
		return rules.Describe(s.Rule)
	}
	return fmt.Sprintf("rule %d: %s", s.Rule+1, rules.Describe(s.Rule))
}
