package plugin

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/usherhq/usher/decision"
)

// WhoamiOutput is what whoami prints with -o json.
type WhoamiOutput struct {
	Kubernetes *Identity         `json:"kubernetes,omitempty"` // as the API server sees it (absent with --as)
	Usher      decision.Identity `json:"usher"`                // as usher decides with it in Partition
	Partition  string            `json:"partition"`
}

func newWhoami(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "whoami",
		Short: "Show the user and groups the API server sees, and the groups usher adds from its directory",
		Long: `Shows the user and groups the API server authenticates you as (a
SelfSubjectReview, as kubectl auth whoami), then the groups usher decides
with in the partition, each with its source: "given" for the groups the
API server gave, a resolver's name (ldap, file, os) for those usher found
in its directory.` + asHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ans, who, self, err := o.ask(cmd.Context(), decision.AccessRequest{Partition: o.partition, Queues: true})
			if err != nil {
				return err
			}
			out := WhoamiOutput{Partition: ans.Partition,
				Usher: decision.Identity{User: ans.Identity.User, Groups: orEmpty(ans.Identity.Groups)}}
			if self {
				out.Kubernetes = &who
			}
			return o.print(out, func(w io.Writer) {
				title := map[bool]string{true: "Kubernetes (SelfSubjectReview)", false: "asked about (--as)"}[self]
				fmt.Fprintf(w, "%s\n  user:    %s\n  groups:  %s\n\n", title, who.User, joinOr(who.Groups, "(none)"))
				fmt.Fprintf(w, "usher (partition %s)\n  user:    %s\n", ans.Partition, ans.Identity.User)
				if len(ans.Identity.Groups) == 0 {
					fmt.Fprintln(w, "  groups:  (none)")
					return
				}
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "  GROUP\tSOURCE")
				for _, g := range ans.Identity.Groups {
					fmt.Fprintf(tw, "  %s\t%s\n", g.Name, describeSource(g.Source, self))
				}
				tw.Flush()
			})
		},
	}
	o.addOutput(cmd)
	return cmd
}

// asHelp ends the help of the commands that may ask about someone else.
const asHelp = `

With --as USER (and --as-group), the question is about that user; usher
answers only if you may create accessreviews in API group usher.io.`

// describeSource says where a group usher decides with came from.
func describeSource(s string, self bool) string {
	if s != "given" {
		return s + " (usher's directory)"
	}
	return map[bool]string{true: "given (by the API server)", false: "given (--as-group)"}[self]
}

// Actions on a queue, and on an application.
var (
	queueActions = []string{"submit", "admin"}
	appActions   = []string{"view", "modify", "kill", "move"}
)

type canIFlags struct {
	quiet, explain                         bool
	owner, app, target, viewACL, modifyACL string
}

func newCanI(o *options) *cobra.Command {
	var f canIFlags
	cmd := &cobra.Command{
		Use:   "can-i ACTION QUEUE",
		Short: "Check whether you may submit to or administer a queue, or act on an application",
		Long: `Asks usher whether you may do ACTION on QUEUE and prints yes or no, as
kubectl auth can-i does. ACTION is submit or admin (a queue decision), or
view, modify, kill or move (an application in QUEUE, owned by --owner; a
move goes to --target).

For submit, QUEUE is what a pod's queue marker names, and the answer is
the admission webhook's for that pod in the namespace (-n, else the
kubeconfig's): the partition's placement rules choose the queue the pod
runs in, with the namespace as the namespace tag (usher place). When they
put it elsewhere than QUEUE, a warning on stderr names that queue and
why.

Exit status: 0 yes, 1 no, 2 when the question could not be answered.` + asHelp,
		Example: `  kubectl usher can-i submit root.ml
  kubectl usher can-i admin root.ops --explain
  kubectl usher can-i kill root.ops --owner bob
  kubectl usher can-i submit root.ops --as bob --as-group ops`,
		Args:      cobra.ExactArgs(2),
		ValidArgs: slices.Concat(queueActions, appActions),
		RunE: func(cmd *cobra.Command, args []string) error {
			action, queue := args[0], args[1]
			req := decision.AccessRequest{Partition: o.partition, Action: action, Explain: f.explain || o.output != "text"}
			switch {
			case slices.Contains(queueActions, action):
				if f.owner != "" || f.app != "" || f.target != "" || f.viewACL != "" || f.modifyACL != "" {
					return fmt.Errorf("--owner, --application, --target, --view-acl and --modify-acl are for the application actions (%s)", strings.Join(appActions, ", "))
				}
				req.Queue = queue
				req.Place = action == "submit"
			case slices.Contains(appActions, action):
				if f.owner == "" {
					return fmt.Errorf("%s is an application action: give the application's owner with --owner USER", action)
				}
				if (action == "move") != (f.target != "") {
					return fmt.Errorf("--target QUEUE is given for move, and only for move")
				}
				req.Explain = false // application decisions carry requirements, not a trail
				req.Application = &decision.AccessApplication{ID: f.app, Owner: f.owner, Queue: queue}
				if cmd.Flags().Changed("view-acl") {
					req.Application.ViewACL = &f.viewACL
				}
				if cmd.Flags().Changed("modify-acl") {
					req.Application.ModifyACL = &f.modifyACL
				}
				req.TargetQueue = f.target
			default:
				return fmt.Errorf("action %q: want one of %s", action, strings.Join(slices.Concat(queueActions, appActions), ", "))
			}
			ans, _, _, err := o.ask(cmd.Context(), req)
			if err != nil {
				return err
			}
			if p := ans.Placement; p != nil && p.Asked != "" && !f.quiet {
				fmt.Fprintf(o.streams.ErrOut, "Warning: a pod whose queue marker names %q runs in %q, not %q: %s\n", queue, p.Queue, p.Asked, ans.Reason)
			}
			if !f.quiet {
				err = o.print(ans, func(w io.Writer) {
					fmt.Fprintln(w, map[bool]string{true: "yes", false: "no"}[ans.Allowed])
					if f.explain {
						printDecision(w, ans)
					}
				})
			}
			return verdict(err, ans.Allowed)
		},
	}
	o.addOutput(cmd)
	fl := cmd.Flags()
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "print nothing; only the exit status answers")
	fl.BoolVar(&f.explain, "explain", false, "print the reason and the trail (the ACLs consulted) after yes or no")
	fl.StringVar(&f.owner, "owner", "", "owner of the application (application actions)")
	fl.StringVar(&f.app, "application", "", "the application's id (application actions; for messages)")
	fl.StringVar(&f.target, "target", "", "queue a move goes to")
	fl.StringVar(&f.viewACL, "view-acl", "", "the application's view ACL, YARN syntax (absent: the partition's default)")
	fl.StringVar(&f.modifyACL, "modify-acl", "", "the application's modify ACL, YARN syntax (absent: the partition's default)")
	return cmd
}

// printDecision prints the reason, the groups and the trail of a decision.
func printDecision(w io.Writer, a *decision.Output) {
	fmt.Fprintf(w, "reason: %s\n", a.Reason)
	fmt.Fprintf(w, "user %s, groups %s, partition %s\n", a.Identity.User, groupsText(a.Identity.Groups), a.Partition)
	if a.DecidedBy != nil {
		fmt.Fprintf(w, "decided by: %s entry %q in %s of %s\n", a.DecidedBy.Kind, a.DecidedBy.Entry, a.DecidedBy.ACL, a.DecidedBy.Queue)
	}
	for _, r := range a.Requirements {
		line := fmt.Sprintf("requirement %s", r.Need)
		if r.Queue != "" {
			line += " on " + r.Queue
		}
		line += ": " + map[bool]string{true: "met", false: "not met"}[r.Met]
		if r.By != "" {
			line += " (" + r.By + ")"
		}
		fmt.Fprintln(w, line)
	}
	printTrail(w, "", a.Trail)
}

// groupsText is "g1 (source), g2 (source)", or "(none)".
func groupsText(gs []decision.Group) string {
	groups := make([]string, len(gs))
	for i, g := range gs {
		groups[i] = g.Name + " (" + g.Source + ")"
	}
	return joinOr(groups, "(none)")
}

// printTrail prints the placement rules tried, then the ACLs consulted,
// each line after indent.
func printTrail(w io.Writer, indent string, t *decision.Trail) {
	if t == nil {
		return
	}
	fmt.Fprintln(w, indent+"trail:")
	for _, p := range t.Placement {
		line := fmt.Sprintf("%s  placement rule %d %s: %s", indent, p.Rule, p.Describe, p.Outcome)
		if p.Queue != "" {
			line += " " + p.Queue
		}
		if p.Reason != "" {
			line += ": " + p.Reason
		}
		fmt.Fprintln(w, line)
	}
	for _, s := range t.ACLs {
		state := "not reached"
		switch {
		case s.Matched:
			state = fmt.Sprintf("matched %s %s", s.Match.Kind, s.Match.Name)
		case s.Reached && !s.Set:
			state = "not set"
		case s.Reached:
			state = "no match"
		}
		entry := ""
		if s.Set {
			entry = fmt.Sprintf(" %q", s.Entry)
		}
		fmt.Fprintf(w, "%s  %s %s%s: %s\n", indent, s.Queue, s.ACL, entry, state)
	}
}

// QueuesOutput is what queues prints with -o json.
type QueuesOutput struct {
	Partition string                 `json:"partition"`
	Identity  decision.Identity      `json:"identity"`
	Queues    []decision.QueueRights `json:"queues"`
}

func newQueues(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "queues",
		Short: "List every queue with what you may do there",
		Long: `Lists every queue of the partition with whether you may submit to it
and administer it (usher access, for yourself): a tree to read, or JSON or
YAML for scripts.` + asHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ans, _, _, err := o.ask(cmd.Context(), decision.AccessRequest{Partition: o.partition, Queues: true})
			if err != nil {
				return err
			}
			out := QueuesOutput{Partition: ans.Partition, Queues: orEmpty(ans.Queues),
				Identity: decision.Identity{User: ans.Identity.User, Groups: orEmpty(ans.Identity.Groups)}}
			return o.print(out, func(w io.Writer) {
				fmt.Fprintf(w, "partition %s, user %s, groups %s\n\n", ans.Partition, ans.Identity.User, groupsText(ans.Identity.Groups))
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "QUEUE\tSUBMIT\tADMIN\tWHY")
				for i, q := range out.Queues {
					why := q.SubmitReason
					if q.Admin {
						why = q.AdminReason
					}
					if !q.Submit && !q.Admin {
						why = ""
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", decision.TreeLabel(out.Queues, i), mark[q.Submit], mark[q.Admin], why)
				}
				tw.Flush()
			})
		},
	}
	o.addOutput(cmd)
	return cmd
}

var mark = map[bool]string{true: "yes", false: "-"}

// print writes v as JSON or YAML, or calls text.
func (o *options) print(v any, text func(io.Writer)) error {
	w := o.streams.Out
	switch o.output {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(v)
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	text(w)
	return nil
}
