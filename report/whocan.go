// Package report shows people what a configuration means: who may act on a
// queue (usher who-can), usher access, diff and place as Graphviz DOT and
// Mermaid pictures, and one self-contained HTML page of all three (usher report).
package report

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/usherhq/usher/acl"
	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/identity"
	"github.com/usherhq/usher/identity/resolvers"
	"github.com/usherhq/usher/policy"
)

// Grant is one ACL entry that lets someone act on a queue.
type Grant struct {
	Queue   string   `json:"queue,omitempty"`   // "" for the partition's adminacl
	ACL     string   `json:"acl"`               // submitacl, adminacl or partition adminacl
	Kind    string   `json:"kind"`              // user, group or wildcard
	Name    string   `json:"name"`              // "*" for the wildcard
	Members []string `json:"members,omitempty"` // the group's members its resolver lists
}

// WhoCan is every ACL entry allowing an action on a queue, in decision order.
type WhoCan struct {
	Partition string  `json:"partition"`
	Queue     string  `json:"queue"`
	Action    string  `json:"action"`
	Grants    []Grant `json:"grants"`
	Members   string  `json:"members"` // where group members come from, or why they are not listed
}

// Who answers who may perform action on queue of partition in cfg.
func Who(cfg *config.Config, partition, queue string, action policy.Action) (*WhoCan, error) {
	cp, err := cfg.Snapshot.Partition(partition)
	if err != nil {
		return nil, err
	}
	ref, err := cp.Lookup(queue)
	if err != nil {
		return nil, err
	}
	members, note := membersOf(cfg, cp.Name())
	w := &WhoCan{Partition: cp.Name(), Queue: ref.Path(), Action: action.String(), Members: note, Grants: []Grant{}}
	// A subject nobody names: the trail lists every ACL that applies.
	_, steps := ref.Explain(acl.NewSubject("", nil), action)
	for _, s := range steps {
		if s.Rule == nil {
			continue
		}
		add := func(kind, name string) {
			g := Grant{Queue: s.Queue, ACL: string(s.ACL), Kind: kind, Name: name}
			if kind == "group" && members != nil {
				g.Members = members.Members(name)
			}
			w.Grants = append(w.Grants, g)
		}
		if s.Rule.All() {
			add("wildcard", "*")
		}
		for _, u := range s.Rule.Users() {
			add("user", u)
		}
		for _, g := range s.Rule.Groups() {
			add("group", g)
		}
	}
	return w, nil
}

// lister lists a group's members: a file or test resolver's table.
type lister interface{ Members(group string) []string }

// membersOf returns the partition resolver's lister (nil without one) and a note.
func membersOf(cfg *config.Config, partition string) (lister, string) {
	i := slices.IndexFunc(cfg.Partitions, func(p config.Partition) bool { return strings.EqualFold(p.Name, partition) })
	r := cfg.Partitions[i].Resolver
	t := r.Table
	if r.Type == resolvers.TypeTest {
		t = identity.Static(r.Users)
	}
	if m, ok := t.(lister); ok {
		return m, fmt.Sprintf("members as the %s resolver lists them; groups a request carries are not listed", r.Type)
	}
	return nil, fmt.Sprintf("not enumerated: the %s resolver cannot list a group's members", cmp.Or(r.Type, resolvers.TypeNone))
}

// Text writes w for people: a line per entry, a group's with its members.
func (w *WhoCan) Text(out io.Writer) {
	fmt.Fprintf(out, "who may %s %s (partition %s), in check order:\n", w.Action, w.Queue, w.Partition)
	if len(w.Grants) == 0 {
		fmt.Fprintln(out, "  nobody: no ACL of the queue, its parents or the partition names anyone")
	}
	for _, g := range w.Grants {
		fmt.Fprintf(out, "  %s%s\n", g.Describe(), strings.TrimSuffix(": "+strings.Join(g.Members, ", "), ": "))
	}
	fmt.Fprintf(out, "group members: %s\n", w.Members)
}

// Describe renders the grant: group dev in submitacl of root.a.
func (g Grant) Describe() string {
	who := g.Kind + " " + g.Name
	if g.Kind == "wildcard" {
		who = `everyone ("*")`
	}
	if g.Queue == "" {
		return who + " in the partition adminacl"
	}
	return fmt.Sprintf("%s in %s of %s", who, g.ACL, g.Queue)
}
