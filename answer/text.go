package answer

import (
	"cmp"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/usherhq/usher/acl"
	"github.com/usherhq/usher/application"
	"github.com/usherhq/usher/engine"
	"github.com/usherhq/usher/identity"
	"github.com/usherhq/usher/placement"
	"github.com/usherhq/usher/policy"
)

// Verdict writes the first two lines of an answer: allowed or denied, and why.
func Verdict(w io.Writer, allowed bool, reason string) {
	fmt.Fprintf(w, "%s\n%s\n", map[bool]string{true: "allowed", false: "denied"}[allowed], reason)
}

// Explain writes what usher explain prints for a queue decision: the
// verdict, the identity and every ACL consulted.
func Explain(w io.Writer, res engine.Result, steps []policy.Step) {
	Verdict(w, res.Allowed, res.Reason())
	identityText(w, res.Identity)
	aclTrail(w, res.Action, res.Queue, steps)
}

// ExplainPlaced writes what usher explain --place prints: the verdict,
// the placement rules tried, the identity and the ACLs of the queue whose
// ACLs decided.
func ExplainPlaced(w io.Writer, res *engine.PlaceResult) {
	Verdict(w, res.Placed, PlaceReason(res))
	placementTrail(w, res.Rules, res.Result)
	identityText(w, res.Identity)
	if res.Placed {
		aclTrail(w, policy.Submit, res.Decisive(), res.Steps)
	}
}

// Place writes what usher place prints: the queue, the rule and why, or
// rejected and why, then the rules tried.
func Place(w io.Writer, res *engine.PlaceResult) {
	if res.Placed {
		fmt.Fprintf(w, "%s\n%s\n%s\n", res.Queue, res.RuleName(), res.Reason())
		if res.Asked != "" {
			fmt.Fprintf(w, "not in %q, the queue named%s\n", res.Asked, strings.TrimSuffix(": "+res.Reading(), ": "))
		}
	} else {
		fmt.Fprintf(w, "rejected\n%s\n", res.Reason())
	}
	placementTrail(w, res.Rules, res.Result)
}

// aclTrail writes every ACL consulted for action on queue, in order.
func aclTrail(w io.Writer, action policy.Action, queue string, steps []policy.Step) {
	fmt.Fprintf(w, "\ntrail (%s on %s, checked in this order; the first match decides):\n", action, queue)
	width := len("partition")
	for _, s := range steps {
		width = max(width, len(s.Queue))
	}
	for _, s := range steps {
		where, aclName := s.Queue, string(s.ACL)
		if s.ACL == policy.ClusterAdminACL {
			where, aclName = "partition", "adminacl"
		}
		rule, verdict := "(not set)", "grants nothing"
		if s.Rule != nil {
			rule = fmt.Sprintf("%q", s.Rule.String())
		}
		switch {
		case !s.Reached:
			verdict = "not reached"
		case s.Rule == nil:
		case s.Match.Allowed():
			verdict = fmt.Sprintf("MATCH: %s %q  <- decided", s.Match.Kind, s.Match.Name)
		default:
			verdict = "no match"
		}
		fmt.Fprintf(w, "  %-*s  %-9s  %-24s  %s\n", width, where, aclName, rule, verdict)
	}
}

// placementTrail writes each rule tried and what it did.
func placementTrail(w io.Writer, rules *placement.Rules, res placement.Result) {
	fmt.Fprintf(w, "\nplacement (rules in order; the first that places wins):\n")
	for _, s := range res.Trail {
		label := fmt.Sprintf("%d", s.Rule+1)
		if s.Rule < 0 {
			label = "-"
		}
		mark := "  "
		if s.Outcome == placement.Placed {
			mark = "=>"
		}
		fmt.Fprintf(w, "  %s  %s\n  %s   %s\n", label, rules.Describe(s.Rule), mark, s.Reason())
	}
}

// App writes what usher app prints, with explain the identity and every
// check made.
func App(w io.Writer, d application.Decision, in identity.Info, app application.Application, explain bool) {
	Verdict(w, d.Allowed, d.Reason())
	if !explain {
		return
	}
	identityText(w, in)
	fmt.Fprintf(w, "\napplication %s: owner %s, queue %s\n", cmp.Or(app.ID, "(no id)"), d.Owner, d.Queue)
	if d.Action != application.Move {
		fmt.Fprintf(w, "\nchecks for %v (in this order; the first that allows decides):\n", d.Action)
		appSteps(w, d, d.Requirements[0].Steps, "  ")
		return
	}
	fmt.Fprintf(w, "\nrequirements of move to %s (all three must be met):\n", d.Target)
	for i, r := range d.Requirements {
		met := "NOT MET"
		if r.Met {
			met = "met"
		}
		what := "modify the application"
		switch r.Need {
		case application.NeedSourceQueue:
			what = "submit to " + r.Queue + " (where it runs)"
		case application.NeedTargetQueue:
			what = "submit to " + r.Queue + " (the target)"
		}
		fmt.Fprintf(w, "  %d. %s: %s\n", i+1, what, met)
		appSteps(w, d, r.Steps, "       ")
	}
}

func appSteps(w io.Writer, d application.Decision, steps []application.Step, indent string) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, s := range steps {
		fmt.Fprintf(tw, "%s%s\t%s\t%s\n", indent, s.Rule, checked(d, s), verdict(d, s))
	}
	tw.Flush()
}

// checked says what a step looks at.
func checked(d application.Decision, s application.Step) string {
	rule := func(a *acl.ACL) string {
		if a == nil {
			return "(not set)"
		}
		return fmt.Sprintf("%q", a.String())
	}
	switch s.Rule {
	case application.Owner:
		return fmt.Sprintf("owner %q", d.Owner)
	case application.QueueAdmin:
		return fmt.Sprintf("adminacl of %s and its parents", s.Queue)
	case application.ClusterAdmin:
		if s.ACL == nil && !s.Reached {
			return "partition adminacl"
		}
		return "partition adminacl " + rule(s.ACL)
	case application.ApplicationAdmin:
		return "applicationacls admin " + rule(s.ACL)
	case application.ModifyACL, application.ViewACL:
		what := "its " + s.Rule.String() + " " + rule(s.ACL)
		if s.Default {
			what += " (the partition's default)"
		}
		return what
	case application.QueueSubmit:
		return fmt.Sprintf("submitacl and adminacl of %s, its parents and the partition", s.Queue)
	}
	return ""
}

func verdict(d application.Decision, s application.Step) string {
	switch {
	case !s.Reached:
		return "not reached"
	case s.Allowed:
		what := fmt.Sprintf("MATCH: %s %q", s.Match.Kind, s.Match.Name)
		switch s.Rule {
		case application.QueueAdmin, application.QueueSubmit:
			if s.Grant.ACL == policy.ClusterAdminACL {
				what += " in the partition adminacl"
			} else {
				what += fmt.Sprintf(" in %s of %s", s.Grant.ACL, s.Grant.Queue)
			}
		}
		return what + "  <- decided"
	case s.ACL == nil && s.Rule != application.Owner && s.Rule != application.QueueAdmin && s.Rule != application.QueueSubmit:
		return "grants nothing"
	default:
		return "no match"
	}
}

// identityText writes the identity as explain prints it: the user, how it
// was looked up, and each group with where it came from.
func identityText(w io.Writer, in identity.Info) {
	fmt.Fprintf(w, "\nidentity:\n  user    %s\n", in.User)
	if in.Lookup.Name != "" {
		fmt.Fprintf(w, "  lookup  as %s (namemapping rule %d); ACLs match %s\n", in.Lookup.Name, in.Lookup.Rule, in.User)
	}
	switch in.Lookup.Outcome {
	case identity.OutcomeSkipped:
		fmt.Fprintf(w, "  lookup  none: names starting with %q are not looked up (skip); the given groups only\n", in.Lookup.Detail)
	case identity.OutcomeOverride:
		fmt.Fprintln(w, "  lookup  none: a static override gives the groups")
	case identity.OutcomeUnknownGiven:
		fmt.Fprintf(w, "  lookup  unknown user, decided on the given groups alone (unknownuser given-groups): %s\n", in.Lookup.Detail)
	}
	if len(in.Groups) == 0 {
		fmt.Fprintln(w, "  groups  (none)")
	}
	for i, g := range in.Groups {
		label := "        "
		if i == 0 {
			label = "  groups"
		}
		fmt.Fprintf(w, "%s  %s (%s)\n", label, g, in.SourceOf(i))
	}
}
