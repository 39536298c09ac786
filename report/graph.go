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

// Class colours a node or an edge: Yes (allowed, gained, placed), No
// (denied, lost, rejected) or "" (neither).
type Class string

const (
	Yes Class = "yes"
	No  Class = "no"
)

var colours = map[Class]string{Yes: "#1a7f37", No: "#cf222e", "": "#57606a"}

// Node is a box of a picture; its label may hold several lines.
type Node struct {
	Label string
	Class Class
}

// Edge joins two nodes, by index.
type Edge struct {
	From, To int
	Label    string
	Class    Class
}

// Graph is a picture of an answer.
type Graph struct {
	Title string
	Nodes []Node
	Edges []Edge
}

func (g *Graph) node(label string, c Class) int {
	g.Nodes = append(g.Nodes, Node{label, c})
	return len(g.Nodes) - 1
}

// mermaidText escapes a quoted Mermaid label.
var mermaidText = strings.NewReplacer(`"`, "#quot;", "<", "#lt;", ">", "#gt;", "#", "#35;", "\n", "<br/>")

// Write writes g as a Graphviz digraph (format dot) or a Mermaid flowchart.
func (g *Graph) Write(w io.Writer, format string) error {
	var b strings.Builder
	if format == "dot" {
		fmt.Fprintf(&b, "digraph usher {\n  label=%s;\n  labelloc=t;\n  rankdir=LR;\n  node [shape=box, style=rounded, fontname=Helvetica];\n", strconv.Quote(g.Title))
		for i, n := range g.Nodes {
			fmt.Fprintf(&b, "  n%d [label=%s, color=%q, fontcolor=%[3]q];\n", i, strconv.Quote(n.Label), colours[n.Class])
		}
		for _, e := range g.Edges {
			fmt.Fprintf(&b, "  n%d -> n%d [label=%s, color=%q];\n", e.From, e.To, strconv.Quote(e.Label), colours[e.Class])
		}
		b.WriteString("}\n")
	} else {
		fmt.Fprintf(&b, "---\ntitle: %s\n---\nflowchart LR\n  classDef yes stroke:%s,color:%[2]s\n  classDef no stroke:%s,color:%[3]s\n", strconv.Quote(g.Title), colours[Yes], colours[No])
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
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func class(ok bool) Class {
	return map[bool]Class{true: Yes, false: No}[ok]
}

// Access is the queue tree of usher access, green where the user may submit.
func Access(res engine.AccessResult) *Graph {
	g := &Graph{Title: fmt.Sprintf("rights of %s in partition %s", res.Identity.User, res.Partition)}
	at := map[string]int{}
	for _, q := range res.Queues {
		// Who may administer a queue may submit to it.
		rights := map[[2]bool]string{{}: "no rights", {true}: "submit", {true, true}: "submit, admin"}[[2]bool{q.Submit.Allowed, q.Admin.Allowed}]
		at[q.Queue] = g.node(q.Queue+"\n"+rights, class(q.Submit.Allowed))
		if i := strings.LastIndexByte(q.Queue, '.'); i > 0 {
			g.Edges = append(g.Edges, Edge{From: at[q.Queue[:i]], To: at[q.Queue]})
		}
	}
	return g
}

// Diff is usher diff's answer: arrows from whoever gains (green) or loses (red) a
// right to the queue where it starts, and from whoever moves to the old and new queue.
func Diff(res *impact.Result) *Graph {
	g := &Graph{Title: fmt.Sprintf("rights from %s to %s", res.Old, res.New)}
	at := map[string]int{}
	edge := func(from, to, label string, c Class) {
		for _, l := range []string{from, to} {
			if _, ok := at[l]; !ok {
				at[l] = g.node(l, "")
			}
		}
		g.Edges = append(g.Edges, Edge{at[from], at[to], label, c})
	}
	for _, p := range res.Partitions {
		for _, q := range p.Queues {
			for _, c := range q.Changes {
				label := map[bool]string{true: "+", false: "-"}[c.Gained] + c.Right
				if c.Queues > 1 {
					label += fmt.Sprintf(" (%d queues)", c.Queues)
				}
				edge(c.Subject(), p.Name+": "+q.Queue, label, class(c.Gained))
			}
		}
		for _, c := range p.Placement {
			edge(c.Subject(), p.Name+": "+c.Old.String(), "placed before", No)
			edge(c.Subject(), p.Name+": "+c.New.String(), "placed now", Yes)
		}
	}
	return g
}

// Place is usher place's answer: the request, each rule tried, where it goes.
func Place(res *engine.PlaceResult) *Graph {
	g := &Graph{Title: "placement of an application of " + res.Identity.User}
	prev := g.node(fmt.Sprintf("user %s\ngroups %s", res.Identity.User, strings.Join(res.Identity.Groups, ", ")), "")
	for _, s := range res.Trail {
		label := res.Rules.Describe(s.Rule)
		if s.Rule >= 0 {
			label = fmt.Sprintf("rule %d: %s", s.Rule+1, label)
		}
		n := g.node(label+"\n"+s.Outcome.String()+": "+s.Reason(), stepClass[s.Outcome])
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
